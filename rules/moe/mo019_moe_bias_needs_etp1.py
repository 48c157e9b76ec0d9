from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, int_values, known, parallel, value

GPT = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
       'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=8)\n')
HF = "cfg = _pretrain_common()\n" + hf_model()
ETP = "model.expert_tensor_parallel_size"
BIAS = "model.add_bias_linear"


class MoeBiasNeedsEtp1(Rule):
    id = "MO019"
    name = "moe-bias-needs-etp1"
    severity = Severity.ERROR
    summary = "An MoE model with linear biases (add_bias_linear) needs expert_tensor_parallel_size = 1."
    fixable = True
    tags = ("moe", "parallelism")
    doc = """## What it does
Flags an MoE model (`model.num_moe_experts` set) with `model.add_bias_linear = True` whose
effective expert tensor-parallel size is not 1: `model.expert_tensor_parallel_size`, or, when it
is None, 1 with expert parallelism (`expert_model_parallel_size > 1`, Megatron-Bridge's default)
and the tensor-parallel size without it (Megatron-Core's default).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "Bias in Moe is only supported when ETP==1" at job start:
the expert layers cannot split a bias across expert tensor-parallel ranks. Models built with
biases (gpt-oss) or a recipe that turns `add_bias_linear` on for an MoE model stop there when
the experts are split by tensor parallelism.

## Example
```python
cfg.model.num_moe_experts = 8
cfg.model.add_bias_linear = True
cfg.model.expert_tensor_parallel_size = 2   # error: must be 1
```

## Fix
Set `model.expert_tensor_parallel_size = 1` (safe: only how the expert weights are split
changes; the GPUs freed from expert TP go to expert data parallelism).

## Versions
0.3.x and 0.6.x (Megatron-Core 0.16.1 and 0.19.2 check it the same way).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2279-2282,
megatron/core/model_parallel_config.py:506-507 (ETP None takes TP); 0.6.2
megatron/bridge/models/transformer_config.py:87-88 (ETP None is 1 with EP > 1); MCore 0.16.1
megatron/core/transformer/transformer_config.py:1588-1591. Oracle:
`qwen3_30b_a3b_pretrain_config model.add_bias_linear=True model.expert_tensor_parallel_size=2`
fails with that message.
"""
    valid = [
        GPT + 'cfg.model.add_bias_linear = True\ncfg.model.expert_tensor_parallel_size = 1',
        GPT + 'cfg.model.add_bias_linear = False\ncfg.model.expert_tensor_parallel_size = 2',
        # with expert parallelism an unset ETP is 1
        GPT + 'cfg.model.add_bias_linear = True\ncfg.model.tensor_model_parallel_size = 2\n'
        'cfg.model.expert_model_parallel_size = 2',
        # a dense model
        ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
         'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n'
         'cfg.model.add_bias_linear = True\ncfg.model.expert_tensor_parallel_size = 2'),
        # the expert count from a Hugging Face config mblint cannot read
        HF + 'cfg.model.add_bias_linear = True\ncfg.model.expert_tensor_parallel_size = 2',
        GPT + 'cfg.model.add_bias_linear = True\nfor etp in [1, 2]:\n    cfg.model.expert_tensor_parallel_size = etp',
        Example(GPT + 'cfg.model.add_bias_linear = True\ncfg.model.expert_tensor_parallel_size = 1', version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(GPT + 'cfg.model.add_bias_linear = True\ncfg.model.expert_tensor_parallel_size = 2  # error',
                message="Bias in Moe is only supported when ETP==1",
                fixed=GPT + 'cfg.model.add_bias_linear = True\ncfg.model.expert_tensor_parallel_size = 1  # error',
                unsafe=True),
        # ETP unset and no expert parallelism: it takes TP = 2; the assignment is added, a safe fix
        Example(GPT + 'cfg.model.tensor_model_parallel_size = 2\ncfg.model.add_bias_linear = True  # error',
                message="model.expert_tensor_parallel_size is None (the tensor-parallel size, 2)", unsafe=False,
                fixed=GPT + 'cfg.model.tensor_model_parallel_size = 2\ncfg.model.add_bias_linear = True  # error\n'
                      'cfg.model.expert_tensor_parallel_size = 1'),
        # modelled on an MoE recipe given biases and expert TP on the command line
        Example(GPT, dotlist=("model.add_bias_linear=true", "model.expert_tensor_parallel_size=2")),
        Example(GPT + 'cfg.model.expert_tensor_parallel_size = 4  # error\ncfg.model.add_bias_linear = True',
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        experts = value(cfg, "model.num_moe_experts", None)
        bias = value(cfg, BIAS, False)
        if experts is None or not known(experts) or bias is not True:
            return
        par = parallel(cfg)
        if not int_values(par.etp) or par.etp == 1:
            return
        written = value(cfg, ETP, None)
        size = (f"{ETP} is {par.etp}" if written is not None
                else f"{ETP} is None (the tensor-parallel size, {par.etp})")
        yield ctx.report(
            cfg,
            f"{BIAS} is True on an MoE model ({experts} experts), but {size}; Megatron-Core asserts "
            "'Bias in Moe is only supported when ETP==1' at job start",
            [ETP, BIAS, "model.num_moe_experts"],
            fixes=[FixIntent("set", ETP, 1, safe=True, description=f"set {ETP} = 1")],
        )
