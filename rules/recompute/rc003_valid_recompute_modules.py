from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    hf_model,
    known,
    recompute_modules_allowed,
    selective_recompute_modules,
    selective_recompute_modules_known,
    suggest,
)

HF = "cfg = _pretrain_common()\n" + hf_model()


class ValidRecomputeModules(Rule):
    id = "RC003"
    name = "valid-recompute-modules"
    severity = Severity.ERROR
    summary = "Selective recompute lists a module Megatron-Core does not know."
    tags = ("recompute",)
    doc = """## What it does
With `model.recompute_granularity = "selective"`, flags names in `model.recompute_modules`
outside Megatron-Core's allowed set: `core_attn`, `moe_act`, `layernorm`, `mla_up_proj`, `mlp`,
`moe`, `shared_experts` and, on 0.6.x (Megatron-Core 0.19), `gdn_norm_out`; also `mhc`, which
Megatron-Bridge 0.6.2's own DeepSeek-V4 recipes use with a newer Megatron-Core.

## Why it matters
`TransformerConfig.__post_init__` asserts "Invalid choices for recompute_modules: {...}" at job
start (confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_modules = ["core_attn", "mlp_fc1"]
```

## Fix
Use an allowed module name (the message suggests the closest one). No automatic fix.

## Versions
0.3.x (Megatron-Core 0.16: no `gdn_norm_out`) and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1766-1782; MCore 0.16.1
transformer_config.py:1198-1211.
"""
    valid = [
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = ['core_attn', 'mlp']",
        HF + "cfg.model.recompute_granularity = None\ncfg.model.recompute_modules = ['foo']",
        HF + "cfg.model.recompute_granularity = 'selective'\nfor m in [['foo'], ['mlp']]:\n    cfg.model.recompute_modules = m",
        Example(HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = ['moe_act']",
                version="0.3"),
    ]
    invalid = [
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = ['core_attn', 'mlp_fc1']  # error",
        Example(HF + "cfg.model.recompute_granularity = 'selective'\n"
                "cfg.model.recompute_modules = ['gdn_norm_out']  # error", version="0.3"),
        Example(HF + "cfg.model.recompute_granularity = 'selective'",
                dotlist=("model.recompute_modules=[core_attention]",)),
    ]

    precondition = selective_recompute_modules_known

    def check(self, cfg, ctx):
        modules = selective_recompute_modules(cfg)
        if not known(modules) or not modules:
            return
        allowed = recompute_modules_allowed(cfg)
        bad = [m for m in dict.fromkeys(modules) if m not in allowed]
        if not bad:
            return
        hints = [f"{m!r} (did you mean {s!r}?)" if (s := suggest(m, allowed)) else repr(m) for m in bad]
        yield ctx.report(cfg, f"model.recompute_modules has {', '.join(hints)}, which Megatron-Core does not know; "
                              f"allowed are {', '.join(allowed)} (TransformerConfig asserts at job start)",
                         ["model.recompute_modules", "model.recompute_granularity"], primary="model.recompute_modules")
