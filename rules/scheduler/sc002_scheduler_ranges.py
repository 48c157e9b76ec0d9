from __future__ import annotations

from mblint.rulekit import MAX_STEPS_NOT_POSITIVE, Example, Rule, Severity, format_value, is_number, knows_field, value

P = "cfg = _pretrain_common()\n"  # override_opt_param_scheduler = True (the optimizer helper's scheduler)
MAX_STEPS = "scheduler.max_steps"
START = "scheduler.start_weight_decay"
END = "scheduler.end_weight_decay"
OVERRIDE = "scheduler.override_opt_param_scheduler"
FROM_CHECKPOINT = "scheduler.use_checkpoint_opt_param_scheduler"


class SchedulerRanges(Rule):
    id = "SC002"
    name = "scheduler-ranges"
    severity = Severity.ERROR
    summary = ("SchedulerConfig.finalize() rejects a non-positive max_steps, a negative or rising-above-end "
               "weight decay, and override_opt_param_scheduler with use_checkpoint_opt_param_scheduler.")
    tags = ("scheduler",)
    supersedes = ("OT005", "SC001")
    doc = """## What it does
Flags, on `cfg.scheduler`:
- `max_steps` set to 0 or less (0.6.x, where the field exists);
- `start_weight_decay` set and negative;
- `start_weight_decay` set and `end_weight_decay` below it, or None;
- `override_opt_param_scheduler` and `use_checkpoint_opt_param_scheduler` both True.

## Why it matters
`SchedulerConfig.finalize()`, run by `ConfigContainer.validate()` at job start, raises
"scheduler.max_steps must be positive, got 0.", asserts "start_weight_decay should be
positive." and `end_weight_decay >= start_weight_decay` (a bare AssertionError; with
`end_weight_decay` None a TypeError), and asserts "both override and use-checkpoint are set.".
The last one is easy to hit: Megatron-Bridge's optimizer helpers build the scheduler with
`override_opt_param_scheduler=True`, so asking to resume the schedule from a checkpoint
(`scheduler.use_checkpoint_opt_param_scheduler=true`) without turning the override off stops
the job.

## Example
```python
cfg = _pretrain_common()   # its scheduler has override_opt_param_scheduler=True
cfg.scheduler.use_checkpoint_opt_param_scheduler = True
```

A `max_steps` of 0 or less also makes it smaller than `train.train_iters` (OT005) and the decay
length 0 (SC001): this rule's finding replaces theirs, since `finalize()` raises first.

## Fix
Keep one source for the scheduler's state: to resume it from the checkpoint, set
`scheduler.override_opt_param_scheduler = False` too. Give `max_steps` a positive value (at
least `train.train_iters`) or None, and a weight-decay ramp with `0 <= start <= end`. No
automatic fix: which value was meant is the author's choice.

## Versions
0.3.x to 0.6.x; `scheduler.max_steps` exists from 0.6.0.

## Sources
0.6.2 megatron/bridge/training/config.py:407-416 (`SchedulerConfig.finalize`), called by
`validate()` at :1266; 0.3.1 megatron/bridge/training/config.py:614-621. Oracle (Megatron-Bridge
0.6.2, `llama3_8b_pretrain_config`): `scheduler.max_steps=0` fails with "scheduler.max_steps must
be positive, got 0."; `scheduler.start_weight_decay=-0.1 scheduler.end_weight_decay=0.1` with
"start_weight_decay should be positive."; `start_weight_decay=0.1 end_weight_decay=0.01` with
an AssertionError, `end_weight_decay=None` with "'>=' not supported between instances of
'NoneType' and 'float'"; `scheduler.use_checkpoint_opt_param_scheduler=True` with "both override
and use-checkpoint are set.".
"""
    valid = [
        P + "cfg.scheduler.start_weight_decay = 0.0\ncfg.scheduler.end_weight_decay = 0.1",
        P + "cfg.scheduler.override_opt_param_scheduler = False\ncfg.scheduler.use_checkpoint_opt_param_scheduler = True",
        P + "cfg.scheduler.max_steps = 400000",
        P + "for wd in (0.1, 0.01):\n    cfg.scheduler.end_weight_decay = wd\ncfg.scheduler.start_weight_decay = 0.05",
        Example(P + "cfg.scheduler.start_weight_decay = 0.1\ncfg.scheduler.end_weight_decay = 0.1", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.scheduler.use_checkpoint_opt_param_scheduler = True  # error",
                message="both override and use-checkpoint are set."),
        Example(P + "cfg.scheduler.max_steps = 0  # error", message="scheduler.max_steps must be positive"),
        Example(P + "cfg.scheduler.end_weight_decay = 0.1\ncfg.scheduler.start_weight_decay = -0.1  # error",
                message="start_weight_decay should be positive."),
        Example(P + "cfg.scheduler.start_weight_decay = 0.1\ncfg.scheduler.end_weight_decay = 0.01  # error",
                message="end_weight_decay >= start_weight_decay"),
        # modelled on a resume launched with the scheduler's state taken from the checkpoint
        Example(P, dotlist=("scheduler.use_checkpoint_opt_param_scheduler=true",)),
        Example(P + "cfg.scheduler.end_weight_decay = None  # error", message="scheduler.end_weight_decay is None"),
        Example(P + "cfg.scheduler.use_checkpoint_opt_param_scheduler = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if knows_field(cfg, "max_steps"):
            max_steps = value(cfg, MAX_STEPS, None)
            if is_number(max_steps) and max_steps <= 0:
                yield ctx.report(cfg, f"{MAX_STEPS} is {max_steps}; SchedulerConfig.finalize() raises "
                                      f"'scheduler.max_steps must be positive' at job start (use None or a "
                                      f"value of at least train.train_iters)", [MAX_STEPS],
                                 problem=MAX_STEPS_NOT_POSITIVE)
        yield from self._weight_decay(cfg, ctx)
        override, from_checkpoint = value(cfg, OVERRIDE, False), value(cfg, FROM_CHECKPOINT, False)
        if override is True and from_checkpoint is True:
            yield ctx.report(cfg, f"{OVERRIDE} and {FROM_CHECKPOINT} are both True; SchedulerConfig.finalize() "
                                  "asserts 'both override and use-checkpoint are set.' at job start (to resume "
                                  f"the schedule from the checkpoint, set {OVERRIDE} = False)",
                             [FROM_CHECKPOINT, OVERRIDE])

    def _weight_decay(self, cfg, ctx):
        start, end = value(cfg, START, None), value(cfg, END, None)
        if not is_number(start):
            return
        if start < 0:
            yield ctx.report(cfg, f"{START} is {start}; SchedulerConfig.finalize() asserts 'start_weight_decay "
                                  "should be positive.' at job start", [START])
        elif end is None:
            yield ctx.report(cfg, f"{START} is {start} but {END} is None; SchedulerConfig.finalize() compares "
                                  "them (end_weight_decay >= start_weight_decay) and fails with a TypeError at "
                                  "job start", [END, START])
        elif is_number(end) and end < start:
            yield ctx.report(cfg, f"{END} ({format_value(end)}) is below {START} ({format_value(start)}); "
                                  "SchedulerConfig.finalize() asserts end_weight_decay >= start_weight_decay "
                                  "at job start", [END, START])
