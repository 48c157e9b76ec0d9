from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    context_parallel_known_above_1,
    hf_model,
    int_values,
    offline_packing,
    parallel,
    specs_path,
    value,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class SeqDivisibleBy2Cp(Rule):
    id = "CP001"
    name = "seq-divisible-by-2cp"
    severity = Severity.ERROR
    summary = "With context parallelism, model.seq_length must be a multiple of 2 * context_parallel_size."
    fixable = True
    tags = ("context-parallel", "sequence-length")
    doc = """## What it does
Flags `model.context_parallel_size` (CP) above 1 with a `model.seq_length` that is not a
multiple of `2 * CP`.

## Why it matters
Context parallelism splits every sequence into `2 * CP` chunks (load-balanced causal
attention gives each rank two chunks). `ConfigContainer.validate()` asserts
"Sequence length must be divisible by 2 * context parallel size if context parallel is used."
at job start, on every rank, after the allocation was granted.

## Example
```python
cfg.model.seq_length = 4100
cfg.model.context_parallel_size = 4   # 4100 % 8 = 4
```

## Fix
Unsafe (changes the data layout and, with offline packing, the packed dataset): round
`model.seq_length` up to the next multiple of `2 * CP` (and `dataset.seq_length` and
`packed_sequence_size` with it when they were equal), or pick a CP that divides it.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1435-1438 (`ConfigContainer.validate`);
0.3.1 megatron/bridge/training/config.py:1545-1548;
skills/mbridge-perf-parallelism-strategies/SKILL.md (Pitfalls 4: "CP requires
`seq_length % (2 * context_parallel_size) == 0`").
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 8192\ncfg.model.context_parallel_size = 4",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4100\ncfg.model.context_parallel_size = 1",
        # seq_length from Hugging Face: unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4096\ncfg.model.context_parallel_size = 2",
                version="0.3"),
    ]
    invalid = [
        # 4100 rounded up to a multiple of 8; dataset.seq_length (4096) differs and is left alone
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4100  # error\ncfg.model.context_parallel_size = 4",
                message="needs a multiple of 2*CP = 8 (4100 % 8 = 4); the next multiple is 4104",
                fixed="cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4104  # error\ncfg.model.context_parallel_size = 4",
                unsafe=True),
        # _sft_common: dataset seq_length and packed_sequence_size 2048, rounded with the model's
        Example("cfg = _sft_common()\n" + MODEL + "cfg.model.seq_length = 2048  # error\ncfg.model.context_parallel_size = 3",
                message="the next multiple is 2052",
                fixed="cfg = _sft_common()\ncfg.dataset.seq_length = 2052\n"
                      "cfg.dataset.offline_packing_specs.packed_sequence_size = 2052\n" + MODEL + "cfg.model.seq_length = 2052  # error\ncfg.model.context_parallel_size = 3",
                unsafe=True),
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.model.seq_length = 4098  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4100  # error\ncfg.model.context_parallel_size = 4",
                version="0.3"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.seq_length = 4096",
                dotlist=("model.context_parallel_size=3",)),
    ]

    precondition = context_parallel_known_above_1

    def check(self, cfg, ctx):
        cp = parallel(cfg).cp
        seq = cfg.value("model.seq_length")
        if not int_values(cp, seq) or cp <= 1 or seq % (2 * cp) == 0:
            return
        need = 2 * cp
        rounded = -(-seq // need) * need
        fixes = [FixIntent("set", "model.seq_length", rounded, safe=False,
                           description=f"round model.seq_length up to {rounded}")]
        dseq = value(cfg, "dataset.seq_length")
        if dseq == seq:
            fixes.append(FixIntent("set", "dataset.seq_length", rounded, safe=False,
                                   description=f"round dataset.seq_length up to {rounded}"))
        if offline_packing(cfg) is True:
            path = f"{specs_path(cfg)}.packed_sequence_size"
            if cfg.value(path) == seq:
                fixes.append(FixIntent("set", path, rounded, safe=False,
                                       description=f"round packed_sequence_size up to {rounded}"))
        message = (f"model.seq_length is {seq}, but context_parallel_size={cp} needs a multiple of "
                   f"2*CP = {need} ({seq} % {need} = {seq % need}); the next multiple is {rounded}")
        yield ctx.report(cfg, message, ["model.seq_length", "model.context_parallel_size"], fixes=fixes)
