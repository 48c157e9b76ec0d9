from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    hf_model,
    int_values,
    offline_packing,
    offline_packing_known_on,
    pad_to_max_length,
    specs_path,
    value,
)


class PackedSizeEqualsSeqLength(Rule):
    id = "PK006"
    name = "packed-size-equals-seq-length"
    severity = Severity.WARNING
    other_severities = (Severity.ERROR,)
    summary = "offline packed_sequence_size should equal dataset.seq_length."
    fixable = True
    tags = ("packing", "seq-length")
    doc = """## What it does
Flags offline packing whose `packed_sequence_size` differs from `dataset.seq_length`.

## Why it matters
The packed dataset is built with `max_seq_length = packed_sequence_size`, while the model,
position embeddings, CUDA-graph shapes and the CP/SP padding are sized from `seq_length`. A
larger pack feeds the model sequences longer than it was configured for; a smaller one wastes
the context the run pays for. Megatron-Bridge's `run_recipe.py` silently resets
`packed_sequence_size := dataset.seq_length`, so a value that differs is usually an
override that was lost or a forgotten edit. Megatron-Bridge does not reject it, hence a warning;
an error when CUDA graphs replay a fixed width: with Transformer Engine or full-iteration
graphs and `pad_to_max_length = True`, every packed row is padded to `packed_sequence_size`,
while the graphs are captured for `model.seq_length` tokens (0.6.2 training/train.py:274), so
the shapes do not match at replay.

## Example
```python
cfg.dataset.seq_length = 4096
cfg.dataset.offline_packing_specs.packed_sequence_size = 2048
```

## Fix
Unsafe (changes tokens per step and rebuilds the packed data): set
`packed_sequence_size = dataset.seq_length`.

## Versions
0.3.x (`dataset.packed_sequence_specs`) and 0.6.x (`dataset.offline_packing_specs`).

## Sources
0.6.2 megatron/bridge/data/builders/gpt_sft.py:565-567 and 476 (packed dataset length);
skills/nemo-mbridge-perf-sequence-packing/SKILL.md:58-61; docs/training/packed-sequences.md:78;
scripts/training/recipe_runner.py (sync of packed_sequence_size); 0.6.2
megatron/bridge/training/train.py:274 (TE graph helper sized by model.seq_length), MCore 0.19.2
megatron/core/transformer/cuda_graphs.py:2096-2111,2320 (static inputs of seq_length tokens);
0.6.2 data/datasets/gpt_sft.py:643-646 (pad_to_max_length pads to max_seq_length).
"""
    _TE_GRAPHS = ("cfg = _sft_common()\n"
                  + hf_model() +
                  "cfg.model.cuda_graph_impl = 'transformer_engine'\n"
                  "cfg.dataset.dataset_kwargs = {'pad_to_max_length': True}\n")
    valid = [
        "cfg = _sft_common()",
        "cfg = _sft_common()\ncfg.dataset.seq_length = 4096\ncfg.dataset.offline_packing_specs.packed_sequence_size = 4096",
        "cfg = _sft_common()\nfor n in (2048, 4096):\n    cfg.dataset.seq_length = n",
        Example("cfg = _sft_common()", version="0.3"),
    ]
    invalid = [
        Example("cfg = _sft_common()\ncfg.dataset.offline_packing_specs.packed_sequence_size = 4096  # error",
                message="is 4096, but dataset.seq_length is 2048", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.offline_packing_specs.packed_sequence_size = 2048  # error"),
        # the pack width is the base builder's; the recipe's own choice, seq_length, is the place
        Example("cfg = _sft_common()\ncfg.dataset.seq_length = 4096  # error", version="0.3", unsafe=True,
                fixed="cfg = _sft_common()\ncfg.dataset.seq_length = 4096  # error\n"
                      "cfg.dataset.packed_sequence_specs.packed_sequence_size = 4096"),
        # TE graphs replay seq_length tokens; padded rows are packed_sequence_size wide: an error,
        # reported at the pack width (the edit)
        Example(_TE_GRAPHS + "cfg.dataset.offline_packing_specs.packed_sequence_size = 8192  # error\n"
                "cfg.dataset.seq_length = 4096", message="the shapes do not match at replay", unsafe=True,
                fixed=_TE_GRAPHS + "cfg.dataset.offline_packing_specs.packed_sequence_size = 4096  # error\n"
                      "cfg.dataset.seq_length = 4096"),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        path = f"{specs_path(cfg)}.packed_sequence_size"
        size = value(cfg, path)
        seq = value(cfg, "dataset.seq_length")
        if offline_packing(cfg) is not True or not int_values(size, seq) or size <= 0 or size == seq:
            return
        message = f"{path} is {size}, but dataset.seq_length is {seq}; packs should be exactly seq_length tokens"
        fixed_width = _graphs_replay_fixed_width(cfg)
        if fixed_width:
            message += (f"; with {fixed_width} CUDA graphs captured for {seq} tokens and every packed row padded to "
                        f"{size} (pad_to_max_length), the shapes do not match at replay")
        yield ctx.report(
            cfg, message, [path, "dataset.seq_length"],
            severity=Severity.ERROR if fixed_width else None,
            fixes=[FixIntent("set", path, seq, safe=False, description=f"set packed_sequence_size to {seq}")],
        )


def _graphs_replay_fixed_width(cfg) -> str | None:
    """The kind of training CUDA graphs that replay a fixed token width, when the packed rows
    are padded to one (pad_to_max_length); None otherwise or when unknown."""
    graphs = cuda_graphs(cfg)
    kind = "full-iteration" if graphs.full_iteration is True else "Transformer Engine" if graphs.te is True else None
    return kind if kind and pad_to_max_length(cfg)[0] is True else None
