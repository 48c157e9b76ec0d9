from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class SelectiveRecomputeNoNumLayers(Rule):
    id = "RC002"
    name = "selective-no-num-layers"
    severity = Severity.ERROR
    summary = "Selective recompute requires model.recompute_num_layers = None."
    fixable = True
    tags = ("recompute",)
    doc = """## What it does
Flags `model.recompute_granularity = "selective"` together with a non-None
`model.recompute_num_layers`.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `ConfigContainer.validate()` at job
start) raises "When using recompute_granularity: selective recompute_num_layers must be None."
(confirmed with Megatron-Bridge 0.6.2). This typically happens when a recipe that used full
recompute is switched to selective and the layer count is left behind.

## Example
```python
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_num_layers = 2
```

## Fix
Set `recompute_num_layers = None` (and `recompute_method = None`). Safe: selective recompute
ignores both.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1749-1755.
"""
    valid = [
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_num_layers = None",
        HF + "cfg.model.recompute_granularity = 'full'\ncfg.model.recompute_method = 'uniform'\n"
        "cfg.model.recompute_num_layers = 2",
        HF + "cfg.model.recompute_granularity = 'selective'\nfor n in range(2):\n    cfg.model.recompute_num_layers = n",
        Example(HF + "cfg.model.recompute_granularity = 'selective'", version="0.3"),
    ]
    invalid = [
        Example(HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_num_layers = 2  # error",
                message="selective recompute requires it to be None", unsafe=True,
                fixed=HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.recompute_num_layers = None  # error"),
        Example(HF + "cfg.model.recompute_num_layers = 4  # error\n"
                "cfg.model.recompute_granularity = 'selective'", version="0.3"),
        Example(HF + "cfg.model.recompute_granularity = 'full'\ncfg.model.recompute_method = 'uniform'\n"
                "cfg.model.recompute_num_layers = 2", dotlist=("model.recompute_granularity=selective",)),
    ]

    def check(self, cfg, ctx):
        granularity = value(cfg, "model.recompute_granularity", None)
        layers = value(cfg, "model.recompute_num_layers", None)
        if granularity != "selective" or not known(layers) or layers is None:
            return
        message = (f"model.recompute_granularity is 'selective', but model.recompute_num_layers is {layers!r}; "
                   f"selective recompute requires it to be None (TransformerConfig raises at job start)")
        yield ctx.report(cfg, message, ["model.recompute_granularity", "model.recompute_num_layers"],
                         fixes=[FixIntent("set", "model.recompute_num_layers", None, safe=True,
                                          description="set recompute_num_layers = None")])
