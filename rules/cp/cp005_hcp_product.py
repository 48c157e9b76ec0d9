from __future__ import annotations

import math

from mblint.rulekit import Example, Rule, Severity, has_check, hf_model, known, parallel, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class HcpProduct(Rule):
    id = "CP005"
    name = "hcp-product"
    severity = Severity.ERROR
    summary = "The product of hierarchical_context_parallel_sizes must equal context_parallel_size."
    tags = ("context-parallel",)
    doc = """## What it does
Flags `model.hierarchical_context_parallel_sizes` whose product differs from
`model.context_parallel_size`.

## Why it matters
The hierarchical CP groups tile the CP group; Megatron-Bridge 0.6.x asserts "Product of
hierarchical_context_parallel_sizes ... must equal context_parallel_size" in `validate()`, and
Megatron-Core asserts the same when it creates the groups (`initialize_model_parallel`), on
every rank after the allocation.

## Example
```python
cfg.model.context_parallel_size = 16
cfg.model.hierarchical_context_parallel_sizes = [8, 4]   # 32 != 16
```

## Fix
Make the sizes multiply to CP (e.g. `[8, 2]` for CP=16) or change CP; not automatic, the
intended split is the user's choice.

## Versions
0.3.x and 0.6.x (0.3.x through Megatron-Core's group creation).

## Sources
0.6.2 megatron/bridge/training/config.py:1553-1558 (`_validate_cp_comm_type`);
Megatron-Core 0.19.2 megatron/core/parallel_state.py:1127-1128.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 16\n"
        "cfg.model.cp_comm_type = 'a2a+p2p'\ncfg.model.hierarchical_context_parallel_sizes = [8, 2]",
        # CP unknown
        "cfg = _pretrain_common()\n" + MODEL + "for cp in (8, 16):\n    cfg.model.context_parallel_size = cp\n"
        "cfg.model.hierarchical_context_parallel_sizes = [8, 2]",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\n"
                "cfg.model.hierarchical_context_parallel_sizes = [2, 2]", version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 16\n"
        "cfg.model.cp_comm_type = 'a2a+p2p'\ncfg.model.hierarchical_context_parallel_sizes = [8, 4]  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.cp_comm_type = 'a2a+p2p'\n"
        "cfg.model.hierarchical_context_parallel_sizes = [8, 2]\ncfg.model.context_parallel_size = 8  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 4\n"
                "cfg.model.hierarchical_context_parallel_sizes = [4, 2]  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        cp = parallel(cfg).cp
        hcp = value(cfg, "model.hierarchical_context_parallel_sizes", None)
        if hcp is None or not known(cp) or not isinstance(hcp, (list, tuple)):
            return
        if not all(known(s) and isinstance(s, int) for s in hcp):
            return
        if not hcp and not has_check(cfg, "hcp_product_checked"):
            return  # Megatron-Core skips an empty list; without the Bridge check nothing rejects it
        product = math.prod(hcp)
        if product == cp:
            return
        shown = " * ".join(str(s) for s in hcp) or "1"
        message = (f"model.hierarchical_context_parallel_sizes is {list(hcp)} ({shown} = {product}), "
                   f"but context_parallel_size is {cp}; the product must equal CP")
        yield ctx.report(cfg, message, ["model.hierarchical_context_parallel_sizes", "model.context_parallel_size"])
