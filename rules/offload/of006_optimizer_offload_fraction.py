from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, known, value

ON = "cfg = _pretrain_common()\ncfg.optimizer.optimizer_cpu_offload = True\n"


class OptimizerOffloadFraction(Rule):
    id = "OF006"
    name = "optimizer-offload-fraction"
    severity = Severity.WARNING
    other_severities = (Severity.ERROR,)
    summary = "Optimizer CPU offload: offload fraction outside [0, 1], or decoupled_weight_decay off."
    fixable = True
    tags = ("offload", "optimizer")
    doc = """## What it does
With `optimizer.optimizer_cpu_offload = True`, flags
- `optimizer.optimizer_offload_fraction` outside [0, 1] (warning: the hybrid optimizer
  compares it against parameter counts and nothing checks the range; above 1 it offloads
  everything, below 0 nothing);
- `optimizer.decoupled_weight_decay = False` (error: Megatron-Core asserts "CPU offloading only
  supported with decoupled_weight_decay enabled (AdamW mode)." when it builds the optimizer).

## Why it matters
A fraction of 0 (the default) offloads nothing, so the memory the author expected to save is
not saved; a value outside [0, 1] is a typo (a percentage). The weight-decay assertion stops
the job once the model is built. Neither is checked by `ConfigContainer.validate()` (checked
with Megatron-Bridge 0.6.2: a fraction of 1.5 is accepted).

## Example
```python
cfg.optimizer.optimizer_cpu_offload = True
cfg.optimizer.optimizer_offload_fraction = 50   # meant 0.5
```

## Fix
Use a fraction in [0, 1] (1.0 offloads all optimizer state); keep AdamW mode. Unsafe: changes
memory and speed.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/optimizer/__init__.py:502-534, optimizer_config.py:344-347,
optimizer/cpu_offloading/hybrid_optimizer.py:251-260; MCore 0.16.1 optimizer/__init__.py:306-314;
Megatron-Bridge cpu-offloading SKILL.md:97-101.
"""
    valid = [
        ON + "cfg.optimizer.optimizer_offload_fraction = 1.0",
        "cfg = _pretrain_common()\ncfg.optimizer.optimizer_offload_fraction = 50",
        ON + "for f in [0.5, 50]:\n    cfg.optimizer.optimizer_offload_fraction = f",
        Example(ON + "cfg.optimizer.optimizer_offload_fraction = 0.5", version="0.3"),
    ]
    invalid = [
        # clamped to 1.0, which offloads everything, as 50 does at run time
        Example(ON + "cfg.optimizer.optimizer_offload_fraction = 50  # error", message="is 50, outside [0, 1]",
                fixed=ON + "cfg.optimizer.optimizer_offload_fraction = 1.0  # error", unsafe=True),
        ON + "cfg.optimizer.optimizer_offload_fraction = 1.0\ncfg.optimizer.decoupled_weight_decay = False  # error",
        Example(ON + "cfg.optimizer.optimizer_offload_fraction = -0.5  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        on = value(cfg, "optimizer.optimizer_cpu_offload", False)
        if not known(on) or on is not True:
            return
        fraction = value(cfg, "optimizer.optimizer_offload_fraction", 0.0)
        if known(fraction) and isinstance(fraction, (int, float)) and not 0 <= fraction <= 1:
            yield ctx.report(cfg, f"optimizer.optimizer_offload_fraction is {fraction}, outside [0, 1]; it is the "
                                  f"fraction of optimizer state offloaded to the CPU (1.0 = all)",
                             ["optimizer.optimizer_offload_fraction", "optimizer.optimizer_cpu_offload"],
                             primary="optimizer.optimizer_offload_fraction",
                             fixes=[FixIntent("set", "optimizer.optimizer_offload_fraction", 1.0 if fraction > 1 else 0.0,
                                              safe=False, description="clamp to [0, 1]")])
        decoupled = value(cfg, "optimizer.decoupled_weight_decay", True)
        if known(decoupled) and decoupled is False:
            yield ctx.report(cfg, "optimizer.optimizer_cpu_offload is True, but optimizer.decoupled_weight_decay is False; "
                                  "CPU offloading only supports AdamW mode (Megatron-Core asserts when it builds the "
                                  "optimizer)", ["optimizer.decoupled_weight_decay", "optimizer.optimizer_cpu_offload"],
                             severity=Severity.ERROR)
