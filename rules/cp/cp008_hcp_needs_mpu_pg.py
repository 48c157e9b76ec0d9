from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, has_check, hf_model, known, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")
HCP = "cfg.model.context_parallel_size = 4\ncfg.model.cp_comm_type = 'a2a+p2p'\ncfg.model.hierarchical_context_parallel_sizes = [2, 2]\n"


class HcpNeedsMpuPg(Rule):
    id = "CP008"
    name = "hcp-needs-mpu-pg"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "Hierarchical context parallelism does not work with dist.use_decentralized_pg = True."
    fixable = True
    tags = ("context-parallel", "distributed")
    doc = """## What it does
Flags `model.hierarchical_context_parallel_sizes` set together with
`dist.use_decentralized_pg = True`.

## Why it matters
Hierarchical CP groups are created only by Megatron-Core's global parallel state (the MPU
path). In 0.6.x the decentralized path raises `NotImplementedError("Decentralized process
groups (use_decentralized_pg=True) do not support hierarchical_context_parallel_sizes...")`
during distributed start-up; in 0.3.x the decentralized path silently ignores the sizes, so
`a2a+p2p` runs without its groups (warning there).

## Example
```python
cfg.model.hierarchical_context_parallel_sizes = [8, 2]
cfg.dist.use_decentralized_pg = True
```

## Fix
Safe: set `dist.use_decentralized_pg = False` (or use `cp_comm_type = "a2a"`/`"p2p"` without
hierarchical sizes).

## Versions
0.6.x (error) and 0.3.x (warning).

## Sources
0.6.2 megatron/bridge/training/initialize.py:401-418 (`_create_pg_collection`);
0.3.1 megatron/bridge/training/initialize.py:596-612 (decentralized path, no HCP groups);
skills/mbridge-perf-hierarchical-context-parallel/SKILL.md.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + HCP + "cfg.dist.use_decentralized_pg = False",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.dist.use_decentralized_pg = True",
        "cfg = _pretrain_common()\n" + MODEL + HCP + "for flag in (True, False):\n    cfg.dist.use_decentralized_pg = flag",
        Example("cfg = _pretrain_common()\n" + MODEL + HCP, version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example("cfg = _pretrain_common()\n" + MODEL + HCP + "cfg.dist.use_decentralized_pg = True  # error",
                message="dist.use_decentralized_pg is True, which raises NotImplementedError at start-up",
                fixed="cfg = _pretrain_common()\n" + MODEL + HCP + "cfg.dist.use_decentralized_pg = False  # error",
                unsafe=True),
        Example("cfg = _pretrain_common()\n" + MODEL + HCP + "cfg.dist.use_decentralized_pg = True  # error",
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        hcp = value(cfg, "model.hierarchical_context_parallel_sizes", None)
        flag = value(cfg, "dist.use_decentralized_pg", False)
        if hcp is None or not known(flag) or flag is not True:
            return
        shown = list(hcp) if isinstance(hcp, (list, tuple)) else "set"
        if not has_check(cfg, "decentralized_pg_rejects_hcp"):
            message = (f"model.hierarchical_context_parallel_sizes is {shown}, but dist.use_decentralized_pg "
                       f"is True: the decentralized process groups do not create hierarchical CP groups, "
                       f"so they are silently ignored")
            severity = Severity.WARNING
        else:
            message = (f"model.hierarchical_context_parallel_sizes is {shown}, but dist.use_decentralized_pg "
                       f"is True, which raises NotImplementedError at start-up (only the Megatron-Core "
                       f"parallel-state path supports hierarchical CP)")
            severity = None
        yield ctx.report(cfg, message, ["dist.use_decentralized_pg", "model.hierarchical_context_parallel_sizes"],
                         severity=severity,
                         fixes=[FixIntent("set", "dist.use_decentralized_pg", False,
                                          description="set dist.use_decentralized_pg to False")])
