from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()
SEL = "cfg.model.recompute_granularity = 'selective'\n"


class CoreAttnWithTe(Rule):
    id = "RC010"
    name = "core-attn-with-te"
    severity = Severity.INFO
    summary = "Selective recompute of core_attn with Transformer Engine often saves no memory."
    tags = ("recompute", "performance")
    doc = """## What it does
Flags an explicit `"core_attn"` in `model.recompute_modules` (selective recompute) when
`model.transformer_impl = "transformer_engine"`. (A `None` list, which Megatron-Core fills with
`["core_attn"]`, is RC005's case.)

## Why it matters
With Transformer Engine the core attention is usually the fused kernel, which keeps no large
activations; Megatron-Core warns "For fused attention, you have no need to set 'core_attn' to
recompute. Please check that the core_attn recompute is really needed." The recompute then
costs time for no memory.

## Example
```python
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_modules = ["core_attn"]
```

## Fix
Measure against `recompute_modules = []` (or against recomputing `mlp`/`layernorm`). Not an
automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1804-1810; Megatron-Bridge
recompute skill notes (SKILL.md:26,188).
"""
    valid = [
        HF + SEL + "cfg.model.recompute_modules = ['mlp']",
        HF + SEL + "cfg.model.transformer_impl = 'local'\ncfg.model.recompute_modules = ['core_attn']",
        HF + SEL + "for m in [['core_attn'], []]:\n    cfg.model.recompute_modules = m",
        Example(HF + "cfg.model.recompute_granularity = None\ncfg.model.recompute_modules = ['core_attn']", version="0.3"),
    ]
    invalid = [
        HF + SEL + "cfg.model.transformer_impl = 'transformer_engine'\ncfg.model.recompute_modules = ['core_attn', 'mlp']  # error",
        Example(HF + SEL + "cfg.model.transformer_impl = 'transformer_engine'\n"
                "cfg.model.recompute_modules = ['core_attn']  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        granularity = value(cfg, "model.recompute_granularity", None)
        modules = value(cfg, "model.recompute_modules", None)
        impl = value(cfg, "model.transformer_impl", "transformer_engine")
        if not known(granularity, modules, impl) or granularity != "selective" or impl != "transformer_engine":
            return
        if not isinstance(modules, (list, tuple)) or "core_attn" not in modules:
            return
        yield ctx.report(cfg, "model.recompute_modules has 'core_attn' with model.transformer_impl = 'transformer_engine'; "
                              "Transformer Engine's fused attention keeps little activation memory, so this recompute "
                              "often costs time for nothing (Megatron-Core warns); compare with recompute_modules = []",
                         ["model.recompute_modules", "model.recompute_granularity"], primary="model.recompute_modules")
