from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, int_values, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class LargeExpertCountRouterDtype(Rule):
    id = "MO017"
    name = "large-expert-count-router-dtype"
    severity = Severity.WARNING
    summary = "32 or more experts routed without moe_router_dtype (fp32 routing)."
    fixable = True
    tags = ("moe", "numerics")
    doc = """## What it does
Flags `model.num_moe_experts >= 32` with `model.moe_router_dtype` None. The expert count is usually
HF-derived (unknown to mblint); the rule fires only when it is known.

## Why it matters
Megatron-Core warns "Using a large number of experts (e.g. >=32) without fp32 routing. Consider
enabling moe_router_dtype for better numerical stability.": router softmax/top-k in bf16 over
many experts loses precision and can destabilise load balancing.

## Example
```python
cfg.model.num_moe_experts = 128
cfg.model.moe_router_dtype = None
```

## Fix
Safe: set `model.moe_router_dtype = "fp32"`.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2794-2802; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1944-1952.
"""
    valid = [
        HF + 'cfg.model.num_moe_experts = 128\ncfg.model.moe_router_dtype = "fp32"',
        HF + 'cfg.model.num_moe_experts = 16\ncfg.model.moe_router_dtype = None',
        HF + 'cfg.model.num_moe_experts = 128',  # router dtype HF-derived (unknown)
        HF + 'cfg.model.moe_router_dtype = None\nfor n in [64]:\n    cfg.model.num_moe_experts = n',
        Example(HF + 'cfg.model.num_moe_experts = 64\ncfg.model.moe_router_dtype = "fp64"', version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(HF + 'cfg.model.num_moe_experts = 128\ncfg.model.moe_router_dtype = None  # finding',
                message="model.num_moe_experts is 128 (>= 32) but model.moe_router_dtype is None",
                fixed=HF + "cfg.model.num_moe_experts = 128\ncfg.model.moe_router_dtype = 'fp32'  # finding",
                unsafe=True),
        Example(HF + 'cfg.model.moe_router_dtype = None  # finding\ncfg.model.num_moe_experts = 32', version="0.3"),
    ]

    def check(self, cfg, ctx):
        experts = value(cfg, "model.num_moe_experts", None)
        dtype = value(cfg, "model.moe_router_dtype", None)
        if not int_values(experts) or experts < 32 or not known(dtype) or dtype:
            return
        yield ctx.report(
            cfg,
            f"model.num_moe_experts is {experts} (>= 32) but model.moe_router_dtype is {dtype!r}; Megatron-Core "
            "warns that routing this many experts without fp32 is numerically unstable",
            ["model.num_moe_experts", "model.moe_router_dtype"],
            fixes=[FixIntent("set", "model.moe_router_dtype", "fp32", safe=True,
                             description='set moe_router_dtype to "fp32"')],
        )
