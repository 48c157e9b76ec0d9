from __future__ import annotations

from mblint.rulekit import (
    UNKNOWN,
    Example,
    Rule,
    Severity,
    format_value,
    has_overrides,
    hf_model,
    known,
    mixed_precision_kind,
    precision_value,
)

MP = "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\n"
HF = "cfg = _pretrain_common()\n" + hf_model()


def _param_flag(cfg, name: str):
    """fp8_param/fp4_param as the model sees it. MixedPrecisionConfig keeps ``X_param`` and
    ``X_param_gather`` in sync on every write and finalize() fills a None ``X_param`` from the
    gather flag, so on a mixed-precision object the one written last wins."""
    result, path = precision_value(cfg, "model", name)
    if not path.startswith("mixed_precision."):
        return result, path
    gather_path = f"{path}_gather"
    gather = cfg.value(gather_path)
    if has_overrides(cfg):
        # overrides re-apply every field in declaration order, so the gather flag (declared
        # after X_param) is written last (training/utils/omegaconf_utils.py:454-515)
        return (gather if known(gather) else UNKNOWN), gather_path
    own, other = cfg.last_origin(path), cfg.last_origin(gather_path)
    if other is not None and other.kind in ("set", "override") and (own is None or own.kind not in ("set", "override")
                                                                    or other.seq > own.seq):
        return (gather if known(gather) else result), gather_path
    return result, path


class Fp8ParamRequiresFp8(Rule):
    id = "PR009"
    name = "fp8-param-requires-fp8"
    severity = Severity.ERROR
    summary = "FP8/FP4 parameter flags without fp8/fp4, first/last-layer BF16 with delayed scaling, fp8_output_proj without MXFP8."
    tags = ("precision",)
    doc = """## What it does
On the values the model ends up with (after `cfg.mixed_precision` copied its fields onto it),
flags
- `fp8_param` (or `fp8_param_gather`, which sets it) True while `fp8` is None;
- `fp4_param` (or `fp4_param_gather`) True while `fp4` is None;
- `first_last_layers_bf16` True with `fp8` set and `fp8_recipe = "delayed"`;
- `model.fp8_output_proj` True without `fp8`, or with an `fp8_recipe` other than `"mxfp8"`
  (0.6.x).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` raises "fp8_param must be used together with
fp8 mode.", "fp4_param must be used together with fp4 mode.", "Delayed scaling does not support
first / last layer in BF16." and "fp8_output_proj requires fp8_recipe='mxfp8'" at job start
(confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.mixed_precision = bf16_mixed()            # fp8 = None
cfg.mixed_precision.fp8_param_gather = True   # also sets fp8_param
```

## Fix
Turn FP8 on (`fp8 = "hybrid"`/`"e4m3"` with a recipe) or drop the parameter flag; use a
current-scaling recipe for first/last layers in BF16. No automatic fix: numerics change.

## Versions
0.3.x and 0.6.x (`fp8_output_proj` only in 0.6.x).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1400-1403, :1439-1452; MCore 0.16.1
transformer_config.py:990, :1027-1032; 0.6.2 megatron/bridge/training/mixed_precision.py:76-104
(param/gather sync and finalize), :113-158 (setup copies onto the model).
"""
    valid = [
        MP + "cfg.mixed_precision.fp8 = 'hybrid'\ncfg.mixed_precision.fp8_param_gather = True",
        MP + "cfg.mixed_precision.fp8 = 'hybrid'\ncfg.mixed_precision.fp8_recipe = 'tensorwise'\n"
        "cfg.mixed_precision.first_last_layers_bf16 = True",
        # the later write of fp8_param_gather turns fp8_param off again
        MP + "cfg.mixed_precision.fp8_param = True\ncfg.mixed_precision.fp8_param_gather = False",
        MP + "for v in [None, 'hybrid']:\n    cfg.mixed_precision.fp8 = v\ncfg.mixed_precision.fp8_param_gather = True",
        # a recipe name decides the model's fp8 at job start
        HF + "cfg.mixed_precision = 'bf16_with_mxfp8_mixed'\ncfg.model.fp8_output_proj = True",
        Example(MP + "cfg.mixed_precision.fp8 = 'hybrid'\ncfg.mixed_precision.fp8_param = True", version="0.3"),
        # an override re-applies every field, so fp8_param_gather (False) resets fp8_param
        Example(MP, dotlist=("mixed_precision.fp8_param=true",)),
    ]
    invalid = [
        MP + "cfg.mixed_precision.fp8_param_gather = True  # error",
        MP + "cfg.mixed_precision.fp4_param = True  # error",
        MP + "cfg.mixed_precision.fp8 = 'hybrid'\ncfg.mixed_precision.fp8_recipe = 'delayed'\n"
        "cfg.mixed_precision.first_last_layers_bf16 = True  # error",
        HF + "cfg.mixed_precision = None\ncfg.model.fp8 = 'hybrid'\ncfg.model.fp8_recipe = 'tensorwise'\n"
        "cfg.model.fp8_output_proj = True  # error",
        Example(MP + "cfg.mixed_precision.fp8_param = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if mixed_precision_kind(cfg) not in ("object", "none"):
            return
        fp8, fp8_path = precision_value(cfg, "model", "fp8")
        fp4, fp4_path = precision_value(cfg, "model", "fp4")
        if not known(fp8) and not known(fp4):  # every check below needs one of them
            return
        recipe, recipe_path = precision_value(cfg, "model", "fp8_recipe")
        for param, mode, mode_value, mode_path in (("fp8_param", "fp8", fp8, fp8_path),
                                                   ("fp4_param", "fp4", fp4, fp4_path)):
            flag, flag_path = _param_flag(cfg, param)
            if known(flag, mode_value) and flag is True and not mode_value:
                yield ctx.report(cfg, f"{flag_path} is True, which makes the model's {param} True, but {mode_path} is "
                                      f"{format_value(mode_value)}; {param} must be used together with {mode} mode "
                                      f"(TransformerConfig raises at job start)", [flag_path, mode_path], primary=flag_path)
        flbf16, fl_path = precision_value(cfg, "model", "first_last_layers_bf16")
        if known(fp8, recipe, flbf16) and fp8 and flbf16 is True and recipe == "delayed":
            yield ctx.report(cfg, f"{fl_path} is True with {fp8_path} = {format_value(fp8)} and {recipe_path} = 'delayed'; "
                                  f"delayed scaling does not support first/last layers in BF16 (TransformerConfig "
                                  f"raises at job start)", [fl_path, recipe_path, fp8_path])
        proj = cfg.value("model.fp8_output_proj")
        if known(proj) and proj is True and known(fp8):
            if not fp8:
                yield ctx.report(cfg, f"model.fp8_output_proj is True, but {fp8_path} is {format_value(fp8)}; it must be "
                                      f"used together with fp8 mode (TransformerConfig raises at job start)",
                                 ["model.fp8_output_proj", fp8_path], primary="model.fp8_output_proj")
            elif known(recipe) and recipe != "mxfp8":
                yield ctx.report(cfg, f"model.fp8_output_proj is True, but {recipe_path} is {format_value(recipe)}; "
                                      f"it requires fp8_recipe 'mxfp8' (TransformerConfig raises at job start)",
                                 ["model.fp8_output_proj", recipe_path])
