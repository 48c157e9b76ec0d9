from __future__ import annotations

from mblint.rulekit import (
    SPECS_06,
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    graph_fields,
    hf_model,
    known,
    offline_packing,
    offline_packing_known_on,
    value,
)

MOE = hf_model()


class OfflinePackingGraphStaticCuSeqlens(Rule):
    id = "CG013"
    name = "offline-packing-graph-static-cuseqlens"
    severity = Severity.ERROR
    summary = "Packed attention inside CUDA graphs requires offline_packing_specs.pad_cu_seqlens."
    fixable = True
    requires = ("field:enable_offline_packing",)
    tags = ("cuda-graphs", "packing")
    doc = """## What it does
Flags offline packing with CUDA graphs that capture packed attention (full-iteration capture, or
`cuda_graph_impl = "transformer_engine"` with no modules, i.e. whole layers, or with "attn" among
them) while `dataset.offline_packing_specs.pad_cu_seqlens` is False (its default).

## Why it matters
Graphs replay fixed shapes; the `cu_seqlens` boundary tensor varies per packed row unless padded.
`ConfigContainer.validate()` raises "Packed attention CUDA graphs require
offline_packing_specs.pad_cu_seqlens=True."

## Example
```python
cfg = _sft_common()                     # offline packing, pad_to_max_length=True
cfg.model.cuda_graph_impl = "transformer_engine"
```

## Fix
Set `dataset.offline_packing_specs.pad_cu_seqlens = True` (it also needs pad_to_max_length).
Not safe: it changes the packed dataset's metadata layout.

## Versions
0.6.x (0.3.x does not validate this).

## Sources
0.6.2 megatron/bridge/training/config.py:1172-1189. Oracle (0.6.2): llama3_8b_sft_config with
model.cuda_graph_impl=transformer_engine fails with that message; passes with pad_cu_seqlens=True.
"""
    valid = [
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.dataset.offline_packing_specs.pad_cu_seqlens = True',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.model.cuda_graph_modules = ["mlp"]',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'for flag in [True]:\n    cfg.dataset.offline_packing_specs.pad_cu_seqlens = flag',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'for mods in [["mlp"]]:\n    cfg.model.cuda_graph_modules = mods',
    ]
    invalid = [
        Example('cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
                message="dataset.offline_packing_specs.pad_cu_seqlens is False, but offline packing with CUDA "
                        "graphs (whole-layer capture, cuda_graph_impl='transformer_engine') needs static cu_seqlens",
                fixed='cfg = _sft_common()\ncfg.dataset.offline_packing_specs.pad_cu_seqlens = True\n' + MOE
                      + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
                unsafe=True),
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.model.cuda_graph_modules = ["attn", "mlp"]  # error',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"  # error',
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        if offline_packing(cfg) is not True:
            return
        graphs = cuda_graphs(cfg)
        full = graphs.full_iteration
        if full is True:
            captures = True
        elif full is False and graphs.te is True:
            modules = graphs.modules
            if not known(modules):
                return
            captures = not modules or "attn" in modules
        else:
            return
        if not captures:
            return
        pad = value(cfg, f"{SPECS_06}.pad_cu_seqlens", False)
        if not known(pad) or pad:
            return
        what = "full-iteration capture" if full else (
            "whole-layer capture" if not graphs.modules else "attention-scoped capture")
        yield ctx.report(
            cfg,
            f"{SPECS_06}.pad_cu_seqlens is False, but offline packing with CUDA graphs ({what}, "
            f"cuda_graph_impl={graphs.impl!r}) needs static cu_seqlens: set pad_cu_seqlens=True",
            graph_fields(graphs, cfg) + ["dataset.enable_offline_packing", f"{SPECS_06}.pad_cu_seqlens"],
            fixes=[FixIntent("set", f"{SPECS_06}.pad_cu_seqlens", True, safe=False,
                             description="pad cu_seqlens to a static shape")],
        )
