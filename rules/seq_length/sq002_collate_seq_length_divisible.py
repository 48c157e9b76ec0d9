from __future__ import annotations

import math

from mblint.rulekit import (
    COLLATE_DATASET_TYPES_06,
    Example,
    FixIntent,
    Rule,
    Severity,
    cp_sp_alignment_all,
    dataset_is,
    hf_model,
    int_values,
    known,
    value,
)


class CollateSeqLengthDivisible(Rule):
    id = "SQ002"
    name = "collate-seq-length-divisible"
    severity = Severity.ERROR
    summary = "Collate-time datasets need seq_length divisible by the CP/SP padding multiple."
    fixable = True
    tags = ("seq-length", "context-parallel")
    requires = ("class:DirectHFSFTDatasetConfig",)
    doc = """## What it does
For `DirectHFSFTDatasetConfig`, `EnergonDatasetConfig` and `MockVLMSFTDatasetConfig`, flags a
`dataset.seq_length` that is not a multiple of lcm(2*CP if CP>1 else 1, CP*TP if sequence
parallelism and TP>1 else 1), taken over the training CP and `dist.eval_context_parallel_size`.

## Why it matters
These datasets pad each batch at collate time to that multiple and cap it at `seq_length`.
`ConfigContainer.validate()` raises "<Dataset>.seq_length must be divisible by the CP/SP collate
padding multiple (N)." at job start.

## Example
```python
cfg = _sft_common_vlm()
cfg.model.context_parallel_size = 4
cfg.dataset.seq_length = 4100      # not a multiple of 8
```

## Fix
Unsafe (changes the sequence length): round `dataset.seq_length` up to the next multiple, and
set `model.seq_length` to the same value (`validate()` requires the two equal for these
datasets, SQ001).

## Versions
0.6.x (these dataset configs do not exist in 0.3.x).

## Sources
0.6.2 megatron/bridge/training/config.py:1206-1225.
"""
    _model = hf_model("Qwen/Qwen3-VL-8B-Instruct")
    valid = [
        "cfg = _sft_common_vlm()\n" + _model + "cfg.model.context_parallel_size = 4\ncfg.dataset.seq_length = 4096",
        "cfg = _sft_common()\n" + _model + "cfg.model.context_parallel_size = 4\ncfg.dataset.seq_length = 4100",
        "cfg = _sft_common_vlm()\n" + _model + "cfg.dataset.seq_length = 4100\n"
        "for cp in (1, 2):\n    cfg.model.context_parallel_size = cp",
    ]
    invalid = [
        # 2*CP = 8: 4104, for the dataset and the model alike
        Example("cfg = _sft_common_vlm()\n" + _model + "cfg.model.context_parallel_size = 4\ncfg.dataset.seq_length = 4100  # error",
                message="the next multiple is 4104", unsafe=True,
                fixed="cfg = _sft_common_vlm()\n" + _model + "cfg.model.context_parallel_size = 4\n"
                      "cfg.model.seq_length = 4104\ncfg.dataset.seq_length = 4104  # error"),
        "cfg = _sft_common_vlm()\n" + _model + "cfg.dataset.seq_length = 4100  # error\ncfg.model.tensor_model_parallel_size = 8\n"
        "cfg.model.sequence_parallel = True",
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, *COLLATE_DATASET_TYPES_06) is not True:
            return
        seq = value(cfg, "dataset.seq_length")
        align = cp_sp_alignment_all(cfg)
        if not int_values(seq) or seq <= 0 or not known(align) or seq % align.required == 0:
            return
        target = math.ceil(seq / align.required) * align.required
        yield ctx.report(
            cfg,
            f"dataset.seq_length is {seq}, but {align.text} (collate-time CP/SP padding); "
            f"the next multiple is {target}",
            ["dataset.seq_length", *align.fields],
            fixes=[FixIntent("set", "dataset.seq_length", target, safe=False,
                             description=f"set dataset.seq_length to {target}"),
                   # validate() also requires model.seq_length == dataset.seq_length for these datasets
                   *([FixIntent("set", "model.seq_length", target, safe=False,
                                description=f"set model.seq_length to {target}")]
                     if cfg.type_of("model") is not None else [])],
        )
