from __future__ import annotations

from dataclasses import replace

from mblint.rulekit import (
    SPECS_06,
    Example,
    FixIntent,
    Rule,
    Severity,
    int_values,
    known,
    last_set_of,
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
Unsafe (changes the data layout). The field written last says what the recipe wants; the other
is made to agree. Packing turned off (`enable_offline_packing = False` or `offline_packing_specs
= None` written last): the fix sets the other one off too. Specs written last: the fix sets
`enable_offline_packing = True`. The flag turned on last without specs: no automatic fix (the
specs are an object, which mblint does not write); add
`PackedSequenceSpecs(packed_sequence_size=dataset.seq_length)` (with `pad_seq_to_mult` aligned
for CP/SP), or turn the flag off. The other way is shown as an alternative.

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
        Example("cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False  # error",
                message="requires both or neither", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False  # error\n"
                      "cfg.dataset.offline_packing_specs = None"),
        Example("cfg = _sft_common()\ncfg.dataset.offline_packing_specs = None  # error",
                message="offline packing needs the specs", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.offline_packing_specs = None  # error\n"
                      "cfg.dataset.enable_offline_packing = False"),
        # the flag turned on last: adding the specs object is the way out, only shown
        Example("cfg = _sft_common()\ncfg.dataset.offline_packing_specs = None\ncfg.dataset.enable_offline_packing = True  # error",
                fixed="cfg = _sft_common()\ncfg.dataset.offline_packing_specs = None\ncfg.dataset.enable_offline_packing = True  # error"),
        Example("cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False  # error\n"
                "cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048)",
                unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.enable_offline_packing = True  # error\n"
                      "cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048)"),
        Example("cfg = _sft_common()", dotlist=("dataset.enable_offline_packing=false",)),
    ]

    def check(self, cfg, ctx):
        flag = offline_packing(cfg)
        present = specs_present(cfg)
        if not known(flag) or not known(present):
            return
        fields = ["dataset.enable_offline_packing", SPECS_06]
        # The field written last is what the recipe wants; the fix makes the other agree, and the
        # other way out is an alternative (the two together would contradict each other).
        flag_last = last_set_of(cfg, fields) == "dataset.enable_offline_packing"
        if flag is True and present is False:
            seq = value(cfg, "dataset.seq_length")
            disable = FixIntent("set", "dataset.enable_offline_packing", False, safe=False,
                                description="disable offline packing")
            # The specs are an object: shown, never written (mblint's fixes write plain values).
            add_specs = [FixIntent("set", SPECS_06, f"PackedSequenceSpecs(packed_sequence_size={seq})", safe=False,
                                   alternative=True, description=f"or add PackedSequenceSpecs(packed_sequence_size={seq})")
                         ] if int_values(seq) else []
            fixes = ([*add_specs, replace(disable, alternative=True, description="or disable offline packing")]
                     if flag_last else [disable, *add_specs])
            yield ctx.report(cfg, "dataset.enable_offline_packing is True, but dataset.offline_packing_specs is None; "
                                  "offline packing needs the specs", fields, fixes=fixes)
        elif flag is False and present is True:
            no_specs = FixIntent("set", SPECS_06, None, safe=False, description="set offline_packing_specs to None")
            enable = FixIntent("set", "dataset.enable_offline_packing", True, safe=False,
                               description="enable offline packing")
            fix, other = (no_specs, enable) if flag_last else (enable, no_specs)
            yield ctx.report(
                cfg,
                "dataset.offline_packing_specs is set, but dataset.enable_offline_packing is False; Megatron-Bridge "
                "requires both or neither",
                fields,
                fixes=[fix, replace(other, alternative=True, description="or " + other.description)],
            )
