from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    format_value,
    hf_model,
    known,
    recompute_modules_allowed,
    selective_recompute_modules,
    selective_recompute_modules_known,
    value,
)

HF = "cfg = _pretrain_common()\n" + hf_model()
SEL = "cfg.model.recompute_granularity = 'selective'\n"

# module -> (field, predicate on the field's value, default, requirement text)
NEEDS = {
    "moe_act": ("model.moe_grouped_gemm", lambda v: v is True, False, "moe_grouped_gemm = True"),
    "mla_up_proj": ("model.multi_latent_attention", lambda v: v is True, False, "multi_latent_attention = True"),
    "gdn_norm_out": ("model.experimental_attention_variant", lambda v: v == "gated_delta_net", None,
                     "experimental_attention_variant = 'gated_delta_net'"),
}


class RecomputeModuleModelCompat(Rule):
    id = "RC004"
    name = "module-model-compat"
    severity = Severity.ERROR
    summary = "A selective-recompute module the model does not have (moe_act without grouped GEMM, mla_up_proj without MLA, gdn_norm_out without gated delta net)."
    tags = ("recompute",)
    doc = """## What it does
With `model.recompute_granularity = "selective"`, flags
- `"moe_act"` in `recompute_modules` without `model.moe_grouped_gemm = True`;
- `"mla_up_proj"` without `model.multi_latent_attention = True`;
- `"gdn_norm_out"` without `model.experimental_attention_variant = "gated_delta_net"` (0.6.x).

## Why it matters
`TransformerConfig.__post_init__` raises "moe_act in recompute_modules is only supported with
moe_grouped_gemm." (and the MLA / gated-delta-net counterparts) at job start (all three
confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_modules = ["mla_up_proj"]   # model without multi-latent attention
```

## Fix
Remove the module, or enable the feature it belongs to. No automatic fix.

## Versions
0.3.x and 0.6.x (`gdn_norm_out` only in 0.6.x; RC003 reports it on 0.3.x).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1784-1802; MCore 0.16.1
transformer_config.py:1213-1222.
"""
    valid = [
        HF + SEL + "cfg.model.moe_grouped_gemm = True\ncfg.model.recompute_modules = ['moe_act']",
        HF + SEL + "cfg.model.recompute_modules = ['mla_up_proj']\ncfg.model.multi_latent_attention = True",
        # HF-derived model: moe_grouped_gemm is not known
        HF + SEL + "cfg.model.recompute_modules = ['moe_act']",
        Example(HF + SEL + "cfg.model.recompute_modules = ['mlp']\ncfg.model.moe_grouped_gemm = False", version="0.3"),
    ]
    invalid = [
        HF + SEL + "cfg.model.moe_grouped_gemm = False\ncfg.model.recompute_modules = ['moe_act']  # error",
        HF + SEL + "cfg.model.multi_latent_attention = False\ncfg.model.recompute_modules = ['core_attn', 'mla_up_proj']  # error",
        HF + SEL + "cfg.model.experimental_attention_variant = None\ncfg.model.recompute_modules = ['gdn_norm_out']  # error",
        Example(HF + SEL + "cfg.model.recompute_modules = ['moe_act']\ncfg.model.moe_grouped_gemm = False  # error",
                version="0.3"),
    ]

    precondition = selective_recompute_modules_known

    def check(self, cfg, ctx):
        modules = selective_recompute_modules(cfg)
        if not known(modules) or not modules:
            return
        for module, (field, ok, default, need) in NEEDS.items():
            if module not in modules:
                continue
            current = value(cfg, field, default)
            if not known(current):
                continue
            if ok(current):
                continue
            if module not in recompute_modules_allowed(cfg):
                continue
            yield ctx.report(cfg, f"model.recompute_modules has {module!r}, but {field} is {format_value(current)}; "
                                  f"{module} recompute needs {need} (TransformerConfig raises at job start)",
                             ["model.recompute_modules", field])
