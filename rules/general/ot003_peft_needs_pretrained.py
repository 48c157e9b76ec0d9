from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, has_overrides, known, value


class PeftNeedsPretrainedCheckpoint(Rule):
    id = "OT003"
    name = "peft-needs-pretrained"
    severity = Severity.ERROR
    summary = "PEFT needs checkpoint.pretrained_checkpoint; checked when override files or command-line overrides complete a recipe."
    tags = ("general", "peft", "checkpoint")
    doc = """## What it does
Flags a configuration with `peft` set (LoRA, DoRA, ...) whose
`checkpoint.pretrained_checkpoint` is None **when overrides were applied**: an override file
paired with a recipe, or command-line `key=value` overrides. A bare recipe function is not
reported: Megatron-Bridge's PEFT recipes deliberately leave `pretrained_checkpoint` to the
launcher (`run_recipe.py --pretrained_checkpoint`, a YAML override or
`checkpoint.pretrained_checkpoint=...`), so reporting every PEFT recipe would be noise. When
mblint checks the configuration as launched (recipe plus overrides), a missing path is a
certain failure.

## Why it matters
`ConfigContainer.validate()` asserts "PEFT requires a pretrained checkpoint path" at job
start (confirmed with Megatron-Bridge 0.6.2 on an unmodified PEFT recipe); `checkpoint.load`
does not satisfy it. The job fails after allocation on every rank.

## Example
```yaml
# mblint: recipe=my_recipes.py::llama3_8b_peft_config
checkpoint:
  save: /results/lora        # pretrained_checkpoint still None
```

## Fix
Set `checkpoint.pretrained_checkpoint` to the Megatron checkpoint of the base model (there is
no automatic fix: mblint cannot know the path).

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1487-1488 (assert in `ConfigContainer.validate`);
0.6.2 megatron/bridge/training/finetune.py:50 (finetune() also needs pretrained_checkpoint or
load); 0.6.2 megatron/bridge/recipes/common.py:319 (`_peft_common` leaves it None);
0.3.1 megatron/bridge/training/config.py (same assert in `validate`).
"""
    valid = [
        # bare recipe: the launcher provides the checkpoint
        "cfg = _peft_common()",
        Example("cfg = _peft_common()", dotlist=("checkpoint.pretrained_checkpoint=/ckpt/base",)),
        Example("cfg = _sft_common()", dotlist=("train.train_iters=10",)),
        # unknown path (set in a loop)
        Example("cfg = _peft_common()\nfor p in ['/a', '/b']:\n    cfg.checkpoint.pretrained_checkpoint = p",
                dotlist=("train.train_iters=10",)),
        Example("cfg = _peft_common()", version="0.3",
                yaml="checkpoint:\n  pretrained_checkpoint: /ckpt/base\n"),
    ]
    invalid = [
        Example("cfg = _peft_common()", dotlist=("train.train_iters=10",)),
        Example("cfg = _peft_common()", yaml="checkpoint:\n  pretrained_checkpoint: null  # error\n"),
        Example("cfg = _peft_common()", version="0.3", dotlist=("checkpoint.save=/out",)),
    ]

    def check(self, cfg, ctx):
        if cfg.type_of("peft") is None:
            peft = value(cfg, "peft", None)
            if not known(peft) or peft is None or isinstance(peft, (bool, int, float)):
                return
        path = value(cfg, "checkpoint.pretrained_checkpoint", None)
        if not known(path) or path is not None or not has_overrides(cfg):
            return
        message = ("peft is set, but checkpoint.pretrained_checkpoint is None after the overrides; "
                   "ConfigContainer.validate() asserts 'PEFT requires a pretrained checkpoint path' at job start "
                   "(checkpoint.load does not count)")
        yield ctx.report(cfg, message, ["checkpoint.pretrained_checkpoint", "peft"],
                         primary="checkpoint.pretrained_checkpoint")
