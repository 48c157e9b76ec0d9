from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    allowed_values,
    cuda_graphs,
    cuda_graphs_known_on,
    graph_fields,
    hf_model,
    known,
    value,
)

MOE = hf_model()


class FullRecomputeNeedsFullIteration(Rule):
    id = "CG008"
    name = "full-recompute-needs-full-iteration"
    severity = Severity.ERROR
    summary = "Full activation recompute works with CUDA graphs only under full-iteration capture."
    fixable = True
    tags = ("cuda-graphs", "recompute")
    doc = """## What it does
Flags `model.recompute_granularity = "full"` while per-layer CUDA graphs are on
(0.6.x: `cuda_graph_impl` "local" or "transformer_engine" without full-iteration capture;
0.3.x: any graphs whose scope is not exactly `["full_iteration"]`).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run from `ConfigContainer.validate()`)
asserts "full recompute is only supported with full iteration CUDA graph."

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.recompute_granularity = "full"
```

## Fix
Not safe (changes memory use or what is captured): use selective recompute, turn graphs off
(`cuda_graph_impl = "none"`), or capture the full iteration.

## Versions
0.3.x (MCore 0.16: scope must equal `["full_iteration"]`) and 0.6.x (MCore 0.19: impl must be
"full_iteration"; a legacy "local" + "full_iteration" scope is migrated to it).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2520-2525 (and 2383-2440 for the
migration); MCore 0.16.1 megatron/core/transformer/transformer_config.py:1778-1782. Oracle (0.6.2):
llama3_8b_pretrain_config with TE graphs and full recompute fails with that assertion.
"""
    valid = [
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.model.recompute_granularity = "selective"',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"\n'
        'cfg.model.recompute_granularity = "full"',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.recompute_granularity = "full"',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'for g in ["full"]:\n    cfg.model.recompute_granularity = g',
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
                'cfg.model.cuda_graph_scope = "full_iteration"\ncfg.model.recompute_granularity = "full"',
                version="0.3"),
    ]
    invalid = [
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.model.recompute_granularity = "full"  # error',
                message="full recompute is only supported with full-iteration CUDA graph capture",
                fixed='cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                      'cfg.model.recompute_granularity = "selective"  # error',
                unsafe=True),
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.recompute_granularity = "full"  # error\n'
        'cfg.model.cuda_graph_impl = "transformer_engine"',
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.model.recompute_granularity = "full"  # error', version="0.3"),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        granularity = value(cfg, "model.recompute_granularity", None)
        if graphs.on is not True or not known(granularity) or granularity in (None, "selective"):
            return
        full = graphs.full_iteration
        if "full_iteration" not in allowed_values(cfg, "cuda_graph_impl", ()) and full is True:
            modules = graphs.modules
            if not known(modules):
                return
            full = modules == []
        if full is not False:
            return
        yield ctx.report(
            cfg,
            f"model.recompute_granularity is {granularity!r} with cuda_graph_impl={graphs.impl!r}, but full "
            "recompute is only supported with full-iteration CUDA graph capture",
            graph_fields(graphs, cfg) + ["model.recompute_granularity"],
            fixes=[FixIntent("set", "model.recompute_granularity", "selective", safe=False,
                             description="use selective recompute")],
        )
