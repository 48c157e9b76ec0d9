from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class Bf16Fp16Exclusive(Rule):
    id = "PR004"
    name = "bf16-fp16-exclusive"
    severity = Severity.ERROR
    summary = "bf16 and fp16 are both True on the model or the optimizer (or on the mixed-precision config)."
    tags = ("precision",)
    doc = """## What it does
Flags `bf16 = True` together with `fp16 = True` on `mixed_precision` (an object), or, when no
mixed-precision config will overwrite them, on `model` or `optimizer`.

## Why it matters
With both set, Megatron-Core's `TransformerConfig.__post_init__` raises "Only one of
self.fp16: True and self.bf16 True should be True." at job start (confirmed with
Megatron-Bridge 0.6.2), and Megatron-Bridge's model/optimizer precision check rejects the
mismatch. When `cfg.mixed_precision` is set, its values are copied onto model and optimizer,
so only its own pair matters.

## Example
```python
cfg.mixed_precision = None
cfg.model.bf16 = True
cfg.model.fp16 = True
```

## Fix
Keep one of them (usually bf16). No automatic fix: the choice changes numerics.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1314-1317; 0.6.2 megatron/bridge/training/config.py:1984-2000
(`_validate_mixed_precision_consistency`); 0.6.2 megatron/bridge/training/mixed_precision.py:113-158.
"""
    valid = [
        HF + "cfg.mixed_precision = None\ncfg.model.bf16 = True\ncfg.model.fp16 = False",
        # the mixed-precision config overwrites model.fp16 with False
        HF + "cfg.mixed_precision = bf16_mixed()\ncfg.model.fp16 = True",
        HF + "cfg.mixed_precision = None\ncfg.model.bf16 = True\nfor f in [True, False]:\n    cfg.model.fp16 = f",
        Example(HF + "cfg.mixed_precision = None\ncfg.optimizer.bf16 = True\ncfg.optimizer.fp16 = False", version="0.3"),
    ]
    invalid = [
        HF + "cfg.mixed_precision = None\ncfg.model.bf16 = True\ncfg.model.fp16 = True  # error",
        HF + "cfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp16 = True  # error",
        Example(HF + "cfg.mixed_precision = None\ncfg.optimizer.bf16 = True\ncfg.optimizer.fp16 = True  # error",
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        mp = value(cfg, "mixed_precision", None)
        mp_object = cfg.type_of("mixed_precision") is not None
        owners = []
        if mp_object:
            owners.append("mixed_precision")
        elif known(mp) and mp is None:
            owners += ["model", "optimizer"]
        for owner in owners:
            bf16, fp16 = value(cfg, f"{owner}.bf16"), value(cfg, f"{owner}.fp16")
            if known(bf16, fp16) and bf16 is True and fp16 is True:
                yield ctx.report(cfg, f"{owner}.bf16 and {owner}.fp16 are both True; only one half-precision "
                                      f"format can be used (Megatron-Core raises at job start)",
                                 [f"{owner}.bf16", f"{owner}.fp16"])
