from __future__ import annotations

from mblint.rulekit import NAME_GPUS_BELOW_LAYOUT, Example, Rule, Severity, hf_model, min_gpus, parallel

MODEL = hf_model("Qwen/Qwen3-30B-A3B")
FIELDS = ["model.tensor_model_parallel_size", "model.pipeline_model_parallel_size", "model.context_parallel_size",
          "model.expert_model_parallel_size", "model.expert_tensor_parallel_size"]


class LayoutExceedsWorld(Rule):
    id = "LC003"
    name = "layout-exceeds-world-size"
    severity = Severity.INFO
    summary = "The layout's minimum GPU count PP * max(TP*CP, EP*ETP) exceeds the known world size."
    tags = ("long-context", "parallelism", "world-size")
    doc = """## What it does
With a known world size (`--world-size`, a setting, a `# mblint: world-size=N` comment, or the
recipe name's `_<N>gpu_` part: PB011's finding replaces this one there when both are selected), flags a layout whose minimum GPU count
`PP * max(TP*CP, EP*ETP)` exceeds it, and says by how much.

## Why it matters
Megatron-Bridge's long-context guidance: "GPU-count feasibility becomes the real constraint:
very long context can look fine in a single recipe, then become impossible once EP and PP are
added honestly across the full model." The dense `TP*CP` mesh and the expert `EP*ETP` mesh
share each pipeline stage's GPUs, so the minimum is not the product of all sizes. PB001/PB002
report the resulting start-up failure; this finding gives the number of GPUs actually needed.

## Example
```python
# mblint: world-size=16
cfg.model.pipeline_model_parallel_size = 4
cfg.model.context_parallel_size = 8        # 4 * max(1*8, 1*1) = 32 > 16
```

## Fix
Guidance only: lower CP/EP/PP (or TP) or ask for at least the minimum GPU count.

## Versions
0.3.x and 0.6.x.

## Sources
skills/mbridge-perf-moe-long-context/SKILL.md (Pitfalls 1 and 3);
skills/mbridge-perf-parallelism-strategies/SKILL.md ("Minimum GPU Count").
"""
    valid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 2\n"
                "cfg.model.expert_model_parallel_size = 8\ncfg.model.tensor_model_parallel_size = 2", world_size=16),
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 64",
        Example("cfg = _pretrain_common()\n" + MODEL + "for ep in (4, 64):\n    cfg.model.expert_model_parallel_size = ep",
                world_size=8),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 8", world_size=8, version="0.3"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
                "cfg.model.context_parallel_size = 8  # error", world_size=16),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 16  # error",
                world_size=8, version="0.3"),
        # the name's 8 GPUs: with PB011 selected too, its finding replaces this one (mblint/arbitration.py)
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.expert_model_parallel_size = 16  # error",
                function="qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config", message="(from the recipe name)"),
    ]

    def check(self, cfg, ctx):
        if ctx.world_size is None:
            return
        par = parallel(cfg)
        need = min_gpus(par)
        if not isinstance(need, int) or need <= ctx.world_size:
            return
        message = (f"the layout needs at least PP*max(TP*CP, EP*ETP) = {par.pp}*max({par.tp}*{par.cp}, "
                   f"{par.ep}*{par.etp}) = {need} GPUs, but the world size is {ctx.world_size}"
                   f"{' (from the recipe name)' if ctx.world_size_from_name else ''}")
        yield ctx.report(cfg, message, FIELDS, problem=NAME_GPUS_BELOW_LAYOUT if ctx.world_size_from_name else "")
