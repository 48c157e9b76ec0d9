from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()
GPT = ("cfg = _pretrain_common()\nfrom megatron.bridge.models import GPTModelProvider\n"
       "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n")


class SelectiveNoneFillsCoreAttn(Rule):
    id = "RC005"
    name = "selective-none-fills-core-attn"
    severity = Severity.WARNING
    summary = "Selective recompute with recompute_modules=None silently recomputes only core_attn."
    fixable = True
    tags = ("recompute",)
    doc = """## What it does
Flags `model.recompute_granularity = "selective"` when `model.recompute_modules` is None
(its default), known to be None after the recipe and overrides.

## Why it matters
Megatron-Core replaces a None `recompute_modules` with `["core_attn"]` without a message.
With Transformer Engine's fused attention, recomputing `core_attn` often saves nothing (MCore
itself warns about it), so "selective recompute" may be a no-op where the author expected to
save memory in `mlp`, `moe_act` or `layernorm`.

## Example
```python
cfg.model.recompute_granularity = "selective"   # recompute_modules left at None
```

## Fix
Set an explicit list, e.g. `recompute_modules = ["core_attn"]` to keep today's behaviour, or
the modules you meant (`["mlp"]`, `["moe_act", "layernorm"]`); `[]` is a valid "no
recompute" control. Keeping `["core_attn"]` is safe; other lists change memory and speed.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:546 (default None), :1763-1764
(None becomes ["core_attn"]), :1801-1807 (core_attn warning with Transformer Engine).
"""
    valid = [
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = ['core_attn']",
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = []",
        HF + "cfg.model.recompute_granularity = None",
        # recompute_modules assigned in a loop: unknown
        HF + "cfg.model.recompute_granularity = 'selective'\nfor m in [['mlp'], None]:\n    cfg.model.recompute_modules = m",
        Example(HF + "cfg.model.recompute_granularity = 'selective'\n"
                "cfg.model.recompute_modules = ['mlp']", version="0.3"),
    ]
    invalid = [
        # the same behaviour, but it replaces what the recipe wrote: unsafe
        Example(HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = None  # error",
                message="which Megatron-Core silently replaces with ['core_attn']", unsafe=True,
                fixed=HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = ['core_attn']  # error"),
        # left at the default of a provider class mblint knows: the assignment is added, a safe fix
        # (an AutoBridge model without its config.json may be one whose class sets a list)
        Example(GPT + "cfg.model.recompute_granularity = 'selective'  # error", unsafe=False,
                fixed=GPT + "cfg.model.recompute_granularity = 'selective'  # error\ncfg.model.recompute_modules = ['core_attn']"),
        Example(HF + "cfg.model.recompute_modules = None",
                dotlist=("model.recompute_granularity=selective",)),
        Example(HF + "cfg.model.recompute_modules = None  # error\n"
                "cfg.model.recompute_granularity = 'selective'", version="0.3"),
    ]

    def check(self, cfg, ctx):
        granularity = value(cfg, "model.recompute_granularity", None)
        modules = value(cfg, "model.recompute_modules", None)
        if granularity != "selective" or not known(modules) or modules is not None:
            return
        message = ("model.recompute_granularity is 'selective' with model.recompute_modules = None, which "
                   "Megatron-Core silently replaces with ['core_attn']; with Transformer Engine's fused attention "
                   "that often saves no memory. Set the modules explicitly")
        yield ctx.report(cfg, message, ["model.recompute_granularity", "model.recompute_modules"],
                         fixes=[FixIntent("set", "model.recompute_modules", ["core_attn"], safe=True,
                                          description="make the current behaviour explicit")])
