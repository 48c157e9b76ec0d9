from __future__ import annotations

import math

from mblint.rulekit import (
    SEQ_LENGTHS_DIFFER,
    Example,
    Rule,
    Severity,
    hf_model,
    int_values,
    parallel,
    seq_length_disagrees,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")
SHARD = 4096
LONG = 32768  # long context, as LC001 counts it
FACTOR = 4


def room_for_more_cp(cfg, ctx, cp: int) -> bool:
    """True when the world size (given, or from the recipe's name) can hold twice the CP with
    the same TP and PP; unknown (no world size) is no room: the advice would ask for GPUs
    the recipe may not have."""
    par = parallel(cfg)
    if ctx.world_size is None or not int_values(par.tp, par.pp):
        return False
    return ctx.world_size // (par.tp * par.pp) >= 2 * cp


class CpFarFromSeq4096(Rule):
    id = "LC002"
    name = "cp-far-from-seq-over-4096"
    severity = Severity.INFO
    summary = "context_parallel_size is far (more than 4x) from the seq_length / 4096 rule of thumb."
    tags = ("long-context", "context-parallel", "performance", "world-size")
    doc = f"""## What it does
Computes the rule-of-thumb CP, `target = seq_length / {SHARD}` rounded to a power of two (at
least 1), and flags `model.context_parallel_size` more than {FACTOR}x below or above it, at
long context (`seq_length >= {LONG}`, the guidance's scope; shorter contexts use CP for other
reasons, e.g. to match a MoE layout). Not reported: a CP below the target when the world size
(`--world-size` or the recipe's name) leaves no room for twice the CP at the same TP and PP
(the advice would ask for GPUs the recipe does not have). A `seq_length` that differs from the
dataset's is SQ001's error, whose finding replaces this one when both rules are selected. The world size must be known for a "below" finding.

## Why it matters
Megatron-Bridge's long-context guidance: "Start from a 4K shard target: a good first guess is
`CP ~= seq_len / 4096`, then round to a practical power-of-two layout." Far too little CP runs
out of activation memory (or forces full recompute); far too much starves data parallelism
and shrinks the per-rank attention work below what overlaps the CP communication. NVL72
systems may trade some CP for TP, so this is a hint only.

## Example
```python
cfg.model.seq_length = 131072      # target CP = 32
cfg.model.context_parallel_size = 2
```

## Fix
Guidance only: move CP towards `seq_length / 4096` (e.g. 16-32 at 128K), adjusting TP/DP.

## Versions
0.3.x and 0.6.x.

## Sources
skills/mbridge-perf-moe-long-context/SKILL.md ("CP Sizing Rules Of Thumb" 1, 2, 5);
skills/mbridge-perf-parallelism-strategies/SKILL.md ("Decision by Sequence Length").
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.model.context_parallel_size = 16",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 8192\ncfg.model.context_parallel_size = 1",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\n"
        "for cp in (2, 16):\n    cfg.model.context_parallel_size = cp",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 16384\ncfg.model.context_parallel_size = 1",
                version="0.3"),
    ]
    valid += [
        # 1 GPU (from the name): no room for CP 8 (Gemma 3 1B's 1-GPU 32k recipe)
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 32768\ncfg.dataset.seq_length = 32768\n"
                "cfg.model.context_parallel_size = 1", function="gemma3_1b_pretrain_1gpu_h100_bf16_config"),
        # TP4 x PP4 x CP2 fill the name's 32 GPUs (Llama 3.1 70B 128k)
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.dataset.seq_length = 131072\n"
                "cfg.model.tensor_model_parallel_size = 4\ncfg.model.pipeline_model_parallel_size = 4\n"
                "cfg.model.context_parallel_size = 2", function="llama31_70b_pretrain_32gpu_h100_bf16_config"),
        # short context: CP used for other reasons (GLM-5.2 SFT at 2048 with CP 16)
        "cfg = _sft_common()\n" + MODEL + "cfg.model.seq_length = 2048\ncfg.model.context_parallel_size = 16",
        # no world size: the advice could ask for GPUs the recipe does not have (0.3.1 Gemma 3 1B at 32k)
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 32768\ncfg.dataset.seq_length = 32768\n"
                "cfg.model.context_parallel_size = 1", version="0.3"),
    ]
    invalid = [
        # the dataset says 8192 (Nemotron Nano v2's provider default): with SQ001 selected, its finding replaces this one
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.dataset.seq_length = 8192\n"
                "cfg.model.context_parallel_size = 2  # error", world_size=64),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.dataset.seq_length = 131072\n"
                "cfg.model.context_parallel_size = 2  # error", world_size=64),
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 32768\ncfg.dataset.seq_length = 32768\ncfg.model.context_parallel_size = 64  # error",
        # the name's 64 GPUs leave room: TP 4 x CP 2 uses 8
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.dataset.seq_length = 131072\n"
                "cfg.model.tensor_model_parallel_size = 4\ncfg.model.context_parallel_size = 2  # error",
                function="llama31_70b_pretrain_64gpu_h100_bf16_config"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 1\n"
                "cfg.model.seq_length = 65536  # error\ncfg.dataset.seq_length = 65536", version="0.3", world_size=8),
    ]

    def check(self, cfg, ctx):
        cp = parallel(cfg).cp
        seq = cfg.value("model.seq_length")
        if not int_values(cp, seq) or cp <= 0 or seq < LONG:
            return
        raw = seq / SHARD
        target = 1 if raw <= 1 else 2 ** round(math.log2(raw))
        ratio = max(cp / target, target / cp)
        if ratio <= FACTOR:
            return
        side = "below" if cp < target else "above"
        if side == "below" and not room_for_more_cp(cfg, ctx, cp):
            return
        message = (f"model.context_parallel_size is {cp}, {ratio:g}x {side} the rule of thumb CP ~= seq_length/{SHARD} = "
                   f"{seq}/{SHARD} -> {target} (Megatron-Bridge long-context guidance)")
        yield ctx.report(cfg, message, ["model.context_parallel_size", "model.seq_length"],
                         problem=SEQ_LENGTHS_DIFFER if seq_length_disagrees(cfg) else "")
