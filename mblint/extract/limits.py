"""Limits of the interpretation (docs/robustness.md) and the checks that keep values and work
bounded.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mblint.model import UNKNOWN, Unknown

# Limits of the interpretation (docs/robustness.md). Real Megatron-Bridge recipes stay far
# below them: at most about 200 steps per recipe and 2,000 per file.
MAX_CALL_DEPTH = 24


MAX_STEPS = 200_000  # statements (and comprehension items, and copies) per recipe


MAX_EXPR_DEPTH = 200
_FAST_PATH_DEPTH = MAX_EXPR_DEPTH - 1  # eval() of a leaf below it cannot reach the depth limit


MAX_COMPREHENSION = 10_000


MAX_VALUE_SIZE = 10_000  # characters of a string, elements of a list or tuple (nested ones counted)


MAX_INT_BITS = 4_096


MAX_RECIPES_PER_FILE = 500


MAX_FILE_STEPS = 2_000_000


# Results of recipes that mblint called (not code it reads) stay memoized until a call reuses
# them, but only the latest this many: most recipes are called by no other, and each kept
# result holds its whole configuration. Reuse comes soon (the same file, a sibling file).
MAX_UNUSED_RECIPE_RESULTS = 64


class BudgetExceeded(Exception):
    pass


def _oversized(value: Any) -> bool:
    """Over ``MAX_VALUE_SIZE`` (nested elements counted) or ``MAX_INT_BITS``; stops counting
    at the limit, so the check costs at most the limit."""
    kind = type(value)
    if kind is int:
        return value.bit_length() > MAX_INT_BITS
    if kind is str:
        return len(value) > MAX_VALUE_SIZE
    if (kind is list or kind is tuple) and len(value) <= MAX_VALUE_SIZE:  # most values checked
        flat = _flat_oversized(value)
        if flat is not None:
            return flat
    return _walked_oversized(value)


def _walked_oversized(value: Any) -> bool:
    """``_oversized`` by walking every nested element until the limit is reached."""
    budget = MAX_VALUE_SIZE
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > MAX_INT_BITS:
                return True
            budget -= 1
        elif isinstance(item, str):
            budget -= len(item)
        elif isinstance(item, (list, tuple, set, frozenset)):
            budget -= len(item)
            if budget >= 0:
                stack.extend(item)
        else:
            budget -= 1
        if budget < 0:
            return True
    return False


def _flat_oversized(items: list | tuple) -> bool | None:
    """``_oversized`` of a list or tuple of plain scalars and of lists and tuples of them (a
    pipeline layout), None when an item is anything else."""
    budget = _flat_budget(items, MAX_VALUE_SIZE, nested=True)
    return None if budget is None else budget < 0


def _flat_budget(items: list | tuple, budget: int, nested: bool) -> int | None:
    """What is left of ``budget`` once ``items`` are counted as ``_walked_oversized`` counts
    them, negative when an int is too big; None when an item is not a plain scalar, nor
    (``nested``) a list or tuple of them."""
    budget -= len(items)
    for item in items:
        kind = type(item)
        if kind is str:
            budget -= len(item)
        elif kind is int:
            if item.bit_length() > MAX_INT_BITS:
                return -1
            budget -= 1
        elif kind is float or kind is bool or item is None or kind is Unknown:
            budget -= 1
        elif (kind is list or kind is tuple) and nested:
            budget = _flat_budget(item, budget, nested=False)
            if budget is None or budget < 0:
                return budget
        else:
            return None
    return budget


def _result_too_big(op: type, left: Any, right: Any) -> bool:
    """Would ``left <op> right`` be over the size limits? Decided before computing it: ``2 **
    10 ** 9`` or ``"x" * 10 ** 9`` would take minutes and gigabytes."""
    ints = all(isinstance(v, int) for v in (left, right))
    if op is ast.Pow and ints:
        return right > 0 and abs(left) > 1 and left.bit_length() * right > MAX_INT_BITS
    if op is ast.LShift and ints:
        return right > MAX_INT_BITS or left.bit_length() + max(right, 0) > MAX_INT_BITS
    if op is ast.Mult:
        if ints:
            return left.bit_length() + right.bit_length() > MAX_INT_BITS
        for sequence, count in ((left, right), (right, left)):
            if isinstance(sequence, (str, list, tuple)) and isinstance(count, int):
                return len(sequence) * count > MAX_VALUE_SIZE
    if op is ast.Mod and isinstance(left, str):
        return _format_too_big(left, right if isinstance(right, tuple) else (right,), "%")
    return False


def _format_too_big(template: str, args: tuple, marker: str) -> bool:
    """A printf or str.format template: a width of five digits or more (or ``*``), or more
    output than the size limit."""
    if marker == "%" and re.search(r"%[^a-zA-Z%]*(?:\d{5,}|\*)", template):
        return True
    if marker == "{" and re.search(r"\{[^{}]*(?:\d{5,}|\{)", template):
        return True
    longest = max((len(str(a)) if isinstance(a, (str, int, float)) else MAX_VALUE_SIZE for a in args), default=0)
    return len(template) + template.count(marker) * longest > MAX_VALUE_SIZE


class LimitsMixin:
    """Step counting, the limits hit by a recipe and oversized values. Part of ``Interpreter``."""

    @property
    def where(self) -> str:
        """path:line of the statement being run, for limit messages (formatted only then)."""
        stmt, scope = self._running_stmt, self._running_scope
        return f"{scope.source.display_path}:{stmt.lineno}" if scope is not None else ""

    def start_recipe(self) -> None:
        self.objects = []
        self.uncopied = 0
        self.steps = 0
        self.budget_hit = False
        self.notes = []
        self.limits = []
        self.attribute_errors = []
        self.gaps = []

    def limit(self, message: str) -> None:
        """Record that a limit was hit (once per message); the value at hand becomes unknown."""
        self.limit_hits += 1
        if message not in self.limits:
            self.limits.append(message)

    def tick(self, cost: int = 1) -> None:
        self.steps += cost
        if self.steps > MAX_STEPS:
            if not self.budget_hit:
                self.limit(f"step limit ({MAX_STEPS:,} steps per recipe) reached at {self.where}: "
                           "the recipe's values are unknown")
            self.budget_hit = True
            raise BudgetExceeded()

    def charge(self, size: int) -> None:
        """Copies and snapshots of many objects count as steps (one per hundred)."""
        if size >= 100:
            self.tick(size // 100)

    def sized(self, value: Any) -> Any:
        """``value``, or unknown when it is over the value size limits."""
        return self.too_big() if _oversized(value) else value

    def too_big(self) -> Unknown:
        self.limit(f"{self.where}: value size limit ({MAX_VALUE_SIZE:,} elements or characters, "
                   f"{MAX_INT_BITS:,}-bit integers) reached: the value is unknown")
        return UNKNOWN

