"""``rulekit.is_number``: the one test the range rules (SC002, OT023, OT017, OF007, OT013) make
before comparing a value: known, present, an int or a float, never a bool (``True`` compares as
1: an ``hf_validation_proportion = True`` is no proportion of 1 to report)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mblint.model import ABSENT, UNKNOWN
from mblint.rulekit import is_number

RULES = Path(__file__).resolve().parent.parent / "rules"
RANGE_RULES = ("scheduler/sc002_scheduler_ranges.py", "general/ot023_nvrx_straggler_settings.py",
               "general/ot017_sft_data_source.py", "offload/of007_fine_grained_offload_ranges.py",
               "general/ot013_override_value_type.py")


@pytest.mark.parametrize("value", [0, -3, 1.5, 0.0, float("inf")])
def test_ints_and_floats_are_numbers(value):
    assert is_number(value)


@pytest.mark.parametrize("value", [True, False, None, "0.5", UNKNOWN, ABSENT, [1]])
def test_bools_unknowns_and_others_are_not(value):
    assert not is_number(value)


@pytest.mark.parametrize("rule", RANGE_RULES)
def test_the_range_rules_ask_the_one_helper(rule):
    tree = ast.parse((RULES / rule).read_text(encoding="utf-8"))
    own = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and "number" in node.name]
    assert own == []
    assert "is_number(" in ast.unparse(tree)
