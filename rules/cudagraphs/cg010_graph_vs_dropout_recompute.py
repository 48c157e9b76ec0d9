from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    cuda_graphs,
    cuda_graphs_known_on,
    full_cudagraph,
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


class GraphVsDropoutRecompute(Rule):
    id = "CG010"
    name = "graph-vs-dropout-recompute"
    severity = Severity.ERROR
    summary = "A graphed module cannot be recomputed when it draws random numbers (dropout, input jitter)."
    fixable = False
    tags = ("cuda-graphs", "recompute")
    doc = """## What it does
With CUDA graphs on and `recompute_granularity = "selective"`, flags a recomputed module that is
inside the graph (whole-layer capture, i.e. full_iteration or empty modules, or the matching module
listed) and uses random numbers:
- "core_attn" recomputed with graphed attention while `attention_dropout != 0`;
- "mlp" / "moe" recomputed with graphed MLP / MoE while `hidden_dropout != 0`;
- "moe" recomputed with graphed MoE while `moe_input_jitter_eps` is set.
`recompute_modules` None means ["core_attn"] (Megatron-Core's default). Dropout values are
usually HF-derived (unknown): the rule is silent then.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "attention dropout is not supported with graphed attention
recomputation.", "hidden dropout is not supported with graphed MLP/MoE recomputation.",
"moe_input_jitter_eps is not supported with graphed moe recomputation." at job start.

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cuda_graph_modules = ["attn"]
cfg.model.recompute_granularity = "selective"
cfg.model.recompute_modules = ["core_attn"]
cfg.model.attention_dropout = 0.1
```

## Fix
Set the dropout to 0.0, recompute a module outside the graph, or graph other modules. No
automatic fix (dropout changes training).

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2536-2570; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1797-1825. Oracle (0.6.2): llama3_8b with modules
['attn'], recompute ['core_attn'], attention_dropout=0.1 fails; whole-layer TE graph with recompute
['mlp'] and hidden_dropout=0.1 fails, each with the message above.
"""
    valid = [
        HF + 'cfg.model.cuda_graph_modules = ["attn"]\ncfg.model.recompute_modules = ["core_attn"]\n'
        'cfg.model.attention_dropout = 0.0',
        HF + 'cfg.model.cuda_graph_modules = ["moe_router"]\ncfg.model.recompute_modules = ["core_attn"]\n'
        'cfg.model.attention_dropout = 0.1',
        # dropout HF-derived (unknown)
        HF + 'cfg.model.cuda_graph_modules = ["attn"]\ncfg.model.recompute_modules = ["core_attn"]',
        HF + 'cfg.model.cuda_graph_modules = ["attn"]\ncfg.model.recompute_modules = ["core_attn"]\n'
        'for p in [0.1]:\n    cfg.model.attention_dropout = p',
        Example(HF + 'cfg.model.cuda_graph_scope = ["mlp"]\ncfg.model.recompute_modules = ["core_attn"]\n'
                'cfg.model.hidden_dropout = 0.1', version="0.3"),
    ]
    invalid = [
        HF + 'cfg.model.cuda_graph_modules = ["attn"]\ncfg.model.recompute_modules = ["core_attn"]\n'
        'cfg.model.attention_dropout = 0.1  # error',
        HF + 'cfg.model.hidden_dropout = 0.1\ncfg.model.recompute_modules = ["mlp"]  # error',
        HF + 'cfg.model.cuda_graph_modules = ["moe"]\ncfg.model.moe_input_jitter_eps = 0.01\n'
        'cfg.model.recompute_modules = ["moe"]  # error',
        Example(HF + 'cfg.model.cuda_graph_scope = ["attn"]\ncfg.model.attention_dropout = 0.1\n'
                'cfg.model.recompute_modules = None  # error', version="0.3"),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.on is not True:
            return
        granularity = value(cfg, "model.recompute_granularity", None)
        names = graphs.modules
        recompute = recompute_module_list(cfg)
        full = full_cudagraph(graphs)
        if not known(granularity, names, recompute, full) or granularity != "selective":
            return
        fields = graph_fields(graphs, cfg) + ["model.recompute_modules"]

        def graphed(module: str) -> bool:
            return full or module in names

        where = "the whole layer is graphed" if full else f"CUDA graph modules {names}"
        attn_drop = value(cfg, "model.attention_dropout", 0.1)
        if known(attn_drop) and attn_drop != 0.0 and "core_attn" in recompute and graphed("attn"):
            yield ctx.report(
                cfg,
                f"model.attention_dropout is {attn_drop} and 'core_attn' is recomputed while {where}; "
                "Megatron-Core asserts 'attention dropout is not supported with graphed attention recomputation.'",
                fields + ["model.attention_dropout"],
            )
        hidden_drop = value(cfg, "model.hidden_dropout", 0.1)
        hit = [m for m in ("mlp", "moe") if m in recompute and graphed(m)]
        if known(hidden_drop) and hidden_drop != 0.0 and hit:
            yield ctx.report(
                cfg,
                f"model.hidden_dropout is {hidden_drop} and {', '.join(map(repr, hit))} recomputed while {where}; "
                "Megatron-Core asserts 'hidden dropout is not supported with graphed MLP/MoE recomputation.'",
                fields + ["model.hidden_dropout"],
            )
        jitter = value(cfg, "model.moe_input_jitter_eps", None)
        if known(jitter) and jitter is not None and "moe" in recompute and graphed("moe"):
            yield ctx.report(
                cfg,
                f"model.moe_input_jitter_eps is {jitter} and 'moe' is recomputed while {where}; Megatron-Core "
                "asserts 'moe_input_jitter_eps is not supported with graphed moe recomputation.'",
                fields + ["model.moe_input_jitter_eps"],
            )
