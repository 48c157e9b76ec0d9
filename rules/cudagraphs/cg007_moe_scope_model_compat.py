from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    cuda_graphs,
    cuda_graphs_known_on,
    dispatcher,
    graph_fields,
    hf_model,
    int_values,
    known,
    value,
)

HF = ('cfg = _pretrain_common()\n'
      + hf_model() +
      'cfg.model.cuda_graph_impl = "transformer_engine"\n')
MOE = HF + 'cfg.model.num_moe_experts = 64\ncfg.model.moe_layer_freq = 1\n'


class MoeScopeModelCompat(Rule):
    id = "CG007"
    name = "moe-scope-model-compat"
    severity = Severity.ERROR
    summary = "MoE CUDA graph modules must fit the model: MoE only on MoE models, mlp only with dense layers, moe only for drop-and-pad."
    fixable = False
    tags = ("cuda-graphs", "moe")
    doc = """## What it does
With per-layer CUDA graphs ("transformer_engine" or "local"), flags, when the inputs are known:
- "moe" or "moe_router" in the modules while `num_moe_experts` is None or <= 1;
- "mlp" in the modules while every layer is MoE (`moe_layer_freq == 1`, or a list without 0);
- "moe" in the modules without drop-and-pad MoE (`moe_expert_capacity_factor` set and
  `moe_pad_expert_input_to_capacity`);
- "moe_preprocess" with the alltoall dispatcher and a capacity factor or
  `moe_router_padding_for_fp8`.
`num_moe_experts` and `moe_layer_freq` are usually HF-derived (unknown): the rule is silent then.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "moe cuda graph is only supported for MoE.", "mlp cuda graph
is only supported for dense layers, but not found in the model.", "moe cuda graph is only
supported with drop-padding MoE.", "moe_preprocess cuda graph is not supported when there are DtoH
copies and synchronizations in the preprocess step." at job start.

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cuda_graph_modules = ["attn", "mlp"]   # on an all-MoE model
```

## Fix
Graph the parts the model has: "attn" and "moe_router" (plus "moe_preprocess") on dropless MoE,
"mlp" only on dense layers. No automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2492-2519; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1751-1779. Oracle (0.6.2): moe_router modules on
llama3_8b fail "moe cuda graph is only supported for MoE."; 'moe' and 'mlp' on qwen3_30b_a3b fail
with the drop-padding and dense-layer messages.
"""
    valid = [
        MOE + 'cfg.model.cuda_graph_modules = ["attn", "moe_router", "moe_preprocess"]',
        MOE + 'cfg.model.moe_expert_capacity_factor = 1.0\ncfg.model.moe_pad_expert_input_to_capacity = True\n'
        'cfg.model.cuda_graph_modules = ["attn", "moe"]',
        HF + 'cfg.model.num_moe_experts = 64\ncfg.model.moe_layer_freq = [0, 1]\ncfg.model.cuda_graph_modules = ["mlp"]',
        # num_moe_experts HF-derived (unknown)
        HF + 'cfg.model.cuda_graph_modules = ["attn", "moe_router"]',
        HF + 'cfg.model.cuda_graph_modules = ["mlp"]',
        Example(MOE + 'cfg.model.cuda_graph_scope = ["attn", "moe_router"]', version="0.3"),
    ]
    invalid = [
        HF + 'cfg.model.num_moe_experts = None\ncfg.model.cuda_graph_modules = ["attn", "moe_router"]  # error',
        MOE + 'cfg.model.cuda_graph_modules = ["attn", "mlp"]  # error',
        MOE + 'cfg.model.cuda_graph_modules = ["moe"]  # error',
        MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_expert_capacity_factor = 1.0\n'
        'cfg.model.cuda_graph_modules = ["moe_router", "moe_preprocess"]  # error',
        Example(MOE + 'cfg.model.cuda_graph_scope = ["moe"]  # error', version="0.3"),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if not known(graphs.impl) or graphs.impl not in ("local", "transformer_engine"):
            return
        names = graphs.modules
        if not known(names) or not names:
            return
        names = list(names)
        if graphs.impl == "local" and ("moe_router" in names or "moe_preprocess" in names):
            names += [n for n in ("moe_router", "moe_preprocess") if n not in names]
        fields = graph_fields(graphs, cfg)
        experts = value(cfg, "model.num_moe_experts", None)
        if not known(experts):
            return
        moe_names = [n for n in ("moe", "moe_router") if n in names]
        if experts is None or (int_values(experts) and experts <= 1):
            if moe_names:
                yield ctx.report(
                    cfg,
                    f"CUDA graph modules contain {', '.join(map(repr, moe_names))} but model.num_moe_experts is "
                    f"{experts}; Megatron-Core asserts 'moe cuda graph is only supported for MoE.'",
                    fields + ["model.num_moe_experts"],
                )
            return
        if not int_values(experts):
            return
        freq = value(cfg, "model.moe_layer_freq", 1)
        if "mlp" in names and known(freq):
            all_moe = freq == 1 or (isinstance(freq, (list, tuple)) and 0 not in freq)
            if all_moe:
                yield ctx.report(
                    cfg,
                    f"CUDA graph modules contain 'mlp' but every layer is MoE (moe_layer_freq = {freq!r}, "
                    f"num_moe_experts = {experts}); Megatron-Core asserts 'mlp cuda graph is only supported for "
                    "dense layers, but not found in the model.'",
                    fields + ["model.moe_layer_freq", "model.num_moe_experts"],
                )
        factor = value(cfg, "model.moe_expert_capacity_factor", None)
        pad = value(cfg, "model.moe_pad_expert_input_to_capacity", False)
        if not known(pad) or not known(factor):
            return
        if isinstance(factor, (int, float)) and factor < 0:
            factor = None
        if factor is not None and pad:
            return  # drop-and-pad MoE: every module allowed
        if "moe" in names:
            yield ctx.report(
                cfg,
                f"CUDA graph modules contain 'moe' but the MoE is not drop-and-pad (moe_expert_capacity_factor = "
                f"{factor}, moe_pad_expert_input_to_capacity = {pad}); Megatron-Core asserts 'moe cuda graph is "
                "only supported with drop-padding MoE.'",
                fields + ["model.moe_expert_capacity_factor", "model.moe_pad_expert_input_to_capacity"],
            )
        kind = dispatcher(cfg)
        fp8_pad = value(cfg, "model.moe_router_padding_for_fp8", False)
        if "moe_preprocess" in names and known(kind) and kind == "alltoall":
            if factor is not None or fp8_pad is True:
                cause = (f"moe_expert_capacity_factor = {factor}" if factor is not None
                         else "moe_router_padding_for_fp8 = True")
                yield ctx.report(
                    cfg,
                    f"CUDA graph modules contain 'moe_preprocess' with the alltoall dispatcher and {cause}; "
                    "Megatron-Core asserts 'moe_preprocess cuda graph is not supported when there are DtoH copies "
                    "and synchronizations in the preprocess step.'",
                    fields + ["model.moe_token_dispatcher_type", "model.moe_expert_capacity_factor"],
                )
