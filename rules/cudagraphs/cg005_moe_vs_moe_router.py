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
    knows_field,
)

HF = ('cfg = _pretrain_common()\n'
      + hf_model() +
      'cfg.model.cuda_graph_impl = "transformer_engine"\n')


class MoeVsMoeRouter(Rule):
    id = "CG005"
    name = "moe-vs-moe-router"
    severity = Severity.ERROR
    summary = "The CUDA graph modules cannot contain both moe and moe_router."
    tags = ("cuda-graphs", "moe")
    doc = """## What it does
With per-layer CUDA graphs (`cuda_graph_impl` "transformer_engine" or "local"), flags module
lists (`model.cuda_graph_modules`, or the deprecated `model.cuda_graph_scope`) that contain both
"moe" and "moe_router" (with "local", "moe_preprocess" implies "moe_router").

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "cuda_graph_modules must not contain both moe and
moe_router." at job start (Megatron-Core 0.18 and later, Megatron-Bridge 0.5.x and 0.6.x; before
them, with no `cuda_graph_modules` field, "cuda_graph_scope must not contain both moe and
moe_router."): "moe" captures the whole MoE layer, which includes the router.

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
set_cuda_graph_modules(cfg.model, ["attn", "moe", "moe_router"])
```

## Fix
Drop one: keep "moe" for drop-and-pad MoE, "moe_router" otherwise (proposed: remove "moe" is
not automatic; the right choice depends on the MoE mode).

## Versions
0.3.x to 0.6.x; the message names the field the release's assertion names.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2470-2487, MCore 0.18.2 (0.5.x)
:2263 ("cuda_graph_modules must not contain ..."); MCore 0.16.1 (0.3.x)
megatron/core/transformer/transformer_config.py:1728-1746, MCore 0.17.1 (0.4.x) :1988
("cuda_graph_scope must not contain ..."). Oracle (0.6.2): modules ['moe','moe_router']
on qwen3_30b_a3b fails with that message.
"""
    fixable = False
    valid = [
        HF + 'set_cuda_graph_modules(cfg.model, ["attn", "moe_router"])',
        HF + 'cfg.model.cuda_graph_modules = ["moe"]',
        HF.replace('"transformer_engine"', '"none"') + 'cfg.model.cuda_graph_modules = ["moe", "moe_router"]',
        HF + 'for m in [["moe", "moe_router"]]:\n    cfg.model.cuda_graph_modules = m',
        Example(HF + 'cfg.model.cuda_graph_scope = ["attn", "moe_router", "moe_preprocess"]', version="0.3"),
    ]
    invalid = [
        Example(HF + 'cfg.model.cuda_graph_modules = ["attn", "moe", "moe_router"]  # error',
                message="Megatron-Core asserts 'cuda_graph_modules must not contain both moe and moe_router.'"),
        HF + 'set_cuda_graph_modules(cfg.model, ["attn", "moe", "moe_router"])',
        Example(HF + 'cfg.model.cuda_graph_scope = ["moe", "moe_router"]  # error', version="0.3",
                message="Megatron-Core asserts 'cuda_graph_scope must not contain both moe and moe_router.'"),
        Example(HF, dotlist=("model.cuda_graph_modules=[moe,moe_router]",)),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if not known(graphs.impl) or graphs.impl not in ("local", "transformer_engine"):
            return
        names = graphs.modules
        if not known(names) or "moe" not in names:
            return
        if "moe_router" in names:
            other = "moe_router"
        elif graphs.impl == "local" and "moe_preprocess" in names:
            other = "moe_preprocess (the local implementation adds moe_router for it)"
        else:
            return
        yield ctx.report(
            cfg,
            f"CUDA graph modules {names} contain both 'moe' and {other} with cuda_graph_impl {graphs.impl!r}; "
            f"Megatron-Core asserts '{_listed_field(cfg)} must not contain both moe and moe_router.'",
            graph_fields(graphs, cfg),
        )


def _listed_field(cfg) -> str:
    """The field the release's assertion names: the module list where the release has
    ``cuda_graph_modules`` (Megatron-Core 0.18 and later), else ``cuda_graph_scope``."""
    return "cuda_graph_modules" if knows_field(cfg, "cuda_graph_modules") else "cuda_graph_scope"
