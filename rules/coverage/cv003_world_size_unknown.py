from __future__ import annotations

from mblint.rulekit import COVERAGE_TAG, Example, Rule, Severity, hf_model, int_values, parallel

WORLD_SIZE_TAG = "world-size"


class WorldSizeUnknown(Rule):
    id = "CV003"
    name = "world-size-unknown"
    severity = Severity.INFO
    summary = "The job's world size is unknown: the checks that divide it into parallel groups did not run."
    tags = (COVERAGE_TAG,)
    doc = """## What it does
Reports a job whose parallel layout (TP, PP, CP) is known but whose world size (the number of
GPUs it runs on) is not: no `--world-size`, no `world-size` in the settings, no
`# mblint: world-size=N` comment in the recipe's file, no `_<N>gpu_` in the recipe's name and
no launcher that fixes it. It lands on the recipe's `def` line and names the rules that needed
the world size (those tagged `world-size`, `mblint rules` lists them).

## Why it matters
The data-parallel size is the world size divided by TP * PP * CP; without it, the checks that
the world divides into the model-parallel and expert grids, that the global batch divides by
micro-batch times data-parallel size, and that the layout fits the GPUs did not run. Info, not a
warning: the rest of the job was checked, and a recipe is often written for several cluster
sizes; the finding says how to give the size for a full check.

## Example
```python
def llama3_8b_pretrain_config():      # no GPU count in the name, no comment, no option
    cfg.model.tensor_model_parallel_size = 4
```

## Fix
Give the world size: `mblint check --world-size 64`, `world-size = 64` in the settings, or a
`# mblint: world-size=64` comment in the recipe's file. No automatic fix.

## Versions
All.

## Sources
0.6.2 megatron/bridge/training/config.py:1013-1027 (`get_data_parallel_size`: the world size
over TP * PP * CP).
"""
    valid = [
        Example("cfg = _pretrain_common()\ncfg.model = None", world_size=8),
        Example("cfg = _pretrain_common()\n" +
                hf_model("meta-llama/Llama-3.1-8B") +
                "cfg.model.tensor_model_parallel_size = 2", world_size=8),
        Example("cfg = _pretrain_common()\n" +
                hf_model("meta-llama/Llama-3.1-8B") +
                "cfg.model.tensor_model_parallel_size = 2", function="llama3_8b_pretrain_8gpu_config"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\n" +
                hf_model("meta-llama/Llama-3.1-8B") +
                "cfg.model.tensor_model_parallel_size = 2",
                message="example_config: the world size is unknown, so the checks that need it did not run"),
    ]

    def check(self, cfg, ctx):
        if ctx.world_size is not None or ctx.world_size_source == "launch":
            return  # a launch line that leaves it unknown says so itself, at the launch line
        par = parallel(cfg)
        if not int_values(par.tp, par.pp, par.cp):
            return  # the checks that need the world size need these too
        needing = sorted(rule.id for rule in ctx.planned_rules if WORLD_SIZE_TAG in (rule.tags or ()))
        which = f" ({', '.join(needing)})" if needing else ""
        yield ctx.report(cfg, (
            f"{cfg.recipe.function}: the world size is unknown, so the checks that need it did not run{which}: the "
            "world divided by TP * PP * CP and by the expert grid, the global batch by micro-batch times "
            "data-parallel size; give it with --world-size N, `world-size` in the settings or a "
            "`# mblint: world-size=N` comment in the recipe's file"), location=cfg.recipe.origin())
