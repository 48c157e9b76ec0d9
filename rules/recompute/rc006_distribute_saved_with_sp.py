from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class DistributeSavedWithSequenceParallel(Rule):
    id = "RC006"
    name = "distribute-saved-with-sp"
    severity = Severity.ERROR
    summary = "distribute_saved_activations cannot be used with sequence parallelism when recompute is on."
    fixable = True
    tags = ("recompute",)
    doc = """## What it does
Flags `model.recompute_granularity` set with `model.distribute_saved_activations = True` and
`model.sequence_parallel = True`.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` raises "distribute_saved_activations: True
must be false when sequence parallel is enabled: True" at job start.

## Example
```python
cfg.model.recompute_granularity = "full"
cfg.model.distribute_saved_activations = True
cfg.model.sequence_parallel = True
```

## Fix
Set `distribute_saved_activations = False` (sequence parallelism already shards the saved
activations). Safe.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1757-1761 (confirmed with Megatron-Bridge 0.6.2).
"""
    valid = [
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.distribute_saved_activations = True\n"
        "cfg.model.sequence_parallel = False",
        HF + "cfg.model.recompute_granularity = None\ncfg.model.distribute_saved_activations = True\n"
        "cfg.model.sequence_parallel = True",
        HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.distribute_saved_activations = True\n"
        "for sp in [True, False]:\n    cfg.model.sequence_parallel = sp",
        Example(HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.sequence_parallel = True", version="0.3"),
    ]
    invalid = [
        Example(HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.sequence_parallel = True\n"
                "cfg.model.distribute_saved_activations = True  # error",
                message="Megatron-Core requires it to be False when sequence_parallel is True", unsafe=True,
                fixed=HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.sequence_parallel = True\n"
                      "cfg.model.distribute_saved_activations = False  # error"),
        Example(HF + "cfg.model.recompute_granularity = 'selective'\ncfg.model.distribute_saved_activations = True  # error\n"
                "cfg.model.sequence_parallel = True", version="0.3"),
    ]

    def check(self, cfg, ctx):
        granularity = value(cfg, "model.recompute_granularity", None)
        distribute = value(cfg, "model.distribute_saved_activations", False)
        sp = value(cfg, "model.sequence_parallel", False)
        if not known(granularity, distribute, sp) or granularity is None or distribute is not True or sp is not True:
            return
        yield ctx.report(cfg, f"model.distribute_saved_activations is True with sequence parallelism and "
                              f"recompute_granularity = {granularity!r}; Megatron-Core requires it to be False "
                              f"when sequence_parallel is True",
                         ["model.distribute_saved_activations", "model.sequence_parallel", "model.recompute_granularity"],
                         fixes=[FixIntent("set", "model.distribute_saved_activations", False, safe=True,
                                          description="set distribute_saved_activations = False")])
