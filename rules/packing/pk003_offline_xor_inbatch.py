from __future__ import annotations

from dataclasses import replace

from mblint.rulekit import (
    SPECS_06,
    Example,
    FixIntent,
    Rule,
    Severity,
    in_batch_packing,
    offline_packing,
    offline_packing_known_on,
)


class OfflineXorInBatch(Rule):
    id = "PK003"
    name = "offline-xor-inbatch"
    severity = Severity.ERROR
    summary = "Offline packing and in-batch packing cannot both be enabled."
    fixable = True
    tags = ("packing",)
    requires = ("field:enable_offline_packing",)
    doc = """## What it does
Flags `dataset.enable_offline_packing = True` together with `dataset.enable_in_batch_packing = True`.

## Why it matters
The two packing modes are mutually exclusive: offline packing needs micro-batch size 1 and a
pre-packed dataset, in-batch packing packs the sequences of a larger micro-batch at collate
time. `ConfigContainer.validate()` raises "enable_offline_packing and enable_in_batch_packing
are mutually exclusive." at job start.

## Example
```python
cfg = _sft_common()                            # offline packing on
cfg.dataset.enable_in_batch_packing = True
```

## Fix
Unsafe (changes the data layout): disable one of the two; keep the one set last in the
recipe. Disabling offline packing also sets `offline_packing_specs = None` (Megatron-Bridge
rejects specs without the flag). Offline packing also needs `micro_batch_size = 1`, in-batch
packing needs more than 1.

## Versions
0.6.x. In 0.3.x offline packing (`packed_sequence_specs`) lives on the text SFT dataset and
`pack_sequences_in_batch` on the VLM dataset providers, so they cannot meet.

## Sources
0.6.2 megatron/bridge/training/config.py:1150-1155 (`ConfigContainer.validate`).
"""
    valid = [
        "cfg = _sft_common()",
        "cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False\ncfg.dataset.offline_packing_specs = None\n"
        "cfg.dataset.enable_in_batch_packing = True",
        # unknown flag: silent
        "cfg = _sft_common()\nfor flag in (True, False):\n    cfg.dataset.enable_in_batch_packing = flag",
    ]
    invalid = [
        # in-batch packing was turned on last: offline packing goes, with its specs
        Example("cfg = _sft_common()\ncfg.dataset.enable_in_batch_packing = True  # error",
                message="the two packing modes are mutually exclusive", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.enable_in_batch_packing = True  # error\n"
                      "cfg.dataset.enable_offline_packing = False\ncfg.dataset.offline_packing_specs = None"),
        # offline packing was turned on last: in-batch packing goes
        Example("cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False\ncfg.dataset.offline_packing_specs = None\n"
                "cfg.dataset.enable_in_batch_packing = True  # error\n"
                "cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048)\n"
                "cfg.dataset.enable_offline_packing = True", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.enable_offline_packing = False\ncfg.dataset.offline_packing_specs = None\n"
                      "cfg.dataset.enable_in_batch_packing = False  # error\n"
                      "cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048)\n"
                      "cfg.dataset.enable_offline_packing = True"),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        if offline_packing(cfg) is not True or in_batch_packing(cfg) is not True:
            return
        offline, in_batch = "dataset.enable_offline_packing", "dataset.enable_in_batch_packing"
        disable_in_batch = [FixIntent("set", in_batch, False, safe=False, description="disable in-batch packing")]
        # Specs without the flag are rejected too ("enable_offline_packing must be True when
        # offline_packing_specs is set"): offline packing is turned off with both.
        disable_offline = [FixIntent("set", offline, False, safe=False, description="disable offline packing"),
                           FixIntent("set", SPECS_06, None, safe=False, description="set offline_packing_specs to None")]
        fix, other = ((disable_in_batch, disable_offline) if _set_later(cfg, offline, in_batch)
                      else (disable_offline, disable_in_batch))
        yield ctx.report(
            cfg,
            "dataset.enable_offline_packing and dataset.enable_in_batch_packing are both True, but the two "
            "packing modes are mutually exclusive",
            [offline, in_batch],
            fixes=[*fix, *(replace(intent, alternative=True, description=("or " if n == 0 else "and ") + intent.description)
                           for n, intent in enumerate(other))],
        )


def _set_later(cfg, path: str, other: str) -> bool:
    """Whether ``path`` took its value after ``other`` did (the one set last is kept)."""
    mine, theirs = cfg.origins(path), cfg.origins(other)
    return bool(mine) and (not theirs or mine[-1].seq >= theirs[-1].seq)
