from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, assigned, class_fields, format_value, known, schema_of

TARGETS = ("model", "optimizer", "ddp")


# MixedPrecisionConfig keeps fp8_param/fp8_param_gather (and the fp4 pair) in sync in
# __setattr__, and finalize() (run before setup()) fills a None fp8_param from fp8_param_gather:
# 0.6.2 megatron/bridge/training/mixed_precision.py:76-104.
PARAM_PAIRS = {"fp8_param": "fp8_param_gather", "fp4_param": "fp4_param_gather"}


# Read only by FP8/FP4 code (MCore 0.19.2 fp8_utils.py:673-689, fp4_utils.py:248-263,
# transformer_config.py:1400-1420 under `if self.fp8`): without FP8/FP4 their value changes nothing.
LOW_PRECISION_ONLY = frozenset({"first_last_layers_bf16", "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"})
# None means "not chosen": Megatron-Core fills it in (MCore 0.19.2 model_parallel_config.py:237,376,528).
NONE_MEANS_UNSET = frozenset({"pipeline_dtype", "autocast_dtype"})


def effective_mp_value(cfg, field: str):
    """The value setup() copies for ``field``, after finalize()."""
    value = cfg.value(f"mixed_precision.{field}")
    if field in PARAM_PAIRS:
        gather = cfg.value(f"mixed_precision.{PARAM_PAIRS[field]}")
        if value is None:
            return gather
    return value


def without_low_precision(cfg) -> bool:
    """True when the mixed-precision config certainly turns on neither FP8 nor FP4."""
    return all(cfg.value(f"mixed_precision.{name}") in (None, False) for name in ("fp8", "fp4"))


def makes_no_difference(cfg, field: str, value) -> bool:
    """The overwrite replaces a value nothing reads, or a None that only meant 'not chosen'."""
    if field in NONE_MEANS_UNSET and value is None:
        return True
    return field in LOW_PRECISION_ONLY and without_low_precision(cfg)


GPT_MODEL = ("from megatron.bridge.models import GPTModelProvider\n"
             "cfg.model = GPTModelProvider(num_layers=2, hidden_size=64, num_attention_heads=4)\n")


