from __future__ import annotations

import math

from mblint.rulekit import Example, Rule, Severity, int_values, parallel

MODEL = 'cfg.model = AutoBridge.from_hf_pretrained("meta-llama/Llama-3.1-8B").to_megatron_provider(load_weights=False)\n'
SHARD = 4096
FACTOR = 4


class CpFarFromSeq4096(Rule):
    id = "LC002"
    name = "cp-far-from-seq-over-4096"
    severity = Severity.INFO
    summary = "context_parallel_size is far (more than 4x) from the seq_length / 4096 rule of thumb."
    tags = ("long-context", "context-parallel", "performance")
    doc = f"""## What it does
Computes the rule-of-thumb CP, `target = seq_length / {SHARD}` rounded to a power of two (at
least 1), and flags `model.context_parallel_size` more than {FACTOR}x below or above it.

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
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 131072\ncfg.model.context_parallel_size = 2  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4096\ncfg.model.context_parallel_size = 8  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 1\n"
                "cfg.model.seq_length = 65536  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        cp = parallel(cfg).cp
        seq = cfg.value("model.seq_length")
        if not int_values(cp, seq) or cp <= 0 or seq <= 0:
            return
        raw = seq / SHARD
        target = 1 if raw <= 1 else 2 ** round(math.log2(raw))
        ratio = max(cp / target, target / cp)
        if ratio <= FACTOR:
            return
        side = "below" if cp < target else "above"
        message = (f"model.context_parallel_size is {cp}, {ratio:g}x {side} the rule of thumb CP ~= seq_length/{SHARD} = "
                   f"{seq}/{SHARD} -> {target} (Megatron-Bridge long-context guidance)")
        yield ctx.report(cfg, message, ["model.context_parallel_size", "model.seq_length"])
