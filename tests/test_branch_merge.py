"""An ``if`` on an unknown value runs both branches and merges them (README, "How mblint reads
a configuration"): equal values stay known, different ones become unknown, and a value that
only one branch sets is unknown after the ``if``: the other path never set it
(mblint/extract/state.py, ``_merge_slots``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mblint.model import Unknown
from mblint.resolve import Project


def _resolve(tmp_path: Path, body: str):
    recipe = tmp_path / "recipe.py"
    recipe.write_text("from megatron.bridge.training.config import ConfigContainer, TrainingConfig\n\n\n"
                      "def recipe_config(flag):\n"
                      "    cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1))\n"
                      "    sizes = {}\n" + body + "    return cfg\n")
    return Project([], "0.6", tmp_path).resolve_graph(recipe, "recipe_config").build()


@pytest.mark.parametrize("branches", [
    "    if flag:\n        sizes['gbs'] = 8\n",
    "    if flag:\n        pass\n    else:\n        sizes['gbs'] = 8\n",
    "    if flag:\n        sizes['gbs'] = 8\n    else:\n        sizes['other'] = 8\n",
], ids=["if only", "else only", "each its own key"])
def test_a_value_set_in_one_branch_only_is_unknown_after_the_if(tmp_path, branches):
    cfg = _resolve(tmp_path, branches + "    cfg.train.global_batch_size = sizes.get('gbs', 4)\n")
    assert isinstance(cfg.value("train.global_batch_size"), Unknown)


def test_a_value_both_branches_set_alike_stays_known(tmp_path):
    cfg = _resolve(tmp_path, "    if flag:\n        sizes['gbs'] = 8\n    else:\n        sizes['gbs'] = 8\n"
                             "    cfg.train.global_batch_size = sizes.get('gbs', 4)\n")
    assert cfg.value("train.global_batch_size") == 8


def test_a_value_the_branches_set_differently_is_unknown(tmp_path):
    cfg = _resolve(tmp_path, "    if flag:\n        sizes['gbs'] = 8\n    else:\n        sizes['gbs'] = 16\n"
                             "    cfg.train.global_batch_size = sizes.get('gbs', 4)\n")
    assert isinstance(cfg.value("train.global_batch_size"), Unknown)
