from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    allowed_values,
    cpu_offloading_known_on,
    cuda_graphs,
    graph_fields,
    hf_model,
    known,
    value,
)

MOE = hf_model()


class CpuOffloadVsGraphs(Rule):
    id = "CG011"
    name = "cpu-offload-vs-graphs"
    severity = Severity.ERROR
    summary = "model.cpu_offloading cannot be combined with per-layer CUDA graphs."
    fixable = True
    tags = ("cuda-graphs", "offloading")
    doc = """## What it does
Flags `model.cpu_offloading = True` while CUDA graphs are on (0.6.x: any implementation except
full-iteration capture; 0.3.x: any implementation).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run from `ConfigContainer.validate()`)
raises "CUDA graphs not supported with CPU offloading."

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cpu_offloading = True
```

## Fix
Not safe (memory): disable one of them (`cpu_offloading = False` or `cuda_graph_impl = "none"`).

## Versions
0.3.x and 0.6.x (0.6.x allows it with full-iteration capture).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2465-2468; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1716-1723. Oracle (0.6.2): llama3_8b_pretrain_config
with TE graphs and model.cpu_offloading=True fails; with full_iteration it passes.
"""
    valid = [
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cpu_offloading = True',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"\n'
        'cfg.model.cpu_offloading = True',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'for flag in [True]:\n    cfg.model.cpu_offloading = flag',
    ]
    invalid = [
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.model.cpu_offloading = True  # error',
                message="CUDA graphs are not supported with CPU offloading (except full-iteration capture)",
                fixed='cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                      'cfg.model.cpu_offloading = False  # error',
                unsafe=True),
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
                'cfg.model.cuda_graph_scope = "full_iteration"\ncfg.model.cpu_offloading = True  # error',
                version="0.3"),
    ]

    precondition = cpu_offloading_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        offload = value(cfg, "model.cpu_offloading", False)
        if graphs.on is not True or not known(offload) or offload is not True:
            return
        full_capture = "full_iteration" in allowed_values(cfg, "cuda_graph_impl", ())
        if full_capture and graphs.full_iteration is not False:
            return
        yield ctx.report(
            cfg,
            f"model.cpu_offloading is True with cuda_graph_impl={graphs.impl!r}, but CUDA graphs are not "
            "supported with CPU offloading" + (" (except full-iteration capture)" if full_capture else ""),
            graph_fields(graphs, cfg) + ["model.cpu_offloading"],
            fixes=[FixIntent("set", "model.cpu_offloading", False, safe=False, description="disable CPU offloading")],
        )
