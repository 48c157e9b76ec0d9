from __future__ import annotations

from mblint.rulekit import (
    NAME_GPUS_BELOW_LAYOUT,
    WORLD_NOT_DIVISIBLE_BY_DENSE_GRID,
    Example,
    Rule,
    Severity,
    dist_train,
    hf_model,
    int_values,
    min_gpus,
    non_dividing_factor,
    parallel,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")
FIELDS = ["model.tensor_model_parallel_size", "model.pipeline_model_parallel_size", "model.context_parallel_size"]


class WorldDivisibleByDenseGrid(Rule):
    id = "PB001"
    name = "world-divisible-by-dense-grid"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "The world size must be divisible by TP * PP * CP."
    tags = ("parallelism", "world-size")
    supersedes = ("PB002",)
    doc = """## What it does
With a known world size W (`--world-size`, a `# mblint: world-size=N` comment, or the recipe
name's `_<N>gpu_` part), flags W not divisible by
`tensor_model_parallel_size * pipeline_model_parallel_size * context_parallel_size`.
A world size taken from the recipe name only gives a warning.

## Why it matters
The data-parallel size is `W / (TP*PP*CP)`. `ConfigContainer.get_data_parallel_size()` asserts
"world size (...) is not divisible by total_model_size" in `runtime_config_update()`, and
Megatron-Core's `initialize_model_parallel` raises the same at start-up.

## Example
```python
# mblint: world-size=8
cfg.model.tensor_model_parallel_size = 4
cfg.model.context_parallel_size = 4     # 4*1*4 = 16 does not divide 8
```

## Fix
Change the parallel sizes or the number of GPUs; not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1013-1027 (`get_data_parallel_size`);
0.3.1 megatron/bridge/training/config.py:1348-1359; Megatron-Core 0.19.2
megatron/core/parallel_state.py:815-823; skills/mbridge-perf-parallelism-strategies/SKILL.md.
"""
    valid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4\n"
                "cfg.model.context_parallel_size = 2", world_size=8),
        # world size unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 3",
        # TP unknown
        Example("cfg = _pretrain_common()\n" + MODEL + "for tp in (3, 4):\n    cfg.model.tensor_model_parallel_size = tp",
                world_size=8),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 8", world_size=16,
                version="0.3"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4\n"
                "cfg.model.context_parallel_size = 4  # error", world_size=8),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 3  # error",
                world_size=8, version="0.3"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 16  # error",
                function="llama3_8b_pretrain_24gpu_h100_bf16_config"),
        # the name's 8 GPUs cannot hold TP=16 at all: with PB011 selected, its finding replaces this one
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 16  # error",
                function="llama3_8b_pretrain_8gpu_h100_bf16_config"),
    ]

    def check(self, cfg, ctx):
        world = ctx.world_size
        par = parallel(cfg)
        if world is None or not int_values(par.tp, par.pp, par.cp) or dist_train(cfg):
            return
        size = par.tp * par.pp * par.cp
        if size <= 0 or world % size == 0:
            return
        need = min_gpus(par)
        below_layout = ctx.world_size_from_name and isinstance(need, int) and need > world
        source = " (from the recipe name)" if ctx.world_size_from_name else ""
        message = (f"world size {world}{source} is not divisible by TP*PP*CP = "
                   f"{par.tp}*{par.pp}*{par.cp} = {size} (the data-parallel size would be {world}/{size})")
        # the factor that alone does not divide the world size is the edit to point at
        culprit = non_dividing_factor(cfg, world, list(zip(FIELDS, (par.tp, par.pp, par.cp))))
        yield ctx.report(cfg, message, FIELDS, primary=culprit,
                         severity=Severity.WARNING if ctx.world_size_from_name else None,
                         problem=NAME_GPUS_BELOW_LAYOUT if below_layout else WORLD_NOT_DIVISIBLE_BY_DENSE_GRID)
