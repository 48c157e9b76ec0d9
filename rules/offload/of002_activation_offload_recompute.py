from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, cpu_offloading_known_on, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class ActivationOffloadWithRecompute(Rule):
    id = "OF002"
    name = "activation-offload-recompute"
    severity = Severity.ERROR
    summary = "Layer-wise activation CPU offloading cannot be combined with activation recompute."
    tags = ("offload", "recompute")
    doc = """## What it does
Flags `model.cpu_offloading = True` with `model.recompute_granularity` set ("full" or
"selective").

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `ConfigContainer.validate()` at job
start) raises "CPU offloading does not work when activation recomputation is enabled"
(confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.model.recompute_granularity = "selective"
cfg.model.cpu_offloading = True
```

## Fix
Choose one memory-saving technique: set `recompute_granularity = None` or
`cpu_offloading = False`. No automatic fix: either changes memory use and speed.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1719-1722.
"""
    valid = [
        HF + "cfg.model.cpu_offloading = True\ncfg.model.recompute_granularity = None",
        HF + "cfg.model.cpu_offloading = False\ncfg.model.recompute_granularity = 'selective'",
        HF + "cfg.model.cpu_offloading = True\nfor g in ['full', None]:\n    cfg.model.recompute_granularity = g",
        Example(HF + "cfg.model.cpu_offloading = True", version="0.3"),
    ]
    invalid = [
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.cpu_offloading = True  # error",
        Example(HF + "cfg.model.cpu_offloading = True\ncfg.model.recompute_granularity = 'full'  # error",
                version="0.3"),
        Example(HF + "cfg.model.cpu_offloading = True", dotlist=("model.recompute_granularity=selective",)),
    ]

    precondition = cpu_offloading_known_on

    def check(self, cfg, ctx):
        offload = value(cfg, "model.cpu_offloading", False)
        granularity = value(cfg, "model.recompute_granularity", None)
        if offload is not True or not known(granularity) or granularity is None:
            return
        message = (f"model.cpu_offloading is True with model.recompute_granularity = {granularity!r}; activation "
                   f"CPU offloading does not work with activation recompute (TransformerConfig raises at job start)")
        yield ctx.report(cfg, message, ["model.cpu_offloading", "model.recompute_granularity"])
