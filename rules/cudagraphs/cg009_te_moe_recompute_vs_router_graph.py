from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    cuda_graphs,
    cuda_graphs_known_on,
    graph_fields,
    hf_model,
    known,
    recompute_module_list,
    value,
)

HF = ('cfg = _pretrain_common()\n'
      + hf_model() +
      'cfg.model.cuda_graph_impl = "transformer_engine"\n'
      'cfg.model.recompute_granularity = "selective"\n')


class TeMoeRecomputeVsRouterGraph(Rule):
    id = "CG009"
    name = "te-moe-recompute-vs-router-graph"
    severity = Severity.ERROR
    summary = "Selective recompute of 'moe' cannot be combined with a transformer_engine moe_router CUDA graph."
    fixable = False
    tags = ("cuda-graphs", "moe", "recompute")
    doc = """## What it does
Flags `cuda_graph_impl = "transformer_engine"` with "moe_router" in the CUDA graph modules while
`recompute_granularity = "selective"` and "moe" is in `recompute_modules`.

## Why it matters
A recomputed module must lie entirely inside or outside a graphed region; recomputing the whole
MoE layer would cover the graphed router. Megatron-Core's `TransformerConfig.__post_init__` (run
by `model.finalize()` in `ConfigContainer.validate()`) asserts "moe recompute is not supported with
moe_router CUDA graph" at job start.

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
set_cuda_graph_modules(cfg.model, ["attn", "moe_router"])
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_modules = ["moe"]
```

## Fix
Recompute a smaller module ("moe_act", "layernorm") or drop "moe_router" from the graph. No
automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2525-2534; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1786-1795. Oracle (0.6.2): qwen3_30b_a3b with
modules ['moe_router'], selective recompute of ['moe'] fails with that message.
"""
    valid = [
        HF + 'cfg.model.cuda_graph_modules = ["attn", "moe_router"]\ncfg.model.recompute_modules = ["moe_act"]',
        HF + 'cfg.model.cuda_graph_modules = ["attn"]\ncfg.model.recompute_modules = ["moe"]',
        HF + 'cfg.model.cuda_graph_modules = ["attn", "moe_router"]\n'
        'for m in [["moe"]]:\n    cfg.model.recompute_modules = m',
        Example(HF + 'cfg.model.cuda_graph_scope = ["moe_router"]\ncfg.model.recompute_modules = ["layernorm"]',
                version="0.3"),
    ]
    invalid = [
        HF + 'cfg.model.cuda_graph_modules = ["attn", "moe_router"]\ncfg.model.recompute_modules = ["moe"]  # error',
        Example(HF + 'cfg.model.recompute_modules = ["moe"]\ncfg.model.cuda_graph_scope = ["moe_router"]  # error',
                version="0.3"),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.te is not True:
            return
        granularity = value(cfg, "model.recompute_granularity", None)
        names = graphs.modules
        recompute = recompute_module_list(cfg)
        if not known(granularity, names, recompute) or granularity != "selective":
            return
        if "moe_router" in names and "moe" in recompute:
            yield ctx.report(
                cfg,
                f"model.recompute_modules {recompute} contains 'moe' (selective recompute) while the "
                "transformer_engine CUDA graph modules contain 'moe_router'; Megatron-Core asserts 'moe recompute "
                "is not supported with moe_router CUDA graph'",
                graph_fields(graphs, cfg) + ["model.recompute_modules", "model.recompute_granularity"],
            )
