from __future__ import annotations

from mblint.rulekit import (
    NAME_GPUS_BELOW_LAYOUT,
    WORLD_NOT_DIVISIBLE_BY_DENSE_GRID,
    Example,
    Rule,
    Severity,
    hf_model,
    int_values,
    min_gpus,
    non_dividing_factor,
    parallel,
)

MODEL = hf_model("Qwen/Qwen3-30B-A3B")
FIELDS = ["model.expert_tensor_parallel_size", "model.expert_model_parallel_size", "model.pipeline_model_parallel_size"]


class WorldDivisibleByExpertGrid(Rule):
    id = "PB002"
    name = "world-divisible-by-expert-grid"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "The world size must be divisible by ETP * EP * PP."
    tags = ("parallelism", "world-size", "moe")
    doc = """## What it does
With a known world size W, flags W not divisible by
`expert_tensor_parallel_size * expert_model_parallel_size * pipeline_model_parallel_size`
(ETP defaults to 1 when EP > 1 and ETP is None, as Megatron-Bridge sets it; otherwise to
TP). When the expert grid divides a dense grid that does not divide W, the dense grid is the
problem (PB001's finding replaces this one when both rules are selected). A world size taken from the recipe name only gives a warning.

## Why it matters
The expert data-parallel size is `W / (ETP*EP*PP)`; Megatron-Core's
`initialize_model_parallel` raises "world_size (...) is not divisible by
expert_tensor_model_pipeline_parallel size (...)" at distributed start-up, after the
allocation.

## Example
```python
# mblint: world-size=8
cfg.model.expert_model_parallel_size = 16
```

## Fix
Change EP/ETP/PP or the number of GPUs; not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
Megatron-Core 0.19.2 megatron/core/parallel_state.py:870-884; 0.6.2
megatron/bridge/models/transformer_config.py:87-88 (ETP default 1 when EP > 1);
skills/mbridge-perf-parallelism-strategies/SKILL.md ("DP size is always implicit").
"""
    valid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 8", world_size=16),
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 16",
        Example("cfg = _pretrain_common()\n" + MODEL + "for ep in (8, 16):\n    cfg.model.expert_model_parallel_size = ep",
                world_size=8),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 4", world_size=8,
                version="0.3"),
    ]
    invalid = [
        # the name's 64 GPUs cannot hold EP=64 x PP=8 at all: with PB011 selected, its finding replaces this one
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 8\n"
                "cfg.model.expert_model_parallel_size = 64  # error",
                function="deepseek_v3_pretrain_64gpu_h100_bf16_config"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 16  # error",
                world_size=8),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 4\n"
                "cfg.model.expert_tensor_parallel_size = 4  # error", world_size=8, version="0.3"),
        # the name's 96 GPUs hold EP=64 (PB011 silent) but do not divide by it
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 64  # error",
                function="deepseek_v3_pretrain_96gpu_h100_bf16_config"),
    ]

    def check(self, cfg, ctx):
        world = ctx.world_size
        par = parallel(cfg)
        if world is None or not int_values(par.tp, par.pp, par.cp, par.ep, par.etp):
            return
        expert = par.etp * par.ep * par.pp
        dense = par.tp * par.pp * par.cp
        if expert <= 0 or world % expert == 0:
            return
        need = min_gpus(par)
        if ctx.world_size_from_name and isinstance(need, int) and need > world:
            problem = NAME_GPUS_BELOW_LAYOUT
        elif dense > 0 and world % dense != 0 and dense % expert == 0:
            problem = WORLD_NOT_DIVISIBLE_BY_DENSE_GRID  # the dense grid's size is what does not divide
        else:
            problem = ""
        source = " (from the recipe name)" if ctx.world_size_from_name else ""
        message = (f"world size {world}{source} is not divisible by ETP*EP*PP = "
                   f"{par.etp}*{par.ep}*{par.pp} = {expert} (the expert data-parallel size would be {world}/{expert})")
        # the factor that alone does not divide the world size is the edit to point at
        sizes = {"model.expert_tensor_parallel_size": par.etp, "model.expert_model_parallel_size": par.ep,
                 "model.pipeline_model_parallel_size": par.pp}
        culprit = non_dividing_factor(cfg, world, [(p, sizes[p]) for p in FIELDS if p in sizes])
        yield ctx.report(cfg, message, FIELDS, primary=culprit,
                         severity=Severity.WARNING if ctx.world_size_from_name else None, problem=problem)
