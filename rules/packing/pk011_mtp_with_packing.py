from __future__ import annotations

from mblint.rulekit import (
    Rule,
    Severity,
    in_batch_packing,
    in_batch_packing_path,
    int_values,
    knows_field,
    offline_packing,
    some_packing_known_on,
    specs_path,
    value,
)


class MtpWithFinetunePacking(Rule):
    id = "PK011"
    name = "mtp-with-finetune-packing"
    severity = Severity.WARNING
    summary = "Multi-token prediction is documented as unsupported with fine-tuning sequence packing."
    tags = ("packing", "mtp")
    doc = """## What it does
Flags `model.mtp_num_layers > 0` together with offline or in-batch sequence packing.

## Why it matters
Megatron-Bridge's multi-token-prediction guide lists packed sequences as unsupported for MTP
fine-tuning; the MTP heads shift tokens across the packed sequence boundaries. Only the Energon
packing path enforces it (see PK013), so elsewhere the run starts and the MTP loss is wrong.
Reported as a warning because `validate()` does not reject it.

## Example
```python
cfg = _sft_common()              # offline packing on
cfg.model.mtp_num_layers = 1
```

## Fix
Disable packing for MTP fine-tuning, or set `mtp_num_layers = 0`. No automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
docs/training/multi-token-prediction.md:198,209-211 (Megatron-Bridge main);
skills/nemo-mbridge-perf-sequence-packing/card.yaml:92.
"""
    _model = ("cfg.model = AutoBridge.from_hf_pretrained('deepseek-ai/DeepSeek-V3')"
              ".to_megatron_provider(load_weights=False)\n")
    valid = [
        "cfg = _sft_common()\n" + _model + "cfg.model.mtp_num_layers = 0",
        "cfg = _sft_common()\n" + _model + "cfg.model.mtp_num_layers = 1\ncfg.dataset.enable_offline_packing = False\n"
        "cfg.dataset.offline_packing_specs = None",
        "cfg = _sft_common()\n" + _model,  # HF-derived mtp_num_layers: unknown
    ]
    invalid = [
        "cfg = _sft_common()\n" + _model + "cfg.model.mtp_num_layers = 1  # error",
    ]

    precondition = some_packing_known_on

    def check(self, cfg, ctx):
        mtp = value(cfg, "model.mtp_num_layers", None)
        if not int_values(mtp) or mtp <= 0:
            return
        if offline_packing(cfg) is True:
            flag = "dataset.enable_offline_packing" if knows_field(cfg, "enable_offline_packing") \
                else f"{specs_path(cfg)}.packed_sequence_size"
            mode = "offline"
        elif in_batch_packing(cfg) is True:
            flag, mode = in_batch_packing_path(cfg), "in-batch"
        else:
            return
        yield ctx.report(
            cfg,
            f"model.mtp_num_layers is {mtp}, but {mode} sequence packing ({flag}) is on; multi-token prediction "
            "is not supported with packed fine-tuning sequences",
            ["model.mtp_num_layers", flag],
        )
