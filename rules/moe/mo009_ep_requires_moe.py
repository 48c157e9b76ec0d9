from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, int_values, parallel, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class EpRequiresMoe(Rule):
    id = "MO009"
    name = "ep-requires-moe"
    severity = Severity.ERROR
    summary = "Expert parallelism needs an MoE model whose expert count EP divides."
    fixable = True
    tags = ("moe", "parallelism")
    doc = """## What it does
Flags `model.expert_model_parallel_size > 1` when `model.num_moe_experts` is known to be None
(a dense model), or known and not divisible by the expert-parallel size. `num_moe_experts` is
usually derived from the Hugging Face config (`AutoBridge...to_megatron_provider()`); then it is
unknown to mblint and the rule stays silent.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises "num_moe_experts must be non None to use expert-parallel."
at job start. With an expert count EP does not divide, each EP rank must hold
`num_moe_experts / EP` local experts, and building the MoE layer fails
(`moe_layer.py` asserts the division).

## Example
```python
cfg.model = Llama3ModelProvider8B()
cfg.model.expert_model_parallel_size = 2
```

## Fix
Safe for a dense model: set `expert_model_parallel_size = 1`. For an MoE model pick an EP
that divides the expert count.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1468-1469;
MCore 0.16.1 megatron/core/transformer/transformer_config.py:1048-1049;
MCore 0.19.2 megatron/core/transformer/moe/moe_layer.py:185 (`assert num_moe_experts % ep_size == 0`);
0.6.2 megatron/bridge/training/config.py:1261-1262 (model.finalize in validate). Oracle:
`llama3_8b_pretrain_2gpu_h100_bf16_config model.num_moe_experts=None model.expert_model_parallel_size=2`
fails with that message.
"""
    valid = [
        HF + 'cfg.model.expert_model_parallel_size = 8',
        HF + 'cfg.model.num_moe_experts = 64\ncfg.model.expert_model_parallel_size = 8',
        HF + 'cfg.model.num_moe_experts = None\ncfg.model.expert_model_parallel_size = 1',
        HF + 'cfg.model.num_moe_experts = None\nfor ep in [2]:\n    cfg.model.expert_model_parallel_size = ep',
        Example(HF + 'cfg.model.num_moe_experts = 128\ncfg.model.expert_model_parallel_size = 16', version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(HF + 'cfg.model.num_moe_experts = None\ncfg.model.expert_model_parallel_size = 2  # error',
                message="model.expert_model_parallel_size is 2 but model.num_moe_experts is None (a dense model)",
                fixed=HF + 'cfg.model.num_moe_experts = None\ncfg.model.expert_model_parallel_size = 1  # error',
                unsafe=True),
        HF + 'cfg.model.expert_model_parallel_size = 8\ncfg.model.num_moe_experts = 60  # error',
        Example(HF + 'cfg.model.num_moe_experts = None', dotlist=("model.expert_model_parallel_size=4",)),
        Example(HF + 'cfg.model.num_moe_experts = None\ncfg.model.expert_model_parallel_size = 2  # error',
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        par = parallel(cfg)
        if not int_values(par.ep) or par.ep <= 1:
            return
        experts = value(cfg, "model.num_moe_experts", None)
        fields = ["model.expert_model_parallel_size", "model.num_moe_experts"]
        if experts is None:
            yield ctx.report(
                cfg,
                f"model.expert_model_parallel_size is {par.ep} but model.num_moe_experts is None (a dense model); "
                "Megatron-Core raises 'num_moe_experts must be non None to use expert-parallel.'",
                fields,
                fixes=[FixIntent("set", "model.expert_model_parallel_size", 1, safe=True,
                                 description="set expert_model_parallel_size to 1")],
            )
        elif int_values(experts) and experts > 0 and experts % par.ep != 0:
            yield ctx.report(
                cfg,
                f"model.num_moe_experts is {experts}, not divisible by model.expert_model_parallel_size = {par.ep} "
                f"({experts} / {par.ep} = {experts / par.ep:g} experts per rank); the MoE layer cannot be built",
                fields,
            )
