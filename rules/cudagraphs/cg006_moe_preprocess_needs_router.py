from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    cuda_graphs_known_on,
    graph_fields,
    hf_model,
    known,
)

HF = ('cfg = _pretrain_common()\n'
      + hf_model() +
      'cfg.model.cuda_graph_impl = "transformer_engine"\n')


class MoePreprocessNeedsRouter(Rule):
    id = "CG006"
    name = "moe-preprocess-needs-router"
    severity = Severity.ERROR
    summary = "The moe_preprocess CUDA graph module needs moe_router (transformer_engine implementation)."
    fixable = True
    tags = ("cuda-graphs", "moe")
    doc = """## What it does
With `cuda_graph_impl = "transformer_engine"`, flags CUDA graph modules that contain
"moe_preprocess" but not "moe_router". (The "local" implementation adds moe_router itself.)

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "moe_preprocess cuda graph is only supported with moe_router
cuda graph." at job start.

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cuda_graph_modules = ["attn", "moe_preprocess"]
```

## Fix
Safe: add "moe_router" to the modules.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2488-2491; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1747-1750. Oracle (0.6.2): modules ['moe_preprocess']
on qwen3_30b_a3b with transformer_engine fails with that message.
"""
    valid = [
        HF + 'cfg.model.cuda_graph_modules = ["moe_router", "moe_preprocess"]',
        HF.replace('"transformer_engine"', '"none"') + 'cfg.model.cuda_graph_modules = ["moe_preprocess"]',
        HF + 'for m in [["moe_preprocess"]]:\n    cfg.model.cuda_graph_modules = m',
        Example(HF + 'cfg.model.cuda_graph_scope = ["moe_router", "moe_preprocess"]', version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(HF + 'cfg.model.cuda_graph_modules = ["attn", "moe_preprocess"]  # error',
                message="contain 'moe_preprocess' without 'moe_router'",
                fixed=HF + 'cfg.model.cuda_graph_modules = ["attn", "moe_preprocess", "moe_router"]  # error',
                unsafe=True),
        Example(HF + 'cfg.model.cuda_graph_scope = "moe_preprocess"  # error', version="0.3"),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.te is not True:
            return
        names = graphs.modules
        if not known(names) or "moe_preprocess" not in names or "moe_router" in names:
            return
        yield ctx.report(
            cfg,
            f"CUDA graph modules {names} contain 'moe_preprocess' without 'moe_router' (cuda_graph_impl "
            "'transformer_engine'); Megatron-Core asserts 'moe_preprocess cuda graph is only supported with "
            "moe_router cuda graph.'",
            graph_fields(graphs, cfg),
            fixes=[FixIntent("set", graphs.modules_path, names + ["moe_router"], safe=True,
                             description="add 'moe_router' to the CUDA graph modules")],
        )
