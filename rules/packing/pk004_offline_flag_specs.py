from __future__ import annotations

from mblint.rulekit import (
    SPECS_06,
    Example,
    FixIntent,
    Rule,
    Severity,
    int_values,
    is_known,
    offline_packing,
    specs_present,
    value,
)


class OfflineFlagAndSpecsConsistent(Rule):
    id = "PK004"
    name = "offline-flag-and-specs-consistent"
    severity = Severity.ERROR
    summary = "enable_offline_packing and offline_packing_specs must be set together."
    fixable = True
    tags = ("packing",)
    requires = ("field:enable_offline_packing",)
    doc = """## What it does
Flags `dataset.enable_offline_packing = True` with `dataset.offline_packing_specs = None`, and
`offline_packing_specs` set while `enable_offline_packing` is False.

## Why it matters
`ConfigContainer.validate()` (and again `GPTSFTDatasetConfig.validate()`) raises
"offline_packing_specs must be set when enable_offline_packing=True." or "enable_offline_packing
must be True when offline_packing_specs is set." at job start. A common cause is turning
packing off with only one of the two fields.

## Example
```python
cfg = _sft_common()                          # packing on, with specs
cfg.dataset.enable_offline_packing = False   # specs still set
```

## Fix
Unsafe (changes the data layout). To turn packing off, also set `offline_packing_specs = None`.
To turn it on, add `PackedSequenceSpecs(packed_sequence_size=dataset.seq_length)`
(with `pad_seq_to_mult` aligned for CP/SP), or set the flag.

## Versions
0.6.x. In 0.3.x the specs object alone enables packing (`packed_sequence_specs`).

## Sources
0.6.2 megatron/bridge/training/config.py:1156-1159; megatron/bridge/data/builders/gpt_sft.py:194-197.
"""
    valid = [
        "cfg = _sft_common()",
        "cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False\ncfg.dataset.offline_packing_specs = None",
        "cfg = _pretrain_common()",
        # unknown flag: silent
        "cfg = _sft_common()\nfor flag in (True, False):\n    cfg.dataset.enable_offline_packing = flag",
    ]
    invalid = [
        "cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False  # error",
        "cfg = _sft_common()\ncfg.dataset.offline_packing_specs = None  # error",
        Example("cfg = _sft_common()", dotlist=("dataset.enable_offline_packing=false",)),
    ]

    def check(self, cfg, ctx):
        flag = offline_packing(cfg)
        present = specs_present(cfg)
        if not is_known(flag) or not is_known(present):
            return
        fields = ["dataset.enable_offline_packing", SPECS_06]
        if flag is True and present is False:
            seq = value(cfg, "dataset.seq_length")
            fixes = []
            if int_values(seq):
                fixes.append(FixIntent("set", SPECS_06, f"PackedSequenceSpecs(packed_sequence_size={seq})", safe=False,
                                       description=f"add PackedSequenceSpecs(packed_sequence_size={seq})"))
            fixes.append(FixIntent("set", "dataset.enable_offline_packing", False, safe=False,
                                   description="disable offline packing"))
            yield ctx.report(cfg, "dataset.enable_offline_packing is True, but dataset.offline_packing_specs is None; "
                                  "offline packing needs the specs", fields, fixes=fixes)
        elif flag is False and present is True:
            yield ctx.report(
                cfg,
                "dataset.offline_packing_specs is set, but dataset.enable_offline_packing is False; Megatron-Bridge "
                "requires both or neither",
                fields,
                fixes=[FixIntent("set", SPECS_06, None, safe=False, description="set offline_packing_specs to None"),
                       FixIntent("set", "dataset.enable_offline_packing", True, safe=False,
                                 description="enable offline packing")],
            )
