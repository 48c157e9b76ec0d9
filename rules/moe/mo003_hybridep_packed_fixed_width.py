from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    hybridep,
    known,
    offline_packing,
    offline_packing_known_on,
    specs_path,
    value,
)

ENV = "NUM_OF_TOKENS_PER_CHUNK_COMBINE_API"
DEFAULT_CHUNK = 128
HEP = ('cfg = _sft_common()\n'
       'cfg.model = AutoBridge.from_hf_pretrained("x").to_megatron_provider(load_weights=False)\n'
       'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "hybridep"\n')


class HybridepPackedFixedWidth(Rule):
    id = "MO003"
    name = "hybridep-packed-fixed-width"
    severity = Severity.WARNING
    summary = "With HybridEP, the packed sequence width should be a multiple of the combine chunk."
    fixable = True
    tags = ("moe", "packing")
    doc = """## What it does
Flags offline packing with the HybridEP flex backend (`moe_token_dispatcher_type = "flex"` and
`moe_flex_dispatcher_backend = "hybridep"`, both known) when `packed_sequence_size` is not a
multiple of the HybridEP combine chunk: `env_vars["NUM_OF_TOKENS_PER_CHUNK_COMBINE_API"]` when the
recipe sets it, else 128 (a conservative assumption; the library default was not verified).

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
Round `packed_sequence_size` up to the next multiple of the chunk. Not safe: it changes the
packed dataset (and must keep matching the sequence length).

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/recipes/moonlight/h100/moonlight_16b.py:540-590 (fixed width, chunk 128);
0.6.2 megatron/bridge/recipes/qwen/gb200/qwen3_moe.py:89; MCore 0.19.2
megatron/core/transformer/moe/fused_a2a.py:281 (HYBRIDEP_TOKEN_ALIGNMENT = 64);
docs/training/packed-sequences.md (HybridEP section). Unverified at runtime: warning.
"""
    valid = [
        HEP + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4096',
        HEP + 'cfg.env_vars = {"NUM_OF_TOKENS_PER_CHUNK_COMBINE_API": 64}\n'
        'cfg.dataset.offline_packing_specs.packed_sequence_size = 4032',
        HEP.replace('cfg.model.moe_token_dispatcher_type = "flex"\n', '')
        + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4000',
        HEP + 'for n in [4000]:\n    cfg.dataset.offline_packing_specs.packed_sequence_size = n',
    ]
    invalid = [
        HEP + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4000  # error',
        HEP + 'cfg.dataset.offline_packing_specs.packed_sequence_size = 4032\n'
        'cfg.env_vars = {"NUM_OF_TOKENS_PER_CHUNK_COMBINE_API": 128}  # error',
        Example(HEP + 'cfg.dataset.packed_sequence_specs.packed_sequence_size = 2000  # error', version="0.3"),
    ]

    precondition = offline_packing_known_on

    def check(self, cfg, ctx):
        if hybridep(cfg) is not True or offline_packing(cfg) is not True:
            return
        specs = specs_path(cfg)
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
        fields = [f"{specs}.packed_sequence_size", "model.moe_flex_dispatcher_backend"]
        if raw is not None:
            fields.append(f"env_vars.{ENV}")
        yield ctx.report(
            cfg,
            f"{specs}.packed_sequence_size is {size}, but with HybridEP it should be a multiple of the combine "
            f"chunk ({source}); {size} % {chunk} = {size % chunk}, the next multiple is {rounded}",
            fields,
            fixes=[FixIntent("set", f"{specs}.packed_sequence_size", rounded, safe=False,
                             description=f"round packed_sequence_size up to {rounded}")],
        )
