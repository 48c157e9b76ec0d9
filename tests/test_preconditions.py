"""Rule preconditions (``Rule.precondition``): the engine skips a rule where its precondition is
False, runs it where it is True, unknown, or raises; and a precondition is False only where the
rules that declare it report nothing on their own."""

from __future__ import annotations

import pytest

from mblint.findings import Severity
from mblint.model import UNKNOWN
from mblint.rule import Rule
from mblint.testing import Example, run_example
from rules._derived import cuda_graphs_known_on, precondition

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
