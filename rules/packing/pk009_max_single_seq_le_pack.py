from __future__ import annotations

from mblint.rulekit import SPECS_06, Example, FixIntent, Rule, Severity, int_values, value


class MaxSingleSeqLePack(Rule):
    id = "PK009"
    name = "max-single-seq-le-pack"
    severity = Severity.ERROR
    summary = "max_single_sequence_length must be positive and at most packed_sequence_size."
    fixable = True
    tags = ("packing",)
    requires = ("field:offline_packing_specs", "field:max_single_sequence_length")
    doc = """## What it does
Flags `dataset.offline_packing_specs.max_single_sequence_length` that is 0 or negative, or
larger than a positive `packed_sequence_size`.

## Why it matters
`PackedSequenceSpecs.__post_init__` raises "max_single_sequence_length must be a positive
integer when provided." or "max_single_sequence_length cannot exceed packed_sequence_size."; a
single sequence longer than the pack cannot be placed in any pack.

## Example
```python
cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048,
                                                        max_single_sequence_length=4096)
```

## Fix
Safe: clamp `max_single_sequence_length` to `packed_sequence_size` (or remove it).

## Versions
0.6.x (the field does not exist in 0.3.x).

## Sources
0.6.2 megatron/bridge/data/packing/config.py:49-53.
"""
    valid = [
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.max_single_sequence_length = 2048",
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs.max_single_sequence_length = None",
        "cfg = _sft_common()\nfor n in (1024, 8192):\n    cfg.dataset.offline_packing_specs.max_single_sequence_length = n",
    ]
    invalid = [
        # clamped; unsafe as it replaces what the recipe wrote
        Example("cfg = _sft_common()\ncfg.dataset.offline_packing_specs = PackedSequenceSpecs(\n"
                "    packed_sequence_size=2048, max_single_sequence_length=4096)  # error",
                message="cannot exceed packed_sequence_size = 2048", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.offline_packing_specs = PackedSequenceSpecs(\n"
                      "    packed_sequence_size=2048, max_single_sequence_length=2048)  # error"),
        Example("cfg = _sft_common()\ncfg.dataset.offline_packing_specs.max_single_sequence_length = 0  # error",
                message="must be a positive integer (or None)", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.offline_packing_specs.max_single_sequence_length = None  # error"),
    ]

    def check(self, cfg, ctx):
        path = f"{SPECS_06}.max_single_sequence_length"
        size_path = f"{SPECS_06}.packed_sequence_size"
        single = value(cfg, path, None)
        if single is None or not int_values(single):
            return
        if single <= 0:
            yield ctx.report(cfg, f"{path} is {single}, but it must be a positive integer (or None)", [path],
                             fixes=[FixIntent("set", path, None, description="remove max_single_sequence_length")])
            return
        size = value(cfg, size_path)
        if int_values(size) and size > 0 and single > size:
            yield ctx.report(
                cfg, f"{path} is {single}, but it cannot exceed packed_sequence_size = {size}",
                [path, size_path], primary=path,
                fixes=[FixIntent("set", path, size, description=f"set max_single_sequence_length to {size}")])
