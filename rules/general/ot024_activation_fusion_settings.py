from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, known, knows_field, value

MODEL = ("from megatron.bridge.models import GPTModelProvider\nimport torch.nn.functional as F\n"
         "cfg = _pretrain_common()\n"
         "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n")
ACTIVATION = "model.activation_func"
BIAS_FUSION = "model.bias_activation_fusion"
GLU = "model.gated_linear_unit"
ADD_BIAS = "model.add_bias_linear"
TE_ACTIVATION = "model.use_te_activation_func"
GLU_OFFSET = "model.glu_linear_offset"
FP8_STORE = "model.activation_func_fp8_input_store"
FUSED_RMSNORM = "model.fused_residual_rmsnorm"
GELU, SILU = "torch.nn.functional.gelu", "torch.nn.functional.silu"
QUICK_GELU = "megatron.core.fusions.fused_bias_geglu.quick_gelu"  # the one Megatron-Core compares with
# Functions that are none of gelu, silu, quick_gelu and relu, whatever module names them.
OTHER_FUNCTIONS = frozenset({"squared_relu", "leaky_relu", "elu", "selu", "celu", "tanh", "sigmoid", "mish",
                             "softplus", "relu6", "hardswish", "fast_gelu", "openai_gelu", "erf_gelu"})


def _function(cfg):
    """(qualified name, last name) of a model's activation function known by name, else (None, None)."""
    raw = value(cfg, ACTIVATION, None)
    name = getattr(raw, "qualname", None)
    if not known(raw) or not isinstance(name, str):
        return None, None
    return name, name.rsplit(".", 1)[-1]


