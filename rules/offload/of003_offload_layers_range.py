from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, cpu_offloading_known_on, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class OffloadLayersRange(Rule):
    id = "OF003"
    name = "offload-layers-range"
    severity = Severity.ERROR
    summary = "model.cpu_offloading_num_layers must be in [0, num_layers)."
    tags = ("offload",)
    doc = """## What it does
Flags `model.cpu_offloading = True` with `model.cpu_offloading_num_layers` below 0 or not
below `model.num_layers`. `num_layers` must be known (it is unknown for providers built from a
Hugging Face config unless the recipe sets it).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` raises "CPU offloading can be done only for
layers less than <num_layers>" at job start (confirmed with Megatron-Bridge 0.6.2 for a
16-layer model with cpu_offloading_num_layers = 16).

## Example
```python
cfg.model.num_layers = 16
cfg.model.cpu_offloading = True
cfg.model.cpu_offloading_num_layers = 16
```

## Fix
Offload at most `num_layers - 1` layers. No automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1707-1712.
"""
    valid = [
        HF + "cfg.model.num_layers = 16\ncfg.model.cpu_offloading = True\ncfg.model.cpu_offloading_num_layers = 15",
        # num_layers HF-derived: unknown
        HF + "cfg.model.cpu_offloading = True\ncfg.model.cpu_offloading_num_layers = 64",
        Example(HF + "cfg.model.num_layers = 16\ncfg.model.cpu_offloading = False\n"
                "cfg.model.cpu_offloading_num_layers = 16", version="0.3"),
    ]
    invalid = [
        HF + "cfg.model.num_layers = 16\ncfg.model.cpu_offloading = True\ncfg.model.cpu_offloading_num_layers = 16  # error",
        Example(HF + "cfg.model.num_layers = 8\ncfg.model.cpu_offloading = True\n"
                "cfg.model.cpu_offloading_num_layers = -1  # error", version="0.3"),
    ]

    precondition = cpu_offloading_known_on

    def check(self, cfg, ctx):
        if value(cfg, "model.cpu_offloading", False) is not True:
            return
        layers = value(cfg, "model.cpu_offloading_num_layers")
        total = value(cfg, "model.num_layers")
        if not known(layers, total) or not isinstance(layers, int) or not isinstance(total, int):
            return
        if 0 <= layers < total:
            return
        yield ctx.report(cfg, f"model.cpu_offloading_num_layers is {layers}, but it must be between 0 and "
                              f"num_layers - 1 = {total - 1} (model.num_layers = {total}); Megatron-Core raises at job start",
                         ["model.cpu_offloading_num_layers", "model.num_layers", "model.cpu_offloading"],
                         primary="model.cpu_offloading_num_layers")
