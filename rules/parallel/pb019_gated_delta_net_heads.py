from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, hf_model, int_values, parallel, value

GDN = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = GPTModelProvider(num_layers=8, hidden_size=256, num_attention_heads=16, "
       "experimental_attention_variant='gated_delta_net', linear_attention_freq=4)\n")
VARIANT = "model.experimental_attention_variant"
KEY_HEADS = "model.linear_num_key_heads"
VALUE_HEADS = "model.linear_num_value_heads"
TP = "model.tensor_model_parallel_size"
CP = "model.context_parallel_size"


class GatedDeltaNetHeads(Rule):
    id = "PB019"
    name = "gated-delta-net-heads"
    severity = Severity.ERROR
    summary = ("With gated delta net attention, linear_num_key_heads and linear_num_value_heads must divide by TP * CP, "
               "and the value heads by the key heads.")
    tags = ("parallelism", "architecture")
    doc = """## What it does
On a model with `model.experimental_attention_variant = "gated_delta_net"` (Qwen3-Next,
Qwen3.5 and other linear-attention hybrids), flags
- `model.linear_num_key_heads` or `model.linear_num_value_heads` not divisible by
  `tensor_model_parallel_size * context_parallel_size`;
- `model.linear_num_value_heads` not a multiple of `model.linear_num_key_heads`.

## Why it matters
The gated delta net layers split their heads over the tensor- and context-parallel ranks.
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "self.linear_num_key_heads=16 must be a multiple of
(self.tensor_model_parallel_size=8 * self.context_parallel_size=4)." (and the same of the value
heads) and "linear_num_value_heads (24) must be a multiple of linear_num_key_heads (16)." at job
start. Megatron-Core 0.16 asks the heads to divide by TP alone and refuses context parallelism
with gated delta net outright, so a layout that fails the TP * CP test fails there too. Raising
TP or CP on a Qwen3-Next recipe (16 key heads) past 16 total gets there.

## Example
```python
cfg.model.experimental_attention_variant = "gated_delta_net"
cfg.model.linear_num_key_heads = 16
cfg.model.tensor_model_parallel_size = 8
cfg.model.context_parallel_size = 4     # 16 % 32 != 0
```

## Fix
Choose TP * CP dividing both head counts. No automatic fix: the layout is the author's choice.

## Versions
0.3.x to 0.6.x.

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1347-1382 (head defaults 16
key and 32 value heads at :365-368); 0.16.1 :948-986 (TP only, CP must be 1). Oracle (0.6.2,
`llama3_8b_pretrain_config` given gated delta net settings): TP 8 and CP 4 with 16 key heads fails
with "self.linear_num_key_heads=16 must be a multiple of (self.tensor_model_parallel_size=8 *
self.context_parallel_size=4)."; 24 value heads with 16 key heads with "linear_num_value_heads (24)
must be a multiple of linear_num_key_heads (16)."; TP 4 and CP 2 is accepted.
"""
    valid = [
        GDN + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.context_parallel_size = 2",
        GDN.replace("experimental_attention_variant='gated_delta_net', ", "")
        + "cfg.model.tensor_model_parallel_size = 8\ncfg.model.context_parallel_size = 4",
        # the head counts from a Hugging Face config mblint cannot read
        "cfg = _pretrain_common()\n" + hf_model() + "cfg.model.experimental_attention_variant = 'gated_delta_net'\n"
        "cfg.model.tensor_model_parallel_size = 8\ncfg.model.context_parallel_size = 4",
        GDN + "for tp in (4, 8):\n    cfg.model.tensor_model_parallel_size = tp\ncfg.model.context_parallel_size = 4",
        Example(GDN + "cfg.model.tensor_model_parallel_size = 4", version="0.3"),
    ]
    invalid = [
        Example(GDN + "cfg.model.tensor_model_parallel_size = 8\ncfg.model.context_parallel_size = 4  # error",
                message="linear_num_key_heads 16 is not divisible by tensor_model_parallel_size * context_parallel_size = 8 * 4 = 32"),
        Example(GDN + "cfg.model.linear_num_value_heads = 24  # error",
                message="linear_num_value_heads (24) must be a multiple of linear_num_key_heads (16)"),
        # modelled on a larger layout given on the command line
        Example(GDN, dotlist=("model.tensor_model_parallel_size=32",)),
        Example(GDN + "cfg.model.tensor_model_parallel_size = 32  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, VARIANT, None) != "gated_delta_net":
            return
        keys, values = value(cfg, KEY_HEADS, None), value(cfg, VALUE_HEADS, None)
        if int_values(keys, values) and keys > 0 and values % keys != 0:
            yield ctx.report(cfg, f"{VALUE_HEADS} is {values}, not a multiple of {KEY_HEADS} {keys}; Megatron-Core "
                                  f"asserts 'linear_num_value_heads ({values}) must be a multiple of "
                                  f"linear_num_key_heads ({keys}).' at job start", [VALUE_HEADS, KEY_HEADS])
        par = parallel(cfg)
        if not int_values(par.tp, par.cp) or par.tp < 1 or par.cp < 1:
            return
        split = par.tp * par.cp
        bad = [(path, heads) for path, heads in ((KEY_HEADS, keys), (VALUE_HEADS, values))
               if int_values(heads) and heads % split != 0]
        if not bad:
            return
        shown = " and ".join(f"{path.split('.')[1]} {heads}" for path, heads in bad)
        yield ctx.report(cfg, f"{shown} {'is' if len(bad) == 1 else 'are'} not divisible by "
                              f"tensor_model_parallel_size * context_parallel_size = {par.tp} * {par.cp} = {split}; "
                              "the gated delta net layers split their heads over TP and CP ranks, Megatron-Core "
                              "asserts at job start", [TP, CP, *(path for path, _ in bad)])
