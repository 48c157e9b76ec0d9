from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    known,
    pad_to_max_length,
    specs_path,
    specs_present,
    value,
)


class PadCuSeqlensRequiresPadToMax(Rule):
    id = "PK010"
    name = "pad-cu-seqlens-requires-pad-to-max"
    severity = Severity.ERROR
    summary = "offline packing's pad_cu_seqlens needs pad_to_max_length = True."
    fixable = True
    tags = ("packing", "cuda-graphs")
    doc = """## What it does
Flags packing specs with `pad_cu_seqlens = True` while the dataset's `pad_to_max_length` (for
the SFT dataset, `dataset.dataset_kwargs["pad_to_max_length"]`) is not True.

## Why it matters
Padded `cu_seqlens` only make sense with fixed-width packs. 0.6.x `ConfigContainer.validate()`
raises "offline_packing_specs.pad_cu_seqlens=True requires dataset pad_to_max_length=True.";
the packed dataset itself (0.3.x and 0.6.x) asserts "'pad_to_max_length=True' is required when
pad_cu_seqlens is enabled".

## Example
```python
cfg.dataset.offline_packing_specs.pad_cu_seqlens = True
cfg.dataset.dataset_kwargs = {}
```

## Fix
Safe: set `dataset.dataset_kwargs["pad_to_max_length"] = True` (the packs already have a fixed
size for CUDA graphs, which is why `pad_cu_seqlens` is on).

## Versions
0.3.x (`dataset.packed_sequence_specs`) and 0.6.x (`dataset.offline_packing_specs`).

## Sources
0.6.2 megatron/bridge/training/config.py:1161-1169; megatron/bridge/data/packing/gpt_sft.py:74-81;
0.3.1 megatron/bridge/data/datasets/sft.py:765-772; megatron/bridge/data/builders/finetuning_dataset.py:79.
"""
    valid = [
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.pad_cu_seqlens = True",
        "cfg = _sft_common()\ncfg.dataset.dataset_kwargs = {}",
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.pad_cu_seqlens = True\n"
        "for flag in (True, False):\n    cfg.dataset.dataset_kwargs['pad_to_max_length'] = flag",
        Example("cfg = _sft_common()\ncfg.dataset.packed_sequence_specs.pad_cu_seqlens = True", version="0.3"),
    ]
    invalid = [
        # not set: the key is added, a safe fix
        Example("cfg = _sft_common()\ncfg.dataset.dataset_kwargs = {}\n"
                "cfg.dataset.offline_packing_specs.pad_cu_seqlens = True  # error",
                message="padded cu_seqlens need pad_to_max_length=True", unsafe=False,
                fixed="cfg = _sft_common()\ncfg.dataset.dataset_kwargs = {}\n"
                      "cfg.dataset.offline_packing_specs.pad_cu_seqlens = True  # error\n"
                      "cfg.dataset.dataset_kwargs[\"pad_to_max_length\"] = True"),
        # written False: replacing it is unsafe
        Example("cfg = _sft_common()\ncfg.dataset.dataset_kwargs['pad_to_max_length'] = False  # error\n"
                "cfg.dataset.offline_packing_specs.pad_cu_seqlens = True", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.dataset_kwargs['pad_to_max_length'] = True  # error\n"
                      "cfg.dataset.offline_packing_specs.pad_cu_seqlens = True"),
        Example("cfg = _sft_common()\ncfg.dataset.dataset_kwargs = {'pad_to_max_length': False}\n"
                "cfg.dataset.packed_sequence_specs.pad_cu_seqlens = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if specs_present(cfg) is not True:
            return
        path = f"{specs_path(cfg)}.pad_cu_seqlens"
        if value(cfg, path) is not True:
            return
        pad_max, field = pad_to_max_length(cfg)
        if not known(pad_max) or pad_max:
            return
        target = "dataset.dataset_kwargs.pad_to_max_length"
        if cfg.type_of("dataset") not in (None, "GPTSFTDatasetConfig", "FinetuningDatasetConfig") \
                and value(cfg, "dataset.pad_to_max_length") is not None:
            target = "dataset.pad_to_max_length"
        yield ctx.report(
            cfg,
            f"{path} is True, but {field} is {value(cfg, field, 'not set')!r}; padded cu_seqlens need "
            "pad_to_max_length=True",
            [path, field],
            fixes=[FixIntent("set", target, True, description="set pad_to_max_length to True")],
        )
