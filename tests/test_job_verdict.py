"""A job's verdict is the whole job (issue 31): a recipe's own error is reported when its launch
script or override file is linted, at the recipe's line with the job related (at the job's line
when the recipe is outside the project), once per place and problem, and the exit code follows.
A rule that crashes fails the run on every path (issue 32)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integration_support import run
from mblint.engine import CheckOptions, Engine
from mblint.plugins import LoadedPlugins, load_plugins
from mblint.rulekit import Rule, Severity

# Offline packing with micro-batch 2: Megatron-Bridge 0.6.2 training/config.py:1466-1470
# ("Micro batch size should be 1 when training with packed sequence") -> PK001 on line 10.
RECIPE = """from megatron.bridge.recipes.common import _sft_common
from megatron.bridge.data.packing import PackedSequenceSpecs


def my_sft_config():
    cfg = _sft_common()
    cfg.dataset.enable_offline_packing = True
    cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048, pad_seq_to_mult=1)
    cfg.dataset.seq_length = 2048
    cfg.train.micro_batch_size = 2
    cfg.train.global_batch_size = 32
    return cfg
"""
# In-batch packing with micro-batch 1: 0.6.2 training/config.py:1480-1484 rejects it. The
# recipe sets micro_batch_size = 1 at recipes/ministral3/h100/ministral3.py:84, and
# _sft_common_vlm turns in-batch packing on (recipes/common.py:421).
SHIPPED = "ministral3_3b_sft_1gpu_h100_bf16_config"
SHIPPED_FILE = "megatron/bridge/recipes/ministral3/h100/ministral3.py"


def check(tmp_path: Path, mb06: Path, *paths: str):
    (tmp_path / ".git").mkdir(exist_ok=True)
    result = run(["check", "--no-cache", "--format", "json", "--search-path", str(mb06), *paths], tmp_path)
    return result, json.loads(result.stdout)["findings"]


def places(findings: list[dict]) -> list[tuple]:
    return sorted((f["rule"], f["location"]["path"], f["location"]["line"]) for f in findings)


def related(finding: dict) -> list[tuple]:
    return [(r["location"]["path"], r["location"]["line"], r["message"]) for r in finding["related"]]


def test_a_shipped_recipe_s_own_error_fails_its_launch_script(tmp_path, mb06):
    (tmp_path / "launch.sh").write_text(f"#!/bin/bash\ntorchrun --nproc_per_node=1 scripts/training/run_recipe.py "
                                        f"--recipe {SHIPPED}\n")
    result, findings = check(tmp_path, mb06, "launch.sh")
    assert result.exit_code == 1, result.stderr
    # the job's gap too: the recipe's AutoBridge model has no config.json in the tests' empty cache
    assert places(findings) == [("CV002", "launch.sh", 2), ("PK002", "launch.sh", 2)]
    [finding] = [f for f in findings if f["rule"] == "PK002"]
    own = related(finding)[0]
    assert own[0].endswith(SHIPPED_FILE) and own[1:] == (84, "the recipe's own problem is here")


def test_a_shipped_recipe_s_own_error_fails_its_override_file(tmp_path, mb06):
    (tmp_path / "o.yaml").write_text(f"# mblint: recipe={SHIPPED}\ntrain:\n  train_iters: 10\n")
    result, findings = check(tmp_path, mb06, "o.yaml")
    assert result.exit_code == 1, result.stderr
    assert places(findings) == [("CV002", "o.yaml", 1), ("PK002", "o.yaml", 1)]  # CV002: no config.json


def test_a_project_recipe_s_own_error_is_at_its_line_in_the_override_file_s_job(tmp_path, mb06):
    (tmp_path / "r.py").write_text(RECIPE)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  train_iters: 100\n")
    result, findings = check(tmp_path, mb06, "o.yaml")
    assert result.exit_code == 1, result.stderr
    assert places(findings) == [("PK001", "r.py", 10)]
    [pk001] = [f for f in findings if f["rule"] == "PK001"]
    assert ("o.yaml", 1, "in the job of r.py::my_sft_config with the override file o.yaml") in related(pk001)
    alone, recipe_findings = check(tmp_path, mb06, "r.py")
    assert places(recipe_findings) == places(findings)  # the same error at the same place
    _, both = check(tmp_path, mb06, "r.py", "o.yaml")
    assert places(both) == [("PK001", "r.py", 10)]  # once per place and problem


def test_fix_edits_only_the_files_being_linted(tmp_path, mb06):
    (tmp_path / "r.py").write_text(RECIPE)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  train_iters: 100\n")
    before = {name: (tmp_path / name).read_text() for name in ("r.py", "o.yaml")}
    result = run(["check", "--no-cache", "--fix", "--unsafe-fixes", "--search-path", str(mb06), "o.yaml"], tmp_path)
    assert result.exit_code == 1, result.stderr
    assert {name: (tmp_path / name).read_text() for name in before} == before


def test_a_fix_is_shown_only_where_this_run_would_apply_it(tmp_path, mb06):
    """PK001's fix edits the recipe (micro_batch_size, global_batch_size, the pack): linting
    only the override file, --fix does not apply it (test above), so the text output neither
    shows it nor counts it; linting the recipe too, it does."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "r.py").write_text(RECIPE)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  train_iters: 100\n")
    alone = run(["check", "--no-cache", "--search-path", str(mb06), "o.yaml"], tmp_path).stdout
    both = run(["check", "--no-cache", "--search-path", str(mb06), "o.yaml", "r.py"], tmp_path).stdout
    assert "PK001" in alone and "fix" not in alone, alone
    assert "= unsafe fix: set micro_batch_size to 1" in both and "1 unsafe fix available" in both


