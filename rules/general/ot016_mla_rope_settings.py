from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, known, value

MLA = ("from megatron.bridge.models.mla_provider import MLAModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = MLAModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, multi_latent_attention=True)\n")
GPT = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n")
MLA_FLAG = "model.multi_latent_attention"
FUSION = "model.apply_rope_fusion"
ROPE_TYPE = "model.rope_type"
INTERLEAVED = "model.rotary_interleaved"


class MlaRopeSettings(Rule):
    id = "OT016"
    name = "mla-rope-settings"
    severity = Severity.ERROR
    summary = "Multi-latent attention fuses RoPE only with YaRN and does not take interleaved rotary embeddings."
    fixable = True
    tags = ("general", "architecture")
    doc = """## What it does
On a model with `model.multi_latent_attention = True` (DeepSeek, Kimi, Moonlight, GLM-5 and other
MLA providers), flags
- `model.apply_rope_fusion = True` with `model.rope_type` other than "yarn";
- `model.rotary_interleaved = True`.

## Why it matters
Megatron-Core raises "apply_rope_fusion for MLA only works with YARN RoPE."
(`MLATransformerConfig.__post_init__`) and "rotary_interleaved does not work with
multi_latent_attention." (`TransformerConfig.__post_init__`), both run by `model.finalize()` in
`ConfigContainer.validate()`, at job start. Switching an MLA recipe to plain RoPE while its
RoPE fusion stays on gets there.

## Example
```python
cfg.model.rope_type = "rope"          # an MLA model with apply_rope_fusion = True
```

## Fix
Set `model.apply_rope_fusion = False` (safe: the unfused RoPE computes the same result, a little
slower), or keep `rope_type = "yarn"`. Set `model.rotary_interleaved = False` for MLA (unsafe:
the rotary layout of a checkpoint trained with it changes).

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check them the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2966-2967 (MLA, `rope_type`
field at :2927, default "yarn"), 2193-2194; 0.16.1 the same checks. Oracle (0.6.2,
`moonlight_16b_pretrain_config`): `model.apply_rope_fusion=True model.rope_type=rope` fails with
"apply_rope_fusion for MLA only works with YARN RoPE."; `model.rotary_interleaved=True` with
"rotary_interleaved does not work with multi_latent_attention.".
"""
    valid = [
        MLA + "cfg.model.apply_rope_fusion = True",
        MLA + "cfg.model.rope_type = 'rope'\ncfg.model.apply_rope_fusion = False",
        GPT + "cfg.model.rotary_interleaved = True",
        MLA + "cfg.model.apply_rope_fusion = True\nfor kind in ('rope', 'yarn'):\n    cfg.model.rope_type = kind",
        Example(MLA + "cfg.model.apply_rope_fusion = True", version="0.3"),
    ]
    invalid = [
        Example(MLA + "cfg.model.apply_rope_fusion = True  # error\ncfg.model.rope_type = 'rope'",
                message="apply_rope_fusion for MLA only works with YARN RoPE.", unsafe=True,
                fixed=MLA + "cfg.model.apply_rope_fusion = False  # error\ncfg.model.rope_type = 'rope'"),
        Example(MLA + "cfg.model.rotary_interleaved = True  # error",
                message="rotary_interleaved does not work with multi_latent_attention."),
        # modelled on an MLA recipe switched to plain RoPE on the command line
        Example(MLA + "cfg.model.apply_rope_fusion = True", dotlist=("model.rope_type=rope",)),
        Example(MLA + "cfg.model.rotary_interleaved = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, MLA_FLAG, False) is not True:
            return
        rope_type = value(cfg, ROPE_TYPE, None)
        if value(cfg, FUSION, False) is True and known(rope_type) and isinstance(rope_type, str) \
                and rope_type != "yarn":
            yield ctx.report(
                cfg, f"{FUSION} is True on a multi-latent attention model with {ROPE_TYPE} {rope_type!r}; "
                     "Megatron-Core raises 'apply_rope_fusion for MLA only works with YARN RoPE.' at job start",
                [ROPE_TYPE, FUSION],
                fixes=[FixIntent("set", FUSION, False, safe=True, description=f"set {FUSION} = False")])
        if value(cfg, INTERLEAVED, False) is True:
            yield ctx.report(
                cfg, f"{INTERLEAVED} is True on a multi-latent attention model; Megatron-Core raises "
                     "'rotary_interleaved does not work with multi_latent_attention.' at job start",
                [INTERLEAVED, MLA_FLAG], primary=INTERLEAVED,
                fixes=[FixIntent("set", INTERLEAVED, False, safe=False, description=f"set {INTERLEAVED} = False")])
