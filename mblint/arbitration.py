"""One problem, one finding: which of the findings on a job are reported.

Two rules may see the same fault from two sides (the recipe name says 8 GPUs and TP is 16:
PB011 reads the name as too small for the layout, PB001 reads the world size as not divisible
by the dense grid). A finding that may repeat another rule's names the fault with
``ctx.report(..., problem=...)`` (the shared names are in mblint/rulekit.py), and the more
specific rule declares, as data, which rules' findings of the same problem it replaces
(``Rule.supersedes``). Of the findings on one job, one naming a problem is dropped when a
finding of a rule that supersedes its rule names the same problem; a rule that is not selected
reports nothing, so the other's finding then stands. No rule's ``check`` knows another rule.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from mblint.findings import Finding


def superseded_by(rules: Iterable) -> dict[str, frozenset[str]]:
    """For each rule id that another of ``rules`` supersedes, the ids of the rules that do."""
    found: dict[str, set[str]] = {}
    for rule in rules:
        for other in rule.supersedes:
            found.setdefault(other, set()).add(rule.id)
    return {rule_id: frozenset(ids) for rule_id, ids in found.items()}


def most_specific(findings: list[Finding], superseded: Mapping[str, frozenset[str]]) -> list[Finding]:
    """``findings`` (of one job) less those a more specific rule's finding of the same
    problem replaces (``superseded``: what ``superseded_by`` gives for the rules that ran)."""
    reporters: dict[str, set[str]] = {}
    for finding in findings:
        if finding.problem:
            reporters.setdefault(finding.problem, set()).add(finding.rule_id)
    if not reporters:
        return findings
    return [finding for finding in findings
            if not (finding.problem and superseded.get(finding.rule_id, frozenset()) & reporters[finding.problem])]
