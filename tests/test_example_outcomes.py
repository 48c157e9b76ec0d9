"""An invalid example's stated outcome (mblint.testing.stated_outcome_problems): the message,
the fixed recipe body and override file, and whether the fix needs --unsafe-fixes."""

from __future__ import annotations

import pytest
from fix_rules import make_rule

from mblint.testing import Example, stated_outcome_problems

# _pretrain_common() sets micro_batch_size = 2: a safe fix adds an assignment (replacing a
# value the example wrote would make it unsafe, mblint.rule._keeping_intent).
SAFE = make_rule("TS101", "train.micro_batch_size", 2, 1, safe=True)
UNSAFE = make_rule("TS102", "train.micro_batch_size", 2, 1, safe=False)
UNSAFE_3 = make_rule("TS103", "train.micro_batch_size", 3, 1, safe=False)
BODY = "cfg = _pretrain_common()"
FIXED = "cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1"


def problems(rule, example, mb06, tmp_path):
    return stated_outcome_problems(rule, example, tmp_path, [mb06])


@pytest.mark.parametrize("rule,unsafe", [(SAFE, False), (UNSAFE, True)])
def test_the_stated_safety_of_a_fix_is_checked(rule, unsafe, mb06, tmp_path):
    assert problems(rule, Example(BODY, fixed=FIXED, unsafe=unsafe), mb06, tmp_path / "right") == []
    wrong = problems(rule, Example(BODY, fixed=FIXED, unsafe=not unsafe), mb06, tmp_path / "wrong")
    assert len(wrong) == 1 and ("stated unsafe" in wrong[0] or "stated safe" in wrong[0])


def test_a_wrong_fixed_body_or_message_is_reported(mb06, tmp_path):
    found = problems(SAFE, Example(BODY, message="is 3", fixed=BODY), mb06, tmp_path)
    assert len(found) == 2 and "no message contains 'is 3'" in found[0] and "--fix --unsafe-fixes gives" in found[1]


def test_an_override_file_fix_is_stated_with_fixed_yaml(mb06, tmp_path):
    example = Example("cfg = _pretrain_common()", yaml="train:\n  micro_batch_size: 3  # error\n",
                      message="is 3", fixed_yaml="train:\n  micro_batch_size: 1  # error\n", unsafe=True)
    assert problems(UNSAFE_3, example, mb06, tmp_path / "right") == []
    unchanged = Example(example.code, yaml=example.yaml, fixed_yaml=example.yaml)
    assert "--fix --unsafe-fixes gives" in problems(UNSAFE_3, unchanged, mb06, tmp_path / "wrong")[0]


def test_unsafe_without_a_stated_fix_is_a_mistake(mb06, tmp_path):
    assert problems(SAFE, Example(BODY, unsafe=False), mb06, tmp_path) == [
        "unsafe= says how the stated fix is applied, but none is stated (fixed= or fixed_yaml=)"]
