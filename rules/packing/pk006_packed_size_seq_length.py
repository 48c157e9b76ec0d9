from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    int_values,
    offline_packing,
    offline_packing_known_on,
    specs_path,
    value,
)


class PackedSizeEqualsSeqLength(Rule):
    id = "PK006"
    name = "packed-size-equals-seq-length"
    severity = Severity.WARNING
    summary = "offline packed_sequence_size should equal dataset.seq_length."
    fixable = True
    tags = ("packing", "seq-length")
    doc = """## What it does
Flags offline packing whose `packed_sequence_size` differs from `dataset.seq_length`.

## Why it matters
The packed dataset is built with `max_seq_length = packed_sequence_size`, while the model,
position embeddings, CUDA-graph shapes and the CP/SP padding are sized from `seq_length`. A
larger pack feeds the model sequences longer than it was configured for; a smaller one wastes
the context the run pays for. Megatron-Bridge's `run_recipe.py` silently resets
`packed_sequence_size := dataset.seq_length`, so a value that differs is usually an
override that was lost or a forgotten edit. (Megatron-Bridge does not reject it, hence a warning.)

## Example
```python
cfg.dataset.seq_length = 4096
cfg.dataset.offline_packing_specs.packed_sequence_size = 2048
```

## Fix
Unsafe (changes tokens per step and rebuilds the packed data): set
`packed_sequence_size = dataset.seq_length`.

## Versions
0.3.x (`dataset.packed_sequence_specs`) and 0.6.x (`dataset.offline_packing_specs`).

## Sources
0.6.2 megatron/bridge/data/builders/gpt_sft.py:565-567 and 476 (packed dataset length);
skills/nemo-mbridge-perf-sequence-packing/SKILL.md:58-61; docs/training/packed-sequences.md:78;
scripts/training/recipe_runner.py (sync of packed_sequence_size).
"""
    valid = [
        "cfg = _sft_common()",
        "cfg = _sft_common()\ncfg.dataset.seq_length = 4096\ncfg.dataset.offline_packing_specs.packed_sequence_size = 4096",
        "cfg = _sft_common()\nfor n in (2048, 4096):\n    cfg.dataset.seq_length = n",
        Example("cfg = _sft_common()", version="0.3"),
    ]
    invalid = [
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.packed_sequence_size = 4096  # error",
        Example("cfg = _sft_common()\ncfg.dataset.seq_length = 4096  # error", version="0.3"),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        path = f"{specs_path(cfg)}.packed_sequence_size"
        size = value(cfg, path)
        seq = value(cfg, "dataset.seq_length")
        if offline_packing(cfg) is not True or not int_values(size, seq) or size <= 0 or size == seq:
            return
        yield ctx.report(
            cfg,
            f"{path} is {size}, but dataset.seq_length is {seq}; packs should be exactly seq_length tokens",
            [path, "dataset.seq_length"],
            fixes=[FixIntent("set", path, seq, safe=False, description=f"set packed_sequence_size to {seq}")],
        )
