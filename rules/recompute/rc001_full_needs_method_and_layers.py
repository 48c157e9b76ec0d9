from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class FullRecomputeNeedsMethodAndLayers(Rule):
    id = "RC001"
    name = "full-needs-method-and-layers"
    severity = Severity.ERROR
    summary = "Full activation recompute needs model.recompute_method and model.recompute_num_layers."
    fixable = True
    tags = ("recompute",)
    doc = """## What it does
Flags `model.recompute_granularity = "full"` when `model.recompute_method` or
`model.recompute_num_layers` is None.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__`, run by `ConfigContainer.validate()` at job
start, raises "Using recompute_granularity: full so recompute_method must be \\"block\\" or
\\"uniform\\"" and "When using recompute_granularity: full recompute_num_layers must be between
1 and num_layers_per_pipeline_rank" (both confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.model.recompute_granularity = "full"     # recompute_method and recompute_num_layers are None
```

## Fix
Set `recompute_method = "uniform"` and `recompute_num_layers = 1` (recompute every layer).
Unsafe in the sense that it changes memory and speed; it is the usual full-recompute setting.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1724-1748; 0.6.2
megatron/bridge/training/config.py (`ConfigContainer.validate` calls `model.finalize()`).
"""
    valid = [
        HF + "cfg.model.recompute_granularity = 'full'\ncfg.model.recompute_method = 'uniform'\n"
        "cfg.model.recompute_num_layers = 1",
        HF + "cfg.model.recompute_granularity = 'selective'",
        # method assigned in a loop: unknown, silent
        HF + "cfg.model.recompute_granularity = 'full'\ncfg.model.recompute_num_layers = 1\n"
        "for m in ['uniform', 'block']:\n    cfg.model.recompute_method = m",
        Example(HF + "cfg.model.recompute_granularity = None", version="0.3"),
    ]
    invalid = [
        HF + "cfg.model.recompute_granularity = 'full'\ncfg.model.recompute_method = None  # error\n"
        "cfg.model.recompute_num_layers = 1",
        Example(HF + "cfg.model.recompute_method = 'block'\ncfg.model.recompute_num_layers = None  # error\n"
                "cfg.model.recompute_granularity = 'full'", message="model.recompute_num_layers is None", unsafe=True,
                fixed=HF + "cfg.model.recompute_method = 'block'\ncfg.model.recompute_num_layers = 1  # error\n"
                      "cfg.model.recompute_granularity = 'full'"),
        # neither set: every layer recomputed, the usual full-recompute setting
        Example(HF + "cfg.model.recompute_granularity = 'full'  # error",
                message="model.recompute_method and model.recompute_num_layers are None", unsafe=True,
                fixed=HF + "cfg.model.recompute_granularity = 'full'  # error\ncfg.model.recompute_method = 'uniform'\n"
                      "cfg.model.recompute_num_layers = 1"),
        Example(HF + "cfg.model.recompute_method = None\n"
                "cfg.model.recompute_granularity = 'full'  # error", version="0.3"),
        Example(HF + "cfg.model.recompute_method = 'uniform'\ncfg.model.recompute_num_layers = 2",
                dotlist=("model.recompute_granularity=full", "model.recompute_num_layers=null")),
    ]

    def check(self, cfg, ctx):
        granularity = value(cfg, "model.recompute_granularity", None)
        if granularity != "full":
            return
        method = value(cfg, "model.recompute_method", None)
        layers = value(cfg, "model.recompute_num_layers", None)
        missing = []
        if known(method) and method is None:
            missing.append("model.recompute_method")
        if known(layers) and layers is None:
            missing.append("model.recompute_num_layers")
        if not missing:
            return
        fixes = []
        if "model.recompute_method" in missing:
            fixes.append(FixIntent("set", "model.recompute_method", "uniform", safe=False,
                                   description="set recompute_method = 'uniform'"))
        if "model.recompute_num_layers" in missing:
            fixes.append(FixIntent("set", "model.recompute_num_layers", 1, safe=False,
                                   description="set recompute_num_layers = 1"))
        message = (f"model.recompute_granularity is 'full', but {' and '.join(missing)} "
                   f"{'is' if len(missing) == 1 else 'are'} None; full recompute needs recompute_method "
                   f"'uniform' or 'block' and recompute_num_layers >= 1 (TransformerConfig raises at job start)")
        # both missing: the recipe was not written for full recompute, so 'full' is the edit
        # (even when the None lines come after it); otherwise the setting written last
        primary = "model.recompute_granularity" if len(missing) == 2 else None
        yield ctx.report(cfg, message, ["model.recompute_granularity", *missing], fixes=fixes, primary=primary)
