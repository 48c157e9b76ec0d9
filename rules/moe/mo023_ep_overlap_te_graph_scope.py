from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, cuda_graphs, effective_overlap_flag, graph_fields, known

BASE = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
        'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=8)\n'
        'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.expert_model_parallel_size = 8\n'
        'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True)\n'
        'cfg.model.cuda_graph_impl = "transformer_engine"\n')
MODULES = "cfg.model.cuda_graph_modules"
SCOPE_03 = "cfg.model.cuda_graph_scope"


class EpOverlapTeGraphScope(Rule):
    id = "MO023"
    name = "ep-overlap-te-graph-scope"
    severity = Severity.ERROR
    summary = "Expert-parallel overlap cannot be combined with Transformer Engine CUDA graphs of the moe or mlp module."
    tags = ("moe", "overlap", "cuda-graphs")
    doc = """## What it does
When expert-parallel A2A overlap is on (`comm_overlap.overlap_moe_expert_parallel_comm`, or the
model's field without a `CommOverlapConfig`) and `model.cuda_graph_impl` is
"transformer_engine", flags "moe" or "mlp" among the captured modules
(`model.cuda_graph_modules`, or the deprecated `model.cuda_graph_scope`).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "CUDA graph scope on moe and mlp is not supported with
overlap_moe_expert_parallel_comm" at job start: the overlap splits the MoE layer's dispatch,
experts and combine across micro-batches, which a captured graph of the whole layer cannot
follow. The expert-parallel performance recipes capture "attn", "moe_router" and
"moe_preprocess" for that reason; widening the scope to "moe" stops the job.

## Example
```python
cfg.comm_overlap.overlap_moe_expert_parallel_comm = True
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cuda_graph_modules = ["attn", "moe"]
```

## Fix
Capture "attn", "moe_router" and "moe_preprocess" instead of "moe"/"mlp", or turn the overlap
off. No automatic fix: which costs less depends on the model.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 and 0.17 also reject local CUDA graphs with the overlap;
that part is not reported).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2669, 2738-2746; 0.16.1
:1898-1905. Oracle (0.6.2, `qwen3_30b_a3b_pretrain_config model.expert_model_parallel_size=8
comm_overlap.overlap_moe_expert_parallel_comm=True model.cuda_graph_impl=transformer_engine
model.cuda_graph_scope=None model.cuda_graph_modules=['moe'] model.moe_expert_capacity_factor=1.0
model.moe_pad_expert_input_to_capacity=True`) fails with "CUDA graph scope on moe and mlp is not
supported with overlap_moe_expert_parallel_comm"; with `['attn']` it is accepted.
"""
    valid = [
        BASE + MODULES + ' = ["attn", "moe_router", "moe_preprocess"]',
        BASE.replace("overlap_moe_expert_parallel_comm=True", "overlap_moe_expert_parallel_comm=False")
        + MODULES + ' = ["moe"]',
        BASE + 'for modules in (["attn"], ["moe"]):\n    ' + MODULES + ' = modules',
        Example(BASE + SCOPE_03 + ' = ["attn"]', version="0.3"),
    ]
    invalid = [
        Example(BASE + MODULES + ' = ["attn", "moe"]  # error',
                message="CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm"),
        # modelled on an expert-parallel performance recipe whose graph scope is widened on the command line
        Example(BASE + MODULES + ' = ["attn", "moe_router"]', dotlist=("model.cuda_graph_modules=[attn,mlp]",)),
        Example(BASE + SCOPE_03 + ' = ["moe"]  # error', version="0.3"),
    ]

    def check(self, cfg, ctx):
        flag, flag_path = effective_overlap_flag(cfg, "overlap_moe_expert_parallel_comm")
        graphs = cuda_graphs(cfg)
        if flag is not True or graphs.te is not True:
            return
        modules = graphs.modules
        if not known(modules):
            return
        captured = [name for name in ("moe", "mlp") if name in modules]
        if not captured:
            return
        yield ctx.report(
            cfg, f"{flag_path} is True with Transformer Engine CUDA graphs of {', '.join(map(repr, captured))}; "
                 "Megatron-Core asserts 'CUDA graph scope on moe and mlp is not supported with "
                 "overlap_moe_expert_parallel_comm' at job start",
            [*graph_fields(graphs, cfg), flag_path])
