from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, assigned, class_fields, known, value

PAIRS = ("use_distributed_optimizer", "overlap_param_gather")


class DistributedOptimizerSync(Rule):
    id = "OT002"
    name = "dist-opt-sync"
    severity = Severity.WARNING
    summary = "ddp.X and optimizer.X disagree for use_distributed_optimizer/overlap_param_gather; an explicit False is silently turned True."
    fixable = True
    tags = ("general", "dead-setting")
    doc = """## What it does
Flags an explicit `False` on `ddp.use_distributed_optimizer` or
`optimizer.use_distributed_optimizer` while the other one is `True` (same for
`overlap_param_gather`). Only a `False` the recipe or an override wrote is reported; a field
left at its dataclass default is not.

## Why it matters
`runtime_config_update()` enables both settings as soon as either is True (with a warning in
the log), so the `False` assignment has no effect: the job runs the distributed optimizer (or
parameter-gather overlap) although the author switched it off.

## Example
```python
cfg = _pretrain_common()                    # optimizer.use_distributed_optimizer = True
cfg.ddp.use_distributed_optimizer = False   # silently turned back to True
```

## Fix
Set both to the same value. The fix keeps what the author wrote: it sets the other one to
False too, really disabling it (unsafe: changes memory use and the checkpoint layout). The
alternative, never applied, sets the False one to True, what runs today; it is no safe fix
either, since it replaces an explicit `False` with the opposite of what the author wrote.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1945-1981 (`_validate_and_sync_distributed_optimizer_settings`),
called from :1941; 0.3.1 megatron/bridge/training/config.py:1888-1900;
0.6.2 megatron/bridge/recipes/utils/optimizer_utils.py:139-151 (the factory sets
optimizer.use_distributed_optimizer = True).
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.ddp.use_distributed_optimizer = True\ncfg.optimizer.use_distributed_optimizer = True",
        "cfg = _pretrain_common()\ncfg.ddp.use_distributed_optimizer = False\ncfg.optimizer.use_distributed_optimizer = False",
        "cfg = _pretrain_common()\nfor flag in [True, False]:\n    cfg.ddp.use_distributed_optimizer = flag",
        Example("cfg = _pretrain_common()\ncfg.ddp.overlap_param_gather = True\ncfg.optimizer.overlap_param_gather = True",
                version="0.3"),
    ]
    invalid = [
        # the optimizer's True comes from _pretrain_common: the fix adds the False the author meant
        Example("cfg = _pretrain_common()\ncfg.ddp.use_distributed_optimizer = False  # error",
                message="ddp.use_distributed_optimizer is False, but optimizer.use_distributed_optimizer is True",
                fixed="cfg = _pretrain_common()\ncfg.optimizer.use_distributed_optimizer = False\n"
                      "cfg.ddp.use_distributed_optimizer = False  # error",
                unsafe=True),
        "cfg = _pretrain_common()\ncfg.ddp.use_distributed_optimizer = True\ncfg.ddp.overlap_param_gather = True\n"
        "cfg.optimizer.overlap_param_gather = False  # error",
        Example("cfg = _pretrain_common()\ncfg.ddp.use_distributed_optimizer = False  # error", version="0.3"),
        Example("cfg = _pretrain_common()", dotlist=("optimizer.use_distributed_optimizer=false",)),
    ]

    def check(self, cfg, ctx):
        ddp_fields = class_fields(cfg, "ddp") or set()
        opt_fields = class_fields(cfg, "optimizer") or set()
        for name in PAIRS:
            if name not in ddp_fields or name not in opt_fields:
                continue
            ddp_path, opt_path = f"ddp.{name}", f"optimizer.{name}"
            ddp_value, opt_value = value(cfg, ddp_path), value(cfg, opt_path)
            if not known(ddp_value, opt_value) or bool(ddp_value) == bool(opt_value):
                continue
            off, on = (ddp_path, opt_path) if not ddp_value else (opt_path, ddp_path)
            if not assigned(cfg, off):
                continue
            message = (f"{off} is False, but {on} is True; Megatron-Bridge enables {name} on both at job start, "
                       f"so this False has no effect")
            yield ctx.report(cfg, message, [off, on], primary=off,
                             fixes=[FixIntent("set", on, False, safe=False,
                                              description=f"set {on} = False too, as {off} says"),
                                    FixIntent("set", off, True, safe=False, alternative=True,
                                              description=f"or set {off} = True (what runs today)")])
