from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    cuda_graphs,
    graph_fields,
    hf_model,
    known,
    offline_packing,
    offline_packing_known_on,
    specs_path,
)

MOE = hf_model()


class TeScopedGraphPackedFragile(Rule):
    id = "CG015"
    name = "te-scoped-graph-packed-fragile"
    severity = Severity.WARNING
    summary = "Transformer Engine (scoped) CUDA graphs with offline packed sequences are fragile; prefer eager or full_iteration."
    fixable = False
    tags = ("cuda-graphs", "packing")
    doc = """## What it does
Flags `cuda_graph_impl = "transformer_engine"` graphing attention (no modules, i.e. whole-layer
capture, or "attn" in the modules) together with offline sequence packing, even when the
static-shape requirements (CG012 `pad_to_max_length`, CG013 `pad_cu_seqlens`) are met. Graphing
only MLP/MoE parts (e.g. the perf recipes' `["mlp"]`) keeps the packed-sequence metadata out of
the graph and is not flagged.

## Why it matters
Megatron-Bridge's CUDA-graph guide and its verified model card record a measured failure of
scoped TE graphs on packed SFT (Qwen3: "packed_seq_params not a Tensor" when the graphed layers
receive the packed-sequence metadata), and recommend eager mode or full-iteration graphs for
packed fine-tuning. The validation in `ConfigContainer.validate()` does not catch it; the job
fails at graph capture.

## Example
```python
cfg = _sft_common()              # offline packing on
cfg.model.cuda_graph_impl = "transformer_engine"
```

## Fix
Use `cuda_graph_impl = "full_iteration"` (0.6.x) or turn graphs off for packed fine-tuning. No
automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
Megatron-Bridge docs/training/cuda-graphs.md:81-83,198-201 and skills cuda-graphs card.yaml:47-48,
119, 186-192, 250-253 (main); 0.6.2 megatron/bridge/training/config.py:1170-1190 (the static-shape
checks that do pass).
"""
    valid = [
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "none"',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.model.cuda_graph_modules = ["mlp"]',
        'cfg = _sft_common()\n' + MOE + 'for impl in ["transformer_engine"]:\n    cfg.model.cuda_graph_impl = impl',
    ]
    invalid = [
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"  # finding',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.model.cuda_graph_modules = ["attn", "mlp"]  # finding',
        Example('cfg = _sft_common()\n' + MOE, dotlist=("model.cuda_graph_impl=transformer_engine",)),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.te is not True or offline_packing(cfg) is not True:
            return
        names = graphs.modules
        if not known(names) or (names and "attn" not in names):
            return
        yield ctx.report(
            cfg,
            "model.cuda_graph_impl is 'transformer_engine' graphing attention with offline packed sequences; TE "
            "graphs of attention on packed data are a known failure ('packed_seq_params not a Tensor' at capture), prefer eager mode or "
            "full-iteration graphs",
            graph_fields(graphs, cfg) + [specs_path(cfg)],
        )
