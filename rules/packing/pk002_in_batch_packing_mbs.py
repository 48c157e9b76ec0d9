from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    in_batch_packing,
    in_batch_packing_known_on,
    in_batch_packing_path,
    known,
)


class InBatchPackingRequiresMbsGt1(Rule):
    id = "PK002"
    name = "in-batch-packing-requires-mbs-gt1"
    severity = Severity.ERROR
    summary = "In-batch sequence packing needs train.micro_batch_size > 1."
    fixable = True
    tags = ("packing", "batch")
    doc = """## What it does
Flags in-batch packing (`dataset.enable_in_batch_packing = True` in 0.6.x,
`dataset.pack_sequences_in_batch = True` in 0.3.x) with `train.micro_batch_size == 1`.

## Why it matters
In-batch packing concatenates the sequences of one micro-batch; with a single sequence there is
nothing to pack. `ConfigContainer.validate()` raises "micro_batch_size should be greater than 1
when using enable_in_batch_packing=True" at job start, on every rank.

## Example
```python
cfg.dataset.enable_in_batch_packing = True
cfg.train.micro_batch_size = 1
```

## Fix
Unsafe (changes batch arithmetic): raise `train.micro_batch_size` to 2 or more (keeping
`global_batch_size` divisible), or turn in-batch packing off.

## Versions
0.3.x (`dataset.pack_sequences_in_batch`, VLM dataset providers) and 0.6.x
(`dataset.enable_in_batch_packing`).

## Sources
0.6.2 megatron/bridge/training/config.py:1470-1475 (`ConfigContainer.validate`);
0.3.1 megatron/bridge/training/config.py:1581-1586.
"""
    valid = [
        "cfg = _sft_common_vlm()\ncfg.dataset.enable_in_batch_packing = True\ncfg.train.micro_batch_size = 2",
        "cfg = _sft_common_vlm()\ncfg.dataset.enable_in_batch_packing = False\ncfg.train.micro_batch_size = 1",
        # unknown micro-batch size: silent
        "cfg = _sft_common_vlm()\ncfg.dataset.enable_in_batch_packing = True\n"
        "for mbs in (1, 2):\n    cfg.train.micro_batch_size = mbs",
        Example("cfg = _sft_common()\ncfg.train.micro_batch_size = 1", version="0.3"),
    ]
    invalid = [
        # micro-batch size 2; turning in-batch packing off is an alternative, not applied
        Example("cfg = _sft_common_vlm()\ncfg.train.micro_batch_size = 4\n"
                "cfg.dataset.enable_in_batch_packing = True\ncfg.train.micro_batch_size = 1  # error",
                message="needs at least 2 sequences per micro-batch", unsafe=True,
                fixed="cfg = _sft_common_vlm()\ncfg.train.micro_batch_size = 4\n"
                      "cfg.dataset.enable_in_batch_packing = True\ncfg.train.micro_batch_size = 2  # error"),
        Example("cfg = _sft_common_vlm()\ncfg.train.micro_batch_size = 2",
                dotlist=("dataset.enable_in_batch_packing=true", "train.micro_batch_size=1")),
    ]

    precondition = in_batch_packing_known_on

    def check(self, cfg, ctx):
        mbs = cfg.value("train.micro_batch_size")
        if in_batch_packing(cfg) is not True or not known(mbs) or mbs != 1:
            return
        flag = in_batch_packing_path(cfg)
        yield ctx.report(
            cfg,
            f"train.micro_batch_size is 1, but {flag} = True needs at least 2 sequences per micro-batch "
            f"to pack",
            ["train.micro_batch_size", flag],
            fixes=[FixIntent("set", "train.micro_batch_size", 2, safe=False,
                             description="set micro_batch_size to 2 (check global_batch_size divisibility)"),
                   FixIntent("set", flag, False, safe=False, alternative=True,
                             description="or disable in-batch packing")],
        )
