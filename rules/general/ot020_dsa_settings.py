from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, int_values, knows_field, value

GPT = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, "
       "add_bias_linear=False, experimental_attention_variant='dsa')\n")
VARIANT = "model.experimental_attention_variant"
FUSION = "model.apply_rope_fusion"
BIAS = "model.add_bias_linear"
TOPK_FREQ = "model.dsa_indexer_topk_freq"
SKIP_OFFSET = "model.dsa_indexer_skip_topk_offset"


class DsaSettings(Rule):
    id = "OT020"
    name = "dsa-settings"
    severity = Severity.ERROR
    summary = ("DeepSeek sparse attention (experimental_attention_variant 'dsa') takes no RoPE fusion and no linear "
               "bias, and positive indexer settings.")
    fixable = True
    tags = ("general", "architecture")
    doc = """## What it does
On a model with `model.experimental_attention_variant = "dsa"` (GLM-5, DeepSeek-V3.2), flags
- `model.apply_rope_fusion = True`;
- `model.add_bias_linear = True`, `model.dsa_indexer_topk_freq` below 1 and a negative
  `model.dsa_indexer_skip_topk_offset` (in the releases with these indexer fields, 0.6.x).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "RoPE fusion is not supported for DSAttention" and raises
"DSA uses AbsorbedMLASelfAttention, which requires add_bias_linear=False. Disable linear bias for
DSA configs.", "dsa_indexer_topk_freq must be positive, got 0." and
"dsa_indexer_skip_topk_offset must be non-negative, got ..." at job start. RoPE fusion is on in
most dense recipes' defaults, so trying DSA attention on one of them stops here first.

## Example
```python
cfg.model.experimental_attention_variant = "dsa"
cfg.model.apply_rope_fusion = True
```

## Fix
Set `model.apply_rope_fusion = False` (safe: the unfused RoPE computes the same result) and
`model.add_bias_linear = False`; give the indexer settings in range. Only the RoPE fusion has an
automatic fix.

## Versions
0.3.x to 0.6.x for the RoPE fusion (Megatron-Core 0.16 to 0.19); 0.6.x for the rest (Megatron-Core
0.19 added the indexer fields with these checks).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2837-2838 (0.16.1 the same
assert), 1383-1398. Oracle (0.6.2, `llama3_8b_pretrain_config` with
`model.experimental_attention_variant=dsa`): fails with "RoPE fusion is not supported for
DSAttention" (the recipe's RoPE fusion); with `model.add_bias_linear=True` "DSA uses
AbsorbedMLASelfAttention, which requires add_bias_linear=False..."; with
`model.dsa_indexer_topk_freq=0` "dsa_indexer_topk_freq must be positive, got 0.".
"""
    valid = [
        GPT + "cfg.model.apply_rope_fusion = False",
        GPT.replace("experimental_attention_variant='dsa'", "experimental_attention_variant=None")
        + "cfg.model.apply_rope_fusion = True\ncfg.model.add_bias_linear = True",
        GPT + "for flag in (True, False):\n    cfg.model.apply_rope_fusion = flag",
        Example(GPT + "cfg.model.apply_rope_fusion = False\ncfg.model.add_bias_linear = True", version="0.3"),
    ]
    invalid = [
        Example(GPT + "cfg.model.apply_rope_fusion = True  # error", message="RoPE fusion is not supported for DSAttention",
                unsafe=True, fixed=GPT + "cfg.model.apply_rope_fusion = False  # error"),
        Example(GPT + "cfg.model.add_bias_linear = True  # error", message="requires add_bias_linear=False"),
        Example(GPT + "cfg.model.dsa_indexer_topk_freq = 0  # error", message="dsa_indexer_topk_freq must be positive"),
        Example(GPT + "cfg.model.dsa_indexer_skip_topk_offset = -1  # error",
                message="dsa_indexer_skip_topk_offset must be non-negative"),
        # modelled on DSA attention tried on a dense recipe from the command line
        Example(GPT.replace("experimental_attention_variant='dsa'", "experimental_attention_variant=None")
                + "cfg.model.apply_rope_fusion = True", dotlist=("model.experimental_attention_variant=dsa",)),
        Example(GPT + "cfg.model.apply_rope_fusion = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, VARIANT, None) != "dsa":
            return
        if value(cfg, FUSION, False) is True:
            yield ctx.report(cfg, f"{FUSION} is True with DSA attention; Megatron-Core asserts 'RoPE fusion is not "
                                  "supported for DSAttention' at job start", [FUSION, VARIANT], primary=FUSION,
                             fixes=[FixIntent("set", FUSION, False, safe=True, description=f"set {FUSION} = False")])
        if not knows_field(cfg, "dsa_indexer_topk_freq"):
            return
        if value(cfg, BIAS, False) is True:
            yield ctx.report(cfg, f"{BIAS} is True with DSA attention; Megatron-Core raises 'DSA uses "
                                  "AbsorbedMLASelfAttention, which requires add_bias_linear=False.' at job start",
                             [BIAS, VARIANT], primary=BIAS)
        freq, offset = value(cfg, TOPK_FREQ, None), value(cfg, SKIP_OFFSET, None)
        if int_values(freq) and freq < 1:
            yield ctx.report(cfg, f"{TOPK_FREQ} is {freq}; Megatron-Core raises 'dsa_indexer_topk_freq must be "
                                  f"positive, got {freq}.' at job start", [TOPK_FREQ])
        if int_values(offset) and offset < 0:
            yield ctx.report(cfg, f"{SKIP_OFFSET} is {offset}; Megatron-Core raises 'dsa_indexer_skip_topk_offset "
                                  "must be non-negative' at job start", [SKIP_OFFSET])