class CrashingRule(Rule):
    id = "ZZ901"
    name = "crashing-rule"
    severity = Severity.ERROR
    summary = "Raises on every configuration."
    doc = "".join(f"## {section}\nx\n" for section in ("What it does", "Why it matters", "Example", "Fix",
                                                         "Versions", "Sources"))

    def check(self, cfg, ctx):
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")


@pytest.mark.parametrize("linted", ["r.py", "o.yaml", "launch.sh"])
def test_a_rule_that_crashes_is_an_error_on_every_path(tmp_path, mb06, linted):
    (tmp_path / ".git").mkdir()
    (tmp_path / "r.py").write_text(RECIPE)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  train_iters: 100\n")
    (tmp_path / "launch.sh").write_text("torchrun --nproc_per_node=8 scripts/training/run_recipe.py "
                                        "--recipe llama32_1b_pretrain_config\n")
    engine = Engine(CheckOptions(search_paths=(mb06,)), LoadedPlugins(rules=[*load_plugins().rules, CrashingRule]))
    engine.display_root = tmp_path
    report = engine.check_paths([str(tmp_path / linted)])
    assert report.resolved == 1
    assert [e.message for e in report.errors if "internal error in rule ZZ901" in e.message], report.notes


TRAINING_SCRIPT = """import argparse

from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides
from recipes.r import my_sft_config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config-file", default="o.yaml")
    args, _ = parser.parse_known_args()
    cfg = my_sft_config()
    cfg = process_config_with_overrides(config=cfg, config_filepath=args.config_file)


if __name__ == "__main__":
    main()
"""


def test_the_recipe_its_override_file_and_its_launch_script_give_the_job_the_same_errors(tmp_path, mb06):
    """Issue 31's Done-when: the one job (the recipe with o.yaml: the override file's pairing, the
    training script's --config-file), linted through any of its three kinds of file, has the same
    errors at the same places: PK001 on the recipe's line 10 (see RECIPE)."""
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "r.py").write_text(RECIPE)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=recipes/r.py::my_sft_config\ntrain:\n  train_iters: 100\n")
    (tmp_path / "train.py").write_text(TRAINING_SCRIPT)
    (tmp_path / "launch.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=1 train.py --config-file o.yaml\n")
    errors = {}
    for linted in ("recipes/r.py", "o.yaml", "launch.sh"):
        result, findings = check(tmp_path, mb06, linted)
        assert result.exit_code == 1, (linted, result.stderr)
        errors[linted] = places([f for f in findings if f["severity"] == "error"])
    assert errors == {linted: [("PK001", "recipes/r.py", 10)] for linted in errors}, errors


def test_a_launch_whose_override_file_did_not_parse_is_checked_again_once_it_does(tmp_path, mb06):
    """The override file a launch applies is a dependency of the launch's cached result even when
    it could not be read (main 55683f8 kept only the files applied before it: the SY001 stayed
    after the file was fixed)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "r.py").write_text(RECIPE)
    (tmp_path / "train.py").write_text(TRAINING_SCRIPT)
    (tmp_path / "launch.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=1 train.py --config-file o.yaml\n")
    (tmp_path / "o.yaml").write_text("train: [1\n")
    command = ["check", "--format", "json", "--search-path", str(mb06), "launch.sh"]
    broken = json.loads(run(command, tmp_path).stdout)["findings"]
    assert places(broken) == [("SY001", "o.yaml", 2)]
    (tmp_path / "o.yaml").write_text("train:\n  train_iters: 100\n")
    fixed = json.loads(run(command, tmp_path).stdout)["findings"]
    assert places([f for f in fixed if f["severity"] == "error"]) == [("PK001", "recipes/r.py", 10)]
