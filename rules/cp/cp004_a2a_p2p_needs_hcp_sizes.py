from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, has_check, hf_model, known, parallel, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")


def comm_types(cfg):
    """cp_comm_type as a list of strings, None when it (or an element) is unknown."""
    raw = value(cfg, "model.cp_comm_type", None)
    if not known(raw) and raw is not None:
        return None
    items = raw if isinstance(raw, (list, tuple)) else [raw or "p2p"]
    if not all(isinstance(item, str) for item in items):
        return None
    return list(items)


class A2aP2pNeedsHcpSizes(Rule):
    id = "CP004"
    name = "a2a-p2p-needs-hcp-sizes"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "cp_comm_type 'a2a+p2p' needs model.hierarchical_context_parallel_sizes."
    tags = ("context-parallel",)
    doc = """## What it does
Flags `model.cp_comm_type` equal to `"a2a+p2p"` (or a per-layer list containing it) while
`model.hierarchical_context_parallel_sizes` is None.

## Why it matters
Hierarchical CP runs all-to-all inside the inner group and P2P across the outer one; without
the group sizes the CP communication is silently disabled and each rank attends only to its
local chunk: throughput looks great, training is broken. Megatron-Bridge 0.6.x asserts
"hierarchical_context_parallel_sizes must be set when cp_comm_type contains 'a2a+p2p'" at job
start; 0.3.x has no such check (reported as a warning there, the failure is silent).

## Example
```python
cfg.model.context_parallel_size = 16
cfg.model.cp_comm_type = "a2a+p2p"       # no hierarchical_context_parallel_sizes
```

## Fix
Set `model.hierarchical_context_parallel_sizes`, e.g. `[8, CP // 8]` for 8 GPUs a node (the
product must equal CP, see CP005); not proposed automatically because the split depends on
the node size.

## Versions
0.6.x (error, checked by `validate()`); 0.3.x (warning, not checked).

## Sources
0.6.2 megatron/bridge/training/config.py:1526-1551 (`_validate_cp_comm_type`);
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:987-1000 (`cp_comm_type`);
skills/mbridge-perf-hierarchical-context-parallel/SKILL.md.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\ncfg.model.cp_comm_type = 'a2a+p2p'\n"
        "cfg.model.hierarchical_context_parallel_sizes = [2, 2]",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\ncfg.model.cp_comm_type = 'a2a'",
        # element unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\n"
        "for t in ('p2p', 'a2a+p2p'):\n    cfg.model.cp_comm_type = t",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.cp_comm_type = 'p2p'", version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\ncfg.model.cp_comm_type = 'a2a+p2p'  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\n"
        "cfg.model.cp_comm_type = ['p2p', 'a2a+p2p']  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\n"
                "cfg.model.cp_comm_type = 'a2a+p2p'  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        types = comm_types(cfg)
        hcp = value(cfg, "model.hierarchical_context_parallel_sizes", None)
        if types is None or not any("a2a+p2p" in t for t in types) or hcp is not None:
            return
        cp = parallel(cfg).cp
        message = (f"model.cp_comm_type is {cfg.value('model.cp_comm_type')!r}, which needs "
                   f"model.hierarchical_context_parallel_sizes (e.g. [8, CP/8] with 8 GPUs a node"
                   f"{f', CP={cp}' if known(cp) else ''}); without it CP communication is silently disabled")
        severity = None if has_check(cfg, "a2a_p2p_needs_hcp_sizes") else Severity.WARNING
        yield ctx.report(cfg, message, ["model.cp_comm_type", "model.hierarchical_context_parallel_sizes"],
                         primary="model.cp_comm_type", severity=severity)
