from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity


class LaunchRejectedRule(Rule):
    id = "LA001"
    name = "launch-rejected"
    severity = Severity.ERROR
    checks_configurations = False
    summary = "A launch line that Megatron-Bridge's runner rejects before training starts."
    doc = """## What it does
Reports a launch command whose arguments `scripts/training/run_recipe.py` (directly, or
through `train.sh`/`setup_experiment.py`) refuses: an unknown option, a trailing argument that
is not `KEY=VALUE`, neither `--recipe` nor `--model`, an unknown `--mode`, a convenience option
without a number, a recipe name that `megatron.bridge.recipes` and
`megatron.bridge.perf_recipes` do not export, or a `KEY=VALUE` the Hydra grammar cannot parse.

## Why it matters
The job fails at start, after the allocation was granted and the container pulled.

## Example
`torchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe llama3_8b_sft_config --micro-batch-size 2`
(the runner spells it `--micro_batch_size` or `-mb`).

## Fix
Correct the argument. No automatic fix.

## Versions
The runner of Megatron-Bridge 0.6.0 and later (`run_recipe.py` with `--model`/`--recipe` and the
convenience options).

## Sources
scripts/training/run_recipe.py (main): `_build_parser`, `_collect_overrides`,
`COMMON_OVERRIDE_FIELDS`, `_infer_mode`; scripts/training/recipe_runner.py `load_recipe`;
scripts/training/setup_experiment.py (options it keeps, the rest forwarded).
"""
    valid = [Example("", launch="torchrun --nproc_per_node=1 scripts/training/run_recipe.py "
                                 "--recipe llama32_1b_pretrain_config train.micro_batch_size=1\n")]
    invalid = [Example("", launch="torchrun --nproc_per_node=1 scripts/training/run_recipe.py "
                                   "--recipe llama32_1b_pretrain_config --micro-batch-size 2  # error\n"),
               Example("", launch="torchrun --nproc_per_node=1 scripts/training/run_recipe.py "
                                   "--recipe no_such_model_pretrain_config  # error\n", message="not found")]
