from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, known, knows_field, precision_value, value

P = "cfg = _pretrain_common()\n"  # bf16_mixed: grad_reduce_in_fp32 = True
PATTERNS = "ddp.param_name_patterns_for_fp32_local_accumulation"


class Fp32AccumulationPatterns(Rule):
    id = "PR013"
    name = "fp32-accumulation-patterns"
    severity = Severity.ERROR
    summary = ("ddp.param_name_patterns_for_fp32_local_accumulation is only for gradients reduced in 16 bits: it "
               "cannot be combined with grad_reduce_in_fp32.")
    tags = ("precision",)
    doc = """## What it does
Flags a non-empty `ddp.param_name_patterns_for_fp32_local_accumulation` while
`grad_reduce_in_fp32` is True as the DDP config has it after `runtime_config_update()`: the
mixed-precision config's value when `cfg.mixed_precision` is set (its `setup()` copies it; the
BF16 and FP8 recipes set True), else `ddp.grad_reduce_in_fp32`. In the releases with the field
(0.4.x and later).

## Why it matters
Megatron-Core's `DistributedDataParallelConfig.__post_init__`, run by `ddp.finalize()` in
`ConfigContainer.validate()`, asserts "Only need to explicitly specify param_name patterns for
FP32 local accumulation if .main_grads aren't already in FP32" at job start. The patterns keep
chosen parameters' gradients in FP32 when the others are reduced in BF16; with every gradient in
FP32 already, Megatron-Core refuses them.

## Example
```python
cfg.mixed_precision = bf16_mixed()       # grad_reduce_in_fp32 = True
cfg.ddp.param_name_patterns_for_fp32_local_accumulation = ("*router*",)
```

## Fix
Either drop the patterns (every gradient is in FP32 already) or reduce in 16 bits
(`mixed_precision.grad_reduce_in_fp32 = False`). No automatic fix: the choice trades memory and
bandwidth for precision.

## Versions
0.4.x to 0.6.x (Megatron-Core 0.17 added the field and the check).

## Sources
Megatron-Core 0.19.2 megatron/core/distributed/distributed_data_parallel_config.py:262-266 (0.17.0
the same); 0.6.2 megatron/bridge/training/mixed_precision.py:47, 113-135 (setup copies
grad_reduce_in_fp32 onto the DDP config). Oracle (0.6.2, `llama3_8b_pretrain_config`, bf16_mixed):
`ddp.param_name_patterns_for_fp32_local_accumulation=['*router*']` fails with that message.
"""
    valid = [
        P + "cfg.ddp.param_name_patterns_for_fp32_local_accumulation = ()",
        P + "cfg.mixed_precision = bf16_mixed()\ncfg.mixed_precision.grad_reduce_in_fp32 = False\n"
        "cfg.ddp.param_name_patterns_for_fp32_local_accumulation = ('*router*',)",
        P + "cfg.mixed_precision = bf16_mixed()\nfor flag in (True, False):\n    cfg.mixed_precision.grad_reduce_in_fp32 = flag\n"
        "cfg.ddp.param_name_patterns_for_fp32_local_accumulation = ('*router*',)",
        P + "cfg.mixed_precision = None\ncfg.ddp.grad_reduce_in_fp32 = False\n"
        "cfg.ddp.param_name_patterns_for_fp32_local_accumulation = ('*router*',)",
        Example(P, version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.ddp.param_name_patterns_for_fp32_local_accumulation = ('*router*',)  # error",
                message="Only need to explicitly specify param_name patterns for FP32 local accumulation"),
        # modelled on the patterns given on the launch line to a BF16 recipe
        Example(P, dotlist=("ddp.param_name_patterns_for_fp32_local_accumulation=[*router*]",)),
        # without a mixed-precision config the DDP field decides
        Example(P + "cfg.mixed_precision = None\ncfg.ddp.grad_reduce_in_fp32 = True\n"
                "cfg.ddp.param_name_patterns_for_fp32_local_accumulation = ('*router*',)  # error"),
    ]

    def check(self, cfg, ctx):
        if not knows_field(cfg, "param_name_patterns_for_fp32_local_accumulation"):
            return
        patterns = value(cfg, PATTERNS, None)
        if not known(patterns) or not isinstance(patterns, (list, tuple)) or not patterns:
            return
        fp32, fp32_path = precision_value(cfg, "ddp", "grad_reduce_in_fp32")
        if fp32 is not True:
            return
        yield ctx.report(cfg, f"{PATTERNS} is {list(patterns)} but {fp32_path} is True (every gradient is reduced "
                              "in FP32 already); Megatron-Core asserts 'Only need to explicitly specify param_name "
                              "patterns for FP32 local accumulation if .main_grads aren't already in FP32' at job "
                              "start", [PATTERNS, fp32_path], primary=PATTERNS)
