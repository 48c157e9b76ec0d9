from __future__ import annotations

from mblint.rulekit import MAX_STEPS_NOT_POSITIVE, Example, Rule, Severity, format_value, known, knows_field, value

P = "cfg = _pretrain_common()\n"  # train_iters = 300000, lr_warmup_iters = 500
DEFAULTS = {"lr_decay_iters": None, "lr_warmup_iters": 0, "lr_wsd_decay_iters": None, "lr_decay_samples": None,
            "lr_warmup_samples": 0, "lr_wsd_decay_samples": None, "lr_warmup_fraction": None, "max_steps": None}
ITER = ("lr_decay_iters", "lr_warmup_iters", "lr_wsd_decay_iters")
SAMPLE = ("lr_decay_samples", "lr_warmup_samples", "lr_wsd_decay_samples")
PATHS = {name: f"scheduler.{name}" for name in DEFAULTS}


def _used(name: str, current) -> bool:
    return current != DEFAULTS[name]


class SchedulerConsistency(Rule):
    id = "OT005"
    name = "scheduler-consistency"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "Scheduler fields must match the training mode (iterations vs samples), not mix, and leave room for decay."
    tags = ("general", "scheduler")
    doc = """## What it does
Flags, on `cfg.scheduler` and `cfg.train`:
- iteration fields (`lr_decay_iters`, `lr_warmup_iters`, `lr_wsd_decay_iters`) mixed with
  sample fields (`lr_decay_samples`, `lr_warmup_samples`, `lr_wsd_decay_samples`);
- `lr_warmup_fraction` together with a non-zero `lr_warmup_iters` or `lr_warmup_samples`;
- sample fields with iteration-based training (`train.train_samples` None), or iteration fields
  or `scheduler.max_steps` with sample-based training;
- `scheduler.max_steps` below `train.train_iters` (0.6.x);
- (warning) warm-up as long as the decay (`lr_warmup_iters >= lr_decay_iters`, decay defaulting
  to `max_steps` or `train_iters`): Megatron-Bridge caps the warm-up, so the schedule is not the
  one written.

## Why it matters
`SchedulerConfig.finalize()` asserts "Cannot mix iteration-based and sample-based scheduler
fields" and "Cannot specify lr_warmup_fraction=... with lr_warmup_iters=..."; `validate()`
asserts "Use lr_warmup_samples for sample-based training, not lr_warmup_iters" (and its
counterparts) and raises "scheduler.max_steps (...) must be greater than or equal to
train.train_iters (...)" (all confirmed with Megatron-Bridge 0.6.2). The warm-up cap is a
`UserWarning`. A common slip: switching a recipe to `train_samples` keeps its `lr_warmup_iters`.

## Example
```python
cfg = _pretrain_common()                  # lr_warmup_iters = 500
cfg.scheduler.lr_warmup_fraction = 0.01
```

## Fix
Use one family of fields, matching `train.train_iters` or `train.train_samples`; set the
others to their defaults (0 / None). No automatic fix: the schedule changes.

## Versions
0.3.x and 0.6.x (`scheduler.max_steps` only in 0.6.x).

## Sources
0.6.2 megatron/bridge/training/config.py:406-438, :1560-1590, :1607-1666; 0.3.1
megatron/bridge/training/config.py:614-642, :1610-1635, :1636-1682.
"""
    valid = [
        P + "cfg.scheduler.lr_warmup_iters = 0\ncfg.scheduler.lr_warmup_fraction = 0.01",
        P + "cfg.train.train_iters = None\ncfg.train.train_samples = 100000\ncfg.scheduler.lr_warmup_iters = 0\n"
        "cfg.scheduler.lr_warmup_samples = 1000",
        P + "cfg.scheduler.max_steps = 400000",
        P + "for n in [0, 10]:\n    cfg.scheduler.lr_warmup_iters = n\ncfg.scheduler.lr_warmup_fraction = 0.01",
        Example(P + "cfg.scheduler.lr_warmup_iters = 100", version="0.3"),
    ]
    invalid = [
        P + "cfg.scheduler.lr_warmup_fraction = 0.01  # error",
        P + "cfg.scheduler.lr_decay_samples = 1000  # error",
        P + "cfg.scheduler.lr_warmup_iters = 0\ncfg.scheduler.lr_decay_samples = 1000  # error",
        P + "cfg.train.train_iters = None\ncfg.train.train_samples = 100000  # error",
        P + "cfg.scheduler.max_steps = 10  # error",
        P + "cfg.train.train_iters = 100  # error",
        Example(P + "cfg.scheduler.lr_warmup_samples = 10  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        names = [n for n in DEFAULTS if n != "max_steps" or knows_field(cfg, "max_steps")]
        sched = {n: value(cfg, PATHS[n], DEFAULTS[n]) for n in names}
        sched.setdefault("max_steps", None)
        if not all(known(v) or v is None for v in sched.values()):
            return
        iters_used = [n for n in ITER if _used(n, sched[n])]
        samples_used = [n for n in SAMPLE if _used(n, sched[n])]

        def shown(fields):
            return ", ".join(f"scheduler.{n} = {format_value(sched[n])}" for n in fields)

        def paths(fields):
            return [f"scheduler.{n}" for n in fields]

        if iters_used and samples_used:
            yield ctx.report(cfg, f"iteration-based {shown(iters_used)} mixed with sample-based {shown(samples_used)}; "
                                  f"use one family (SchedulerConfig asserts at job start)", paths(iters_used + samples_used))
            return
        fraction = sched["lr_warmup_fraction"]
        if fraction is not None and (sched["lr_warmup_iters"] != 0 or sched["lr_warmup_samples"] != 0):
            other = "lr_warmup_iters" if sched["lr_warmup_iters"] != 0 else "lr_warmup_samples"
            yield ctx.report(cfg, f"scheduler.lr_warmup_fraction = {fraction} with {shown([other])}; use only one warm-up "
                                  f"setting (SchedulerConfig asserts at job start)", paths(["lr_warmup_fraction", other]))
            return
        train_iters = value(cfg, "train.train_iters", None)
        train_samples = value(cfg, "train.train_samples", None)
        if not known(train_iters) and train_iters is not None or not known(train_samples) and train_samples is not None:
            return
        if train_samples is not None:
            wrong = list(iters_used) + (["max_steps"] if sched["max_steps"] is not None else [])
            if wrong:
                yield ctx.report(cfg, f"train.train_samples = {train_samples} (sample-based training), but {shown(wrong)} "
                                      f"are iteration settings; use lr_decay_samples/lr_warmup_samples "
                                      f"(validate() asserts at job start)", paths(wrong) + ["train.train_samples"])
            return
        if samples_used:
            yield ctx.report(cfg, f"training is iteration-based (train.train_samples is None), but {shown(samples_used)} "
                                  f"are sample settings; use lr_decay_iters/lr_warmup_iters (validate() asserts at job "
                                  f"start)", paths(samples_used) + ["train.train_samples"])
            return
        if train_iters is None or not isinstance(train_iters, int):
            return
        max_steps = sched["max_steps"]
        if max_steps is not None and isinstance(max_steps, int) and max_steps < train_iters:
            yield ctx.report(cfg, f"scheduler.max_steps = {max_steps} is below train.train_iters = {train_iters}; it must "
                                  f"be at least train_iters (validate() raises at job start)",
                             ["scheduler.max_steps", "train.train_iters"],
                             problem=MAX_STEPS_NOT_POSITIVE if max_steps <= 0 else "")
            return
        decay = max_steps if max_steps is not None else sched["lr_decay_iters"]
        decay_field = "scheduler.max_steps" if max_steps is not None else "scheduler.lr_decay_iters"
        if decay is None:
            decay, decay_field = train_iters, "train.train_iters"
        warmup = sched["lr_warmup_iters"]
        if fraction is None and isinstance(decay, int) and isinstance(warmup, int) and 0 < decay <= warmup:
            yield ctx.report(cfg, f"scheduler.lr_warmup_iters = {warmup} is not below the decay length {decay_field} = "
                                  f"{decay}; Megatron-Bridge caps the warm-up just below the decay length (with a "
                                  f"UserWarning), so the schedule is not the one written",
                             ["scheduler.lr_warmup_iters", decay_field], severity=Severity.WARNING)
