from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    format_value,
    hf_model,
    known,
    precision_value,
    selective_recompute_modules,
    selective_recompute_modules_known,
)

HF = "cfg = _pretrain_common()\n" + hf_model()
MP = HF + "cfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp8 = 'hybrid'\ncfg.model.recompute_granularity = 'selective'\n"


class Fp8DelayedMoeActLayernorm(Rule):
    id = "RC008"
    name = "fp8-delayed-moe-act-layernorm"
    severity = Severity.ERROR
    summary = "FP8 delayed scaling does not support moe_act or layernorm selective recompute."
    tags = ("recompute", "precision")
    doc = """## What it does
Flags `"moe_act"` or `"layernorm"` in `model.recompute_modules` (selective recompute) when the
model runs FP8 (`fp8` set) with `fp8_recipe = "delayed"`, read after `cfg.mixed_precision`
copied its values onto the model.

## Why it matters
`TransformerConfig.__post_init__` raises "Delayed scaling does not support moe_act and
layernorm recompute for fp8." at job start (confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.mixed_precision = "bf16_with_fp8_delayed_scaling_mixed"   # as an object: bf16_mixed() + fp8 delayed
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_modules = ["layernorm"]
```

## Fix
Use a current-scaling or MXFP8 recipe, or drop these modules from the recompute list. No
automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1821-1826; 0.6.2
megatron/bridge/training/mixed_precision.py:113-158 (setup copies fp8/fp8_recipe onto the model).
"""
    valid = [
        MP + "cfg.mixed_precision.fp8_recipe = 'tensorwise'\ncfg.model.recompute_modules = ['layernorm']",
        MP + "cfg.mixed_precision.fp8_recipe = 'delayed'\ncfg.model.recompute_modules = ['core_attn']",
        MP + "cfg.model.recompute_modules = ['moe_act']\nfor r in ['delayed', 'mxfp8']:\n    cfg.mixed_precision.fp8_recipe = r",
        Example(MP + "cfg.mixed_precision.fp8_recipe = 'tensorwise'\ncfg.model.recompute_modules = ['layernorm']",
                version="0.3"),
    ]
    invalid = [
        MP + "cfg.mixed_precision.fp8_recipe = 'delayed'\ncfg.model.recompute_modules = ['layernorm']  # error",
        Example(MP + "cfg.model.recompute_modules = ['moe_act', 'layernorm']\n"
                "cfg.mixed_precision.fp8_recipe = 'delayed'  # error", version="0.3"),
    ]

    precondition = selective_recompute_modules_known

    def check(self, cfg, ctx):
        modules = selective_recompute_modules(cfg)
        if not known(modules) or not modules:
            return
        hit = [m for m in ("moe_act", "layernorm") if m in modules]
        if not hit:
            return
        fp8, fp8_path = precision_value(cfg, "model", "fp8")
        recipe, recipe_path = precision_value(cfg, "model", "fp8_recipe")
        if not known(fp8, recipe) or not fp8 or recipe != "delayed":
            return
        yield ctx.report(cfg, f"model.recompute_modules has {', '.join(map(repr, hit))} while the model runs FP8 "
                              f"({fp8_path} = {format_value(fp8)}) with {recipe_path} = 'delayed'; delayed scaling does "
                              f"not support moe_act and layernorm recompute (TransformerConfig raises at job start)",
                         ["model.recompute_modules", recipe_path, fp8_path])
