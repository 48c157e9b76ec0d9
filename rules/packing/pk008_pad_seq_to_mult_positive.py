from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, int_values, knows_field, offline_packing, specs_path, value


class PadSeqToMultPositiveAndFits(Rule):
    id = "PK008"
    name = "pad-seq-to-mult-positive-and-fits"
    severity = Severity.ERROR
    summary = "pad_seq_to_mult must be positive and no larger than the single-sequence length."
    tags = ("packing",)
    doc = """## What it does
Flags `pad_seq_to_mult` that is 0 or negative, and (0.6.x, offline packing on) a
`pad_seq_to_mult` larger than the longest single sequence
(`max_single_sequence_length`, else `dataset.seq_length`).

## Why it matters
0.6.x `PackedSequenceSpecs.__post_init__` raises "pad_seq_to_mult must be a positive integer
when provided." when the object is built; packing preparation raises it again (0.3.x and
0.6.x) and, in 0.6.x, raises "max_seq_length (...) must be at least the effective padding
multiple" when no sequence can be padded to the multiple.

## Example
```python
cfg.dataset.offline_packing_specs.pad_seq_to_mult = 0
```

## Fix
Set `pad_seq_to_mult` to the CP/SP alignment (see PK007), or None/1 without context
parallelism. No automatic fix.

## Versions
0.3.x (non-positive only) and 0.6.x.

## Sources
0.6.2 megatron/bridge/data/packing/config.py:47-48; megatron/bridge/data/packing/offline.py:167-182;
megatron/bridge/data/builders/gpt_sft.py:673 (max_seq_length passed to packing);
0.3.1 megatron/bridge/data/datasets/packed_sequence.py:72-73.
"""
    valid = [
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.pad_seq_to_mult = 8",
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.pad_seq_to_mult = None",
        "cfg = _sft_common()\nfor m in (0, 8):\n    cfg.dataset.offline_packing_specs.pad_seq_to_mult = m",
        Example("cfg = _sft_common()\ncfg.dataset.packed_sequence_specs.pad_seq_to_mult = 4", version="0.3"),
    ]
    invalid = [
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.pad_seq_to_mult = 0  # error",
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs = PackedSequenceSpecs(\n"
        "    packed_sequence_size=2048, max_single_sequence_length=512, pad_seq_to_mult=1024)  # error",
        Example("cfg = _sft_common()\ncfg.dataset.packed_sequence_specs.pad_seq_to_mult = -2  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        specs = specs_path(cfg)
        path = f"{specs}.pad_seq_to_mult"
        pad = value(cfg, path)
        if not int_values(pad):
            return
        if pad <= 0:
            yield ctx.report(cfg, f"{path} is {pad}, but it must be a positive integer (or None)", [path])
            return
        if not knows_field(cfg, "enable_offline_packing") or offline_packing(cfg) is not True:
            return
        single_path = f"{specs}.max_single_sequence_length"
        single = value(cfg, single_path, None)
        seq = value(cfg, "dataset.seq_length")
        if single is not None and not int_values(single):
            return
        limit, limit_path = (single, single_path) if single else (seq, "dataset.seq_length")
        if not int_values(limit) or limit <= 0 or limit >= pad:
            return
        yield ctx.report(
            cfg,
            f"{path} is {pad}, but the longest single sequence ({limit_path}) is {limit}; no sequence can be "
            f"padded to a multiple of {pad}",
            [path, limit_path],
        )
