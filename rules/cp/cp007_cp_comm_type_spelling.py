from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, hf_model, known, parallel, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")
VALID = ("p2p", "all_gather", "a2a", "a2a+p2p")


class CpCommTypeSpelling(Rule):
    id = "CP007"
    name = "cp-comm-type-spelling"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "cp_comm_type must be one of p2p, all_gather, a2a, a2a+p2p; DSA attention needs allgather."
    tags = ("context-parallel",)
    doc = """## What it does
Flags a `model.cp_comm_type` (or list element) that is not one of `"p2p"`, `"all_gather"`,
`"a2a"`, `"a2a+p2p"` (warning: the value reaches Transformer Engine only at run time), and,
for DeepSeek sparse attention (`model.experimental_attention_variant == "dsa"`) with
`context_parallel_size > 1`, any entry that is not all-gather (`"all_gather"`/`"allgather"`),
including the default None (error).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` asserts "DSAttention context parallelism
currently supports cp_comm_type=allgather only." at job start. A misspelled type for other
attention reaches Transformer Engine's attention only when the first layer runs.

## Example
```python
cfg.model.experimental_attention_variant = "dsa"
cfg.model.context_parallel_size = 2          # cp_comm_type left at None / "p2p"
```

## Fix
For DSA set `model.cp_comm_type = "allgather"` (as the GLM-5 perf recipes do); otherwise fix
the spelling. Not automatic.

## Versions
0.6.x (DSA check: Megatron-Core 0.19.x); the spelling check applies to 0.3.x too.

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:987-1000 (documented
values), 2837-2852 (DSA assertion); 0.6.2 megatron/bridge/perf_recipes/glm_moe_dsa (uses
"allgather").
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.model.cp_comm_type = 'a2a'",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.experimental_attention_variant = 'dsa'\n"
        "cfg.model.context_parallel_size = 2\ncfg.model.cp_comm_type = 'allgather'",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.experimental_attention_variant = 'dsa'\n"
        "cfg.model.context_parallel_size = 1",
        # attention variant from Hugging Face: unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.model.cp_comm_type = 'p2p'",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
                "cfg.model.cp_comm_type = 'all_gather'", version="0.3"),
        # DSA spelling with an HF-derived (unknown) attention variant
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.model.cp_comm_type = 'allgather'",
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.experimental_attention_variant = 'dsa'\n"
        "cfg.model.context_parallel_size = 2\ncfg.model.cp_comm_type = 'p2p'  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.model.cp_comm_type = 'ring'  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
                "cfg.model.cp_comm_type = 'a2a_p2p'  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        raw = value(cfg, "model.cp_comm_type", None)
        if raw is not None and not known(raw):
            return
        items = list(raw) if isinstance(raw, (list, tuple)) else [raw]
        if not all(item is None or (known(item) and isinstance(item, str)) for item in items):
            return
        cp = parallel(cfg).cp
        variant = value(cfg, "model.experimental_attention_variant", None)
        if known(cp, variant) and variant == "dsa" and cp > 1:
            bad = [i for i in items if i is None or i.replace("_", "").lower() != "allgather"]
            if bad:
                message = (f"model.cp_comm_type is {raw!r}, but DeepSeek sparse attention "
                           f"(experimental_attention_variant='dsa') with context_parallel_size={cp} "
                           f"supports only 'allgather'")
                yield ctx.report(cfg, message, ["model.cp_comm_type", "model.experimental_attention_variant",
                                                "model.context_parallel_size"], primary="model.cp_comm_type")
                return
        # "allgather" is DSA's spelling; silent unless the attention variant is known not to be DSA
        variant_known_other = known(variant) and variant != "dsa"
        wrong = sorted({i for i in items if i is not None and i not in VALID
                        and not (i.replace("_", "").lower() == "allgather" and not variant_known_other)})
        if wrong:
            message = (f"model.cp_comm_type {raw!r} contains {', '.join(map(repr, wrong))}, which is not one of "
                       f"{', '.join(map(repr, VALID))}")
            yield ctx.report(cfg, message, ["model.cp_comm_type"], severity=Severity.WARNING)
