from __future__ import annotations

from mblint.rulekit import (
    SEQ_LENGTHS_DIFFER,
    Example,
    Rule,
    Severity,
    hf_model,
    int_values,
    known,
    parallel,
    seq_length_disagrees,
    value,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")
LONG = 32768


class FullRecomputeLongContext(Rule):
    id = "LC001"
    name = "full-recompute-long-context"
    severity = Severity.INFO
    summary = "At long context, selective recompute of small modules usually beats full-layer recompute."
    tags = ("long-context", "recompute", "performance")
    doc = f"""## What it does
Flags `model.recompute_granularity == "full"` with `model.seq_length >= {LONG}` while
`model.context_parallel_size` is 1: a long context run with neither of the guidance's first
tools (context parallelism, selective recompute). A recipe that sized context parallelism has
been tuned for its context and chose full recompute with it: no advice then. When
`model.seq_length` differs from `dataset.seq_length` the length is not settled: SQ001's error
replaces this finding when both rules are selected.

## Why it matters
Megatron-Bridge's long-context guidance: "Prefer selective recompute: recompute modules such
as `up_proj`, `norm`, `moe`, `moe_act`, or `mlp` before reaching for full recompute", and in
the DSV3 long-context runs "selective recompute works better than full recompute once you move
past the shortest contexts". Full-layer recompute repeats the whole forward pass of the
recomputed layers, including attention, whose cost grows quadratically with the sequence.

## Example
```python
cfg.model.seq_length = 131072
cfg.model.recompute_granularity = "full"
cfg.model.recompute_method = "uniform"
cfg.model.recompute_num_layers = 1
```

## Fix
Guidance only: try `recompute_granularity = "selective"` with small modules
(`["moe_act", "layernorm"]`, `["mlp"]`, `["mla_up_proj"]`...) and context parallelism first.

## Versions
0.3.x and 0.6.x.

## Sources
skills/mbridge-perf-moe-long-context/SKILL.md ("CP Sizing Rules Of Thumb" 3-4, "Recompute And
CUDA Graph Guidance"); skills/mbridge-perf-activation-recompute/SKILL.md ("Quick Decision":
use full only when selective does not fit); docs/training/activation-recomputation.md.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.model.recompute_granularity = 'selective'\n"
        "cfg.model.recompute_modules = ['moe_act', 'layernorm']",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 8192\ncfg.model.recompute_granularity = 'full'",
        # seq_length from Hugging Face: unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.recompute_granularity = 'full'",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4096\ncfg.model.recompute_granularity = 'full'",
                version="0.3"),
    ]
    valid += [
        # a tuned long-context recipe: CP sized, full recompute chosen with it (GLM-5 SFT 128k's pattern)
        "cfg = _sft_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.dataset.seq_length = 131072\n"
        "cfg.model.context_parallel_size = 32\ncfg.model.recompute_granularity = 'full'",
    ]
    invalid = [
        # the dataset says 8192: with SQ001 selected, its finding replaces this one
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.dataset.seq_length = 8192\n"
        "cfg.model.recompute_granularity = 'full'  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.dataset.seq_length = 131072\ncfg.model.recompute_granularity = 'full'  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.recompute_granularity = 'full'\n"
                "cfg.model.seq_length = 65536  # error\ncfg.dataset.seq_length = 65536", version="0.3"),
    ]

    def check(self, cfg, ctx):
        granularity = value(cfg, "model.recompute_granularity", None)
        seq = cfg.value("model.seq_length")
        if granularity != "full" or not known(granularity) or not int_values(seq) or seq < LONG:
            return
        if parallel(cfg).cp != 1:
            return  # context parallelism already sized: a tuned long-context recipe
        message = (f"model.recompute_granularity is 'full' at model.seq_length {seq} (>= {LONG}); Megatron-Bridge's "
                   f"long-context guidance prefers selective recompute of small modules (moe_act, layernorm, mlp, "
                   f"mla_up_proj) before full-layer recompute")
        yield ctx.report(cfg, message, ["model.recompute_granularity", "model.seq_length"],
                         problem=SEQ_LENGTHS_DIFFER if seq_length_disagrees(cfg) else "")
