from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    known,
    knows_field,
    offline_packing,
    offline_packing_known_on,
    specs_path,
)


class OfflinePackingRequiresMbs1(Rule):
    id = "PK001"
    name = "offline-packing-requires-mbs1"
    severity = Severity.ERROR
    summary = "Offline sequence packing needs train.micro_batch_size = 1."
    fixable = True
    tags = ("packing", "batch")
    doc = """## What it does
Flags offline-packed fine-tuning (`dataset.enable_offline_packing = True` in 0.6.x, or
`dataset.packed_sequence_specs` with a positive `packed_sequence_size` in 0.3.x) whose
`train.micro_batch_size` is larger than 1.

## Why it matters
A packed sample already holds several sequences; Megatron-Bridge rejects micro-batch sizes
above 1 in `ConfigContainer.validate()` with "Micro batch size should be 1 when training with
packed sequence", after the job has been scheduled and started on every rank.

## Example
```python
cfg = _sft_common()           # offline packing on, packed_sequence_size = 2048
cfg.train.micro_batch_size = 2
```

## Fix
Unsafe (changes batch arithmetic and the packed dataset): set `micro_batch_size = 1`, divide
`global_batch_size` by the old micro-batch size and multiply `packed_sequence_size` by it,
exactly what Megatron-Bridge's error message proposes; the same tokens per step result.

## Versions
0.3.x (`dataset.packed_sequence_specs`) and 0.6.x (`dataset.enable_offline_packing`).

## Sources
megatron/bridge/training/config.py (0.6.2: `ConfigContainer.validate`, "Micro batch size should
be 1"; 0.3.1: lines 1561-1579); skills/nemo-mbridge-perf-sequence-packing/SKILL.md.
"""
    valid = [
        "cfg = _sft_common()\ncfg.train.micro_batch_size = 1",
        "cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False\n"
        "cfg.dataset.offline_packing_specs = None\ncfg.train.micro_batch_size = 4",
        Example("cfg = _sft_common()\ncfg.train.micro_batch_size = 1", version="0.3"),
        "cfg = _pretrain_common()\ncfg.train.micro_batch_size = 4",
    ]
    invalid = [
        # _sft_common: global batch 128, packs of seq_length 2048 (0.6.2 recipes/common.py:161-201)
        Example("cfg = _sft_common()\ncfg.train.micro_batch_size = 2  # error",
                message="the equivalent setting is micro_batch_size=1, global_batch_size=64, packed_sequence_size=4096",
                fixed="cfg = _sft_common()\n"
                      "cfg.dataset.offline_packing_specs.packed_sequence_size = 4096\n"
                      "cfg.train.micro_batch_size = 1  # error\n"
                      "cfg.train.global_batch_size = 64", unsafe=True),
        Example("cfg = _sft_common()\ncfg.train.micro_batch_size = 2  # error", version="0.3"),
        # not fixed from the override file alone: the global batch and pack size would be added
        # to the recipe, which is not being linted (all of a finding's edits or none)
        Example("cfg = _sft_common()", yaml="train:\n  micro_batch_size: 4  # error\n",
                message="global_batch_size=32, packed_sequence_size=8192",
                fixed_yaml="train:\n  micro_batch_size: 4  # error\n"),
        Example("cfg = _sft_common()", dotlist=("train.micro_batch_size=2",)),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        mbs = cfg.value("train.micro_batch_size")
        if offline_packing(cfg) is not True or not known(mbs) or not isinstance(mbs, int) or mbs <= 1:
            return
        specs = specs_path(cfg)
        gbs = cfg.value("train.global_batch_size")
        size = cfg.value(f"{specs}.packed_sequence_size")
        message = (f"train.micro_batch_size is {mbs}, but offline sequence packing requires 1 "
                   f"(each packed sample already holds several sequences)")
        fixes = []
        # The equivalent setting only when it is one: a global batch that micro_batch_size
        # divides (GBS 1 with MBS 2 would become 0, which Megatron-Bridge rejects).
        if (known(gbs, size) and isinstance(gbs, int) and isinstance(size, int) and size > 0
                and gbs >= mbs and gbs % mbs == 0):
            message += (f"; the equivalent setting is micro_batch_size=1, global_batch_size={gbs // mbs}, "
                        f"packed_sequence_size={size * mbs}")
            fixes = [
                FixIntent("set", "train.micro_batch_size", 1, safe=False, description="set micro_batch_size to 1"),
                FixIntent("set", "train.global_batch_size", gbs // mbs, safe=False,
                          description=f"set global_batch_size to {gbs // mbs}"),
                FixIntent("set", f"{specs}.packed_sequence_size", size * mbs, safe=False,
                          description=f"set packed_sequence_size to {size * mbs}"),
            ]
        yield ctx.report(cfg, message, ["train.micro_batch_size", "dataset.enable_offline_packing"
                                         if knows_field(cfg, "enable_offline_packing") else f"{specs}.packed_sequence_size"],
                         primary="train.micro_batch_size", fixes=fixes)
