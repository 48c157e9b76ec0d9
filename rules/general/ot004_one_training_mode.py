from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, assigned, dataset_is, format_value, known, knows_field, value

P = "cfg = _pretrain_common()\n"
S = "cfg = _sft_common()\n"


class OneTrainingMode(Rule):
    id = "OT004"
    name = "one-training-mode"
    severity = Severity.ERROR
    summary = "Exactly one of train.train_iters, train.train_samples, train.num_epochs; epochs need a GPTSFT dataset with dataloader_type 'batch'; no batch-size ramp-up with samples or epochs."
    tags = ("general", "training")
    doc = """## What it does
Flags
- none (only when a recipe line or override cleared one of them to None: a config that never
  set a length may get it from the launcher), or more than one, of `train.train_iters`, `train.train_samples` and (0.6.x)
  `train.num_epochs` set;
- `train.num_epochs` with a dataset that is not a `GPTSFTDatasetConfig`, or with
  `dataset.dataloader_type` other than `"batch"`;
- `train.rampup_batch_size` with sample- or epoch-based training;
- a `train_samples` or `num_epochs` that is not positive.

## Why it matters
`TrainingConfig.finalize()` asserts "One of train_iters, train_samples, or num_epochs must be
provided", "Cannot specify more than one of train_iters, train_samples, or num_epochs" and
"Batch size rampup not supported with sample-based training yet"; `ConfigContainer.validate()`
raises "num_epochs is only supported for finite GPTSFTDatasetConfig datasets ..." (all
confirmed with Megatron-Bridge 0.6.2). The usual slip: overriding `train.train_samples` on a
recipe that sets `train_iters` without setting `train_iters=null`.

## Example
```python
cfg = _pretrain_common()          # train_iters = 300000
cfg.train.train_samples = 1_000_000
```

## Fix
Set the unused modes to None. No automatic fix: the training length changes.

## Versions
0.3.x (train_iters/train_samples only) and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:467-492, :1142-1148; 0.3.1
megatron/bridge/training/config.py:743-756; 0.6.2 megatron/bridge/data/builders/gpt_sft.py:132.
"""
    valid = [
        P + "cfg.train.train_iters = None\ncfg.train.train_samples = 1000",
        S + "cfg.train.train_iters = None\ncfg.train.num_epochs = 2",
        # no length written anywhere (a bare TrainingConfig): the launcher may still give one
        "cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1, global_batch_size=8))",
        P + "for n in [None, 10]:\n    cfg.train.train_iters = n\ncfg.train.train_samples = 1000",
        Example(P + "cfg.train.train_iters = None\ncfg.train.train_samples = 1000", version="0.3"),
    ]
    invalid = [
        P + "cfg.train.train_samples = 1000  # error",
        P + "cfg.train.train_iters = None  # error",
        Example(P, dotlist=("train.train_iters=null",)),
        P + "cfg.train.train_iters = None\ncfg.train.num_epochs = 1  # error",
        P + "cfg.train.train_iters = None\ncfg.train.train_samples = 10000\ncfg.train.rampup_batch_size = [16, 16, 1000]  # error",
        Example(P + "cfg.train.train_samples = 1000  # error", version="0.3"),
        Example(P, dotlist=("train.train_samples=1000",)),
    ]

    def check(self, cfg, ctx):
        names = ["train_iters", "train_samples"] + (["num_epochs"] if knows_field(cfg, "num_epochs") else [])
        values = {name: value(cfg, f"train.{name}", None) for name in names}
        if not all(known(v) for v in values.values()):
            return
        paths = [f"train.{n}" for n in names]
        set_modes = [n for n, v in values.items() if v is not None]
        if not set_modes:
            cleared = [p for p in paths if assigned(cfg, p)]
            if not cleared:
                return  # left unset, not cleared: a config the launcher may still complete
            yield ctx.report(cfg, f"none of {', '.join(paths)} is set; exactly one training length must be given "
                                  f"(TrainingConfig asserts at job start)", cleared)
            return
        if len(set_modes) > 1:
            shown = ", ".join(f"train.{n} = {format_value(values[n])}" for n in set_modes)
            yield ctx.report(cfg, f"{shown} are all set; exactly one of {', '.join(paths)} may be set "
                                  f"(TrainingConfig asserts at job start); set the others to None",
                             [f"train.{n}" for n in set_modes])
            return
        mode = set_modes[0]
        amount = values[mode]
        if mode != "train_iters" and isinstance(amount, (int, float)) and amount <= 0:
            yield ctx.report(cfg, f"train.{mode} is {amount}; it must be positive (TrainingConfig asserts at job start)",
                             [f"train.{mode}"])
        if mode != "train_iters":
            rampup = value(cfg, "train.rampup_batch_size", None)
            if known(rampup) and rampup is not None:
                kind = "sample" if mode == "train_samples" else "epoch"
                yield ctx.report(cfg, f"train.rampup_batch_size is {format_value(rampup)} with {kind}-based training "
                                      f"(train.{mode} = {format_value(amount)}); batch-size ramp-up is only supported with "
                                      f"train_iters (TrainingConfig asserts at job start)",
                                 ["train.rampup_batch_size", f"train.{mode}"])
        if mode == "num_epochs":
            sft = dataset_is(cfg, "GPTSFTDatasetConfig")
            if sft is False:
                yield ctx.report(cfg, f"train.num_epochs is {format_value(amount)}, but the dataset is a "
                                      f"{cfg.type_of('dataset')}; epoch-based training needs a finite GPTSFTDatasetConfig "
                                      f"(validate() raises at job start)", ["train.num_epochs", "dataset"],
                                 primary="train.num_epochs")
            elif sft is True:
                loader = value(cfg, "dataset.dataloader_type", None)
                if known(loader) and loader != "batch":
                    yield ctx.report(cfg, f"train.num_epochs is {format_value(amount)}, but dataset.dataloader_type is "
                                          f"{format_value(loader)}; epochs need dataloader_type 'batch' (validate() "
                                          f"raises at job start)", ["train.num_epochs", "dataset.dataloader_type"])
