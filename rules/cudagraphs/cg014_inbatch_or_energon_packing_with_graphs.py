from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    cuda_graphs_known_on,
    energon_packing,
    graph_fields,
    hf_model,
    in_batch_packing,
    in_batch_packing_path,
)

MOE = hf_model()


class InbatchOrEnergonPackingWithGraphs(Rule):
    id = "CG014"
    name = "inbatch-or-energon-packing-with-graphs"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "In-batch or Energon packing gives variable token widths, which CUDA graphs cannot replay."
    fixable = True
    tags = ("cuda-graphs", "packing")
    doc = """## What it does
Flags CUDA graphs (`model.cuda_graph_impl` not "none") together with in-batch packing
(`dataset.enable_in_batch_packing`, 0.3.x `dataset.pack_sequences_in_batch`) or Energon packing
(`EnergonDatasetConfig.packing_buffer_size` set; reported as a warning).

## Why it matters
In-batch packing concatenates the rows of a micro-batch into one THD sequence whose width is the
sum of the row lengths; the collator documents that packed batches "use their emergent aggregate
width" and that `pad_to_max_length` applies only to the non-packed path. CUDA graphs replay the
shapes they captured, and Megatron-Bridge itself requires a static token width for every
training graph (its offline-packing check). Nothing validates this combination, so it fails at
capture/replay time on the GPUs.

## Example
```python
cfg = _sft_common_vlm()                 # in-batch packing on
cfg.model.cuda_graph_impl = "transformer_engine"
```

## Fix
Not safe: turn graphs off (`cuda_graph_impl = "none"`) or use offline packing with
`pad_to_max_length` and `pad_cu_seqlens`.

## Versions
0.3.x (`pack_sequences_in_batch`) and 0.6.x (`enable_in_batch_packing`; Energon packing).

## Sources
0.6.2 megatron/bridge/data/collators/sft.py:99-106 (emergent width); 0.6.2
megatron/bridge/training/config.py:1174-1179 (graphs need a static token width);
0.6.2 megatron/bridge/data/builders/energon.py:139; skills cuda-graphs SKILL.md (packing caveats).
"""
    valid = [
        'cfg = _sft_common_vlm()\n' + MOE + 'cfg.model.cuda_graph_impl = "none"',
        'cfg = _sft_common_vlm()\n' + MOE + 'cfg.dataset.enable_in_batch_packing = False\n'
        'cfg.model.cuda_graph_impl = "transformer_engine"',
        'cfg = _sft_common_vlm()\n' + MOE + 'for impl in ["transformer_engine"]:\n    cfg.model.cuda_graph_impl = impl',
    ]
    invalid = [
        # _sft_common_vlm turns in-batch packing on
        Example('cfg = _sft_common_vlm()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
                message="dataset.enable_in_batch_packing is True with cuda_graph_impl='transformer_engine'",
                fixed='cfg = _sft_common_vlm()\n' + MOE + 'cfg.model.cuda_graph_impl = "none"  # error',
                unsafe=True),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.on is not True:
            return
        path = in_batch_packing_path(cfg)
        if in_batch_packing(cfg) is True:
            yield ctx.report(
                cfg,
                f"{path} is True with cuda_graph_impl={graphs.impl!r}, but in-batch packing gives each "
                "micro-batch a different token width, which CUDA graphs cannot replay",
                graph_fields(graphs, cfg) + [path],
                fixes=[FixIntent("set", "model.cuda_graph_impl", "none", safe=False, description="turn CUDA graphs off")],
            )
        elif energon_packing(cfg) is True:
            yield ctx.report(
                cfg,
                f"dataset.packing_buffer_size is {cfg.value('dataset.packing_buffer_size')!r} (Energon packing) with "
                f"cuda_graph_impl={graphs.impl!r}; packed Energon batches vary in width, which CUDA graphs cannot replay",
                graph_fields(graphs, cfg) + ["dataset.packing_buffer_size"],
                severity=Severity.WARNING,
                fixes=[FixIntent("set", "model.cuda_graph_impl", "none", safe=False, description="turn CUDA graphs off")],
            )
