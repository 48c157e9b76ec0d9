from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, known, knows_field, precision_value, value

GPT = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
       'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=8)\n'
       'cfg.model.moe_grouped_gemm = True\ncfg.model.use_transformer_engine_op_fuser = True\n')
FP8_DELAYED = 'cfg.mixed_precision = get_mixed_precision_config("bf16_with_fp8_delayed_scaling_mixed")\n'
WEIGHT = "model.moe_single_grouped_weight"
BIAS = "model.moe_single_grouped_bias"
GROUPED = "model.moe_grouped_gemm"
ADD_BIAS = "model.add_bias_linear"


class SingleGroupedWeight(Rule):
    id = "MO024"
    name = "single-grouped-weight"
    severity = Severity.ERROR
    summary = ("moe_single_grouped_weight/bias need grouped GEMM; the bias needs add_bias_linear, the weight no FP8 "
               "recipe but mxfp8 and no FP4 recipe but nvfp4.")
    tags = ("moe", "precision")
    doc = """## What it does
In the releases with `model.moe_single_grouped_weight` (0.5.x and later), flags
- `moe_single_grouped_weight` or `moe_single_grouped_bias` True with `model.moe_grouped_gemm`
  False;
- `moe_single_grouped_bias` True with `model.add_bias_linear` False;
- `moe_single_grouped_weight` True with FP8 on and an FP8 recipe other than "mxfp8", or FP4 on
  with a recipe other than "nvfp4" (the model's `fp8`/`fp8_recipe`/`fp4`/`fp4_recipe` as the
  mixed-precision config sets them).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises "moe_single_grouped_weight and moe_single_grouped_bias
require moe_grouped_gemm=True.", "moe_single_grouped_bias requires add_bias_linear=True." and
"moe_single_grouped_weight is currently supported with high-precision primary weights,
fp8_recipe='mxfp8', or fp4_recipe='nvfp4'." at job start (Megatron-Core 0.18 accepts only
mxfp8 for the weight). The single grouped storage exists for the MXFP8 MoE recipes; carrying it
over to a delayed- or current-scaling FP8 recipe stops the job.

## Example
```python
cfg.mixed_precision = "bf16_with_fp8_delayed_scaling_mixed"
cfg.model.moe_single_grouped_weight = True
```

## Fix
Use grouped GEMM (and biases for the single grouped bias), the MXFP8 recipe, or turn the single
grouped storage off. No automatic fix.

## Versions
0.5.x and 0.6.x (Megatron-Core 0.18 added the fields with these checks; the common part of 0.18
and 0.19 is reported; 0.19 also needs `use_transformer_engine_op_fuser` for the weight, not
reported: the field is older than the check).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1556-1587 (0.18.0 :1414-1438).
Oracle (0.6.2, `qwen3_30b_a3b_pretrain_config`): `model.moe_single_grouped_weight=True
model.moe_grouped_gemm=False` fails with "moe_single_grouped_weight and moe_single_grouped_bias require
moe_grouped_gemm=True."; `model.moe_single_grouped_bias=True` with "moe_single_grouped_bias requires
add_bias_linear=True." (grouped GEMM on, no biases); `mixed_precision=bf16_with_fp8_delayed_scaling_mixed
model.moe_single_grouped_weight=True` with "moe_single_grouped_weight is currently supported with
high-precision primary weights, fp8_recipe='mxfp8', or fp4_recipe='nvfp4'.".
"""
    valid = [
        GPT + "cfg.model.moe_single_grouped_weight = True",
        GPT + "cfg.model.add_bias_linear = True\ncfg.model.moe_single_grouped_bias = True",
        GPT + 'cfg.mixed_precision = get_mixed_precision_config("bf16_with_mxfp8_mixed")\n'
        "cfg.model.moe_single_grouped_weight = True",
        GPT + "for flag in (True, False):\n    cfg.model.moe_grouped_gemm = flag\ncfg.model.moe_single_grouped_weight = True",
        Example(GPT, version="0.3"),
    ]
    invalid = [
        Example(GPT + "cfg.model.moe_grouped_gemm = False\ncfg.model.moe_single_grouped_weight = True  # error",
                message="require moe_grouped_gemm=True"),
        Example(GPT + "cfg.model.add_bias_linear = False\ncfg.model.moe_single_grouped_bias = True  # error",
                message="moe_single_grouped_bias requires add_bias_linear=True."),
        Example(GPT + FP8_DELAYED + "cfg.model.moe_single_grouped_weight = True  # error",
                message="fp8_recipe='mxfp8', or fp4_recipe='nvfp4'"),
        # modelled on the MXFP8 MoE recipes' single grouped weight carried to a delayed-scaling FP8 run
        Example(GPT + "cfg.model.moe_single_grouped_weight = True",
                dotlist=("mixed_precision=bf16_with_fp8_delayed_scaling_mixed",)),
    ]

    def check(self, cfg, ctx):
        if not knows_field(cfg, "moe_single_grouped_weight"):
            return
        weight, bias = value(cfg, WEIGHT, False), value(cfg, BIAS, False)
        if weight is not True and bias is not True:
            return
        on = [path for path, flag in ((WEIGHT, weight), (BIAS, bias)) if flag is True]
        if value(cfg, GROUPED, None) is False:
            yield ctx.report(cfg, f"{' and '.join(on)} {'is' if len(on) == 1 else 'are'} True but {GROUPED} is False; "
                                  "Megatron-Core raises 'moe_single_grouped_weight and moe_single_grouped_bias "
                                  "require moe_grouped_gemm=True.' at job start", [*on, GROUPED], primary=on[0])
        if bias is True and value(cfg, ADD_BIAS, None) is False:
            yield ctx.report(cfg, f"{BIAS} is True but {ADD_BIAS} is False; Megatron-Core raises "
                                  "'moe_single_grouped_bias requires add_bias_linear=True.' at job start",
                             [BIAS, ADD_BIAS], primary=BIAS)
        if weight is True:
            yield from self._quantized_weight(cfg, ctx)

    @staticmethod
    def _quantized_weight(cfg, ctx):
        for kind, allowed in (("fp8", "mxfp8"), ("fp4", "nvfp4")):
            enabled, enabled_path = precision_value(cfg, "model", kind)
            recipe, recipe_path = precision_value(cfg, "model", f"{kind}_recipe")
            if not known(enabled, recipe) or not enabled or not isinstance(recipe, str):
                continue
            if recipe.rsplit(".", 1)[-1] != allowed:
                yield ctx.report(cfg, f"{WEIGHT} is True with {kind} on ({enabled_path} = {enabled!r}) and "
                                      f"{recipe_path} = {recipe!r}; Megatron-Core raises 'moe_single_grouped_weight is "
                                      "currently supported with high-precision primary weights, fp8_recipe='mxfp8', or "
                                      "fp4_recipe='nvfp4'.' at job start", [WEIGHT, recipe_path, enabled_path],
                                 primary=WEIGHT)
