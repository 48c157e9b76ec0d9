from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    fine_grained_offloading_known_on,
    hf_model,
    int_values,
    is_number,
    knows_field,
    value,
)

P = "cfg = _pretrain_common()\n" + hf_model()
FG = "cfg.model.fine_grained_activation_offloading = True\ncfg.model.offload_modules = ['core_attn']\n"
FRACTION = "model.activation_offload_fraction"
DELTA = "model.delta_offload_bytes_across_pp_ranks"


class FineGrainedOffloadRanges(Rule):
    id = "OF007"
    name = "fine-grained-offload-ranges"
    severity = Severity.ERROR
    summary = ("With fine-grained activation offloading, activation_offload_fraction must be in [0, 1] and "
               "delta_offload_bytes_across_pp_ranks >= 0.")
    tags = ("offload",)
    doc = """## What it does
With `model.fine_grained_activation_offloading = True`, flags
`model.activation_offload_fraction` outside [0, 1] and a negative
`model.delta_offload_bytes_across_pp_ranks`, in the releases whose model config has these
fields (Megatron-Core 0.19, Megatron-Bridge 0.6.x).

## Why it matters
`TransformerConfig.__post_init__` (run by `model.finalize()` in `ConfigContainer.validate()`)
asserts "activation_offload_fraction must be in range [0, 1]." and
"delta_offload_bytes_across_pp_ranks must be non-negative." at job start. The fraction is the
share of each offloaded module's activations that goes to the CPU; a percentage written as 50
instead of 0.5 stops the job. Without fine-grained offloading the fields are not read.

## Example
```python
cfg.model.fine_grained_activation_offloading = True
cfg.model.offload_modules = ["core_attn"]
cfg.model.activation_offload_fraction = 50   # a fraction: 0.5
```

## Fix
Give the fraction as a number from 0 to 1 and the byte delta as 0 or more. No automatic fix:
the intended value is the author's.

## Versions
0.6.x (the fields arrived with Megatron-Core 0.19 together with these checks).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1888-1893 (fields at
:1256, :1262). Oracle (Megatron-Bridge 0.6.2, `qwen3_30b_a3b_pretrain_config` with
`model.fine_grained_activation_offloading=True model.offload_modules=['core_attn']`):
`model.activation_offload_fraction=1.5` fails with "activation_offload_fraction must be in range
[0, 1]."; `model.delta_offload_bytes_across_pp_ranks=-1` with
"delta_offload_bytes_across_pp_ranks must be non-negative."; without fine-grained offloading
`activation_offload_fraction=1.5` is accepted.
"""
    valid = [
        P + FG + "cfg.model.activation_offload_fraction = 0.5",
        P + "cfg.model.activation_offload_fraction = 1.5",
        P + FG + "cfg.model.delta_offload_bytes_across_pp_ranks = 0",
        P + FG + "for f in (0.5, 50):\n    cfg.model.activation_offload_fraction = f",
        Example(P + FG, version="0.3"),
    ]
    invalid = [
        Example(P + FG + "cfg.model.activation_offload_fraction = 50  # error",
                message="activation_offload_fraction must be in range [0, 1]."),
        Example(P + FG + "cfg.model.delta_offload_bytes_across_pp_ranks = -1  # error",
                message="delta_offload_bytes_across_pp_ranks must be non-negative."),
        # modelled on a percentage given on the command line
        Example(P + FG, dotlist=("model.activation_offload_fraction=50",)),
    ]
    precondition = fine_grained_offloading_known_on

    def check(self, cfg, ctx):
        if not fine_grained_offloading_known_on(cfg):
            return
        if knows_field(cfg, "activation_offload_fraction"):
            fraction = value(cfg, FRACTION, None)
            if is_number(fraction) and not 0 <= fraction <= 1:
                yield ctx.report(cfg, f"{FRACTION} is {fraction} with fine-grained activation offloading; "
                                      "Megatron-Core asserts 'activation_offload_fraction must be in range [0, 1].' "
                                      "at job start", [FRACTION])
        if knows_field(cfg, "delta_offload_bytes_across_pp_ranks"):
            delta = value(cfg, DELTA, None)
            if int_values(delta) and delta < 0:
                yield ctx.report(cfg, f"{DELTA} is {delta} with fine-grained activation offloading; Megatron-Core "
                                      "asserts 'delta_offload_bytes_across_pp_ranks must be non-negative.' at job "
                                      "start", [DELTA])
