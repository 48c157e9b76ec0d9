from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, int_values, is_model_class, knows_field, value

GPT = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n")
MLA = ("from megatron.bridge.models.mla_provider import MLAModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = MLAModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, multi_latent_attention=True)\n")
GATE = "model.attention_output_gate"
FUSED_QKV_ROPE = "model.fused_single_qkv_rope"
FLASH_VERSION = "model.flash_attention_version"


class AttentionKernelSettings(Rule):
    id = "OT026"
    name = "attention-kernel-settings"
    severity = Severity.ERROR
    summary = ("attention_output_gate is not supported on MLA models nor with fused_single_qkv_rope; "
               "flash_attention_version must be 2, 3 or 4.")
    fixable = True
    tags = ("general", "architecture")
    doc = """## What it does
Flags, on `cfg.model`,
- `attention_output_gate = True` on a multi-latent attention config class (`MLAModelProvider`,
  DeepSeek, Kimi... providers, which run `MLATransformerConfig.__post_init__`);
- `attention_output_gate = True` with `fused_single_qkv_rope = True`;
- `flash_attention_version` set to anything but 2, 3 or 4 (0.6.x, where the field exists).

## Why it matters
Megatron-Core raises "Output gate is not supported for MLA yet." (NotImplementedError), "fused_single_qkv_rope
does not support gated attention for now." and asserts "flash_attention_version must be one of 2, 3,
or 4" in `TransformerConfig.__post_init__` (run by `model.finalize()` in `ConfigContainer.validate()`)
at job start. The gated attention of Qwen3-Next or Qwen3.5 carried over to an MLA model, or a fused
QKV RoPE kernel turned on for a gated model, stops the job.

## Example
```python
cfg.model.attention_output_gate = True
cfg.model.fused_single_qkv_rope = True
```

## Fix
Turn `fused_single_qkv_rope` off for a gated model (safe: the unfused path computes the same);
MLA models take no output gate. Only the first has an automatic fix.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check the gate the same way); `flash_attention_version`
from 0.6.x (Megatron-Core 0.19 added the field with its check).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2969-2970 (MLA), 2189-2191,
2868-2872; 0.16.1 the same gate checks. Oracle (0.6.2): `moonlight_16b_pretrain_config
model.attention_output_gate=True` fails with "Output gate is not supported for MLA yet.";
`llama3_8b_pretrain_config model.attention_output_gate=True model.fused_single_qkv_rope=True` with
"fused_single_qkv_rope does not support gated attention for now."; `model.flash_attention_version=5` with
"flash_attention_version must be one of 2, 3, or 4, got 5".
"""
    valid = [
        GPT + "cfg.model.attention_output_gate = True",
        GPT + "cfg.model.fused_single_qkv_rope = True",
        MLA + "cfg.model.attention_output_gate = False",
        GPT + "cfg.model.flash_attention_version = 3",
        GPT + "cfg.model.fused_single_qkv_rope = True\nfor flag in (True, False):\n    cfg.model.attention_output_gate = flag",
        Example(GPT + "cfg.model.attention_output_gate = True", version="0.3"),
    ]
    invalid = [
        Example(MLA + "cfg.model.attention_output_gate = True  # error", message="Output gate is not supported for MLA yet."),
        Example(GPT + "cfg.model.attention_output_gate = True\ncfg.model.fused_single_qkv_rope = True  # error",
                message="fused_single_qkv_rope does not support gated attention for now.", unsafe=True,
                fixed=GPT + "cfg.model.attention_output_gate = True\ncfg.model.fused_single_qkv_rope = False  # error"),
        Example(GPT + "cfg.model.flash_attention_version = 5  # error",
                message="flash_attention_version must be one of 2, 3, or 4"),
        # modelled on a gated-attention switch given to an MLA recipe on the command line
        Example(MLA, dotlist=("model.attention_output_gate=true",)),
        Example(MLA + "cfg.model.attention_output_gate = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, GATE, False) is True:
            if is_model_class(cfg, "MLATransformerConfig") is True:
                yield ctx.report(cfg, f"{GATE} is True on a multi-latent attention model ({cfg.type_of('model')}); "
                                      "Megatron-Core raises 'Output gate is not supported for MLA yet.' at job start",
                                 [GATE])
            if value(cfg, FUSED_QKV_ROPE, False) is True:
                yield ctx.report(cfg, f"{FUSED_QKV_ROPE} is True with {GATE}; Megatron-Core raises "
                                      "'fused_single_qkv_rope does not support gated attention for now.' at job start",
                                 [FUSED_QKV_ROPE, GATE],
                                 fixes=[FixIntent("set", FUSED_QKV_ROPE, False, safe=True,
                                                  description=f"set {FUSED_QKV_ROPE} = False")])
        if knows_field(cfg, "flash_attention_version"):
            version = value(cfg, FLASH_VERSION, None)
            if int_values(version) and version not in (2, 3, 4):
                yield ctx.report(cfg, f"{FLASH_VERSION} is {version}; Megatron-Core asserts 'flash_attention_version "
                                      f"must be one of 2, 3, or 4, got {version}' at job start", [FLASH_VERSION])
