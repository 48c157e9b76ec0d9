from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, format_value, hf_model, known, mixed_precision_kind, precision_value

HF = "cfg = _pretrain_common()\n" + hf_model()


class Fp8Fp4Exclusive(Rule):
    id = "PR007"
    name = "fp8-fp4-exclusive"
    severity = Severity.ERROR
    summary = "fp8 and fp4 are both set (on cfg.mixed_precision, or on the model without a mixed-precision config)."
    tags = ("precision",)
    doc = """## What it does
Flags `fp8` and `fp4` both set (not None/empty) on `cfg.mixed_precision` (an object), or on
`cfg.model` when no mixed-precision config overwrites them.

## Why it matters
`MixedPrecisionConfig.finalize()` and Megatron-Core's `TransformerConfig.__post_init__` both
raise "fp4 and fp8 cannot be used simultaneously. Please choose one." at job start
(confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.mixed_precision = bf16_mixed()
cfg.mixed_precision.fp8 = "hybrid"
cfg.mixed_precision.fp4 = "e2m1"
```

## Fix
Keep one of them. No automatic fix: the choice changes numerics and the supported hardware.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/mixed_precision.py:97-108; 0.3.1
megatron/bridge/training/mixed_precision.py:93-95; MCore 0.19.2
megatron/core/transformer/transformer_config.py:1454-1455.
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp4 = 'e2m1'",
        # the mixed-precision config overwrites model.fp8 with its own None
        HF + "cfg.mixed_precision = bf16_mixed()\ncfg.model.fp8 = 'hybrid'\ncfg.model.fp4 = 'e2m1'",
        "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp4 = 'e2m1'\n"
        "for v in [None, 'hybrid']:\n    cfg.mixed_precision.fp8 = v",
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp8 = 'hybrid'",
                version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp8 = 'hybrid'\n"
        "cfg.mixed_precision.fp4 = 'e2m1'  # error",
        HF + "cfg.mixed_precision = None\ncfg.model.fp4 = 'e2m1'\ncfg.model.fp8 = 'hybrid'  # error",
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp8 = 'hybrid'\n"
                "cfg.mixed_precision.fp4 = 'e2m1'  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        kind = mixed_precision_kind(cfg)
        if kind not in ("object", "none"):
            return
        fp8, fp8_path = precision_value(cfg, "model", "fp8")
        fp4, fp4_path = precision_value(cfg, "model", "fp4")
        if not known(fp8, fp4) or not fp8 or not fp4:
            return
        yield ctx.report(cfg, f"{fp8_path} = {format_value(fp8)} and {fp4_path} = {format_value(fp4)} are both set; "
                              f"fp8 and fp4 cannot be used together (MixedPrecisionConfig/TransformerConfig raise "
                              f"at job start)", [fp8_path, fp4_path])