class ActivationFusionSettings(Rule):
    id = "OT024"
    name = "activation-fusion-settings"
    severity = Severity.ERROR
    summary = ("bias_activation_fusion, use_te_activation_func, the FP8 activation input store and fused residual "
               "RMSNorm each need a fitting activation function, normalization or bias.")
    tags = ("general", "architecture")
    doc = """## What it does
Flags, on `cfg.model`, the combinations Megatron-Core refuses:
- `bias_activation_fusion` with an activation function other than gelu, silu or quick_gelu
  (squared_relu, relu...); with gelu, no gated linear unit and `add_bias_linear` False; with
  quick_gelu and no gated linear unit; with a non-zero `glu_linear_offset` and another function
  than quick_gelu; with `use_te_activation_func`;
- `use_te_activation_func` with a function Transformer Engine cannot fuse (squared_relu...);
- `activation_func_fp8_input_store` without SwiGLU (silu with `gated_linear_unit`);
- `fused_residual_rmsnorm` with a normalization other than "RMSNorm" (0.4.x and later).

The activation function is compared by name: only `torch.nn.functional.gelu`/`silu`,
Megatron-Core's `quick_gelu` and functions named like squared_relu count as known; any other is
left alone.

## Why it matters
`TransformerConfig.__post_init__` (run by `model.finalize()` in `ConfigContainer.validate()`)
raises at job start: "When bias_activation_fusion is True, activation function should be either
gelu, swiglu, or quick_geglu", "When bias_activation_fusion is True, gated_linear_unit is False
and activation function is gelu, add_bias_linear must also be True.", "...quick_gelu,
gated_linear_unit must be True.", "...glu_linear_offset is non-zero, activation function must be
quick_gelu.", "bias_activation_fusion and use_te_activation_func cannot be both true.",
"TransformerEngine only support gelu, geglu, silu, swiglu, relu, reglu.", "Storing activation
input in FP8 is supported only for SwiGLU." and "fused_residual_rmsnorm is only supported when
normalization is RMSNorm.". Turning a fusion on that a SwiGLU recipe uses, on a model with
squared ReLU (Nemotron-H) or a bias-free GELU MLP, stops the job.

## Example
```python
cfg.model.activation_func = squared_relu
cfg.model.bias_activation_fusion = True
```

## Fix
Turn the fusion off for that model (safe for correctness: the unfused path computes the same).
No automatic fix: which of the settings to change is the author's choice.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check them the same way); `fused_residual_rmsnorm`
from 0.4.x (Megatron-Core 0.17 added the field with its check).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2114-2163 (quick_gelu imported
from fusions/fused_bias_geglu at :31); 0.16.1 :1485-1528. Oracle (0.6.2, `llama3_8b_pretrain_config`,
SwiGLU): `model.gated_linear_unit=False model.activation_func_fp8_input_store=True` fails with
"Storing activation input in FP8 is supported only for SwiGLU."; `model.normalization=LayerNorm
model.fused_residual_rmsnorm=True` with "fused_residual_rmsnorm is only supported when normalization is
RMSNorm."; `model.bias_activation_fusion=True model.use_te_activation_func=True` with
"bias_activation_fusion and use_te_activation_func cannot be both true..."; `model.bias_activation_fusion=True
model.activation_func=torch.nn.functional.relu` with "When bias_activation_fusion is True, activation
function should be either gelu, swiglu, or quick_geglu".
"""
    valid = [
        MODEL + "cfg.model.activation_func = F.gelu\ncfg.model.bias_activation_fusion = True",
        MODEL + "cfg.model.activation_func = F.silu\ncfg.model.gated_linear_unit = True\n"
        "cfg.model.add_bias_linear = False\ncfg.model.bias_activation_fusion = True\n"
        "cfg.model.activation_func_fp8_input_store = True",
        MODEL + "from megatron.core.activations import squared_relu\ncfg.model.activation_func = squared_relu\n"
        "cfg.model.bias_activation_fusion = False",
        MODEL + "cfg.model.activation_func = F.relu\ncfg.model.use_te_activation_func = True",
        MODEL + "cfg.model.normalization = 'RMSNorm'\ncfg.model.fused_residual_rmsnorm = True",
        Example(MODEL + "cfg.model.activation_func = F.gelu\ncfg.model.bias_activation_fusion = True", version="0.3"),
    ]
    invalid = [
        Example(MODEL + "from megatron.core.activations import squared_relu\ncfg.model.activation_func = squared_relu\n"
                "cfg.model.bias_activation_fusion = True  # error", message="activation function should be either"),
        Example(MODEL + "cfg.model.activation_func = F.gelu\ncfg.model.add_bias_linear = False\n"
                "cfg.model.bias_activation_fusion = True  # error", message="add_bias_linear must also be True"),
        Example(MODEL + "cfg.model.activation_func = F.gelu\ncfg.model.bias_activation_fusion = True\n"
                "cfg.model.use_te_activation_func = True  # error",
                message="bias_activation_fusion and use_te_activation_func cannot be both true"),
        Example(MODEL + "from megatron.core.activations import squared_relu\ncfg.model.activation_func = squared_relu\n"
                "cfg.model.use_te_activation_func = True  # error", message="TransformerEngine only support"),
        Example(MODEL + "cfg.model.activation_func = F.gelu\ncfg.model.gated_linear_unit = True\n"
                "cfg.model.activation_func_fp8_input_store = True  # error",
                message="Storing activation input in FP8 is supported only for SwiGLU."),
        Example(MODEL + "cfg.model.normalization = 'LayerNorm'\ncfg.model.fused_residual_rmsnorm = True  # error",
                message="fused_residual_rmsnorm is only supported when normalization is RMSNorm."),
        # modelled on a SwiGLU recipe's FP8 store kept when the MLP is made non-gated on the command line
        Example(MODEL + "cfg.model.activation_func = F.silu\ncfg.model.gated_linear_unit = True\n"
                "cfg.model.activation_func_fp8_input_store = True", dotlist=("model.gated_linear_unit=false",)),
        Example(MODEL + "cfg.model.activation_func = F.gelu\ncfg.model.add_bias_linear = False\n"
                "cfg.model.bias_activation_fusion = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        name, short = _function(cfg)
        glu = value(cfg, GLU, None)
        if value(cfg, BIAS_FUSION, False) is True:
            yield from self._bias_fusion(cfg, ctx, name, short, glu)
        if value(cfg, TE_ACTIVATION, False) is True and short in OTHER_FUNCTIONS:
            yield ctx.report(cfg, f"{TE_ACTIVATION} is True with {ACTIVATION} {short}; Megatron-Core raises "
                                  "'TransformerEngine only support gelu, geglu, silu, swiglu, relu, reglu.' at job "
                                  "start", [TE_ACTIVATION, ACTIVATION], primary=TE_ACTIVATION)
        if value(cfg, FP8_STORE, False) is True and (glu is False or (name is not None and name != SILU
                                                                       and short in OTHER_FUNCTIONS | {"gelu"})):
            yield ctx.report(cfg, f"{FP8_STORE} is True but the MLP is not SwiGLU ({GLU} {glu}, {ACTIVATION} "
                                  f"{short}); Megatron-Core raises 'Storing activation input in FP8 is supported only "
                                  "for SwiGLU.' at job start", [FP8_STORE, GLU, ACTIVATION], primary=FP8_STORE)
        if knows_field(cfg, "fused_residual_rmsnorm") and value(cfg, FUSED_RMSNORM, False) is True:
            norm = value(cfg, "model.normalization", None)
            if known(norm) and isinstance(norm, str) and norm != "RMSNorm":
                yield ctx.report(cfg, f"{FUSED_RMSNORM} is True but model.normalization is {norm!r}; Megatron-Core "
                                      "raises 'fused_residual_rmsnorm is only supported when normalization is "
                                      "RMSNorm.' at job start", [FUSED_RMSNORM, "model.normalization"],
                                 primary=FUSED_RMSNORM)

    @staticmethod
    def _bias_fusion(cfg, ctx, name, short, glu):
        fields = [BIAS_FUSION, ACTIVATION]
        if short in OTHER_FUNCTIONS:
            yield ctx.report(cfg, f"{BIAS_FUSION} is True with {ACTIVATION} {short}; Megatron-Core raises 'When "
                                  "bias_activation_fusion is True, activation function should be either gelu, swiglu, "
                                  "or quick_geglu' at job start", fields, primary=BIAS_FUSION)
        elif name == GELU and glu is False and value(cfg, ADD_BIAS, None) is False:
            yield ctx.report(cfg, f"{BIAS_FUSION} is True with gelu, no gated linear unit and {ADD_BIAS} False; "
                                  "Megatron-Core raises 'When bias_activation_fusion is True, gated_linear_unit is "
                                  "False and activation function is gelu, add_bias_linear must also be True.' at job "
                                  "start", [*fields, GLU, ADD_BIAS], primary=BIAS_FUSION)
        elif name == QUICK_GELU and glu is False:
            yield ctx.report(cfg, f"{BIAS_FUSION} is True with quick_gelu and {GLU} False; Megatron-Core raises 'When "
                                  "bias_activation_fusion is True and activation function is quick_gelu, "
                                  "gated_linear_unit must be True.' at job start", [*fields, GLU], primary=BIAS_FUSION)
        offset = value(cfg, GLU_OFFSET, 0.0)
        if known(offset) and isinstance(offset, (int, float)) and offset != 0.0 and name in (GELU, SILU):
            yield ctx.report(cfg, f"{BIAS_FUSION} is True with {GLU_OFFSET} {offset} and {ACTIVATION} {short}; "
                                  "Megatron-Core raises 'When bias_activation_fusion is True and glu_linear_offset is "
                                  "non-zero, activation function must be quick_gelu.' at job start",
                             [*fields, GLU_OFFSET], primary=BIAS_FUSION)
        if value(cfg, TE_ACTIVATION, False) is True:
            yield ctx.report(cfg, f"{BIAS_FUSION} and {TE_ACTIVATION} are both True; Megatron-Core raises "
                                  "'bias_activation_fusion and use_te_activation_func cannot be both true.' at job "
                                  "start", [BIAS_FUSION, TE_ACTIVATION])
