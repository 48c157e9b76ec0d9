from __future__ import annotations

from mblint.rulekit import (
    SPECS_06,
    Example,
    FixIntent,
    Rule,
    Severity,
    constructor_site_field,
    int_values,
    offline_packing,
    offline_packing_known_on,
    value,
)


class PackedSizePositive(Rule):
    id = "PK005"
    name = "packed-size-positive"
    severity = Severity.ERROR
    summary = "Offline packing needs offline_packing_specs.packed_sequence_size > 0."
    fixable = True
    tags = ("packing",)
    requires = ("field:enable_offline_packing",)
    doc = """## What it does
Flags offline packing whose `dataset.offline_packing_specs.packed_sequence_size` is 0 or
negative, typically `PackedSequenceSpecs(pad_seq_to_mult=4)` written without a size (the
dataclass default is -1).

## Why it matters
`ConfigContainer.validate()` and `GPTSFTDatasetConfig.validate()` raise
"offline_packing_specs.packed_sequence_size must be greater than 0." at job start.

## Example
```python
cfg.dataset.offline_packing_specs = PackedSequenceSpecs(pad_seq_to_mult=4)
```

## Fix
Unsafe (defines the packed dataset): set `packed_sequence_size` to `dataset.seq_length`.

## Versions
0.6.x. In 0.3.x a size of 0 or less simply disables packing.

## Sources
0.6.2 megatron/bridge/training/config.py:1449-1450; megatron/bridge/data/builders/gpt_sft.py:198-199;
megatron/bridge/data/packing/config.py:30 (default -1).
"""
    valid = [
        "cfg = _sft_common()",
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048)",
        "cfg = _sft_common()\nfor n in (0, 2048):\n    cfg.dataset.offline_packing_specs.packed_sequence_size = n",
    ]
    invalid = [
        # _sft_common: dataset.seq_length = 2048
        Example("cfg = _sft_common()\ncfg.dataset.offline_packing_specs = PackedSequenceSpecs(pad_seq_to_mult=4)  # error",
                message="is -1, but offline packing needs a positive pack size", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.offline_packing_specs = PackedSequenceSpecs(pad_seq_to_mult=4)  # error\n"
                      "cfg.dataset.offline_packing_specs.packed_sequence_size = 2048"),
        Example("cfg = _sft_common()\ncfg.dataset.offline_packing_specs.packed_sequence_size = 0  # error", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.offline_packing_specs.packed_sequence_size = 2048  # error"),
        Example("cfg = _sft_common()", dotlist=("dataset.offline_packing_specs.packed_sequence_size=-1",)),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        path = f"{SPECS_06}.packed_sequence_size"
        size = value(cfg, path)
        if offline_packing(cfg) is not True or not int_values(size) or size > 0:
            return
        seq = value(cfg, "dataset.seq_length")
        fixes = []
        message = f"{path} is {size}, but offline packing needs a positive pack size"
        if int_values(seq) and seq > 0:
            message += f" (usually dataset.seq_length = {seq})"
            fixes.append(FixIntent("set", path, seq, safe=False, description=f"set packed_sequence_size to {seq}"))
        primary = constructor_site_field(cfg, path) or path
        yield ctx.report(cfg, message, [path, "dataset.enable_offline_packing"], primary=primary, fixes=fixes)
