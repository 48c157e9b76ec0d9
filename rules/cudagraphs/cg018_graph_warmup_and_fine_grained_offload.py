from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    fine_grained_offloading_known_on,
    graph_fields,
    hf_model,
    known,
    value,
)

HF = ('cfg = _pretrain_common()\n'
      + hf_model() +
      'cfg.model.fine_grained_activation_offloading = True\n'
      'cfg.model.offload_modules = ["core_attn"]\n')
LOCAL_OK = {"expert_fc1", "moe_act", "fused_group_mlp"}


class GraphWarmupAndFineGrainedOffload(Rule):
    id = "CG018"
    name = "graph-warmup-and-fine-grained-offload"
    severity = Severity.ERROR
    summary = "Fine-grained activation offloading with CUDA graphs: warm-up steps > 0, no 'moe' module, local impl only for partial MoE offload, full_iteration needs max inflight offloads."
    fixable = True
    requires = ("field:fine_grained_offloading_max_inflight_offloads",)
    tags = ("cuda-graphs", "offload")
    doc = """## What it does
With `model.fine_grained_activation_offloading = True` and CUDA graphs on, flags:
- `model.cuda_graph_warmup_steps <= 0`;
- "moe" in the CUDA graph modules (token-drop MoE);
- `cuda_graph_impl = "local"` with `offload_modules` outside {expert_fc1, moe_act, fused_group_mlp}
  or with whole-layer capture (empty modules);
- `cuda_graph_impl = "full_iteration"` with `fine_grained_offloading_max_inflight_offloads` None or
  negative.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts each of these at job start, e.g. "cuda_graph_warmup_steps
must be greater than 0 when enabling fine-grained activation offloading."

## Example
```python
cfg.model.fine_grained_activation_offloading = True
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cuda_graph_warmup_steps = 0
```

## Fix
Keep `cuda_graph_warmup_steps` positive (default 3, safe), graph other modules, or set
`fine_grained_offloading_max_inflight_offloads` (e.g. 0) for full-iteration graphs.

## Versions
0.6.x only (Megatron-Core 0.16 has no graph/offloading checks).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2588-2640. Oracle (0.6.2):
llama3_8b_pretrain_2gpu_h100_bf16_config with transformer_engine graphs,
fine_grained_activation_offloading=True and cuda_graph_warmup_steps=0 fails with that message.
"""
    valid = [
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_modules = ["attn"]',
        HF + 'cfg.model.cuda_graph_impl = "none"\ncfg.model.cuda_graph_warmup_steps = 0',
        HF + 'cfg.model.cuda_graph_impl = "full_iteration"\ncfg.model.fine_grained_offloading_max_inflight_offloads = 0',
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\nfor n in [0]:\n    cfg.model.cuda_graph_warmup_steps = n',
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_warmup_steps = 0  # error',
                message="model.cuda_graph_warmup_steps is 0 with fine-grained activation offloading",
                fixed=HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_warmup_steps = 3  # error',
                unsafe=True),
        # 0: wait for each offload before the next (Megatron-Core's most conservative cap)
        Example(HF + 'cfg.model.cuda_graph_impl = "full_iteration"  # error',
                message="model.fine_grained_offloading_max_inflight_offloads is None with full-iteration CUDA graphs",
                fixed=HF + 'cfg.model.cuda_graph_impl = "full_iteration"  # error\n'
                      'cfg.model.fine_grained_offloading_max_inflight_offloads = 0',
                unsafe=True),
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_modules = ["moe"]  # error',
        Example(HF + 'cfg.model.cuda_graph_impl = "transformer_engine"', dotlist=("model.cuda_graph_warmup_steps=0",)),
    ]

    precondition = fine_grained_offloading_known_on

    def check(self, cfg, ctx):
        flag = value(cfg, "model.fine_grained_activation_offloading", False)
        graphs = cuda_graphs(cfg)
        if flag is not True or graphs.on is not True:
            return
        base = ["model.fine_grained_activation_offloading"] + graph_fields(graphs, cfg)
        warmup = value(cfg, "model.cuda_graph_warmup_steps", 3)
        if known(warmup) and isinstance(warmup, int) and warmup <= 0:
            yield ctx.report(
                cfg,
                f"model.cuda_graph_warmup_steps is {warmup} with fine-grained activation offloading and CUDA graphs "
                f"(cuda_graph_impl {graphs.impl!r}); Megatron-Core asserts 'cuda_graph_warmup_steps must be greater "
                "than 0 when enabling fine-grained activation offloading.'",
                base + ["model.cuda_graph_warmup_steps"], primary="model.cuda_graph_warmup_steps",
                fixes=[FixIntent("set", "model.cuda_graph_warmup_steps", 3, safe=True,
                                 description="set cuda_graph_warmup_steps to 3 (the default)")],
            )
        names = graphs.modules
        if known(names) and "moe" in names:
            yield ctx.report(
                cfg,
                f"CUDA graph modules {names} contain 'moe' with fine-grained activation offloading; Megatron-Core "
                "asserts 'Token-drop MoE is temporarily not supported with activation offloading.'",
                base,
            )
        if graphs.impl == "full_iteration":
            inflight = value(cfg, "model.fine_grained_offloading_max_inflight_offloads", None)
            if known(inflight) and (inflight is None or (isinstance(inflight, int) and inflight < 0)):
                yield ctx.report(
                    cfg,
                    f"model.fine_grained_offloading_max_inflight_offloads is {inflight!r} with full-iteration CUDA "
                    "graphs and fine-grained activation offloading; Megatron-Core requires a non-negative integer",
                    base + ["model.fine_grained_offloading_max_inflight_offloads"],
                    fixes=[FixIntent("set", "model.fine_grained_offloading_max_inflight_offloads", 0, safe=False,
                                     description="set fine_grained_offloading_max_inflight_offloads to 0")],
                )
        elif graphs.impl == "local" and graphs.full_iteration is False:
            offload = value(cfg, "model.offload_modules", [])
            if known(offload, names) and isinstance(offload, (list, tuple)):
                bad = sorted(set(offload) - LOCAL_OK)
                if bad or not names:
                    why = (f"offload_modules {bad} are not among expert_fc1, moe_act, fused_group_mlp" if bad
                           else "whole-layer capture (empty modules) is not supported")
                    yield ctx.report(
                        cfg,
                        f"cuda_graph_impl is 'local' with fine-grained activation offloading: {why}; "
                        "Megatron-Core asserts at job start",
                        base + ["model.offload_modules"],
                    )
