"""One problem, one finding: which findings are reported, decided here.

On one job (``most_specific``, asked by the rule runner for each configuration):

Two rules may see the same fault from two sides (the recipe name says 8 GPUs and TP is 16:
PB011 reads the name as too small for the layout, PB001 reads the world size as not divisible
by the dense grid). A finding that may repeat another rule's names the fault with
``ctx.report(..., problem=...)`` (the shared names are in mblint/rulekit.py), and the more
specific rule declares, as data, which rules' findings of the same problem it replaces
(``Rule.supersedes``). Of the findings on one job, one naming a problem is dropped when a
finding of a rule that supersedes its rule names the same problem; a rule that is not selected
reports nothing, so the other's finding then stands. No rule's ``check`` knows another rule.

A job's findings at a place outside its own files (a recipe line, when an override file or
a launch line is linted) name the job (``name_the_job``): the recipe alone and the recipe
with an override file may report one problem at one line with other values.

Across the run (``one_per_place``): recipes that share a helper line report its problem once,
and that finding names every recipe it stands for (``Finding.recipes``).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from mblint.findings import Finding, Related
from mblint.model import Origin


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


def name_the_job(findings: Iterable[Finding], where: Origin, job: str) -> None:
    """Relate each of ``findings`` outside ``where``'s file to ``where``, saying it is found
    in ``job`` ("the job of recipe.py::f with over.yaml")."""
    for finding in findings:
        if finding.location.path != where.path:
            finding.related = finding.related + (Related(where, f"in {job}"),)


def recipes_of(finding: Finding) -> tuple[str, ...]:
    """The recipes ``finding`` stands for: its own, and those whose same finding it replaced."""
    return finding.recipes or (finding.recipe,)


def unique(findings: list[Finding]) -> list[Finding]:
    """The first finding of each identity (``Finding.identity``), standing for the recipes of
    all of them."""
    first: dict[tuple, Finding] = {}
    for finding in findings:
        key = finding.identity()
        kept = first.get(key)
        if kept is None:
            first[key] = finding
        elif finding.recipe != kept.recipe or finding.recipes:
            kept.recipes = _joined(recipes_of(kept), recipes_of(finding))
    return list(first.values())


def one_per_place(findings: list[Finding]) -> list[Finding]:
    """One finding per rule, place and fields across recipes: recipes that share a helper line
    report its problem once, whatever values each gives the message. The recipe kept is the one
    whose message comes first, so the report does not depend on the order the files were linted
    in; its configurations (alone, with an override file) keep their findings, each naming
    every recipe that reported the problem there."""
    findings = unique(findings)
    chosen: dict[tuple, tuple] = {}
    recipes: dict[tuple, tuple[str, ...]] = {}
    for finding in findings:
        place = _place(finding)
        candidate = (finding.message, finding.recipe)
        if place not in chosen or candidate < chosen[place]:
            chosen[place] = candidate
        recipes[place] = _joined(recipes.get(place, ()), recipes_of(finding))
    kept = [finding for finding in findings if chosen[_place(finding)][1] == finding.recipe]
    for finding in kept:
        every = recipes[_place(finding)]
        finding.recipes = tuple(sorted(every)) if len(every) > 1 else ()
    return kept


def _joined(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(first + second))


def _place(finding: Finding) -> tuple:
    location = finding.location
    return (finding.rule_id, location.path, location.line, location.column, finding.fields)
