from __future__ import annotations

from mblint.rulekit import ABSENT, Example, Rule, Severity, dataset_is, int_values, value

P = ("from megatron.bridge.data.builders.energon import EnergonDatasetConfig, QwenVLEnergonTaskEncoderConfig\n"
     "cfg = _sft_common()\n"
     "cfg.dataset = EnergonDatasetConfig(path='/data/energon', seq_length=cfg.model.seq_length, micro_batch_size=1,\n"
     "                                   task_encoder=QwenVLEnergonTaskEncoderConfig(hf_processor_path='x'))\n")
# (field, smallest value accepted, whether None is accepted)
MINIMUMS = (("micro_batch_size", 1, False), ("num_workers", 0, False), ("num_val_workers", 0, True),
            ("shuffle_buffer_size", 1, False), ("max_samples_per_sequence", 1, True),
            ("packing_buffer_size", 1, True))
KWARGS = "dataset.dataset_kwargs"
RESERVED = ("batch_size", "max_samples_per_sequence", "packing_buffer_size", "shuffle_buffer_size", "split_part",
            "task_encoder", "worker_config")


class EnergonLoaderSettings(Rule):
    id = "OT021"
    name = "energon-loader-settings"
    severity = Severity.ERROR
    summary = ("An Energon dataset's loader sizes must be in range, it has no test split, and its dataset_kwargs "
               "cannot name the arguments the builder passes itself.")
    tags = ("general", "dataset")
    doc = """## What it does
On an `EnergonDatasetConfig` dataset (0.6.x), flags
- `micro_batch_size` or `shuffle_buffer_size` below 1, `num_workers` below 0, and, when set,
  `num_val_workers` below 0 or `max_samples_per_sequence` / `packing_buffer_size` below 1;
- `do_test = True`;
- `dataset_kwargs` naming an argument the builder passes itself (`batch_size`,
  `max_samples_per_sequence`, `packing_buffer_size`, `shuffle_buffer_size`, `split_part`,
  `task_encoder`, `worker_config`).

## Why it matters
`EnergonDatasetConfig.validate()`, run by `ConfigContainer.validate()` through the dataset's
`finalize()`, raises at job start: "micro_batch_size must be greater than 0.", "num_workers must be
greater than or equal to 0.", "shuffle_buffer_size must be greater than 0.", ..., "EnergonDatasetConfig
does not support a distinct test split." and "dataset_kwargs cannot override builder-owned
arguments: ...". Passing a loader size through `dataset_kwargs`, as the Energon loader's own
documentation writes it, is the usual way to get the last one; set the field instead.

## Example
```python
cfg.dataset.dataset_kwargs = {"shuffle_buffer_size": 1000}   # use cfg.dataset.shuffle_buffer_size
```

## Fix
Set the sizes in range on the dataset's own fields and `do_test = False`. No automatic fix.

## Versions
0.6.x (the declarative `EnergonDatasetConfig` of `data/builders/energon.py`).

## Sources
0.6.2 megatron/bridge/data/builders/energon.py:147-189 (`validate`; fields at :129-145). Oracle (0.6.2,
a Llama-3 8B recipe given an `EnergonDatasetConfig`): `dataset.num_workers=-1`,
`dataset.shuffle_buffer_size=0`, `dataset.max_samples_per_sequence=0`, `dataset.num_val_workers=-1`,
`dataset.micro_batch_size=0` fail with their messages; `dataset.do_test=True` with
"EnergonDatasetConfig does not support a distinct test split."; `dataset.dataset_kwargs={'shuffle_buffer_size':
10}` with "dataset_kwargs cannot override builder-owned arguments: shuffle_buffer_size".
"""
    valid = [
        P,
        P + "cfg.dataset.shuffle_buffer_size = 1000\ncfg.dataset.num_workers = 0\ncfg.dataset.packing_buffer_size = None",
        P + "cfg.dataset.dataset_kwargs = {'virtual_epoch_length': 100}",
        P + "for n in (-1, 2):\n    cfg.dataset.num_workers = n",
        Example("cfg = _sft_common()\ncfg.dataset.num_workers = 2", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.dataset.dataset_kwargs = {'shuffle_buffer_size': 1000}  # error",
                message="dataset_kwargs cannot override builder-owned arguments: shuffle_buffer_size"),
        Example(P + "cfg.dataset.num_workers = -1  # error", message="num_workers must be greater than or equal to 0"),
        Example(P + "cfg.dataset.shuffle_buffer_size = 0  # error", message="shuffle_buffer_size must be greater than 0"),
        Example(P + "cfg.dataset.max_samples_per_sequence = 0  # error",
                message="max_samples_per_sequence must be greater than 0 when set"),
        Example(P + "cfg.dataset.do_test = True  # error", message="does not support a distinct test split"),
        # modelled on a loader option passed through dataset_kwargs on the launch line
        Example(P, dotlist=("dataset.dataset_kwargs={shuffle_buffer_size: 1000}",)),
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, "EnergonDatasetConfig") is not True:
            return
        for name, smallest, none_ok in MINIMUMS:
            path = f"dataset.{name}"
            current = value(cfg, path, None)
            if current is None and none_ok or not int_values(current) or current >= smallest:
                continue
            bound = "greater than or equal to 0" if smallest == 0 else "greater than 0"
            when = " when set" if none_ok else ""
            yield ctx.report(cfg, f"{path} is {current}; EnergonDatasetConfig.validate() raises '{name} must be "
                                  f"{bound}{when}.' at job start", [path])
        if value(cfg, "dataset.do_test", False) is True:
            yield ctx.report(cfg, "dataset.do_test is True; EnergonDatasetConfig.validate() raises "
                                  "'EnergonDatasetConfig does not support a distinct test split.' at job start",
                             ["dataset.do_test"])
        if cfg.type_of(KWARGS) == "dict":
            named = sorted(key for key in cfg.keys(KWARGS) if key in RESERVED and value(cfg, f"{KWARGS}.{key}") is not ABSENT)
            if named:
                yield ctx.report(cfg, f"dataset.dataset_kwargs names {', '.join(named)}; EnergonDatasetConfig.validate() "
                                      f"raises 'dataset_kwargs cannot override builder-owned arguments: "
                                      f"{', '.join(named)}' at job start (set the dataset's own field)",
                                 [KWARGS])
