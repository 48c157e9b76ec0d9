from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()
FIELD = "model.moe_router_dtype"
ACCEPTED = ("fp32", "fp64")
# What the author evidently meant, where Megatron-Core has a spelling for it.
MEANT = {"torch.float32": "fp32", "torch.float": "fp32", "float32": "fp32",
         "torch.float64": "fp64", "torch.double": "fp64", "float64": "fp64"}
# A 16-bit dtype asks for what Megatron-Core does with any value but "fp32"/"fp64": routing in
# the input dtype, which is 16-bit in a mixed-precision run. Spelt otherwise, nothing changes.
INPUT_DTYPE = {"bf16", "fp16", "bfloat16", "float16", "half",
               "torch.bfloat16", "torch.float16", "torch.half"}


class RouterDtypeSpelling(Rule):
    id = "MO020"
    name = "router-dtype-spelling"
    severity = Severity.WARNING
    summary = 'moe_router_dtype must be "fp32" or "fp64" (or None); anything else routes in the input dtype.'
    fixable = True
    tags = ("moe", "numerics")
    doc = """## What it does
Flags `model.moe_router_dtype` set to anything but None, "fp32" or "fp64": a torch dtype
(`torch.float32`) or another string ("float32", "tf32"). A 16-bit name ("bf16",
`torch.bfloat16`) is not reported: it asks for routing in the input dtype, which is what
Megatron-Core does with it.

## Why it matters
Megatron-Core compares the field with the strings "fp32" and "fp64" when it computes the router
logits; any other value leaves routing in the input dtype (bf16 in a BF16 run) without an
error. A torch dtype is the common slip: `cfg.model.moe_router_dtype = torch.float32` reads as
"route in FP32" and does nothing, and because the value is truthy Megatron-Core's own warning
about routing many experts without FP32 ("Using a large number of experts (e.g. >=32) without
fp32 routing") is skipped too. Another string that names no 16-bit dtype ("tf32") behaves as
None, which is probably not what its author meant either.

## Example
```python
cfg.model.moe_router_dtype = torch.float32   # routes in bf16
cfg.model.moe_router_dtype = "fp32"          # routes in fp32
```

## Fix
For a torch float32/float64 dtype, write "fp32"/"fp64": routing then really runs in that
precision, as the author meant, which changes numerics and memory. For another string, write
None: the same behaviour, spelt as Megatron-Core accepts it (or "fp32" for FP32 routing). Both
replace a value the recipe wrote, so both are applied only with `--unsafe-fixes`.

## Versions
0.3.x and 0.6.x (Megatron-Core 0.16.1 and 0.19.2 compare the same strings).

## Sources
MCore 0.19.2 megatron/core/transformer/moe/router.py:103-108 (the comparison),
megatron/core/transformer/transformer_config.py:790 (`Optional[Literal['fp32', 'fp64']]`),
:2794-2802 (the warning skipped for a truthy value),
megatron/core/transformer/moe/token_dispatcher.py:1446; MCore 0.16.1
megatron/core/transformer/moe/router.py:96-99. 0.6.2 perf_recipes/qwen/h100/qwen3_moe.py:374
(`torch.float32`); perf_recipes/deepseek/gb300/deepseek_v3.py:283 ("bf16" over the "fp32" of
models/deepseek/deepseek_v3_bridge.py:75: bf16 routing, as written).
"""
    valid = [
        HF + 'cfg.model.moe_router_dtype = "fp32"',
        HF + 'cfg.model.moe_router_dtype = "fp64"',
        HF + 'cfg.model.moe_router_dtype = None',
        HF + 'for d in ["fp32", "tf32"]:\n    cfg.model.moe_router_dtype = d',
        # modelled on the DeepSeek-V3 GB300 performance recipes: bf16 routing, as written
        HF + 'cfg.model.moe_router_dtype = "bf16"',
        HF + 'cfg.model.moe_router_dtype = torch.bfloat16',
        Example(HF + 'cfg.model.moe_router_dtype = "fp32"', version="0.3"),
    ]
    invalid = [
        # modelled on the Qwen3-MoE performance recipes
        Example(HF + 'cfg.model.moe_router_dtype = torch.float32  # finding',
                message='model.moe_router_dtype is torch.float32, not "fp32" or "fp64"',
                fixed=HF + "cfg.model.moe_router_dtype = 'fp32'  # finding", unsafe=True),
        Example(HF + 'cfg.model.moe_router_dtype = "tf32"  # finding',
                message="behaves as None",
                fixed=HF + 'cfg.model.moe_router_dtype = None  # finding', unsafe=True),
        Example(HF, dotlist=("model.moe_router_dtype=float32",)),
        Example(HF + 'cfg.model.moe_router_dtype = torch.float64  # finding', version="0.3"),
    ]

    def check(self, cfg, ctx):
        written = value(cfg, FIELD, None)
        if written is None or not known(written) or not isinstance(written, str) \
                or written in ACCEPTED or written in INPUT_DTYPE:
            return
        meant = MEANT.get(written)
        shown = written if written.startswith("torch.") else repr(written)
        if meant is not None:
            message = (f'{FIELD} is {shown}, not "fp32" or "fp64": Megatron-Core compares it with those strings, '
                       f'so routing stays in the input dtype (bf16 in a BF16 run); write "{meant}"')
            fix = FixIntent("set", FIELD, meant, safe=False, description=f'set moe_router_dtype to "{meant}"')
        else:
            message = (f'{FIELD} is {shown}, not "fp32" or "fp64": Megatron-Core routes in the input dtype, so '
                       "it behaves as None; write None, or \"fp32\" for FP32 routing")
            fix = FixIntent("set", FIELD, None, safe=True, description="set moe_router_dtype to None")
        yield ctx.report(cfg, message, [FIELD], fixes=[fix])
