"""Every rule's own valid and invalid examples, run against the real Megatron-Bridge builders."""

from __future__ import annotations

import inspect
import re
from collections import Counter

import pytest

from mblint.findings import Severity
from mblint.plugins import load_plugins
from mblint.testing import Example, ExampleNotResolved, run_example, stated_outcome_problems

PLUGINS = load_plugins()
RULES = PLUGINS.rules


def _cases(kind: str):
    for rule in RULES:
        for index, item in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, Example.of(item), id=f"{rule.id}-{kind}-{index}")


def test_builtin_pack_loads_cleanly():
    assert PLUGINS.errors == []
    assert RULES, "the built-in rule pack registered no rules"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_is_well_formed(rule):
    assert rule.problems() == []
    assert rule.invalid, f"{rule.id} has no invalid example"
    assert rule.valid, f"{rule.id} has no valid example"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_documented_severities_are_the_ones_reported(rule):
    """`mblint rule`/`mblint rules` show severity and other_severities: a rule that reports
    another severity in some cases declares it, and its documentation says when."""
    source = inspect.getsource(inspect.getmodule(rule))
    used = {Severity[name] for name in re.findall(r"Severity\.([A-Z]+)", source)}
    assert used <= {rule.severity, *rule.other_severities}, f"{rule.id} reports {sorted(s.label for s in used)}"
    for other in rule.other_severities:
        assert re.search(rf"\b{other.label}\b", rule.doc, re.I), f"{rule.id}'s documentation never says {other.label}"


@pytest.mark.parametrize("rule,example", list(_cases("invalid")))
def test_invalid_example_fires(rule, example, mb_roots, tmp_path):
    run = run_example(rule, example, tmp_path, [mb_roots[example.version]])
    assert run.findings, f"{rule.id} did not fire; notes: {run.notes}"
    for finding in run.findings:
        assert finding.severity in (rule.severity, *rule.other_severities), (
            f"{rule.id} reported {finding.severity.label}, documented as {rule.severity_label()}")
    if run.expected_lines:
        got = {(f.location.path, f.location.line) for f in run.findings}
        assert got & set(run.expected_lines), f"expected a finding at {run.expected_lines}, got {sorted(got)}"


@pytest.mark.parametrize("rule,example", list(_cases("valid")))
def test_valid_example_is_silent(rule, example, mb_roots, tmp_path):
    run = run_example(rule, example, tmp_path, [mb_roots[example.version]])
    assert run.findings == [], [f.message for f in run.findings]


@pytest.mark.parametrize("rule,example", [case for case in _cases("invalid") if case.values[1].states_outcome])
def test_invalid_example_gives_the_message_and_fix_it_states(rule, example, mb_roots, tmp_path):
    assert stated_outcome_problems(rule, example, tmp_path, [mb_roots[example.version]]) == []


def _collected(test) -> Counter:
    """How many cases of each rule the parametrized ``test`` was given."""
    mark = next(mark for mark in test.pytestmark if mark.name == "parametrize")
    return Counter(param.values[0].id for param in mark.args[1])


def test_every_example_of_every_loaded_rule_is_collected():
    """A rule of any loaded pack whose examples the tests above never receive would pass
    unchecked: each valid and each invalid example of each rule is one case."""
    rules = load_plugins().rules
    assert rules
    assert _collected(test_valid_example_is_silent) == Counter({rule.id: len(rule.valid) for rule in rules})
    assert _collected(test_invalid_example_fires) == Counter({rule.id: len(rule.invalid) for rule in rules})


@pytest.mark.parametrize("code", ["cfg = _pretrian_common()", "cfg = _pretrain_common(\ncfg.train.x = 1"],
                         ids=["misspelt builder", "syntax error"])
def test_an_example_that_resolves_no_configuration_proves_nothing(code, mb_roots, tmp_path):
    with pytest.raises(ExampleNotResolved):
        run_example(RULES[0], Example(code), tmp_path, [mb_roots["0.6"]])


def test_examples_write_an_autobridge_model_one_way():
    """One prelude for an AutoBridge model (``hf_model``), not the line spelled out per rule."""
    for rule in RULES:
        source = inspect.getsource(inspect.getmodule(rule)).replace(rule.doc, "")
        assert "from_hf_pretrained(" not in source, f"{rule.id}: use rulekit.hf_model(name) in examples"


def test_rules_ask_one_question_of_known_ness():
    """``known`` (rulekit) is the one test rules use; ``is_known`` is the resolver's."""
    for rule in RULES:
        assert "is_known" not in inspect.getsource(inspect.getmodule(rule)), rule.id
