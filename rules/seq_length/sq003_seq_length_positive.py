from __future__ import annotations

from mblint.rulekit import SFT_DATASET_TYPES_06, Rule, Severity, dataset_is, int_values, value


class SeqLengthPositive(Rule):
    id = "SQ003"
    name = "seq-length-positive"
    severity = Severity.ERROR
    summary = "dataset.seq_length must be greater than 0."
    tags = ("seq-length",)
    requires = ("class:GPTSFTDatasetConfig",)
    doc = """## What it does
Flags `dataset.seq_length <= 0` on the SFT dataset configs (`GPTSFTDatasetConfig`,
`DirectHFSFTDatasetConfig`, `EnergonDatasetConfig`, `MockVLMSFTDatasetConfig`).

## Why it matters
Their `validate()` (run from `ConfigContainer.validate()`) raises "seq_length must be greater
than 0." at job start.

## Example
```python
cfg.dataset.seq_length = 0
```

## Fix
Set a positive sequence length equal to `model.seq_length`. No automatic fix.

## Versions
0.6.x (0.3.x datasets do not check it).

## Sources
0.6.2 megatron/bridge/data/builders/gpt_sft.py:191-192; direct_hf_sft.py:80-81; energon.py:151-152;
mock_vlm_sft.py:63-64.
"""
    valid = [
        "cfg = _sft_common()",
        "cfg = _sft_common()\nfor n in (0, 2048):\n    cfg.dataset.seq_length = n",
    ]
    invalid = [
        "cfg = _sft_common()\ncfg.dataset.seq_length = 0  # error",
        "cfg = _sft_common_vlm()\ncfg.dataset.seq_length = -1  # error",
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, *SFT_DATASET_TYPES_06) is not True:
            return
        seq = value(cfg, "dataset.seq_length")
        if int_values(seq) and seq <= 0:
            yield ctx.report(cfg, f"dataset.seq_length is {seq}, but it must be greater than 0",
                             ["dataset.seq_length"])
