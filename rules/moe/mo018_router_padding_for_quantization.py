from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dispatcher, hf_model, known, precision_value, value

HF = "cfg = _pretrain_common()\n" + hf_model()
GPT = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
       'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=8)\n')
FP8 = 'cfg.mixed_precision = get_mixed_precision_config("bf16_with_fp8_current_scaling_mixed")\n'
PADDING = "model.moe_router_padding_for_quantization"
DISPATCHER = "model.moe_token_dispatcher_type"


class RouterPaddingForQuantization(Rule):
    id = "MO018"
    name = "router-padding-for-quantization"
    severity = Severity.ERROR
    summary = ("moe_router_padding_for_quantization needs fp8 or fp4, and a dispatcher other than "
               "allgather or alltoall_seq.")
    fixable = True
    tags = ("moe", "precision")
    doc = """## What it does
Flags `model.moe_router_padding_for_quantization = True` (or the deprecated
`moe_router_padding_for_fp8`, which turns it on) when
- the model's `fp8` and `fp4` are both None, as the model sees them after `cfg.mixed_precision`
  copied its fields onto it; or
- `model.moe_token_dispatcher_type` is "allgather" (Megatron-Core's default) or "alltoall_seq".

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises "fp8/fp4 must be specified when
moe_router_padding_for_quantization is True." and "allgather and alltoall_seq dispatcher does not
support moe_router_padding_for_quantization." at job start. The padding aligns each expert's
token count to the FP8/FP4 GEMM tile; it is written in the MXFP8 and FP8 MoE performance recipes,
so switching such a recipe to BF16 or to the allgather dispatcher stops the job.

## Example
```python
cfg.mixed_precision = bf16_with_fp8_current_scaling_mixed()
cfg.model.moe_router_padding_for_quantization = True
cfg.model.moe_token_dispatcher_type = "allgather"   # error: use "alltoall" or "flex"
```

## Fix
For the dispatcher: set `model.moe_token_dispatcher_type = "alltoall"` (safe: the dispatcher
every MoE recipe without DeepEP/HybridEP uses). Without FP8/FP4: set
`model.moe_router_padding_for_quantization = False` (safe: the padding only serves quantized
GEMMs).

## Versions
0.3.x and 0.6.x (Megatron-Core 0.16.1 and 0.19.2 check it the same way).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2307-2325; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1613-1631; 0.6.2
megatron/bridge/training/mixed_precision.py:113-135 (setup copies fp8/fp4 onto the model);
megatron/bridge/training/config.py:1261-1262 (model.finalize in validate). Oracle:
`qwen3_30b_a3b_pretrain_config model.moe_router_padding_for_quantization=True
model.moe_token_dispatcher_type=allgather` fails with the fp8/fp4 message (the recipe is BF16).
"""
    valid = [
        HF + FP8 + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_router_padding_for_quantization = True',
        HF + FP8 + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_router_padding_for_quantization = True',
        HF + 'cfg.model.moe_token_dispatcher_type = "allgather"\ncfg.model.moe_router_padding_for_quantization = False',
        # the precision is a recipe name resolved only at job start, the dispatcher unknown
        HF + 'cfg.mixed_precision = "bf16_with_mxfp8_mixed"\ncfg.model.moe_token_dispatcher_type = "alltoall"\n'
        'cfg.model.moe_router_padding_for_quantization = True',
        HF + FP8 + 'cfg.model.moe_router_padding_for_quantization = True\n'
        'for kind in ["alltoall", "allgather"]:\n    cfg.model.moe_token_dispatcher_type = kind',
        Example(HF + FP8 + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                'cfg.model.moe_router_padding_for_quantization = True', version="0.3"),
    ]
    invalid = [
        # replacing a dispatcher the recipe wrote is unsafe
        Example(HF + FP8 + 'cfg.model.moe_token_dispatcher_type = "allgather"  # error\n'
                'cfg.model.moe_router_padding_for_quantization = True',
                message="allgather and alltoall_seq dispatcher does not support moe_router_padding_for_quantization",
                fixed=HF + FP8 + 'cfg.model.moe_token_dispatcher_type = "alltoall"  # error\n'
                      'cfg.model.moe_router_padding_for_quantization = True',
                unsafe=True),
        # the dispatcher left at its default: the assignment is added, a safe fix
        Example(GPT + FP8 + 'cfg.model.moe_router_padding_for_quantization = True  # error',
                message="model.moe_token_dispatcher_type is 'allgather'", unsafe=False,
                fixed=GPT + FP8 + 'cfg.model.moe_router_padding_for_quantization = True  # error\n'
                      'cfg.model.moe_token_dispatcher_type = "alltoall"'),
        # a BF16 recipe: no fp8 or fp4
        Example(HF + 'cfg.mixed_precision = bf16_mixed()\ncfg.model.moe_token_dispatcher_type = "alltoall"\n'
                'cfg.model.moe_router_padding_for_quantization = True  # error',
                message="fp8/fp4 must be specified when moe_router_padding_for_quantization is True",
                fixed=HF + 'cfg.mixed_precision = bf16_mixed()\ncfg.model.moe_token_dispatcher_type = "alltoall"\n'
                      'cfg.model.moe_router_padding_for_quantization = False  # error',
                unsafe=True),
        # modelled on a performance recipe switched to allgather on the command line
        Example(HF + FP8 + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                'cfg.model.moe_router_padding_for_quantization = True',
                dotlist=("model.moe_token_dispatcher_type=allgather",)),
        Example(HF + FP8 + 'cfg.model.moe_token_dispatcher_type = "alltoall_seq"  # error\n'
                'cfg.model.moe_router_padding_for_quantization = True', version="0.3"),
    ]

    def check(self, cfg, ctx):
        padding = value(cfg, PADDING, False)
        deprecated = value(cfg, "model.moe_router_padding_for_fp8", False)
        if padding is not True and deprecated is not True:
            return
        fields = [PADDING if padding is True else "model.moe_router_padding_for_fp8"]
        fp8, fp8_field = precision_value(cfg, "model", "fp8")
        fp4, fp4_field = precision_value(cfg, "model", "fp4")
        if known(fp8, fp4) and fp8 in (None, False) and fp4 in (None, False):
            yield ctx.report(
                cfg,
                f"{fields[0]} is True, but {fp8_field} and {fp4_field} are None; Megatron-Core raises "
                "'fp8/fp4 must be specified when moe_router_padding_for_quantization is True.' at job start",
                [*fields, fp8_field, fp4_field],
                fixes=[FixIntent("set", fields[0], False, safe=True, description=f"set {fields[0]} = False")],
            )
        kind = dispatcher(cfg)
        if known(kind) and kind in ("allgather", "alltoall_seq"):
            yield ctx.report(
                cfg,
                f"{fields[0]} is True, but {DISPATCHER} is {kind!r}; Megatron-Core raises 'allgather and "
                "alltoall_seq dispatcher does not support moe_router_padding_for_quantization.' at job start",
                [DISPATCHER, *fields],
                fixes=[FixIntent("set", DISPATCHER, "alltoall", safe=True,
                                 description='set moe_token_dispatcher_type to "alltoall"')],
            )
