from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, int_values, value

GPT = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
       'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=8)\n')
EXPERTS = "model.num_moe_experts"


class MoeExpertsPositive(Rule):
    id = "MO026"
    name = "moe-experts-positive"
    severity = Severity.ERROR
    summary = "model.num_moe_experts must be None (a dense model) or positive, never 0."
    fixable = True
    tags = ("moe",)
    doc = """## What it does
Flags `model.num_moe_experts` set to 0 or less.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises "num_moe_experts must be non-negative." at job start for any
value of 0 or less. A dense model is written with `num_moe_experts = None`; 0, the natural guess
for "no experts", stops the job.

## Example
```python
cfg.model.num_moe_experts = 0     # meant: no MoE layers
```

## Fix
Set `model.num_moe_experts = None` for a dense model (unsafe: it replaces a value the recipe
wrote; the model is dense either way).

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check it the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1531-1532 (0.16.1 :1051-1052).
Oracle (0.6.2): `qwen3_30b_a3b_pretrain_config model.num_moe_experts=0` and `llama3_8b_pretrain_config
model.num_moe_experts=0` fail with "num_moe_experts must be non-negative.".
"""
    valid = [
        GPT,
        GPT + "cfg.model.num_moe_experts = None",
        GPT + "for n in (0, 8):\n    cfg.model.num_moe_experts = n",
        Example(GPT, version="0.3"),
    ]
    invalid = [
        Example(GPT + "cfg.model.num_moe_experts = 0  # error", message="num_moe_experts must be non-negative.",
                unsafe=True, fixed=GPT + "cfg.model.num_moe_experts = None  # error"),
        # modelled on a dense run of an MoE recipe asked for on the command line
        Example(GPT, dotlist=("model.num_moe_experts=0",)),
        Example(GPT + "cfg.model.num_moe_experts = 0  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        experts = value(cfg, EXPERTS, None)
        if not int_values(experts) or experts > 0:
            return
        yield ctx.report(cfg, f"{EXPERTS} is {experts}; Megatron-Core raises 'num_moe_experts must be non-negative.' "
                              "at job start (a dense model has num_moe_experts = None)", [EXPERTS],
                         fixes=[FixIntent("set", EXPERTS, None, safe=False, description=f"set {EXPERTS} = None")])
