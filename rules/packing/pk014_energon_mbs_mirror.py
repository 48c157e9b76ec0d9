from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dataset_is, int_values, value


class EnergonMbsMirror(Rule):
    id = "PK014"
    name = "energon-mbs-mirror"
    severity = Severity.ERROR
    summary = "EnergonDatasetConfig.micro_batch_size must equal train.micro_batch_size."
    fixable = True
    tags = ("energon", "batch")
    requires = ("check:energon_mbs_mirror",)
    doc = """## What it does
For `EnergonDatasetConfig`, flags `dataset.micro_batch_size != train.micro_batch_size`, and, with
`dataset.do_validation`, `!= validation.eval_micro_batch_size` (which defaults to the train
micro-batch size).

## Why it matters
Energon batches on its own side, so the dataset carries a copy of the micro-batch size.
`ConfigContainer.validate()` raises "EnergonDatasetConfig.micro_batch_size must match
train.micro_batch_size (a != b)." (and the same for the eval micro-batch size) at job start. A
common cause is overriding only `train.micro_batch_size`.

## Example
```python
cfg.dataset = EnergonDatasetConfig(..., micro_batch_size=1, ...)
cfg.train.micro_batch_size = 2
```

## Fix
Safe: copy `train.micro_batch_size` into `dataset.micro_batch_size`.

## Versions
0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1195-1202 and 1299-1308.
"""
    _energon = (
        "from megatron.bridge.data.builders import EnergonDatasetConfig\n"
        "from megatron.bridge.data.builders.energon import QwenVLEnergonTaskEncoderConfig\n"
        "cfg = _sft_common_vlm()\n"
        "cfg.dataset = EnergonDatasetConfig(path='/data/x', seq_length=4096, micro_batch_size=2,\n"
        "    task_encoder=QwenVLEnergonTaskEncoderConfig(hf_processor_path='Qwen/Qwen3-VL-8B-Instruct'))\n"
    )
    valid = [
        _energon + "cfg.train.micro_batch_size = 2",
        _energon + "for m in (1, 2):\n    cfg.train.micro_batch_size = m",
        "cfg = _sft_common_vlm()\ncfg.train.micro_batch_size = 4",
    ]
    invalid = [
        # the dataset's copy follows train.micro_batch_size (replacing the keyword: unsafe)
        Example(_energon.replace("micro_batch_size=2,", "micro_batch_size=2,  # error") + "cfg.train.micro_batch_size = 4",
                message="dataset.micro_batch_size is 2, but train.micro_batch_size is 4", unsafe=True,
                fixed=_energon.replace("micro_batch_size=2,", "micro_batch_size=4,  # error") + "cfg.train.micro_batch_size = 4"),
        # the eval size falls back to train.micro_batch_size
        Example(_energon + "cfg.train.micro_batch_size = 2\ncfg.validation.eval_micro_batch_size = 1  # error",
                message="validation.eval_micro_batch_size is 1", unsafe=True,
                fixed=_energon + "cfg.train.micro_batch_size = 2\ncfg.validation.eval_micro_batch_size = None  # error"),
        Example(_energon + "cfg.train.micro_batch_size = 2", dotlist=("train.micro_batch_size=1",)),
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, "EnergonDatasetConfig") is not True:
            return
        data_mbs = value(cfg, "dataset.micro_batch_size")
        train_mbs = value(cfg, "train.micro_batch_size")
        if not int_values(data_mbs, train_mbs):
            return
        fix = [FixIntent("set", "dataset.micro_batch_size", train_mbs,
                         description=f"set dataset.micro_batch_size to {train_mbs}")]
        if data_mbs != train_mbs:
            yield ctx.report(cfg, f"dataset.micro_batch_size is {data_mbs}, but train.micro_batch_size is {train_mbs}; "
                                  "EnergonDatasetConfig must mirror it",
                             ["dataset.micro_batch_size", "train.micro_batch_size"], fixes=fix)
            return
        if value(cfg, "dataset.do_validation") is not True:
            return
        eval_mbs = value(cfg, "validation.eval_micro_batch_size", None)
        if eval_mbs is None or not int_values(eval_mbs) or eval_mbs == data_mbs:
            return
        yield ctx.report(cfg, f"dataset.micro_batch_size is {data_mbs}, but validation.eval_micro_batch_size is "
                              f"{eval_mbs}; with do_validation the Energon loader batches both with one size",
                         ["dataset.micro_batch_size", "validation.eval_micro_batch_size"],
                         fixes=[FixIntent("set", "validation.eval_micro_batch_size", None,
                                          description="let eval_micro_batch_size default to train.micro_batch_size")])
