from __future__ import annotations

from mblint.rulekit import MAX_STEPS_NOT_POSITIVE, Example, Rule, Severity, hf_model, int_values, knows_field, value


class LrDecayStepsPositive(Rule):
    id = "SC001"
    name = "lr-decay-steps-positive"
    severity = Severity.ERROR
    summary = "The scheduler's decay length (train_iters or lr_decay_iters times global_batch_size) must be > 0."
    tags = ("scheduler",)
    doc = """## What it does
For iteration-based training (`train.train_iters` set, `train.train_samples` unset), works out
the scheduler's `lr_decay_steps` the way `ConfigContainer._calculate_scheduler_steps()` does:
`scheduler.max_steps` (0.6.x) or else `scheduler.lr_decay_iters` or else `train.train_iters`,
times `train.global_batch_size`; for sample-based training, `scheduler.lr_decay_samples` or else
`train.train_samples`. Flags a result that is not positive (e.g. `train.train_iters = 0`).

## Why it matters
`ConfigContainer.validate()` raises "lr_decay_steps must be > 0, got 0. Please increase
train_iters/train_samples or lr_decay_iters/lr_decay_samples." at job start.

## Example
```python
cfg.train.train_iters = 0
```

## Fix
Set a positive `train.train_iters` (or `scheduler.lr_decay_iters`). No automatic fix: the
number of iterations is the author's choice.

## Versions
0.3.x and 0.6.x (`scheduler.max_steps` exists in 0.6.x only).

## Sources
0.6.2 megatron/bridge/training/config.py:1432-1433 (called when train_iters is set),
1607-1660 (`_calculate_scheduler_steps`, the raise at 1654-1658); 0.3.1
megatron/bridge/training/config.py:1543, 1637-1677. Confirmed with the oracle:
llama31_405b_sft_128gpu_h100_bf16_config with train.train_iters=0 fails with this message.
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.train.train_iters = 10",
        "cfg = _pretrain_common()\ncfg.train.train_iters = 0\ncfg.scheduler.lr_decay_iters = 100",
        "cfg = _pretrain_common()\nfor n in (0, 10):\n    cfg.train.train_iters = n",
        # the batch size unknown: an AutoBridge model's layer count without its config.json
        "cfg = _pretrain_common()\n" + hf_model() + "cfg.train.train_iters = 0\n"
        "cfg.train.global_batch_size = cfg.model.num_layers",
        Example("cfg = _pretrain_common()\ncfg.train.train_iters = 100", version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\ncfg.train.train_iters = 0  # error",
        "cfg = _pretrain_common()\ncfg.scheduler.lr_decay_iters = 0  # error",
        Example("cfg = _pretrain_common()\ncfg.train.train_iters = 0  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        samples = value(cfg, "train.train_samples", None)
        if samples is not None:
            decay = value(cfg, "scheduler.lr_decay_samples", None)
            path = "scheduler.lr_decay_samples" if decay is not None else "train.train_samples"
            steps = samples if decay is None else decay
            if int_values(steps) and steps <= 0:
                yield ctx.report(cfg, f"{path} is {steps}, so the scheduler's lr_decay_steps is {steps}; "
                                      f"it must be > 0", [path])
            return
        iters = value(cfg, "train.train_iters", None)
        if iters is None:
            return  # epoch-based: resolved after the dataset is built
        max_steps = value(cfg, "scheduler.max_steps", None) if knows_field(cfg, "max_steps") else None
        decay_iters = value(cfg, "scheduler.lr_decay_iters", None)
        gbs = value(cfg, "train.global_batch_size", None)
        if max_steps is not None:
            path, n = "scheduler.max_steps", max_steps
        elif decay_iters is not None:
            path, n = "scheduler.lr_decay_iters", decay_iters
        else:
            path, n = "train.train_iters", iters
        if not int_values(n, gbs) or gbs <= 0:
            return
        if n * gbs > 0:
            return
        yield ctx.report(
            cfg,
            f"{path} is {n}, so the scheduler's lr_decay_steps = {path.split('.')[-1]} * global_batch_size = "
            f"{n} * {gbs} = {n * gbs}; it must be > 0 (validate() raises)",
            [path], primary=path, problem=MAX_STEPS_NOT_POSITIVE if path == "scheduler.max_steps" else "",
        )
