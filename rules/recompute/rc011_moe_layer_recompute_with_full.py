from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, value

MODEL = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
         'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=8)\n')
FULL = ('cfg.model.recompute_granularity = "full"\ncfg.model.recompute_method = "uniform"\n'
        'cfg.model.recompute_num_layers = 1\n')
MOE_LAYER = "model.moe_layer_recompute"
GRANULARITY = "model.recompute_granularity"


class MoeLayerRecomputeWithFull(Rule):
    id = "RC011"
    name = "moe-layer-recompute-with-full"
    severity = Severity.ERROR
    summary = "The deprecated moe_layer_recompute cannot be combined with full recompute granularity."
    fixable = True
    tags = ("recompute", "moe")
    doc = """## What it does
Flags `model.moe_layer_recompute = True` with `model.recompute_granularity = "full"`.

## Why it matters
`moe_layer_recompute` is the deprecated spelling of selective recompute of the MoE layer
(`recompute_granularity = "selective"` with "moe" in `recompute_modules`): Megatron-Core turns it
into that, and refuses it under full recompute. `TransformerConfig.__post_init__` (run by
`model.finalize()` in `ConfigContainer.validate()`) raises "Do not set --moe-layer-recompute
with full recompute granularity." at job start. Full recompute already recomputes the MoE
layer, so the flag adds nothing there.

## Example
```python
cfg.model.recompute_granularity = "full"
cfg.model.moe_layer_recompute = True
```

## Fix
Set `model.moe_layer_recompute = False` (safe: under full recompute the MoE layer is
recomputed anyway). To recompute only the MoE layers, use `recompute_granularity = "selective"`
with "moe" in `recompute_modules` instead.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check it the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1835-1846; 0.16.1
:1255-1266. Oracle (Megatron-Bridge 0.6.2, `qwen3_30b_a3b_pretrain_config`):
`model.moe_layer_recompute=True model.recompute_granularity=full model.recompute_method=uniform
model.recompute_num_layers=1` fails with "Do not set --moe-layer-recompute with full recompute
granularity.".
"""
    valid = [
        MODEL + FULL,
        MODEL + "cfg.model.moe_layer_recompute = True",
        MODEL + FULL + "for flag in (True, False):\n    cfg.model.moe_layer_recompute = flag",
        Example(MODEL + FULL, version="0.3"),
    ]
    invalid = [
        Example(MODEL + FULL + "cfg.model.moe_layer_recompute = True  # error", message="Do not set --moe-layer-recompute",
                unsafe=True, fixed=MODEL + FULL + "cfg.model.moe_layer_recompute = False  # error"),
        # modelled on a full-recompute recipe given the old MoE recompute flag on the command line
        Example(MODEL + FULL, dotlist=("model.moe_layer_recompute=true",)),
        Example(MODEL + FULL + "cfg.model.moe_layer_recompute = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, MOE_LAYER, False) is not True or value(cfg, GRANULARITY, None) != "full":
            return
        yield ctx.report(
            cfg, f"{MOE_LAYER} is True with {GRANULARITY} 'full'; Megatron-Core raises 'Do not set "
                 "--moe-layer-recompute with full recompute granularity.' at job start (full recompute already "
                 "recomputes the MoE layer)",
            [MOE_LAYER, GRANULARITY], primary=MOE_LAYER,
            fixes=[FixIntent("set", MOE_LAYER, False, safe=True, description=f"set {MOE_LAYER} = False")])
