from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    data_parallel_size,
    int_values,
    known,
    offline_packing,
    offline_packing_known_on,
    parallel,
    value,
)


class GbsVsDpWithPacking(Rule):
    id = "PK017"
    name = "gbs-vs-dp-with-packing"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "With offline packing, global_batch_size must be a multiple of micro_batch_size * DP."
    tags = ("packing", "batch", "world-size")
    doc = """## What it does
With offline packing on and a known world size, flags `train.global_batch_size` that is not a
multiple of `train.micro_batch_size * DP` (DP = world size / (TP*PP*CP)); this includes a global
batch smaller than DP.

## Why it matters
Packed recipes use small global batches (each sample already holds many sequences, e.g. GBS 8
at 8K), so scaling the job out breaks the divisibility: Megatron-Core's micro-batch calculator
fails at start-up, and `ConfigContainer.validate()` asserts "eval_global_batch_size (...) must
be divisible by eval_micro_batch_size * eval_data_parallel_size" (the eval batch defaults to
the train batch). A world size taken from the recipe name only yields a warning.

## Example
```python
cfg = _sft_common()                  # offline packing
cfg.train.global_batch_size = 8
# launched on 16 GPUs with TP=1, PP=1, CP=1: DP = 16
```

## Fix
Choose a global batch size that is a multiple of micro_batch_size * DP, keeping
`packed_sequence_size * global_batch_size` (tokens per step) as intended. No automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1280-1297 (eval batch check), 1013-1027 (DP);
0.3.1 megatron/bridge/training/config.py:1350-1360; Megatron-Core
num_microbatches_calculator.py; skills/nemo-mbridge-perf-sequence-packing/SKILL.md:56-58.
"""
    valid = [
        Example("cfg = _sft_common()\ncfg.train.global_batch_size = 16", world_size=16),
        Example("cfg = _sft_common()\ncfg.train.global_batch_size = 8"),  # world size unknown
        Example("cfg = _sft_common()\nfor g in (8, 16):\n    cfg.train.global_batch_size = g", world_size=16),
        Example("cfg = _pretrain_common()\ncfg.train.global_batch_size = 8", world_size=16),
    ]
    invalid = [
        Example("cfg = _sft_common()\ncfg.train.global_batch_size = 8  # error", world_size=16),
        Example("cfg = _sft_common()\ncfg.train.global_batch_size = 12  # error", world_size=8, version="0.3"),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        if offline_packing(cfg) is not True or ctx.world_size is None:
            return
        dp = data_parallel_size(cfg, ctx.world_size)
        gbs = value(cfg, "train.global_batch_size")
        mbs = value(cfg, "train.micro_batch_size")
        if not known(dp) or not int_values(gbs, mbs) or mbs <= 0:
            return
        step = mbs * dp
        if gbs % step == 0:
            return
        par = parallel(cfg)
        message = (f"train.global_batch_size is {gbs}, but micro_batch_size * DP = {mbs} * {dp} = {step} "
                   f"(world size {ctx.world_size} / (TP={par.tp} * PP={par.pp} * CP={par.cp})) does not divide it")
        if gbs < step:
            message += "; the global batch is smaller than one micro-batch per data-parallel rank"
        severity = Severity.WARNING if ctx.world_size_from_name else None
        yield ctx.report(cfg, message, ["train.global_batch_size", "train.micro_batch_size",
                                        "model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
                                        "model.context_parallel_size"],
                         primary="train.global_batch_size", severity=severity)
