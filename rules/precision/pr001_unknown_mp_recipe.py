from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, known, schema_of, suggest


class UnknownMixedPrecisionRecipe(Rule):
    id = "PR001"
    name = "unknown-mp-recipe"
    severity = Severity.ERROR
    summary = "cfg.mixed_precision names a mixed-precision recipe that Megatron-Bridge does not register."
    fixable = True
    tags = ("precision",)
    doc = """## What it does
Flags `cfg.mixed_precision = "<name>"` (or a YAML/command-line override of it) when the name,
with hyphens read as underscores, is not one of the mixed-precision recipes the release
registers (`bf16_mixed`, `bf16_with_fp8_current_scaling_mixed`, ...; the list comes from the
schema's `mixed_precision_recipes`).

## Why it matters
The string is resolved only at job start by `get_mixed_precision_config()` inside
`runtime_config_update()`, which raises "Unknown mixed-precision recipe 'bf16_mixd'. Available
recipes: ..." on every rank after the allocation (confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg = _pretrain_common()
cfg.mixed_precision = "bf16_mixd"
```

## Fix
Use the closest registered name (suggested in the message). Safe when the suggestion is what
you meant; check it, since precision recipes differ (fp8 vs bf16).

## Versions
0.3.x and 0.6.x (each release's own list: 0.6 adds the nvfp4 Nemotron-3 recipes).

## Sources
0.6.2 megatron/bridge/training/mixed_precision.py:432-448 (`get_mixed_precision_config`,
`name.replace("-", "_")`, ValueError), :167-182 (`register` adds both spellings);
0.6.2 megatron/bridge/training/config.py:1873-1877; 0.3.1
megatron/bridge/training/mixed_precision.py:406-422, config.py:1860-1864.
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16_mixed'",
        "cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16-with-fp8-current-scaling-mixed'",
        "cfg = _pretrain_common()\ncfg.mixed_precision = None",
        "cfg = _pretrain_common()\nfor name in ['a', 'b']:\n    cfg.mixed_precision = name",
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16_with_mxfp8_mixed'", version="0.3"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16_mixd'  # error",
                message="did you mean 'bf16_mixed'?",
                fixed="cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16_mixed'  # error", unsafe=True),
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = 'nemotron_3_super_bf16_with_nvfp4_mixed'  # error",
                version="0.3"),
        Example("cfg = _pretrain_common()", dotlist=("mixed_precision=fp8_mixed",)),
        # no name close enough to propose: the message lists them, no fix
        Example("cfg = _pretrain_common()", yaml="mixed_precision: bf16  # error\n", message="(known: bf16_mixed, ",
                fixed_yaml="mixed_precision: bf16  # error\n"),
    ]

    def check(self, cfg, ctx):
        value = cfg.value("mixed_precision")
        if not known(value) or not isinstance(value, str):
            return
        names = schema_of(cfg).mixed_precision_recipes
        if not names:
            return
        canonical = sorted({n.replace("-", "_") for n in names})
        if value.replace("-", "_") in canonical:
            return
        close = suggest(value.replace("-", "_"), canonical)
        message = f"mixed_precision = {value!r} is not a registered mixed-precision recipe; " \
                  f"get_mixed_precision_config() raises ValueError at job start"
        fixes = []
        if close:
            message += f"; did you mean {close!r}?"
            fixes = [FixIntent("set", "mixed_precision", close, safe=False, description=f"use {close!r}")]
        else:
            message += f" (known: {', '.join(canonical)})"
        yield ctx.report(cfg, message, ["mixed_precision"], primary="mixed_precision", fixes=fixes)
