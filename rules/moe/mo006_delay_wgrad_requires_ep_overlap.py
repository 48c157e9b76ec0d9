from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    effective_overlap_flag,
    ep_overlap_problems,
    has_check,
    hf_model,
    known,
    value,
)

BASE = "cfg = _pretrain_common()\n" + hf_model()


class DelayWgradRequiresEpOverlap(Rule):
    id = "MO006"
    name = "delay-wgrad-requires-ep-overlap"
    severity = Severity.ERROR
    summary = "delay_wgrad_compute requires expert-parallel overlap (and, under attention graphs, gradient fusion)."
    fixable = True
    tags = ("moe", "overlap")
    doc = """## What it does
Flags `delay_wgrad_compute` turned on (on `cfg.comm_overlap`, or on the model when
`cfg.comm_overlap` is None) while `overlap_moe_expert_parallel_comm` is not. In 0.6.x, with CUDA
graphs capturing "attn" (or "moe_router" with non-overlapped shared experts) it also flags
`model.gradient_accumulation_fusion = False`, and bias in attention (`add_bias_linear` /
`add_qkv_bias`) for "attn" capture.

## Why it matters
`CommOverlapConfig.setup()` asserts "overlap_moe_expert_parallel_comm is required for
delay_wgrad_compute" and then writes the comm_overlap values onto the model; Megatron-Core's
post-init asserts the same for a model-level flag. The graph-scope requirements are asserted in
`setup()` too.

## Example
```python
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, delay_wgrad_compute=True)
```

## Fix
Also set `overlap_moe_expert_parallel_comm = True` on the same config: safe when the overlap's
prerequisites that `CommOverlapConfig.setup()` asserts are known to hold (those MO005 checks;
bf16/fp16 is set by the mixed-precision recipe at job start and not checked), unsafe when some
are unknown. When one is known to fail, the
overlap cannot be enabled: the fix drops `delay_wgrad_compute` instead (unsafe).

## Versions
0.3.x and 0.6.x (graph-scope checks: 0.6.x).

## Sources
0.6.2 megatron/bridge/training/comm_overlap.py:520-558 (the overlap's prerequisites: 478-517);
0.3.1 megatron/bridge/training/comm_overlap.py:510-525 (467-503);
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2748-2752; MCore 0.16.1 transformer_config.py:1908-1912.
"""
    valid = [
        BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True, '
        'delay_wgrad_compute=True)',
        BASE + 'cfg.model.overlap_moe_expert_parallel_comm = True\ncfg.model.delay_wgrad_compute = True',
        BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, delay_wgrad_compute=True)\n'
        'for flag in [True]:\n    cfg.comm_overlap.overlap_moe_expert_parallel_comm = flag',
    ]
    invalid = [
        # expert parallelism is 1: the overlap cannot be enabled (setup() asserts EP > 1)
        Example(BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, delay_wgrad_compute=True)  # error',
                message="requires expert-parallel A2A overlap, which cannot be enabled here: "
                        "expert_model_parallel_size is 1 (needs > 1)",
                fixed=BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, delay_wgrad_compute=False)  # error',
                unsafe=True),
        # the overlap's prerequisites are known to hold: enabling it is safe
        Example(BASE + 'cfg.model.expert_model_parallel_size = 8\ncfg.model.num_moe_experts = 64\n'
                'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = False\n'
                'cfg.model.mtp_num_layers = None\ncfg.model.recompute_granularity = None\ncfg.model.recompute_modules = None\n'
                'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, delay_wgrad_compute=True)  # error',
                message="comm_overlap.delay_wgrad_compute is True, but comm_overlap.overlap_moe_expert_parallel_comm "
                        "is not True; delayed weight-gradient compute requires expert-parallel A2A overlap",
                fixed=BASE + 'cfg.model.expert_model_parallel_size = 8\ncfg.model.num_moe_experts = 64\n'
                      'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = False\n'
                      'cfg.model.mtp_num_layers = None\ncfg.model.recompute_granularity = None\ncfg.model.recompute_modules = None\n'
                      'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, delay_wgrad_compute=True)  # error\n'
                      'cfg.comm_overlap.overlap_moe_expert_parallel_comm = True',
                unsafe=False),
        BASE + 'cfg.model.delay_wgrad_compute = True  # error',
        Example(BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\n'
                'cfg.comm_overlap.delay_wgrad_compute = True  # error', version="0.3"),
        # replacing a value the recipe wrote is unsafe
        Example(BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True, '
                'delay_wgrad_compute=True)\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.model.cuda_graph_modules = ["attn"]\ncfg.model.gradient_accumulation_fusion = False  # error',
                message="model.gradient_accumulation_fusion is False, but delay_wgrad_compute with CUDA graphs "
                        "capturing attn requires it",
                fixed=BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True, '
                      'delay_wgrad_compute=True)\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
                      'cfg.model.cuda_graph_modules = ["attn"]\ncfg.model.gradient_accumulation_fusion = True  # error',
                unsafe=True),
    ]

    def check(self, cfg, ctx):
        delay, delay_path = effective_overlap_flag(cfg, "delay_wgrad_compute")
        if delay is not True:
            return
        overlap, overlap_path = effective_overlap_flag(cfg, "overlap_moe_expert_parallel_comm")
        if overlap is False:
            message = (f"{delay_path} is True, but {overlap_path} is not True; delayed weight-gradient compute "
                       "requires expert-parallel A2A overlap")
            problems, all_known = ep_overlap_problems(cfg)
            if problems:
                message += f", which cannot be enabled here: {'; '.join(text for _, text in problems)}"
                fix = FixIntent("set", delay_path, False, safe=False, description=f"set {delay_path} to False")
            else:
                fix = FixIntent("set", overlap_path, True, safe=all_known, description=f"set {overlap_path} to True")
            yield ctx.report(cfg, message, [delay_path, overlap_path], primary=delay_path, fixes=[fix])
            return
        if overlap is not True or not has_check(cfg, "graphs_with_delay_wgrad_need_fusion"):
            return
        graphs = cuda_graphs(cfg)
        modules = graphs.modules
        if graphs.on is not True or not known(modules):
            return
        attn = "attn" in modules
        shared_size = value(cfg, "model.moe_shared_expert_intermediate_size", None)
        shared_overlap = value(cfg, "model.moe_shared_expert_overlap", False)
        router = "moe_router" in modules
        if router and not attn and not known(shared_size, shared_overlap) and shared_size is not None:
            return
        in_scope = attn or (router and shared_size is not None and known(shared_overlap) and not shared_overlap)
        if not in_scope:
            return
        fusion = value(cfg, "model.gradient_accumulation_fusion", True)
        if known(fusion) and not fusion:
            yield ctx.report(
                cfg,
                f"model.gradient_accumulation_fusion is False, but delay_wgrad_compute with CUDA graphs capturing "
                f"{'attn' if attn else 'moe_router'} requires it (static gradient buffers)",
                [delay_path, graphs.modules_path, "model.gradient_accumulation_fusion"],
                fixes=[FixIntent("set", "model.gradient_accumulation_fusion", True, safe=True,
                                 description="enable gradient_accumulation_fusion")],
            )
        if attn:
            for name in ("add_bias_linear", "add_qkv_bias"):
                bias = value(cfg, f"model.{name}", False)
                if known(bias) and bias:
                    yield ctx.report(
                        cfg,
                        f"model.{name} is True, but delay_wgrad_compute with 'attn' CUDA graphs does not support "
                        "attention bias",
                        [delay_path, graphs.modules_path, f"model.{name}"],
                    )

