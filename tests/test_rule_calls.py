"""The engine runs a configuration's rules in one go (``RuleCalls.run``): findings in rule order,
and a rule that raises costs only its own findings after the error, with a note."""

from __future__ import annotations

from mblint.findings import Severity
from mblint.model import EffectiveConfig, RecipeRef
from mblint.rule import Rule, RuleContext
from mblint.rule_run import RuleCalls


def _rule(rule_id: str, check) -> Rule:
    cls = type(f"Rule{rule_id}", (Rule,), {"id": rule_id, "name": "probe", "severity": Severity.INFO,
                                           "summary": "Probe.", "check": check})
    return cls()


def _yields(*messages):
    def check(self, cfg, ctx):
        for message in messages:
            yield ctx.report(cfg, message)
    return check


def _returns(value):
    def check(self, cfg, ctx):
        return value
    return check


def _fails_after(message):
    def check(self, cfg, ctx):
        yield ctx.report(cfg, message)
        raise RuntimeError("broken rule")
    return check


def _run(*rules: Rule) -> tuple[list[str], list[str]]:
    cfg = EffectiveConfig(RecipeRef("r.py", "f"), "0.6")
    findings: list = []
    notes: list[str] = []
    RuleCalls([(rule, RuleContext(rule)) for rule in rules]).run(cfg, findings, notes)
    return [f"{f.rule_id}:{f.message}" for f in findings], notes


def test_findings_in_rule_order_whatever_a_check_returns():
    messages, notes = _run(_rule("ZZ001", _yields("a", "b")), _rule("ZZ002", _returns(None)),
                           _rule("ZZ003", _returns([])), _rule("ZZ004", _yields("c")))
    assert messages == ["ZZ001:a", "ZZ001:b", "ZZ004:c"] and notes == []


def test_a_rule_that_raises_keeps_what_it_reported_before_and_the_others_run():
    messages, notes = _run(_rule("ZZ001", _yields("a")), _rule("ZZ002", _fails_after("b")),
                           _rule("ZZ003", _returns(3)), _rule("ZZ004", _yields("c")))
    assert messages == ["ZZ001:a", "ZZ002:b", "ZZ004:c"]
    assert notes == ["internal error in rule ZZ002 on r.py::f: RuntimeError: broken rule",
                     "internal error in rule ZZ003 on r.py::f: TypeError: 'int' object is not iterable"]
