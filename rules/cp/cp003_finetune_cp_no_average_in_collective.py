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
    megatron_fsdp,
    parallel,
    value,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")
FIXED = "cfg.model.calculate_per_token_loss = True\n"


class FinetuneCpNoAverageInCollective(Rule):
    id = "CP003"
    name = "finetune-cp-no-average-in-collective"
    severity = Severity.ERROR
    summary = "Fine-tuning with context_parallel_size > 1 needs ddp.average_in_collective = False."
    fixable = True
    tags = ("context-parallel", "finetuning", "ddp")
    doc = """## What it does
Flags a fine-tuning dataset (the classes `ConfigContainer.validate()` checks, see CP002)
trained with `model.context_parallel_size > 1` while `ddp.average_in_collective` is True.
Megatron-FSDP turns `average_in_collective` off before the check, so it is not flagged then.

## Why it matters
Per-token loss (required with CP for fine-tuning) sums gradients and divides by the token
count; averaging inside the collective divides once more. Megatron-Bridge asserts "When
finetuning with CP>1, average_in_collective must be False" at job start. `_pretrain_common()`
and the VLM builders `_sft_common_vlm()`/`_peft_common_vlm()` set it True, so a VLM
fine-tuning recipe that only raises CP trips it.

## Example
```python
cfg = _sft_common_vlm()                  # ddp.average_in_collective = True
cfg.model.context_parallel_size = 2
cfg.model.calculate_per_token_loss = True
```

## Fix
Safe: set `ddp.average_in_collective = False` (what `scripts/training/run_recipe.py` does;
other entry points do not).

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1435-1457 (`validate`), 1086-1088 (Megatron-FSDP
deactivates it first, called at 1346); 0.6.2 megatron/bridge/recipes/common.py:85,404,508;
0.3.1 megatron/bridge/training/config.py:1478-1480, 1545-1559.
"""
    valid = [
        "cfg = _sft_common_vlm()\n" + MODEL + FIXED + "cfg.model.context_parallel_size = 2\n"
        "cfg.ddp.average_in_collective = False",
        "cfg = _sft_common_vlm()\n" + MODEL + "cfg.model.context_parallel_size = 1",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2",
        # Megatron-FSDP turns average_in_collective off before validate() checks it
        "cfg = _sft_common_vlm()\n" + MODEL + FIXED + "cfg.model.context_parallel_size = 2\n"
        "cfg.ddp.use_megatron_fsdp = True",
        # unknown CP
        "cfg = _sft_common_vlm()\n" + MODEL + "for cp in (1, 2):\n    cfg.model.context_parallel_size = cp",
        Example("cfg = _sft_common()\n" + MODEL + FIXED + "cfg.model.context_parallel_size = 2", version="0.3"),
    ]
    invalid = [
        # _sft_common_vlm sets average_in_collective=True (0.6.2 recipes/common.py:404)
        Example("cfg = _sft_common_vlm()\n" + MODEL + FIXED + "cfg.model.context_parallel_size = 2  # error",
                message="ddp.average_in_collective is True, but fine-tuning",
                fixed="cfg = _sft_common_vlm()\ncfg.ddp.average_in_collective = False\n" + MODEL + FIXED
                      + "cfg.model.context_parallel_size = 2  # error",
                unsafe=False),
        # replacing a value the recipe wrote is unsafe
        Example("cfg = _sft_common()\n" + MODEL + FIXED + "cfg.model.context_parallel_size = 2\n"
                "cfg.ddp.average_in_collective = True  # error",
                fixed="cfg = _sft_common()\n" + MODEL + FIXED + "cfg.model.context_parallel_size = 2\n"
                      "cfg.ddp.average_in_collective = False  # error",
                unsafe=True),
        Example("cfg = _sft_common()\n" + MODEL + FIXED + "cfg.model.context_parallel_size = 2\n"
                "cfg.ddp.average_in_collective = True  # error", version="0.3"),
    ]

    precondition = context_parallel_known_above_1

    def check(self, cfg, ctx):
        cp = parallel(cfg).cp
        average = value(cfg, "ddp.average_in_collective", False)
        if finetuning_dataset(cfg) is not True or not known(cp, average) or cp <= 1 or average is not True:
            return
        if megatron_fsdp(cfg) is not False:
            return
        message = (f"ddp.average_in_collective is True, but fine-tuning ({cfg.type_of('dataset')}) with "
                   f"context_parallel_size={cp} requires False (per-token loss already normalises by the "
                   f"token count)")
        yield ctx.report(cfg, message, ["ddp.average_in_collective", "model.context_parallel_size"],
                         fixes=[FixIntent("set", "ddp.average_in_collective", False,
                                          description="set ddp.average_in_collective to False")])
