from __future__ import annotations

from mblint.rulekit import (
    UNPADDED_PACKS_UNDER_GRAPHS,
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
    pad_to_max_length,
)

MOE = hf_model()


class OfflinePackingGraphStaticWidth(Rule):
    id = "CG012"
    name = "offline-packing-graph-static-width"
    severity = Severity.ERROR
    summary = "Offline packing with CUDA graphs requires pad_to_max_length."
    fixable = True
    requires = ("field:enable_offline_packing",)
    tags = ("cuda-graphs", "packing")
    supersedes = ("MO003",)
    doc = """## What it does
Flags offline packing (`dataset.enable_offline_packing = True`) with training CUDA graphs
(full-iteration capture or `cuda_graph_impl = "transformer_engine"`) when the dataset does not pad
to the maximum length (`dataset.pad_to_max_length` / `dataset.dataset_kwargs["pad_to_max_length"]`).

## Why it matters
Every training graph needs a static token width. `ConfigContainer.validate()` raises "Offline
packing with CUDA graphs requires dataset pad_to_max_length=True."

## Example
```python
cfg = _sft_common()
cfg.dataset.dataset_kwargs = {}
cfg.model.cuda_graph_impl = "transformer_engine"
```

## Fix
Set `pad_to_max_length = True` (in `dataset_kwargs` for `GPTSFTDatasetConfig`). Not safe: it
changes the data layout of every packed row.

## Versions
0.6.x (0.3.x does not validate this).

## Sources
0.6.2 megatron/bridge/training/config.py:1162-1179. Oracle (0.6.2): llama3_8b_sft_config with
TE graphs and dataset.dataset_kwargs={} fails with that message.
"""
    valid = [
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.dataset.offline_packing_specs.pad_cu_seqlens = True',
        'cfg = _sft_common()\n' + MOE + 'cfg.dataset.dataset_kwargs = {}',
        'cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'for kw in [{}]:\n    cfg.dataset.dataset_kwargs = kw',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"',
    ]
    invalid = [
        Example('cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.dataset.dataset_kwargs = {"pad_to_max_length": False}  # error',
                message="dataset.dataset_kwargs.pad_to_max_length is not True, but offline packing with CUDA graphs",
                fixed='cfg = _sft_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                      'cfg.dataset.dataset_kwargs = {"pad_to_max_length": True}  # error',
                unsafe=True),
        # an emptied dict leaves no origin for the key: the finding lands on the graph switch
        Example('cfg = _sft_common()\n' + MOE + 'cfg.dataset.dataset_kwargs = {}\n'
                'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
                message="dataset.dataset_kwargs has no pad_to_max_length, but offline packing with CUDA graphs",
                fixed='cfg = _sft_common()\n' + MOE + 'cfg.dataset.dataset_kwargs = {}\n'
                      'cfg.dataset.dataset_kwargs["pad_to_max_length"] = True\n'
                      'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
                unsafe=True),
        Example('cfg = _sft_common()\n' + MOE + 'cfg.dataset.dataset_kwargs["pad_to_max_length"] = False  # error\n'
                'cfg.model.cuda_graph_impl = "full_iteration"',
                fixed='cfg = _sft_common()\n' + MOE + 'cfg.dataset.dataset_kwargs["pad_to_max_length"] = True  # error\n'
                      'cfg.model.cuda_graph_impl = "full_iteration"',
                unsafe=True),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if offline_packing(cfg) is not True:
            return
        training_graphs = graphs.full_iteration is True or graphs.te is True
        if not training_graphs:
            return
        pad, pad_field = pad_to_max_length(cfg)
        if not known(pad) or pad:
            return
        said = f"{pad_field} is not True"
        if not cfg.origins(pad_field) and pad_field.startswith("dataset.dataset_kwargs."):
            pad_field = "dataset.dataset_kwargs"  # the dict was replaced without the key
            said = "dataset.dataset_kwargs has no pad_to_max_length"
        fields = graph_fields(graphs, cfg) + ["dataset.enable_offline_packing", pad_field]
        yield ctx.report(
            cfg,
            f"{said}, but offline packing with CUDA graphs (cuda_graph_impl={graphs.impl!r}) "
            "requires a static token width: set pad_to_max_length=True",
            fields,
            fixes=[FixIntent("set", "dataset.dataset_kwargs.pad_to_max_length"
                             if cfg.type_of("dataset") == "GPTSFTDatasetConfig" else "dataset.pad_to_max_length",
                             True, safe=False, description="pad every packed row to the maximum length")],
            problem=UNPADDED_PACKS_UNDER_GRAPHS,
        )
