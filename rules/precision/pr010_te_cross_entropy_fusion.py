from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class TeCrossEntropyFusion(Rule):
    id = "PR010"
    name = "te-cross-entropy-fusion"
    severity = Severity.WARNING
    summary = "Cross-entropy loss fusion with the Transformer Engine implementation has known stability issues."
    fixable = True
    requires = ("check:te_cross_entropy_fusion_warned",)
    tags = ("precision", "numerics")
    doc = """## What it does
Flags `model.cross_entropy_loss_fusion = True` with `model.cross_entropy_fusion_impl = "te"`.

## Why it matters
Megatron-Core warns "Transformer Engine cross entropy loss fusion has known stability issues.
Megatron-LM training args validation rejects this combination by default." Megatron-Bridge
accepts it (checked with Megatron-Bridge 0.6.2: only the warning), so the job runs with a loss
kernel its authors advise against.

## Example
```python
cfg.model.cross_entropy_loss_fusion = True
cfg.model.cross_entropy_fusion_impl = "te"
```

## Fix
Set `model.cross_entropy_fusion_impl = "native"`. Unsafe: the same math with another kernel,
but the recipe chose "te" on purpose more often than not (throughput), so mblint does not
switch kernels under `--fix` alone.

## Versions
0.6.x (Megatron-Core 0.19). Megatron-Core 0.16, used with 0.3.x, has no such warning.

## Sources
MCore 0.19.2 megatron/core/model_parallel_config.py:320-325, :536-543; MCore 0.16.1
model_parallel_config.py:246-249 (no warning).
"""
    valid = [
        HF + "cfg.model.cross_entropy_loss_fusion = True\ncfg.model.cross_entropy_fusion_impl = 'native'",
        HF + "cfg.model.cross_entropy_loss_fusion = False\ncfg.model.cross_entropy_fusion_impl = 'te'",
        HF + "cfg.model.cross_entropy_fusion_impl = 'te'\nfor v in [True, False]:\n    cfg.model.cross_entropy_loss_fusion = v",
    ]
    invalid = [
        Example(HF + "cfg.model.cross_entropy_loss_fusion = True\ncfg.model.cross_entropy_fusion_impl = 'te'  # error",
                message="known stability issues", unsafe=True,
                fixed=HF + "cfg.model.cross_entropy_loss_fusion = True\ncfg.model.cross_entropy_fusion_impl = 'native'  # error"),
        Example(HF + "cfg.model.cross_entropy_loss_fusion = True", dotlist=("model.cross_entropy_fusion_impl=te",)),
    ]

    def check(self, cfg, ctx):
        fusion = value(cfg, "model.cross_entropy_loss_fusion", False)
        impl = value(cfg, "model.cross_entropy_fusion_impl", "native")
        if not known(fusion, impl) or fusion is not True or impl != "te":
            return
        yield ctx.report(cfg, "model.cross_entropy_loss_fusion is True with model.cross_entropy_fusion_impl = 'te'; "
                              "Megatron-Core warns that the Transformer Engine fused cross entropy has known stability "
                              "issues (Megatron-LM rejects it); use 'native'",
                         ["model.cross_entropy_loss_fusion", "model.cross_entropy_fusion_impl"],
                         primary="model.cross_entropy_fusion_impl",
                         fixes=[FixIntent("set", "model.cross_entropy_fusion_impl", "native", safe=False,
                                          description="use the native fused cross entropy")])
