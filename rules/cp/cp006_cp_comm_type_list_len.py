from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    context_parallel_known_above_1,
    hf_model,
    int_values,
    parallel,
    value,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class CpCommTypeListLen(Rule):
    id = "CP006"
    name = "cp-comm-type-list-len"
    severity = Severity.ERROR
    summary = "A per-layer cp_comm_type list must have one entry per layer (model.num_layers)."
    tags = ("context-parallel",)
    doc = """## What it does
Flags `model.context_parallel_size > 1` with `model.cp_comm_type` given as a list whose length
differs from `model.num_layers`. Silent when `num_layers` is unknown (it usually comes from
the Hugging Face config).

## Why it matters
Each transformer layer picks its CP communication type by index; Megatron-Bridge 0.6.x asserts
"Length of cp_comm_type (...) must equal num_layers (...)" in `validate()` and Megatron-Core's
`TransformerConfig.__post_init__` asserts the same, at job start.

## Example
```python
cfg.model.num_layers = 4
cfg.model.context_parallel_size = 2
cfg.model.cp_comm_type = ["p2p", "a2a"]
```

## Fix
Give one entry per layer, or a single string for all layers; not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1532-1536 (`_validate_cp_comm_type`);
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2778-2783.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 2\ncfg.model.context_parallel_size = 2\n"
        "cfg.model.cp_comm_type = ['p2p', 'a2a']",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 4\ncfg.model.context_parallel_size = 1\n"
        "cfg.model.cp_comm_type = ['p2p', 'a2a']",
        # num_layers from Hugging Face: unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.model.cp_comm_type = ['p2p', 'a2a']",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 2\ncfg.model.context_parallel_size = 2\n"
                "cfg.model.cp_comm_type = ['p2p', 'a2a']", version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 4\ncfg.model.context_parallel_size = 2\n"
        "cfg.model.cp_comm_type = ['p2p', 'a2a']  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 4\ncfg.model.context_parallel_size = 2\n"
                "cfg.model.cp_comm_type = ['p2p', 'a2a']  # error", version="0.3"),
    ]

    precondition = context_parallel_known_above_1

    def check(self, cfg, ctx):
        cp = parallel(cfg).cp
        types = value(cfg, "model.cp_comm_type", None)
        layers = cfg.value("model.num_layers")
        if not isinstance(types, (list, tuple)) or not int_values(cp, layers) or cp <= 1:
            return
        if len(types) == layers:
            return
        message = (f"model.cp_comm_type has {len(types)} entries, but model.num_layers is {layers}; "
                   f"with context_parallel_size={cp} a per-layer list needs exactly one entry per layer")
        yield ctx.report(cfg, message, ["model.cp_comm_type", "model.num_layers", "model.context_parallel_size"],
                         primary="model.cp_comm_type")