class FieldOverwrittenByMixedPrecision(Rule):
    id = "PR002"
    name = "field-overwritten-by-mixed-precision"
    severity = Severity.WARNING
    summary = "A model/optimizer/ddp precision field set directly is overwritten by cfg.mixed_precision at job start."
    fixable = True
    tags = ("precision", "dead-setting")
    doc = """## What it does
When `cfg.mixed_precision` is set, flags a recipe line or override that assigns
`model.X`, `optimizer.X` or `ddp.X` where X is a `MixedPrecisionConfig` field (`bf16`,
`fp16`, `params_dtype`, `grad_reduce_in_fp32`, `fp8`, `fp8_recipe`, `fp8_param_gather`,
`loss_scale`, ...) and the target class has that field, with a value different from the
mixed-precision config's value for X. The mixed-precision value must be known: an object
(`bf16_mixed()`, `MixedPrecisionConfig(...)`) that mblint evaluated, or a recipe name given as
a string (`cfg.mixed_precision = "bf16_mixed"`), which Megatron-Bridge turns into its
factory's config before validating and which mblint expands the same way (no automatic fix
then: the field cannot be set on a string). When mblint cannot read the factory (Megatron-Bridge
not installed where mblint runs), only the fields the recipe sets on the object are known.
Only assignments in the recipe's own file or in override files are considered (values the
Megatron-Bridge base builders set are not the author's edit). Not reported: fields read only by
FP8/FP4 code (`first_last_layers_bf16`, `num_layers_at_start_in_bf16`,
`num_layers_at_end_in_bf16`) when the mixed-precision config turns on neither FP8 nor FP4, and a
`None` that only means "not chosen" (`pipeline_dtype`, `autocast_dtype`) filled in with a value.

## Why it matters
`runtime_config_update()` calls `MixedPrecisionConfig.setup()`, which copies every field of
the mixed-precision config (defaults and `None` included) onto the model, optimizer and DDP
configs that have a field of that name. A direct assignment such as
`cfg.ddp.grad_reduce_in_fp32 = False` is therefore silently undone; the setting must be made
on `cfg.mixed_precision`.

## Example
```python
cfg = _pretrain_common()
cfg.mixed_precision = bf16_mixed()        # grad_reduce_in_fp32 = True
cfg.ddp.grad_reduce_in_fp32 = False       # overwritten with True at job start
```

## Fix
Set the value on the mixed-precision object instead
(`cfg.mixed_precision.grad_reduce_in_fp32 = False`; with a recipe name, first
`cfg.mixed_precision = get_mixed_precision_config("<name>")`). Unsafe: the value then takes
effect and changes numerics.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/mixed_precision.py:33-75 (fields), :113-158 (`setup`,
`update_config_with_precision_overrides` copies every field the target has);
0.6.2 megatron/bridge/training/config.py:1873-1877; MCore 0.19.2 fp8_utils.py:673-689,
fp4_utils.py:248-263 (the bf16 first/last layer fields, read only under FP8/FP4),
model_parallel_config.py:237,376 (pipeline_dtype/autocast_dtype None = not chosen); 0.3.1 config.py:1860-1864;
0.6.2 megatron/bridge/recipes/nemotronh/h100/nemotron_3_super.py (comment:
"grad_reduce_in_fp32 is a MixedPrecisionConfig field that setup() copies onto the DDP config").
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.grad_reduce_in_fp32 = False",
        # same value as the mixed-precision object: nothing changes
        "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.optimizer.bf16 = True",
        "cfg = _pretrain_common()\ncfg.mixed_precision = None\ncfg.ddp.grad_reduce_in_fp32 = False",
        # a recipe name, expanded like Megatron-Bridge does: the same value
        "cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16-mixed'\ncfg.optimizer.bf16 = True",
        # an unregistered name: nothing is known
        "cfg = _pretrain_common()\ncfg.mixed_precision = 'my_mixed'\ncfg.ddp.grad_reduce_in_fp32 = False",
        # mixed-precision value unknown
        "cfg = _pretrain_common()\nfor flag in [True, False]:\n    cfg.ddp.grad_reduce_in_fp32 = flag\n"
        "cfg.mixed_precision = bf16_mixed()",
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.optimizer.bf16 = True", version="0.3"),
        # read only by FP8/FP4 code, and bf16_mixed() has neither (the small bf16 recipes' pattern)
        "cfg = _pretrain_common()\n" + GPT_MODEL + "cfg.mixed_precision = 'bf16_mixed'\n"
        "cfg.model.first_last_layers_bf16 = True\ncfg.model.num_layers_at_start_in_bf16 = 2",
        # None is "not chosen": bf16_mixed() fills it in
        "cfg = _pretrain_common()\n" + GPT_MODEL + "cfg.mixed_precision = 'bf16_mixed'\ncfg.model.pipeline_dtype = None",
    ]
    invalid = [
        # the value moves onto the mixed-precision object (the direct line then agrees with it)
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.ddp.grad_reduce_in_fp32 = False  # error",
                message="is overwritten with True from mixed_precision.grad_reduce_in_fp32", unsafe=True,
                fixed="cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\n"
                      "cfg.mixed_precision.grad_reduce_in_fp32 = False\ncfg.ddp.grad_reduce_in_fp32 = False  # error"),
        # a recipe name (bf16_mixed() sets grad_reduce_in_fp32 = True): no fix, a str has no fields
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16_mixed'\ncfg.ddp.grad_reduce_in_fp32 = False  # error",
                fixed="cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16_mixed'\ncfg.ddp.grad_reduce_in_fp32 = False  # error"),
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = get_mixed_precision_config('bf16_mixed')\n"
                "cfg.ddp.grad_reduce_in_fp32 = False  # error"),
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.optimizer.fp16 = True  # error",
                version="0.3"),
        # not fixed from the override file alone: the value would go to the recipe's
        # mixed-precision object, and the recipe is not being linted
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()",
                yaml="ddp:\n  grad_reduce_in_fp32: false  # error\n",
                fixed_yaml="ddp:\n  grad_reduce_in_fp32: false  # error\n"),
        # with FP8 on, the bf16 first/last layers matter
        "cfg = _pretrain_common()\n" + GPT_MODEL + "cfg.mixed_precision = 'bf16_with_fp8_current_scaling_mixed'\n"
        "cfg.model.first_last_layers_bf16 = False  # error",
        "cfg = _pretrain_common()\n" + GPT_MODEL + "cfg.mixed_precision = 'bf16_mixed'\n"
        "cfg.model.pipeline_dtype = torch.float16  # error",
    ]

    def check(self, cfg, ctx):
        if cfg.type_of("mixed_precision") is None:
            return
        spec = schema_of(cfg).find_class("MixedPrecisionConfig")
        if spec is None:
            return
        # An object built by a factory mblint could not read holds only the fields set on it.
        mp_fields = set(cfg.keys("mixed_precision"))
        candidates = [field for field in spec.fields if field in mp_fields]
        for target in TARGETS:
            names = class_fields(cfg, target)
            if not names:
                continue
            for field in candidates:
                if field not in names:
                    continue
                path = f"{target}.{field}"
                if not assigned(cfg, path):
                    continue
                origin = cfg.last_origin(path)
                if origin.kind != "override" and origin.path != cfg.recipe.path:
                    continue
                value = cfg.value(path)
                if not known(value):
                    continue
                mp_path = f"mixed_precision.{field}"
                mp_value = effective_mp_value(cfg, field)
                if not known(mp_value) or mp_value == value or makes_no_difference(cfg, field, value):
                    continue
                message = (f"{path} = {format_value(value)} is overwritten with {format_value(mp_value)} "
                           f"from {mp_path} when MixedPrecisionConfig.setup() runs at job start; "
                           f"set it on {mp_path} instead")
                fields = [path, mp_path]
                # Under a recipe name, cfg.mixed_precision is a str in the recipe: setting an
                # attribute on it would raise AttributeError.
                fixes = [] if cfg.mixed_precision_name else [
                    FixIntent("set", mp_path, value, safe=False, description=f"set {mp_path} = {format_value(value)} instead")]
                yield ctx.report(cfg, message, fields, primary=path, fixes=fixes)
