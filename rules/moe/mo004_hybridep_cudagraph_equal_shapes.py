from __future__ import annotations

from mblint.rulekit import (
    Rule,
    Severity,
    cuda_graphs,
    energon_packing,
    graph_fields,
    hf_model,
    hybridep,
    hybridep_known_on,
    in_batch_packing,
    in_batch_packing_path,
    known,
    offline_packing,
    pad_to_max_length,
    value,
)

HEP = (hf_model() +
       'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "hybridep"\n')


class HybridepCudagraphEqualShapes(Rule):
    id = "MO004"
    name = "hybridep-cudagraph-equal-shapes"
    severity = Severity.ERROR
    summary = "HybridEP under CUDA graphs needs equal token counts on every rank."
    fixable = False
    requires = ("field:moe_hybridep_pad_uneven_dispatch_inputs",)
    tags = ("moe", "cuda-graphs", "packing")
    doc = """## What it does
Flags the HybridEP flex backend with CUDA graphs on when token counts can differ between ranks:
in-batch packing, Energon packing, or offline packing without `pad_to_max_length`.

## Why it matters
HybridEP dispatch expects equal per-rank input sizes. For eager THD runs Megatron-Bridge turns on
`moe_hybridep_pad_uneven_dispatch_inputs` (an all-reduce of the token count plus padding), but
it deliberately leaves it off when CUDA graphs are enabled because that path's host
synchronisation is not capture-safe: "those configs require equal inputs".

## Example
```python
cfg = _sft_common_vlm()                  # in-batch packing
cfg.model.moe_token_dispatcher_type = "flex"
cfg.model.moe_flex_dispatcher_backend = "hybridep"
cfg.model.cuda_graph_impl = "transformer_engine"
```

## Fix
Make shapes static (offline packing with `pad_to_max_length` and `pad_cu_seqlens`) or turn CUDA
graphs off. No automatic fix.

## Versions
0.6.x.

## Sources
0.6.2 megatron/bridge/models/transformer_config.py:91-140 (`_enable_safe_hybridep_dispatch`);
0.6.2 megatron/bridge/training/config.py:1249; MCore 0.19.2
megatron/core/transformer/moe/token_dispatcher.py:1055-1075.
"""
    valid = [
        'cfg = _sft_common_vlm()\n' + HEP + 'cfg.model.cuda_graph_impl = "none"',
        'cfg = _sft_common()\n' + HEP + 'cfg.model.cuda_graph_impl = "transformer_engine"',
        'cfg = _sft_common_vlm()\n' + HEP.replace('"hybridep"', '"deepep"') + 'cfg.model.cuda_graph_impl = "transformer_engine"',
        'cfg = _sft_common_vlm()\n' + HEP.replace('cfg.model.moe_token_dispatcher_type = "flex"\n', '')
        + 'cfg.model.cuda_graph_impl = "transformer_engine"',
    ]
    invalid = [
        'cfg = _sft_common_vlm()\n' + HEP + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
        'cfg = _sft_common()\n' + HEP + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.dataset.dataset_kwargs = {"pad_to_max_length": False}  # error',
    ]

    precondition = hybridep_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.on is not True or hybridep(cfg) is not True:
            return
        pad_flag = value(cfg, "model.moe_hybridep_pad_uneven_dispatch_inputs", False)
        if not known(pad_flag):
            return
        reason, field = None, None
        if in_batch_packing(cfg) is True:
            field = in_batch_packing_path(cfg)
            reason = "in-batch packing gives every rank a different token count"
        elif energon_packing(cfg) is True:
            field = "dataset.packing_buffer_size"
            reason = "Energon packing gives every rank a different token count"
        elif offline_packing(cfg) is True:
            pad, pad_field = pad_to_max_length(cfg)
            if pad is False:
                field = pad_field if cfg.origins(pad_field) else "dataset.dataset_kwargs"
                reason = "offline packing without pad_to_max_length gives packed rows of varying width"
        if reason is None:
            return
        yield ctx.report(
            cfg,
            f"HybridEP (moe_flex_dispatcher_backend='hybridep') with cuda_graph_impl={graphs.impl!r} needs equal "
            f"per-rank token counts, but {reason}; Megatron-Bridge does not pad uneven HybridEP inputs under CUDA graphs",
            graph_fields(graphs, cfg) + ["model.moe_flex_dispatcher_backend", field],
        )
