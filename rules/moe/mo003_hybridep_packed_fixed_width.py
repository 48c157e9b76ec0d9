from __future__ import annotations

from mblint.rulekit import (
    UNPADDED_PACKS_UNDER_GRAPHS,
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    has_check,
    hf_model,
    hybridep,
    known,
    offline_packing,
    offline_packing_known_on,
    pad_to_max_length,
    specs_path,
    value,
)

ENV = "NUM_OF_TOKENS_PER_CHUNK_COMBINE_API"
DEFAULT_CHUNK = 128
HEP = ('cfg = _sft_common()\n'
       + hf_model() +
       'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "hybridep"\n'
       'cfg.dataset.dataset_kwargs = {"pad_to_max_length": True}\n')
GRAPHED = HEP + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
RAGGED = HEP.replace('cfg.dataset.dataset_kwargs = {"pad_to_max_length": True}\n', '')


class HybridepPackedFixedWidth(Rule):
    id = "MO003"
    name = "hybridep-packed-fixed-width"
    severity = Severity.WARNING
    summary = "With HybridEP, the packed sequence width should be a multiple of the combine chunk."
    fixable = True
    tags = ("moe", "packing")
    doc = """## What it does
Flags offline packing with the HybridEP flex backend (`moe_token_dispatcher_type = "flex"` and
`moe_flex_dispatcher_backend = "hybridep"`, both known) whose packed rows have no fixed width
the combine chunk divides: rows are padded to `packed_sequence_size` only with
`pad_to_max_length = True` (`dataset.dataset_kwargs` or the dataset field), without it they
are ragged whatever the pack size (reported at the padding setting); with it,
`packed_sequence_size` must be a multiple of the chunk (reported at the pack width):
`env_vars["NUM_OF_TOKENS_PER_CHUNK_COMBINE_API"]` when the recipe sets it, else 128 (a
conservative assumption; the library default was not verified). Only where the rows must be
equal: with CUDA graphs, or in a release that does not pad uneven HybridEP inputs itself
(0.3.x; 0.6.x turns `moe_hybridep_pad_uneven_dispatch_inputs` on for eager packed runs: schema
check `hybridep_eager_packing_pads_uneven_inputs`). With training CUDA graphs in 0.6.x a missing
`pad_to_max_length` is also CG012's error, whose finding replaces this one when both rules
are selected.

## Why it matters
HybridEP dispatches fixed-size token chunks; Megatron-Bridge's HybridEP packing recipes pad each
packed row to a fixed width that the chunk divides ("so each row is dispatcher-compatible").
A width that the chunk does not divide leaves a ragged last chunk on every row.

## Example
```python
cfg.env_vars = {"NUM_OF_TOKENS_PER_CHUNK_COMBINE_API": 128}
cfg.dataset.offline_packing_specs.packed_sequence_size = 4000
```

## Fix
Set `dataset.dataset_kwargs["pad_to_max_length"] = True` (pads only the end-of-pack gap); round `packed_sequence_size` up to the next multiple of the chunk. Not safe: it changes the
packed dataset (and must keep matching the sequence length).

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/recipes/moonlight/h100/moonlight_16b.py:540-590 (fixed width, chunk 128:
"Pad only the small end-of-pack gap to the fixed 8K width so each row is dispatcher-compatible",
with pad_to_max_length); 0.6.2 megatron/bridge/data/builders/gpt_sft.py:476,487 (packed rows:
max_seq_length = packed_sequence_size, padded to it only with pad_to_max_length) and
data/datasets/gpt_sft.py:643-646; 0.6.2 megatron/bridge/models/transformer_config.py:91-134
(`_enable_safe_hybridep_dispatch`: eager THD runs pad uneven HybridEP inputs; CUDA-graph runs
"require equal inputs");
0.6.2 megatron/bridge/recipes/qwen/gb200/qwen3_moe.py:89; MCore 0.19.2
megatron/core/transformer/moe/fused_a2a.py:281 (HYBRIDEP_TOKEN_ALIGNMENT = 64);
docs/training/packed-sequences.md (HybridEP section). Unverified at runtime: warning.
"""
    valid = [
        GRAPHED + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4096',
        GRAPHED + 'cfg.env_vars = {"NUM_OF_TOKENS_PER_CHUNK_COMBINE_API": 64}\n'
        'cfg.dataset.offline_packing_specs.packed_sequence_size = 4032',
        GRAPHED.replace('cfg.model.moe_token_dispatcher_type = "flex"\n', '')
        + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4000',
        GRAPHED + 'for n in [4000]:\n    cfg.dataset.offline_packing_specs.packed_sequence_size = n',
        # eager (no CUDA graphs): Megatron-Bridge 0.6 pads uneven HybridEP inputs itself
        # (the Nemotron 3 Ultra packed SFT recipes: no pad_to_max_length, no graphs)
        RAGGED + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4000',
        # padding unknown (the dict comes from a loop)
        Example(RAGGED + 'for kw in [{}, {"pad_to_max_length": True}]:\n    cfg.dataset.dataset_kwargs = kw\n'
                'cfg.dataset.packed_sequence_specs.packed_sequence_size = 4096', version="0.3"),
    ]
    invalid = [
        # 4000 rounded up to a multiple of the default chunk, 128
        Example(GRAPHED + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4000  # error',
                message="packed_sequence_size is 4000, but with HybridEP it should be a multiple of the combine "
                        "chunk (the default chunk of 128); 4000 % 128 = 32, the next multiple is 4096",
                fixed=GRAPHED + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4096  # error',
                unsafe=True),
        # reported at the pack width (the edit), not at the chunk setting
        GRAPHED + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4032  # error\n'
        'cfg.env_vars = {"NUM_OF_TOKENS_PER_CHUNK_COMBINE_API": 128}',
        Example(HEP + 'cfg.dataset.packed_sequence_specs.packed_sequence_size = 2000  # error', version="0.3"),
        # 0.3: nothing pads uneven inputs; a chunk-aligned width, but rows are not padded to it
        Example(RAGGED + 'cfg.dataset.packed_sequence_specs.packed_sequence_size = 8192\n'
                'cfg.dataset.dataset_kwargs = {"chat": True}  # error', version="0.3",
                message="offline packing with HybridEP, but dataset.dataset_kwargs has no pad_to_max_length",
                fixed=RAGGED + 'cfg.dataset.packed_sequence_specs.packed_sequence_size = 8192\n'
                      'cfg.dataset.dataset_kwargs = {"chat": True}  # error\n'
                      'cfg.dataset.dataset_kwargs["pad_to_max_length"] = True',
                unsafe=True),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        if hybridep(cfg) is not True or offline_packing(cfg) is not True:
            return
        graphs_on = cuda_graphs(cfg).on
        if not known(graphs_on):
            return
        if not graphs_on and has_check(cfg, "hybridep_eager_packing_pads_uneven_inputs"):
            return  # Megatron-Bridge turns HybridEP's uneven-input padding on for eager packed runs
        specs = specs_path(cfg)
        pad, pad_field = pad_to_max_length(cfg)
        said = f"{pad_field} is not True"
        if not cfg.origins(pad_field) and pad_field.startswith("dataset.dataset_kwargs."):
            pad_field = "dataset.dataset_kwargs"  # the dict was replaced without the key
            said = "dataset.dataset_kwargs has no pad_to_max_length"
        if pad is False:
            yield ctx.report(
                cfg, f"offline packing with HybridEP, but {said}: packed rows keep their own "
                     f"lengths (ragged) whatever {specs}.packed_sequence_size is; HybridEP wants a fixed width the "
                     f"combine chunk divides",
                [pad_field, "model.moe_flex_dispatcher_backend"], primary=pad_field,
                fixes=[FixIntent("set", "dataset.dataset_kwargs.pad_to_max_length"
                                 if pad_field.startswith("dataset.dataset_kwargs") else pad_field, True, safe=False,
                                 description="pad each packed row to packed_sequence_size")],
                problem=UNPADDED_PACKS_UNDER_GRAPHS if graphs_on else "")
            return
        if pad is not True:
            return
        size = cfg.value(f"{specs}.packed_sequence_size")
        raw = value(cfg, f"env_vars.{ENV}", None)
        if not known(size) or not isinstance(size, int) or size <= 0 or not (raw is None or known(raw)):
            return
        try:
            chunk = DEFAULT_CHUNK if raw is None else int(raw)
        except (TypeError, ValueError):
            return
        if chunk <= 0 or size % chunk == 0:
            return
        rounded = -(-size // chunk) * chunk
        source = f"env_vars[{ENV!r}] = {chunk}" if raw is not None else f"the default chunk of {chunk}"
        width = f"{specs}.packed_sequence_size"
        fields = [width, "model.moe_flex_dispatcher_backend"]
        if raw is not None:
            fields.append(f"env_vars.{ENV}")
        yield ctx.report(
            cfg,
            f"{width} is {size}, but with HybridEP it should be a multiple of the combine "
            f"chunk ({source}); {size} % {chunk} = {size % chunk}, the next multiple is {rounded}",
            fields, primary=width,
            fixes=[FixIntent("set", width, rounded, safe=False,
                             description=f"round packed_sequence_size up to {rounded}")],
        )
