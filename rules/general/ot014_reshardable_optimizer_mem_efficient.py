from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, value

P = "cfg = _pretrain_common()\n"
RESHARDABLE = "checkpoint.dist_ckpt_optim_fully_reshardable"
MEM_EFFICIENT = "checkpoint.distrib_optim_fully_reshardable_mem_efficient"


class ReshardableOptimizerMemEfficient(Rule):
    id = "OT014"
    name = "reshardable-optimizer-mem-efficient"
    severity = Severity.ERROR
    summary = ("checkpoint.distrib_optim_fully_reshardable_mem_efficient cannot be combined with "
               "dist_ckpt_optim_fully_reshardable in Megatron-Bridge.")
    fixable = True
    tags = ("general", "checkpoint")
    doc = """## What it does
Flags `checkpoint.dist_ckpt_optim_fully_reshardable = True` together with
`checkpoint.distrib_optim_fully_reshardable_mem_efficient = True`.

## Why it matters
The memory-efficient variant only has an effect with the fully reshardable optimizer format
(its documentation says so), but Megatron-Bridge's `CheckpointConfig.finalize()`, run by
`ConfigContainer.validate()`, asserts that it is off whenever the fully reshardable format is on
("distrib_optim_fully_reshardable_mem_efficient requires use_gloo_process_groups", whatever
`dist.use_gloo_process_groups` says). Turning both on, as the names invite, stops the job at
start; the memory-efficient flag alone does nothing.

## Example
```python
cfg.checkpoint.dist_ckpt_optim_fully_reshardable = True
cfg.checkpoint.distrib_optim_fully_reshardable_mem_efficient = True
```

## Fix
Set `checkpoint.distrib_optim_fully_reshardable_mem_efficient = False` (safe: Megatron-Bridge
cannot use it; the checkpoint format stays fully reshardable).

## Versions
0.3.x to 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:625-628 (`CheckpointConfig.finalize`, called by
`validate()` at :1267); 0.3.1 megatron/bridge/training/config.py:915-918; field documentation:
Megatron-Core 0.19.2 megatron/training/config/training_config.py:592-598. Oracle (0.6.2,
`llama3_8b_pretrain_config`): both flags True fails with "distrib_optim_fully_reshardable_mem_efficient
requires use_gloo_process_groups"; the memory-efficient flag alone is accepted.
"""
    valid = [
        P + "cfg.checkpoint.dist_ckpt_optim_fully_reshardable = True",
        P + "cfg.checkpoint.distrib_optim_fully_reshardable_mem_efficient = True",
        P + "cfg.checkpoint.distrib_optim_fully_reshardable_mem_efficient = True\n"
        "for flag in (True, False):\n    cfg.checkpoint.dist_ckpt_optim_fully_reshardable = flag",
        Example(P + "cfg.checkpoint.dist_ckpt_optim_fully_reshardable = True", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.checkpoint.dist_ckpt_optim_fully_reshardable = True\n"
                "cfg.checkpoint.distrib_optim_fully_reshardable_mem_efficient = True  # error",
                message="requires use_gloo_process_groups", unsafe=True,
                fixed=P + "cfg.checkpoint.dist_ckpt_optim_fully_reshardable = True\n"
                      "cfg.checkpoint.distrib_optim_fully_reshardable_mem_efficient = False  # error"),
        # modelled on both flags given on a launch line
        Example(P, dotlist=("checkpoint.dist_ckpt_optim_fully_reshardable=true",
                            "checkpoint.distrib_optim_fully_reshardable_mem_efficient=true")),
        Example(P + "cfg.checkpoint.dist_ckpt_optim_fully_reshardable = True\n"
                "cfg.checkpoint.distrib_optim_fully_reshardable_mem_efficient = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, RESHARDABLE, False) is not True or value(cfg, MEM_EFFICIENT, False) is not True:
            return
        yield ctx.report(
            cfg, f"{MEM_EFFICIENT} and {RESHARDABLE} are both True; CheckpointConfig.finalize() asserts the "
                 "memory-efficient variant is off with the fully reshardable format "
                 "('distrib_optim_fully_reshardable_mem_efficient requires use_gloo_process_groups') at job start",
            [MEM_EFFICIENT, RESHARDABLE], primary=MEM_EFFICIENT,
            fixes=[FixIntent("set", MEM_EFFICIENT, False, safe=True, description=f"set {MEM_EFFICIENT} = False")])
