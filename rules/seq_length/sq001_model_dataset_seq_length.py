from __future__ import annotations

from mblint.rulekit import (
    SEQ_LENGTHS_DIFFER,
    Example,
    FixIntent,
    Rule,
    Severity,
    canonical_seq_datasets,
    dataset_is,
    hf_model,
    int_values,
    is_round,
    value,
)


class ModelDatasetSeqLengthEqual(Rule):
    id = "SQ001"
    name = "model-dataset-seq-length-equal"
    severity = Severity.ERROR
    summary = "model.seq_length must equal dataset.seq_length."
    fixable = True
    tags = ("seq-length",)
    supersedes = ("LC001", "LC002")
    doc = """## What it does
For the dataset configs Megatron-Bridge checks (GPTDatasetConfig and its subclasses, the SFT
dataset configs), flags `model.seq_length != dataset.seq_length`.

## Why it matters
`ConfigContainer.validate()` asserts "Please ensure sequence length configuration in model
config and dataset config match." at job start. A common cause is an override of only one of
the two (`dataset.seq_length=8192` on the command line).

## Example
```python
cfg.model.seq_length = 4096
cfg.dataset.seq_length = 8192
```

## Fix
Safe: set `model.seq_length` to `dataset.seq_length` (what `scripts/training/run_recipe.py` does).

## Versions
0.3.x (GPTDatasetConfig, FinetuningDatasetConfig) and 0.6.x (GPTDatasetConfig,
GPTSFTDatasetConfig, DirectHFSFTDatasetConfig, EnergonDatasetConfig, MockVLMSFTDatasetConfig).

## Sources
0.6.2 megatron/bridge/training/config.py:1479-1500; 0.3.1 megatron/bridge/training/config.py:1591-1605.
"""
    valid = [
        "cfg = _sft_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B") +
        "cfg.model.seq_length = 2048",
        "cfg = _pretrain_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B") +
        "cfg.model.seq_length = 4096\ncfg.dataset.seq_length = 4096",
        "cfg = _sft_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B") +
        "for n in (2048, 4096):\n    cfg.model.seq_length = n",
    ]
    invalid = [
        Example("cfg = _sft_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B") +
                "cfg.model.seq_length = 2048  # error\ncfg.dataset.seq_length = 4096",
                message="model.seq_length is 2048, but dataset.seq_length is 4096", unsafe=True,
                fixed="cfg = _sft_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B") +
                      "cfg.model.seq_length = 4096  # error\ncfg.dataset.seq_length = 4096"),
        Example("cfg = _sft_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B") +
                "cfg.model.seq_length = 2048", dotlist=("dataset.seq_length=8192",)),
        Example("cfg = _sft_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B") +
                "cfg.model.seq_length = 4096  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, *canonical_seq_datasets(cfg)) is not True:
            return
        model_seq = value(cfg, "model.seq_length")
        data_seq = value(cfg, "dataset.seq_length")
        if not int_values(model_seq, data_seq) or model_seq == data_seq:
            return
        yield ctx.report(
            cfg,
            f"model.seq_length is {model_seq}, but dataset.seq_length is {data_seq}; they must be equal",
            ["model.seq_length", "dataset.seq_length"],
            # one round length (8192) against an odd one (1000): the odd one is the edit;
            # otherwise the one set last
            primary=_odd_one(model_seq, data_seq),
            fixes=[FixIntent("set", "model.seq_length", data_seq,
                             description=f"set model.seq_length to dataset.seq_length = {data_seq}")],
            problem=SEQ_LENGTHS_DIFFER,
        )


def _odd_one(model_seq, data_seq):
    model_round, data_round = is_round(model_seq, 1024), is_round(data_seq, 1024)
    if model_round and not data_round:
        return "dataset.seq_length"
    if data_round and not model_round:
        return "model.seq_length"
    return None
