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
Unsafe (changes the batch each forward pass holds): set `micro_batch_size = 1`. The global batch
and the packs stay as they are, so each step still takes as many packs of as many tokens; the
step is split into twice (or MBS times) as many micro-batches.

Megatron-Bridge's error message proposes another equivalent: divide `global_batch_size` by the
old micro-batch size and multiply `packed_sequence_size` by it. mblint does not apply that one: a
pack wider than `dataset.seq_length` is PK006 (and `scripts/training/run_recipe.py` resets the
pack to `dataset.seq_length`, halving the tokens per step), and widening `seq_length` with it
changes how long a single sequence may be. The message names it when the numbers work out.

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
        # _sft_common: global batch 128, packs of seq_length 2048 (0.6.2 recipes/common.py:161-201);
        # Megatron-Bridge's own proposal (64 packs of 4096) is named, not applied: PK006
        Example("cfg = _sft_common()\ncfg.train.micro_batch_size = 2  # error",
                message="with micro_batch_size=1 each step still takes 128 packs of 2048 tokens "
                        "(Megatron-Bridge's message proposes global_batch_size=64 with packed_sequence_size=4096",
                fixed="cfg = _sft_common()\ncfg.train.micro_batch_size = 1  # error", unsafe=True),
        Example("cfg = _sft_common()\ncfg.train.micro_batch_size = 2  # error", version="0.3",
                fixed="cfg = _sft_common()\ncfg.train.micro_batch_size = 1  # error", unsafe=True),
        # fixed in the override file that set it
        Example("cfg = _sft_common()", yaml="train:\n  micro_batch_size: 4  # error\n",
                message="global_batch_size=32 with packed_sequence_size=8192",
                fixed_yaml="train:\n  micro_batch_size: 1  # error\n"),
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
        fixes = [FixIntent("set", "train.micro_batch_size", 1, safe=False, description="set micro_batch_size to 1")]
        if known(gbs, size) and isinstance(gbs, int) and isinstance(size, int) and size > 0:
            message += f"; with micro_batch_size=1 each step still takes {gbs} packs of {size} tokens"
            # Megatron-Bridge's proposal, when it is one: a global batch that micro_batch_size
            # divides (GBS 1 with MBS 2 would become 0, which Megatron-Bridge rejects).
            if gbs >= mbs and gbs % mbs == 0:
                seq_length = cfg.value("dataset.seq_length")
                differs = (f", which is not dataset.seq_length {seq_length}"
                           if known(seq_length) and seq_length != size * mbs else "")
                message += (f" (Megatron-Bridge's message proposes global_batch_size={gbs // mbs} with "
                            f"packed_sequence_size={size * mbs}{differs})")
        yield ctx.report(cfg, message, ["train.micro_batch_size", "dataset.enable_offline_packing"
                                         if knows_field(cfg, "enable_offline_packing") else f"{specs}.packed_sequence_size"],
                         primary="train.micro_batch_size", fixes=fixes)
