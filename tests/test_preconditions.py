"""Rule preconditions (``Rule.precondition``): the engine skips a rule where its precondition is
False, runs it where it is True, unknown, or raises; and a precondition is False only where the
rules that declare it report nothing on their own."""

from __future__ import annotations

import pytest

from mblint.engine import CheckOptions, Engine
from mblint.findings import Severity
from mblint.model import UNKNOWN
from mblint.plugins import LoadedPlugins, load_plugins
from mblint.rule import Rule, RuleContext
from mblint.schema import load_schema
from mblint.testing import Example, example_source, run_example
from mblint.rulekit import cuda_graphs_known_on, precondition

GATED = [r for r in load_plugins().rules if r.precondition is not None]


def _probe(test) -> type[Rule]:
    class Probe(Rule):
        id, name, severity = "ZZ002", "precondition-probe", Severity.INFO
        summary, doc = "Probe.", "## What it does\nProbe."
        precondition = test

        def check(self, cfg, ctx):
            yield ctx.report(cfg, "ran")

    return Probe


def _ran(test, code: str, mb_roots, tmp_path) -> bool:
    run = run_example(_probe(test), Example(code), tmp_path, [mb_roots["0.6"]])
    return [f.message for f in run.findings] == ["ran"]


MODEL = ("cfg = _pretrain_common()\n"
         "cfg.model = AutoBridge.from_hf_pretrained('x').to_megatron_provider(load_weights=False)\n")


def test_rule_runs_where_its_precondition_holds_and_is_skipped_where_false(mb_roots, tmp_path):
    assert _ran(cuda_graphs_known_on, MODEL + 'cfg.model.cuda_graph_impl = "transformer_engine"', mb_roots, tmp_path / "on")
    assert not _ran(cuda_graphs_known_on, MODEL + 'cfg.model.cuda_graph_impl = "none"', mb_roots, tmp_path / "off")


@precondition
def _always_unknown(cfg):
    return UNKNOWN


@precondition
def _always_raises(cfg):
    raise RuntimeError("broken precondition")


@pytest.mark.parametrize("test", [_always_unknown, _always_raises], ids=["unknown", "raises"])
def test_rule_runs_where_its_precondition_is_not_definitely_false(test, mb_roots, tmp_path):
    assert _ran(test, MODEL, mb_roots, tmp_path)


def test_precondition_must_be_a_declared_precondition():
    def about_precondition(rule):
        return [problem for problem in rule.problems() if "precondition" in problem]

    assert about_precondition(_probe(cuda_graphs_known_on)) == []
    assert about_precondition(_probe(lambda cfg: True)) != []


def _configs(monkeypatch, paths, **options) -> list:
    """The configurations the engine checks when it lints ``paths`` (cwd-relative)."""
    configs = []
    run_rules = Engine.run_rules

    def keep(self, cfg, text, report, job=None):
        configs.append(cfg)
        return run_rules(self, cfg, text, report, job)

    monkeypatch.setattr(Engine, "run_rules", keep)
    Engine(CheckOptions(jobs=1, **options), LoadedPlugins(rules=GATED)).check_paths(paths)
    monkeypatch.setattr(Engine, "run_rules", run_rules)
    return configs


def _example_configs(line, mb_roots, tmp_path, monkeypatch) -> list:
    """The configurations of every rule's plain valid and invalid examples of schema ``line``."""
    folder = tmp_path / f"examples-{line}"
    folder.mkdir()
    count = 0
    for rule in load_plugins().rules:
        for item in (*rule.valid, *rule.invalid):
            example = Example.of(item)
            if example.version == line and not example.dotlist and example.yaml is None:
                (folder / f"example_{count}.py").write_text(example_source(example), encoding="utf-8")
                count += 1
    monkeypatch.chdir(folder)
    return _configs(monkeypatch, ["."], version=line, search_paths=(mb_roots[line],))


def _recipe_configs(line, mb_roots, monkeypatch) -> list:
    monkeypatch.chdir(mb_roots[line])
    return _configs(monkeypatch, ["megatron/bridge/recipes"])


@pytest.mark.parametrize("line", ["0.3", "0.6"])
def test_precondition_is_false_only_where_its_rules_report_nothing(line, mb_roots, tmp_path, monkeypatch):
    """Every gated rule, run directly (as without preconditions) on each configuration of the
    real recipe trees and of all rules' examples where its precondition is False, reports
    nothing."""
    configs = _example_configs(line, mb_roots, tmp_path, monkeypatch) + _recipe_configs(line, mb_roots, monkeypatch)
    assert GATED and configs
    checked = 0
    for rule_class in GATED:
        rule = rule_class()
        for world_size in (None, 8):
            ctx = RuleContext(rule, world_size, "option" if world_size else "")
            for cfg in configs:
                if not rule_class.applies_to(load_schema(cfg.schema_version)):
                    continue
                if rule_class.precondition(cfg) is False:
                    assert list(rule.check(cfg, ctx) or ()) == [], (rule_class.id, cfg.recipe.label)
                    checked += 1
    assert checked


def test_known_is_false_for_unknown_absent_and_nodes_and_their_subclasses():
    from mblint.model import ABSENT, Unknown, _NodeMarker
    from mblint.rule import known

    class Undecided(Unknown):
        pass

    class Section(_NodeMarker):
        pass

    assert known() and known(0, None, "", False, 1.5, (), {})
    for silent in (UNKNOWN, ABSENT, _NodeMarker("DatasetConfig"), Undecided("why"), Section("X")):
        assert not known(silent) and not known(1, silent) and not known(silent, 1)
        assert not known(1, 2, silent) and not known(1, 2, 3, 4, 5, 6, 7, silent)


def test_int_values_needs_every_value_a_known_plain_int():
    from mblint.model import ABSENT, _NodeMarker
    from mblint.rulekit import int_values

    assert int_values() and int_values(1) and int_values(1, 0, -3, 2, 4, 8, 16, 32, 64)
    for wrong in (UNKNOWN, ABSENT, _NodeMarker("X"), True, 1.0, "1", None):
        assert not int_values(wrong) and not int_values(1, wrong) and not int_values(wrong, 1)
