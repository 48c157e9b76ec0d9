from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    hf_model,
    known,
    selective_recompute_modules,
    selective_recompute_modules_known,
    value,
)

HF = "cfg = _pretrain_common()\n" + hf_model()
SEL = "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_modules = ['shared_experts']\n"


class SharedExpertsRecomputeVsOverlap(Rule):
    id = "RC007"
    name = "shared-experts-recompute-vs-overlap"
    severity = Severity.ERROR
    summary = "Recomputing shared experts cannot be combined with moe_shared_expert_overlap."
    tags = ("recompute", "moe")
    doc = """## What it does
Flags `"shared_experts"` in `model.recompute_modules` (selective recompute) while the model has
shared experts (`moe_shared_expert_intermediate_size` set) and
`model.moe_shared_expert_overlap = True`.

## Why it matters
`TransformerConfig.__post_init__` raises "shared_experts recompute cannot work with
--moe-shared-expert-overlap." at job start.

## Example
```python
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_modules = ["shared_experts"]
cfg.model.moe_shared_expert_overlap = True
```

## Fix
Drop `shared_experts` from the recompute list or turn the shared-expert overlap off. No
automatic fix: it trades memory against speed.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1812-1819; MCore 0.16.1
transformer_config.py:1231-1238.
"""
    valid = [
        HF + SEL + "cfg.model.moe_shared_expert_intermediate_size = 1024\ncfg.model.moe_shared_expert_overlap = False",
        HF + SEL + "cfg.model.moe_shared_expert_intermediate_size = None\ncfg.model.moe_shared_expert_overlap = True",
        # shared-expert size from the HF config: unknown
        HF + SEL + "cfg.model.moe_shared_expert_overlap = True",
        Example(HF + SEL + "cfg.model.moe_shared_expert_overlap = False", version="0.3"),
    ]
    invalid = [
        HF + SEL + "cfg.model.moe_shared_expert_intermediate_size = 1024\ncfg.model.moe_shared_expert_overlap = True  # error",
        Example(HF + SEL + "cfg.model.moe_shared_expert_intermediate_size = 1024\n"
                "cfg.model.moe_shared_expert_overlap = True  # error", version="0.3"),
    ]

    precondition = selective_recompute_modules_known

    def check(self, cfg, ctx):
        modules = selective_recompute_modules(cfg)
        if not known(modules) or not modules or "shared_experts" not in modules:
            return
        size = value(cfg, "model.moe_shared_expert_intermediate_size", None)
        overlap = value(cfg, "model.moe_shared_expert_overlap", False)
        if not known(size, overlap) or size is None or overlap is not True:
            return
        yield ctx.report(cfg, f"model.recompute_modules has 'shared_experts' while model.moe_shared_expert_overlap is True "
                              f"(shared experts of size {size}); shared-expert recompute cannot work with the overlap "
                              f"(TransformerConfig raises at job start)",
                         ["model.recompute_modules", "model.moe_shared_expert_overlap",
                          "model.moe_shared_expert_intermediate_size"])
