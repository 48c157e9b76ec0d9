from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    allowed_values,
    fine_grained_offloading_known_on,
    format_value,
    hf_model,
    known,
    str_list,
    suggest,
    value,
)

HF = "cfg = _pretrain_common()\n" + hf_model()
FG = "cfg.model.fine_grained_activation_offloading = True\n"
FLAG = "model.fine_grained_activation_offloading"
MODS = "model.offload_modules"
ALLOWED_06 = ("core_attn", "attn_proj", "expert_fc1", "fused_group_mlp", "moe_act", "attn_norm", "mlp_norm", "qkv_linear")
ALLOWED_03 = ("core_attn", "attn_proj", "expert_fc1", "moe_act", "attn_norm", "mlp_norm", "qkv_linear")


class FineGrainedVsLayerOffload(Rule):
    id = "OF004"
    name = "fine-grained-vs-layer-offload"
    severity = Severity.ERROR
    fixable = True
    summary = "Fine-grained activation offloading: not with cpu_offloading, needs a non-empty valid offload_modules, attn_proj only with core_attn."
    tags = ("offload",)
    doc = """## What it does
With `model.fine_grained_activation_offloading = True`, flags
- `model.cpu_offloading = True` (the two offloading schemes exclude each other);
- `model.offload_modules` empty or None;
- names in `offload_modules` outside `core_attn, attn_proj, expert_fc1, fused_group_mlp
  (0.6.x), moe_act, attn_norm, mlp_norm, qkv_linear`;
- `attn_proj` without `core_attn`.

## Why it matters
`TransformerConfig.__post_init__` asserts "fine_grained_activation_offloading cannot be enabled
with cpu_offloading.", asserts a non-empty `offload_modules` (bare `AssertionError`), "Invalid
choices for offload_modules", and raises "attn_proj cannot be set to offload_modules alone
without core_attn" at job start (all confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.model.fine_grained_activation_offloading = True
cfg.model.offload_modules = ["attn_proj"]
```

## Fix
Pick one offloading scheme; list valid modules, adding `core_attn` next to `attn_proj`. No
automatic fix except adding `core_attn` (safe: what Megatron-Core requires).

## Versions
0.3.x (Megatron-Core 0.16: no `fused_group_mlp`) and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1848-1873; MCore 0.16.1
transformer_config.py:1268-1292.
"""
    valid = [
        HF + FG + "cfg.model.offload_modules = ['core_attn', 'attn_proj']",
        HF + "cfg.model.fine_grained_activation_offloading = False\ncfg.model.cpu_offloading = True",
        HF + FG + "for m in [['core_attn'], []]:\n    cfg.model.offload_modules = m",
        Example(HF + FG + "cfg.model.offload_modules = ['moe_act']", version="0.3"),
    ]
    invalid = [
        HF + FG + "cfg.model.offload_modules = ['core_attn']\ncfg.model.cpu_offloading = True  # error",
        HF + FG + "cfg.model.offload_modules = []  # error",
        # adding core_attn replaces what the recipe wrote: an unsafe fix
        Example(HF + FG + "cfg.model.offload_modules = ['attn_proj']  # error",
                message="has 'attn_proj' without 'core_attn'", unsafe=True,
                fixed=HF + FG + "cfg.model.offload_modules = ['core_attn', 'attn_proj']  # error"),
        HF + FG + "cfg.model.offload_modules = ['core_attn', 'mlp']  # error",
        Example(HF + FG + "cfg.model.offload_modules = ['fused_group_mlp']  # error", version="0.3"),
    ]

    precondition = fine_grained_offloading_known_on

    def check(self, cfg, ctx):
        flag = value(cfg, FLAG, False)
        if not known(flag) or flag is not True:
            return
        layer = value(cfg, "model.cpu_offloading", False)
        if known(layer) and layer is True:
            yield ctx.report(cfg, f"{FLAG} and model.cpu_offloading are both True; fine-grained activation offloading "
                                  f"cannot be combined with layer-wise CPU offloading (TransformerConfig asserts at "
                                  f"job start)", [FLAG, "model.cpu_offloading"])
        raw = value(cfg, MODS, [])
        modules = str_list(raw)
        if not known(raw) or not known(modules) and modules is not None:
            return
        if not modules:
            yield ctx.report(cfg, f"{FLAG} is True, but {MODS} is {format_value(raw)}; at least one module must be "
                                  f"listed (TransformerConfig asserts at job start)", [FLAG, MODS])
            return
        allowed = allowed_values(cfg, "offload_modules", ALLOWED_03)
        bad = [m for m in dict.fromkeys(modules) if m not in allowed]
        if bad:
            hints = [f"{m!r} (did you mean {s!r}?)" if (s := suggest(m, allowed)) else repr(m) for m in bad]
            yield ctx.report(cfg, f"{MODS} has {', '.join(hints)}, which Megatron-Core does not offload; allowed are "
                                  f"{', '.join(allowed)} (TransformerConfig asserts at job start)", [MODS, FLAG],
                             primary=MODS)
        if "attn_proj" in modules and "core_attn" not in modules:
            yield ctx.report(cfg, f"{MODS} has 'attn_proj' without 'core_attn'; attn_proj's input is core_attn's output, "
                                  f"which core_attn's backward needs (TransformerConfig raises at job start)", [MODS, FLAG],
                             primary=MODS,
                             fixes=[FixIntent("set", MODS, ["core_attn", *modules], safe=True,
                                              description="also offload core_attn")])
