from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, has_check, known, megatron_fsdp, value

MP = "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.fp8 = 'e4m3'\n"
REUSE = "mixed_precision.reuse_grad_buf_for_mxfp8_param_ag"


class Mxfp8ParamGatherReuseBuf(Rule):
    id = "PR008"
    name = "mxfp8-param-gather-reuse-buf"
    severity = Severity.ERROR
    summary = "MXFP8 with fp8_param_gather needs mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=True (without Megatron-FSDP)."
    fixable = True
    tags = ("precision",)
    doc = """## What it does
Flags a mixed-precision config with `fp8_param_gather = True` and `fp8_recipe = "mxfp8"` but
`reuse_grad_buf_for_mxfp8_param_ag = False`, when Megatron-FSDP is off.

## Why it matters
`ConfigContainer.validate()` (0.6.x) and `MixedPrecisionConfig.finalize()` (0.3.x) assert
"When fp8_param_gather=True and fp8_recipe='mxfp8', reuse_grad_buf_for_mxfp8_param_ag must be
set to True" at job start (confirmed with Megatron-Bridge 0.6.2). On 0.6.x the check is skipped
with Megatron-FSDP, which turns the buffer reuse off itself.

## Example
```python
cfg.mixed_precision = bf16_mixed()
cfg.mixed_precision.fp8 = "e4m3"
cfg.mixed_precision.fp8_recipe = "mxfp8"
cfg.mixed_precision.fp8_param_gather = True
```

## Fix
Set `cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = True` (safe: what the
`bf16_with_mxfp8_mixed` recipe does), or use the `bf16_with_mxfp8_mixed()` recipe.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1347-1359; 0.6.2
megatron/bridge/training/mixed_precision.py:255-266 (`bf16_with_mxfp8_mixed`); 0.3.1
megatron/bridge/training/mixed_precision.py:87-92.
"""
    valid = [
        MP + "cfg.mixed_precision.fp8_recipe = 'mxfp8'\ncfg.mixed_precision.fp8_param_gather = True\n"
        "cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = True",
        MP + "cfg.mixed_precision.fp8_recipe = 'tensorwise'\ncfg.mixed_precision.fp8_param_gather = True",
        MP + "cfg.mixed_precision.fp8_recipe = 'mxfp8'\ncfg.mixed_precision.fp8_param_gather = True\n"
        "cfg.ddp.use_megatron_fsdp = True",
        MP + "cfg.mixed_precision.fp8_recipe = 'mxfp8'\nfor v in [True, False]:\n    cfg.mixed_precision.fp8_param_gather = v",
        Example(MP + "cfg.mixed_precision.fp8_recipe = 'mxfp8'", version="0.3"),
    ]
    invalid = [
        # bf16_mixed() leaves the reuse off: the assignment is added, a safe fix
        Example(MP + "cfg.mixed_precision.fp8_recipe = 'mxfp8'\ncfg.mixed_precision.fp8_param_gather = True  # error",
                message="MXFP8 parameter all-gather needs it True", unsafe=False,
                fixed=MP + "cfg.mixed_precision.fp8_recipe = 'mxfp8'\ncfg.mixed_precision.fp8_param_gather = True  # error\n"
                      "cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = True"),
        Example(MP + "cfg.mixed_precision.fp8_param_gather = True\ncfg.mixed_precision.fp8_recipe = 'mxfp8'  # error",
                version="0.3"),
        Example(MP + "cfg.mixed_precision.fp8_recipe = 'mxfp8'\ncfg.mixed_precision.fp8_param_gather = True\n"
                "cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = True",
                dotlist=("mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=false",)),
    ]

    def check(self, cfg, ctx):
        if cfg.type_of("mixed_precision") is None:
            return
        gather = value(cfg, "mixed_precision.fp8_param_gather", False)
        recipe = value(cfg, "mixed_precision.fp8_recipe", "tensorwise")
        reuse = value(cfg, REUSE, False)
        if not known(gather, recipe, reuse) or not gather or recipe != "mxfp8" or reuse:
            return
        if has_check(cfg, "mxfp8_reuse_check_skipped_with_fsdp") and megatron_fsdp(cfg) is not False:
            return
        message = ("mixed_precision.fp8_param_gather is True with fp8_recipe 'mxfp8', but "
                   f"{REUSE} is False; MXFP8 parameter all-gather needs it True (asserted at job start)")
        yield ctx.report(cfg, message, ["mixed_precision.fp8_param_gather", "mixed_precision.fp8_recipe", REUSE],
                         fixes=[FixIntent("set", REUSE, True, safe=True, description=f"set {REUSE} = True")])
