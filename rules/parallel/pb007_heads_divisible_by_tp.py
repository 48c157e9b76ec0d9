from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, hf_model, int_values, parallel, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class HeadsDivisibleByTp(Rule):
    id = "PB007"
    name = "heads-divisible-by-tp"
    severity = Severity.ERROR
    summary = "Attention heads must divide over TP; query groups must be a multiple or divisor of TP."
    tags = ("parallelism", "tensor-parallel")
    doc = """## What it does
Flags `model.num_attention_heads % tensor_model_parallel_size != 0`, and
`num_query_groups` (defaulting to `num_attention_heads`) that is neither a multiple nor a
divisor of TP. Silent when the head counts are unknown (usually HF-derived).

## Why it matters
Each TP rank holds whole heads. Megatron-Core's `TransformerConfig.__post_init__` raises
"num_attention_heads (...) must be a multiple of tensor_model_parallel_size (...)" /
"num_query_groups (...) must be a multiple or divisor of tensor_model_parallel_size (...)"
when `validate()` finalises the model.

## Example
```python
cfg.model.num_attention_heads = 12
cfg.model.tensor_model_parallel_size = 8
```

## Fix
Choose a TP that divides the head count; not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1323-1345.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_attention_heads = 32\ncfg.model.num_query_groups = 8\n"
        "cfg.model.tensor_model_parallel_size = 4",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_attention_heads = 32\ncfg.model.num_query_groups = 2\n"
        "cfg.model.tensor_model_parallel_size = 8",
        # head counts from Hugging Face: unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 3",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_attention_heads = 32\ncfg.model.num_query_groups = 8\n"
                "cfg.model.tensor_model_parallel_size = 8", version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_attention_heads = 12\ncfg.model.num_query_groups = 12\n"
        "cfg.model.tensor_model_parallel_size = 8  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_attention_heads = 24\ncfg.model.num_query_groups = 3\n"
        "cfg.model.tensor_model_parallel_size = 8  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_attention_heads = 12\ncfg.model.num_query_groups = 4\n"
                "cfg.model.tensor_model_parallel_size = 8  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        tp = parallel(cfg).tp
        heads = cfg.value("model.num_attention_heads")
        if not int_values(tp, heads) or tp <= 1:
            return
        if heads % tp != 0:
            message = (f"model.num_attention_heads is {heads}, not a multiple of tensor_model_parallel_size {tp} "
                       f"({heads} % {tp} = {heads % tp})")
            yield ctx.report(cfg, message, ["model.num_attention_heads", "model.tensor_model_parallel_size"])
            return
        groups = value(cfg, "model.num_query_groups", None)
        path = "model.num_query_groups"
        if groups is None:
            groups, path = heads, "model.num_attention_heads"
        if not int_values(groups) or groups <= 0:
            return
        if groups % tp != 0 and tp % groups != 0:
            message = (f"model.num_query_groups is {groups}, neither a multiple nor a divisor of "
                       f"tensor_model_parallel_size {tp}")
            yield ctx.report(cfg, message, [path, "model.tensor_model_parallel_size"])
