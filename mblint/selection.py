"""Which rules run: ``--select``/``--ignore``/``--extend-select`` and the settings' lists, by
rule id, id prefix, name or ALL; and what is wrong with a selector that selects no rule."""

from __future__ import annotations

from typing import Iterable

from mblint.rule import Rule
from mblint.suggestions import MAX_SUGGESTED, nearest_names

def select_rules(rules: Iterable[type[Rule]], select: tuple[str, ...], ignore: tuple[str, ...],
                 extend_select: tuple[str, ...] = ()) -> list[type[Rule]]:
    def matches(rule: type[Rule], selectors: tuple[str, ...]) -> bool:
        return any(s == "ALL" or rule.id.startswith(s) or rule.name == s for s in selectors)

    chosen = []
    for rule in rules:
        selected = matches(rule, select) if select else True
        if extend_select and matches(rule, extend_select):
            selected = True
        if selected and not matches(rule, ignore):
            chosen.append(rule)
    return chosen


def selector_problem(where: str, selectors: Iterable[str], rules: Iterable[type[Rule]]) -> str | None:
    """What is wrong with ``selectors`` (rule ids, id prefixes, names, ALL) given at ``where``,
    with a did-you-mean for each that selects no rule; None when every one selects some rule."""
    rules = list(rules)
    problems = []
    unknown = [selector for selector in selectors
               if selector != "ALL" and not any(rule.id.startswith(selector) or rule.name == selector for rule in rules)]
    for selector in unknown[:MAX_SUGGESTED]:
        close = nearest_names(selector, [rule.id for rule in rules] + [rule.name for rule in rules])
        prefixes = ", ".join(sorted({rule.id.rstrip("0123456789") for rule in rules}))
        hint = (f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close
                else f" (rule ids begin with {prefixes}; see `mblint rules`)")
        problems.append(f"{selector!r} selects no rule{hint}")
    if len(unknown) > MAX_SUGGESTED:
        problems.append(f"and {len(unknown) - MAX_SUGGESTED:,} more selectors select no rule")
    return f"{where}: {'; '.join(problems)}" if problems else None
