from __future__ import annotations

import math

from mblint.rulekit import (
    ABSENT,
    Example,
    FixIntent,
    Rule,
    Severity,
    cp_sp_alignment_all,
    hf_model,
    int_values,
    known,
    offline_packing,
    offline_packing_known_on,
    pad_to_max_length,
    release_fact,
    UNKNOWN,
    specs_path,
    value,
)


class PadSeqToMultAlignment(Rule):
    id = "PK007"
    name = "pad-seq-to-mult-alignment"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "Offline packing's pad_seq_to_mult must be a multiple of the CP/SP alignment."
    fixable = True
    tags = ("packing", "context-parallel")
    doc = """## What it does
With offline packing, checks that `pad_seq_to_mult` (None counts as 1) is a multiple of
lcm(2*CP if CP>1 else 1, CP*TP if sequence parallelism and TP>1 else 1), over the training CP
and, in 0.6.x, `dist.eval_context_parallel_size`.

## Why it matters
Each sequence inside a pack is split across context-parallel ranks in THD layout, which needs
every segment to be divisible by 2*CP (0.6.2 data/packing/offline.py:175 "Runtime segments ...
must be divisible for THD+CP"); otherwise the CP partitioning fails at the first step. Sequence
parallelism shards the whole pack over TP ranks (per CP rank: CP*TP over the pack). With CP 1
no code needs each segment aligned to TP, only the pack's width, so the SP part is reported
only when that width is known not to be a multiple of TP: a pack padded to the full
`packed_sequence_size` (`pad_to_max_length`, as the SQuAD helper sets,
recipes/utils/dataset_utils.py:130-132) has that width; any other is padded by the dataset's
collate to a multiple of `dataset_kwargs["pad_seq_length_to_mult"]` (default: the packed
dataset's, read from the release; 16 in every release so far; not
`pad_seq_to_mult`; 0.6.2 data/packing/gpt_sft.py:191-198, data/datasets/gpt_sft.py:98), at most
`packed_sequence_size`. With CP > 1 the SP part is still reported from `pad_seq_to_mult`. `ConfigContainer.validate()` does
not check this for offline packing; only `scripts/training/run_recipe.py` repairs it. The CP part
is an error; a violation of only the SP part is reported as a warning.

## Example
```python
cfg.model.context_parallel_size = 2
cfg.model.tensor_model_parallel_size = 8
cfg.model.sequence_parallel = True
cfg.dataset.offline_packing_specs.pad_seq_to_mult = 1
# pad_seq_to_mult is 1, but CP=2 and TP=8 with sequence parallelism need a multiple of lcm(4, 16) = 16
```

## Fix
Unsafe (rebuilds the packed dataset under a new path): set `pad_seq_to_mult` to
lcm(current, required).

## Versions
0.3.x (`dataset.packed_sequence_specs`, no eval CP) and 0.6.x (`dataset.offline_packing_specs`,
including `dist.eval_context_parallel_size`).

## Sources
0.6.2 megatron/bridge/data/packing/offline.py:167-182; megatron/bridge/training/config.py:1206-1214
(the same multiple used for collate padding); 0.3.1 megatron/bridge/data/datasets/packed_sequence.py:242-246
("For THD/context parallel, set to (context_parallel_size * 2)"); docs/training/packed-sequences.md:84-97.
"""
    _LLAMA = "cfg = _sft_common()\n" + hf_model("meta-llama/Meta-Llama-3-8B")
    valid = [
        "cfg = _sft_common()",
        _LLAMA + "cfg.model.context_parallel_size = 2\ncfg.model.tensor_model_parallel_size = 8\ncfg.model.sequence_parallel = True\n"
        "cfg.dataset.offline_packing_specs.pad_seq_to_mult = 16",
        # CP unknown (loop): silent
        _LLAMA + "for cp in (1, 2):\n    cfg.model.context_parallel_size = cp",
        # packing off
        _LLAMA + "cfg.model.context_parallel_size = 2\ncfg.dataset.enable_offline_packing = False\ncfg.dataset.offline_packing_specs = None",
        # SP only, packs padded to the full (aligned) width: each segment needs no TP alignment
        _LLAMA + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = True\n"
        "cfg.dataset.dataset_kwargs = {'pad_to_max_length': True}\n"
        "cfg.dataset.offline_packing_specs.packed_sequence_size = 4096",
        # SP only, packs not padded to the full width (the OpenMathInstruct-2 packed recipes):
        # the collate pads each to a multiple of 16, which TP 2 divides
        _LLAMA + "cfg.model.tensor_model_parallel_size = 2\ncfg.model.sequence_parallel = True\n"
        "cfg.dataset.dataset_kwargs = None\ncfg.dataset.offline_packing_specs.packed_sequence_size = 4096",
    ]
    invalid = [
        # lcm(2*CP, CP*TP) = lcm(4, 16) = 16
        Example(_LLAMA + "cfg.dataset.offline_packing_specs.pad_seq_to_mult = 1  # error\n"
                "cfg.model.tensor_model_parallel_size = 8\ncfg.model.sequence_parallel = True\n"
                "cfg.model.context_parallel_size = 2", message="pad_seq_to_mult is 1, but", unsafe=True,
                fixed=_LLAMA + "cfg.dataset.offline_packing_specs.pad_seq_to_mult = 16  # error\n"
                      "cfg.model.tensor_model_parallel_size = 8\ncfg.model.sequence_parallel = True\n"
                      "cfg.model.context_parallel_size = 2"),
        Example(_LLAMA + "cfg.model.context_parallel_size = 4\ncfg.dataset.packed_sequence_specs.pad_seq_to_mult = 4  # error",
                version="0.3", unsafe=True,
                fixed=_LLAMA + "cfg.model.context_parallel_size = 4\n"
                      "cfg.dataset.packed_sequence_specs.pad_seq_to_mult = 8  # error"),
        # SP only, packs not padded to the full width: the collate pads their width to a multiple
        # of pad_seq_length_to_mult, here 2, which TP 4 does not divide
        Example(_LLAMA + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = True\n"
                "cfg.dataset.dataset_kwargs = {'pad_to_max_length': False, 'pad_seq_length_to_mult': 2}\n"
                "cfg.dataset.offline_packing_specs.pad_seq_to_mult = 2  # finding",
                message="TP=4 with sequence parallelism needs a multiple of 4", unsafe=True,
                fixed=_LLAMA + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = True\n"
                      "cfg.dataset.dataset_kwargs = {'pad_to_max_length': False, 'pad_seq_length_to_mult': 2}\n"
                      "cfg.dataset.offline_packing_specs.pad_seq_to_mult = 4  # finding"),
        # the evaluation CP counts too: lcm(2*2, 2*4) = 8
        Example(_LLAMA + "cfg.model.context_parallel_size = 2\ncfg.dataset.offline_packing_specs.pad_seq_to_mult = 4  # error\n"
                "cfg.dist.eval_context_parallel_size = 4", unsafe=True,
                fixed=_LLAMA + "cfg.model.context_parallel_size = 2\ncfg.dataset.offline_packing_specs.pad_seq_to_mult = 8  # error\n"
                      "cfg.dist.eval_context_parallel_size = 4"),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        if offline_packing(cfg) is not True:
            return
        path = f"{specs_path(cfg)}.pad_seq_to_mult"
        pad = value(cfg, path)
        if not known(pad):
            return
        pad_value = 1 if pad is None else pad
        if not int_values(pad_value) or pad_value <= 0:
            return
        align = cp_sp_alignment_all(cfg)
        if not known(align) or pad_value % align.required == 0:
            return
        sp_only = pad_value % align.cp_required == 0
        if align.cp_required == 1 and _pack_width_aligned(cfg, align.required) is not False:
            return  # CP 1: sequence parallelism splits the whole pack, aligned (or unknown)
        target = math.lcm(pad_value, align.required)
        severity = Severity.WARNING if sp_only else Severity.ERROR
        yield ctx.report(
            cfg,
            f"pad_seq_to_mult is {pad if pad is not None else 'None (1)'}, but {align.text}",
            [path, *align.fields],
            severity=severity,
            fixes=[FixIntent("set", path, target, safe=False,
                             description=f"set pad_seq_to_mult to lcm({pad_value}, {align.required}) = {target}; "
                                         "the packed dataset is rebuilt")],
        )


def _pack_width_aligned(cfg, required: int):
    """Whether every pack's width is a multiple of ``required``: True, False, or None when it
    is not known. A pack padded to the full packed_sequence_size has that width; any other is
    padded to a multiple of the collate's pad_seq_length_to_mult, at most packed_sequence_size:
    the dataset_kwargs entry, else the packed dataset's default in the release being linted (16
    so far: 0.6.2 data/datasets/gpt_sft.py:98, 0.5.1 data/datasets/sft.py:264, 0.4.2 :259, 0.3.1
    :206; used by the collate at 0.6.2 data/packing/gpt_sft.py:191-198). It is not the packing
    specs' pad_seq_to_mult, which pads each segment when the packs are prepared
    (data/packing/offline.py:171-193)."""
    width = value(cfg, f"{specs_path(cfg)}.packed_sequence_size")
    padded, _ = pad_to_max_length(cfg)
    multiple = value(cfg, "dataset.dataset_kwargs.pad_seq_length_to_mult")
    if multiple is ABSENT:
        default = release_fact(cfg, "collate_pad_multiple")
        multiple = default["value"] if default else UNKNOWN
    if not (int_values(width) and width > 0 and known(padded) and int_values(multiple) and multiple > 0):
        return None
    return width % required == 0 and (padded is True or multiple % required == 0)
