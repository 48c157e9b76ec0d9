from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    context_parallel_known_above_1,
    finetuning_dataset,
    hf_model,
    known,
    parallel,
    value,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class FinetuneCpPerTokenLoss(Rule):
    id = "CP002"
    name = "finetune-cp-per-token-loss"
    severity = Severity.ERROR
    summary = "Fine-tuning with context_parallel_size > 1 needs model.calculate_per_token_loss = True."
    fixable = True
    tags = ("context-parallel", "finetuning", "loss")
    doc = """## What it does
Flags a fine-tuning dataset (the classes `ConfigContainer.validate()` checks: 0.6.x
`GPTSFTDatasetConfig`/`FinetuningDatasetConfig`, `DirectHFSFTDatasetConfig`,
`EnergonDatasetConfig`, `MockVLMSFTDatasetConfig`; 0.3.x `FinetuningDatasetConfig` and its
subclass `HFDatasetConfig`) trained with `model.context_parallel_size > 1` while
`model.calculate_per_token_loss` is not True.

## Why it matters
With CP, a rank can hold only masked (prompt) tokens of a fine-tuning sample; averaging the
loss per rank then divides by zero and gives NaN loss. Megatron-Bridge asserts "When
finetuning with CP>1, calculate_per_token_loss must be True" at job start. Note that
`MockVLMSFTDatasetConfig` is also used by VLM mock *pretrain* recipes, which are checked too.

## Example
```python
cfg = _sft_common()
cfg.model = AutoBridge.from_hf_pretrained(...).to_megatron_provider(load_weights=False)
cfg.model.context_parallel_size = 2      # calculate_per_token_loss stays False
```

## Fix
Safe: set `model.calculate_per_token_loss = True` (what Megatron-Bridge's
`scripts/training/run_recipe.py` does for you; other entry points do not).

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1435-1457 (`validate`, dataset classes at 1439-1446);
0.6.2 megatron/bridge/data/builders/gpt_sft.py:240 (`FinetuningDatasetConfig` alias);
0.3.1 megatron/bridge/training/config.py:1545-1559; 0.3.1 megatron/bridge/data/builders/hf_dataset.py:55;
skills/mbridge-perf-sequence-packing/SKILL.md (CP with fine-tuning).
"""
    valid = [
        "cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.model.calculate_per_token_loss = True",
        "cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 1",
        # pretraining data: not checked
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2",
        # dataset class unknown
        "cfg = _sft_common()\n" + MODEL + "cfg.dataset = make_dataset()\ncfg.model.context_parallel_size = 2",
        # CP unknown
        "cfg = _sft_common()\n" + MODEL + "for cp in (1, 2):\n    cfg.model.context_parallel_size = cp",
        Example("cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
                "cfg.model.calculate_per_token_loss = True", version="0.3"),
    ]
    invalid = [
        Example("cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 2  # error",
                message="model.calculate_per_token_loss is False, but fine-tuning (GPTSFTDatasetConfig) with "
                        "context_parallel_size=2 requires True",
                fixed="cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 2  # error\n"
                      "cfg.model.calculate_per_token_loss = True",
                unsafe=False),
        # replacing a value the recipe wrote is unsafe
        Example("cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
                "cfg.model.calculate_per_token_loss = False  # error",
                fixed="cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
                      "cfg.model.calculate_per_token_loss = True  # error",
                unsafe=True),
        "cfg = _sft_common_vlm()\n" + MODEL + "cfg.model.context_parallel_size = 4  # error",
        Example("cfg = _sft_common()\n" + MODEL + "cfg.model.context_parallel_size = 2  # error", version="0.3"),
        Example("cfg = _sft_common()\n" + MODEL, dotlist=("model.context_parallel_size=2",)),
    ]

    precondition = context_parallel_known_above_1

    def check(self, cfg, ctx):
        cp = parallel(cfg).cp
        per_token = value(cfg, "model.calculate_per_token_loss", False)
        if finetuning_dataset(cfg) is not True or not known(cp, per_token) or cp <= 1 or per_token is True:
            return
        message = (f"model.calculate_per_token_loss is {per_token!r}, but fine-tuning "
                   f"({cfg.type_of('dataset')}) with context_parallel_size={cp} requires True "
                   f"(otherwise ranks whose tokens are all masked produce NaN loss)")
        yield ctx.report(cfg, message, ["model.calculate_per_token_loss", "model.context_parallel_size"],
                         fixes=[FixIntent("set", "model.calculate_per_token_loss", True,
                                          description="set model.calculate_per_token_loss to True")])
