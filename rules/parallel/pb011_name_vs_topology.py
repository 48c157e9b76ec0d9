from __future__ import annotations

from mblint.rulekit import NAME_GPUS_BELOW_LAYOUT, Example, Rule, Severity, hf_model, min_gpus, parallel

MODEL = hf_model("Qwen/Qwen3-30B-A3B")
FIELDS = ["model.tensor_model_parallel_size", "model.pipeline_model_parallel_size", "model.context_parallel_size",
          "model.expert_model_parallel_size", "model.expert_tensor_parallel_size"]


class NameVsTopology(Rule):
    id = "PB011"
    name = "name-vs-topology"
    severity = Severity.WARNING
    summary = "The GPU count in the recipe name is below the layout's minimum PP * max(TP*CP, EP*ETP)."
    tags = ("parallelism", "world-size", "naming")
    supersedes = ("PB001", "PB002", "LC003")
    doc = """## What it does
For a recipe whose name carries a GPU count (`<model>_<task>_<N>gpu_<hw>_<precision>_config`),
flags N below the minimum GPU count of its layout, `PP * max(TP*CP, EP*ETP)`. (With an
explicit world size, LC003 does the same check and PB001/PB002 report the divisibility.)

## Why it matters
The name is what people and Megatron-Bridge's benchmark runner read to size the job; a layout
that needs more GPUs than the name says will not start on the advertised allocation, or the
name is stale. Some perf recipes are intentionally named for another scale, hence a warning.

## Example
```python
def qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config():
    ...
    cfg.model.pipeline_model_parallel_size = 2
    cfg.model.expert_model_parallel_size = 8     # needs 2 * max(1, 8) = 16 GPUs
```

## Fix
Rename the recipe or change the layout; not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
skills/mbridge-perf-parallelism-strategies/SKILL.md ("Minimum GPU Count");
Megatron-Bridge src/megatron/bridge/recipes/utils/naming.py and scripts/training/recipe_metadata.py
(name pattern; not shipped in the wheels).
"""
    valid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 2\n"
                "cfg.model.expert_model_parallel_size = 8", function="qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"),
        # no GPU count in the name
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 64",
        Example("cfg = _pretrain_common()\n" + MODEL + "for ep in (4, 16):\n    cfg.model.expert_model_parallel_size = ep",
                function="qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 8",
                function="qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config", version="0.3"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 2\n"
                "cfg.model.expert_model_parallel_size = 8  # error",
                function="qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4\n"
                "cfg.model.context_parallel_size = 4  # error",
                function="qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if not ctx.world_size_from_name or ctx.world_size is None:
            return
        par = parallel(cfg)
        need = min_gpus(par)
        if not isinstance(need, int) or need <= ctx.world_size:
            return
        message = (f"the recipe name says {ctx.world_size} GPUs, but its layout needs at least "
                   f"PP*max(TP*CP, EP*ETP) = {par.pp}*max({par.tp}*{par.cp}, {par.ep}*{par.etp}) = {need}")
        yield ctx.report(cfg, message, FIELDS, problem=NAME_GPUS_BELOW_LAYOUT)
