from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, value

P = "cfg = _pretrain_common()\n"


class AttrOnStringMixedPrecision(Rule):
    id = "PR003"
    name = "attr-on-string-mixed-precision"
    severity = Severity.ERROR
    summary = "An attribute is set on cfg.mixed_precision while it holds a recipe name (a string): AttributeError."
    fixable = False
    tags = ("precision",)
    doc = """## What it does
Flags `cfg.mixed_precision.<field> = ...` executed while `cfg.mixed_precision` is a string
such as `"bf16_mixed"` (the base recipes `_pretrain_common()`, `_sft_common()` and
`_peft_common()` set it to a string).

## Why it matters
A Python `str` has no attributes to set: the recipe function raises `AttributeError: 'str'
object has no attribute 'grad_reduce_in_fp32'` while building the configuration, before any
training starts. Megatron-Bridge resolves the name to a `MixedPrecisionConfig` only later, in
`runtime_config_update()`.

## Example
```python
cfg = _pretrain_common()                      # cfg.mixed_precision = "bf16_mixed"
cfg.mixed_precision.grad_reduce_in_fp32 = False
```

## Fix
Turn the name into an object first:
`cfg.mixed_precision = get_mixed_precision_config(cfg.mixed_precision)` (or `bf16_mixed()`),
then set the field. No automatic fix: it needs an import that mblint does not add.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/mixed_precision.py:432-448 (`get_mixed_precision_config`);
0.6.2 megatron/bridge/training/config.py:1872-1877 (the string is resolved at job start);
0.6.2 megatron/bridge/recipes/common.py:130 (`mixed_precision="bf16_mixed"`);
0.6.2 megatron/bridge/recipes/llama/h100/llama3.py:2020-2021 (the correct pattern).
"""
    valid = [
        P + "cfg.mixed_precision = get_mixed_precision_config('bf16_mixed')\ncfg.mixed_precision.grad_reduce_in_fp32 = False",
        P + "cfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp8 = 'hybrid'",
        # mixed_precision chosen in a loop: unknown
        P + "for mp in ['bf16_mixed', None]:\n    cfg.mixed_precision = mp\nif cfg.mixed_precision:\n    pass",
        Example(P + "cfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.grad_reduce_in_fp32 = False", version="0.3"),
    ]
    invalid = [
        P + "cfg.mixed_precision.grad_reduce_in_fp32 = False  # error",
        P + "mp = cfg.mixed_precision\nmp.grad_reduce_in_fp32 = False  # error",
        P + "cfg.mixed_precision = 'bf16_with_fp8_current_scaling_mixed'\ncfg.mixed_precision.fp8_param_gather = False  # error",
        Example(P + "cfg.mixed_precision.grad_reduce_in_fp32 = False  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        seen = set()
        names = (cfg.mixed_precision_name, value(cfg, "mixed_precision"))
        for origin, target, owner, attribute in cfg.attribute_errors:
            if not isinstance(owner, str) or owner not in names:
                continue
            key = (origin.path, origin.line, origin.column, attribute)
            if key in seen:
                continue
            seen.add(key)
            finding = ctx.report(cfg, f"{target}.{attribute} is set while {target} is the string {owner!r}; a str has no "
                                      f"attribute {attribute!r}, so the recipe raises AttributeError. Convert it first: "
                                      f"{target} = get_mixed_precision_config({owner!r})", ["mixed_precision"],
                             location=origin)
            yield finding
