from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    effective_overlap_flag,
    ep_overlap_problems,
    hf_model,
    value,
)

BASE = ('cfg = _pretrain_common()\n'
        + hf_model() +
        'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
        'cfg.model.expert_model_parallel_size = 8\n')
OVERLAP = 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True)\n'


class EpOverlapPrereqs(Rule):
    id = "MO005"
    name = "ep-overlap-prereqs"
    severity = Severity.ERROR
    summary = "Expert-parallel communication overlap has prerequisites that Megatron asserts."
    fixable = False
    tags = ("moe", "overlap")
    doc = """## What it does
When expert-parallel A2A overlap is on (`comm_overlap.overlap_moe_expert_parallel_comm = True`, or
`model.overlap_moe_expert_parallel_comm = True` when `cfg.comm_overlap` is None), flags each known
violated prerequisite: `expert_model_parallel_size > 1`; `num_moe_experts > 1`;
`moe_token_dispatcher_type` "alltoall" or "flex"; with `pipeline_model_parallel_size > 1` a
`virtual_pipeline_model_parallel_size`; no full recompute (`recompute_granularity != "full"`,
`recompute_method` and `recompute_num_layers` None, "moe" not in `recompute_modules`);
`moe_shared_expert_overlap` False; `mtp_num_layers` None, 0 or 1 (0.3.x: None or 1).

## Why it matters
`CommOverlapConfig.setup()` (called by `runtime_config_update` before validation) asserts each
of these, and Megatron-Core's `TransformerConfig.__post_init__` asserts them again for a model-level
flag. The job dies at start-up on every rank.

## Example
```python
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True)
cfg.model.recompute_granularity = "full"
```

## Fix
Drop the conflicting setting (disable shared-expert overlap, set a virtual pipeline size, use
selective recompute without "moe") or turn the overlap off. No automatic fix: the right choice
depends on the memory budget.

## Versions
0.3.x and 0.6.x. The bf16/fp16 requirement is not checked here (it depends on the resolved
mixed-precision recipe).

## Sources
0.6.2 megatron/bridge/training/comm_overlap.py:466-518; 0.3.1 megatron/bridge/training/comm_overlap.py:463-508;
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2669-2713; 0.6.2
megatron/bridge/training/config.py:1882-1885 (setup before validate).
"""
    valid = [
        BASE + OVERLAP,
        BASE + OVERLAP + 'cfg.model.pipeline_model_parallel_size = 2\ncfg.model.virtual_pipeline_model_parallel_size = 2',
        BASE + 'cfg.comm_overlap = None\ncfg.model.recompute_granularity = "full"',
        BASE + OVERLAP + 'for g in ["full"]:\n    cfg.model.recompute_granularity = g',
        # dispatcher HF-derived (unknown): silent
        'cfg = _pretrain_common()\n'
        + hf_model() +
        'cfg.model.expert_model_parallel_size = 8\n' + OVERLAP,
    ]
    invalid = [
        BASE + OVERLAP + 'cfg.model.recompute_granularity = "full"  # error',
        BASE + OVERLAP + 'cfg.model.pipeline_model_parallel_size = 4  # error',
        BASE + OVERLAP + 'cfg.model.moe_shared_expert_overlap = True  # error',
        BASE + OVERLAP + 'cfg.model.expert_model_parallel_size = 1  # error',
        BASE + 'cfg.model.overlap_moe_expert_parallel_comm = True\n'
        'cfg.model.moe_token_dispatcher_type = "allgather"  # error',
        Example(BASE + OVERLAP + 'cfg.model.recompute_modules = ["moe", "core_attn"]  # error', version="0.3"),
    ]

    def check(self, cfg, ctx):
        flag, flag_path = effective_overlap_flag(cfg, "overlap_moe_expert_parallel_comm")
        if flag is not True:
            return
        problems, _ = ep_overlap_problems(cfg)
        experts = value(cfg, "model.num_moe_experts", None)
        if experts is None:
            # num_moe_experts None is what the HF bridge leaves for dense models; only report it
            # when something else is also wrong or it was written by the recipe
            if not cfg.origins("model.num_moe_experts") or all(
                    o.kind == "default" for o in cfg.origins("model.num_moe_experts")):
                problems = [p for p in problems if p[0] != "model.num_moe_experts"]
        if not problems:
            return
        yield ctx.report(
            cfg,
            f"{flag_path} is True, but expert-parallel overlap requires: " + "; ".join(text for _, text in problems),
            [flag_path] + [path for path, _ in problems],
            primary=_primary(problems, flag_path),
        )


# Scalar switches someone flips on a recipe built for the overlap (a list like
# recompute_modules, or the pipeline layout, is part of the recipe's design instead).
_TOGGLES = {"model.moe_shared_expert_overlap", "model.recompute_granularity", "model.recompute_method",
            "model.recompute_num_layers", "model.moe_token_dispatcher_type", "model.expert_model_parallel_size",
            "model.mtp_num_layers"}


def _primary(problems, flag_path):
    """One broken switch in a recipe built for the overlap: that switch is the edit, even when
    the flag is written after it; otherwise the setting written last (None)."""
    if len(problems) == 1 and problems[0][0] in _TOGGLES:
        return problems[0][0]
    return None
