from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, value

P = "cfg = _pretrain_common()\n"
DECENTRALIZED = "dist.use_decentralized_pg"
GLOO = "dist.use_gloo_process_groups"


class DecentralizedPgNoGloo(Rule):
    id = "OT022"
    name = "decentralized-pg-no-gloo"
    severity = Severity.ERROR
    summary = "Decentralized process groups (dist.use_decentralized_pg) need dist.use_gloo_process_groups = False."
    fixable = True
    tags = ("general", "parallelism")
    doc = """## What it does
Flags `dist.use_decentralized_pg = True` while `dist.use_gloo_process_groups` is True (its
default).

## Why it matters
`ConfigContainer.validate()` asserts "Gloo process groups are not supported when
use_decentralized_pg=True. Decentralized process groups only support NCCL backend." at job
start. Gloo groups are on by default, so turning decentralized process groups on alone (as a
separate evaluation context-parallel size asks) stops the job.

## Example
```python
cfg.dist.use_decentralized_pg = True      # use_gloo_process_groups stays True
```

## Fix
Set `dist.use_gloo_process_groups = False` as well (unsafe: the CPU-side collectives that used
Gloo, such as the memory-efficient reshardable optimizer checkpoint, are no longer available).

## Versions
0.3.x to 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1411-1416 (`use_decentralized_pg` at :159; the Gloo
default True in Megatron-Core 0.19.2 megatron/training/config/common_config.py:109); 0.3.1
megatron/bridge/training/config.py:1525-1529 (default at :163). Oracle (0.6.2,
`llama3_8b_pretrain_config`): `dist.use_decentralized_pg=True` fails with that message and passes with
`dist.use_gloo_process_groups=False`.
"""
    valid = [
        P + "cfg.dist.use_decentralized_pg = True\ncfg.dist.use_gloo_process_groups = False",
        P + "cfg.dist.use_gloo_process_groups = True",
        P + "for flag in (True, False):\n    cfg.dist.use_decentralized_pg = flag",
        Example(P + "cfg.dist.use_decentralized_pg = True\ncfg.dist.use_gloo_process_groups = False", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.dist.use_decentralized_pg = True  # error", message="Gloo process groups are not supported",
                unsafe=True, fixed=P + "cfg.dist.use_decentralized_pg = True  # error\n"
                                       "cfg.dist.use_gloo_process_groups = False"),
        # modelled on decentralized process groups turned on from the command line
        Example(P, dotlist=("dist.use_decentralized_pg=true",)),
        Example(P + "cfg.dist.use_decentralized_pg = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, DECENTRALIZED, False) is not True or value(cfg, GLOO, True) is not True:
            return
        yield ctx.report(
            cfg, f"{DECENTRALIZED} is True while {GLOO} is True; validate() asserts 'Gloo process groups are not "
                 "supported when use_decentralized_pg=True.' at job start (decentralized groups are NCCL only)",
            [DECENTRALIZED, GLOO], primary=DECENTRALIZED,
            fixes=[FixIntent("set", GLOO, False, safe=False, description=f"set {GLOO} = False")])
