from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, known, precision_value

MXFP8 = 'cfg = _pretrain_common()\ncfg.mixed_precision = get_mixed_precision_config("bf16_with_mxfp8_mixed")\n'
REUSE = "reuse_grad_buf_for_mxfp8_param_ag"


class ReuseGradBufNeedsParamGather(Rule):
    id = "PR012"
    name = "reuse-grad-buf-needs-param-gather"
    severity = Severity.ERROR
    summary = "reuse_grad_buf_for_mxfp8_param_ag = True needs fp8_param_gather = True."
    fixable = True
    tags = ("precision",)
    doc = """## What it does
Flags `reuse_grad_buf_for_mxfp8_param_ag = True` with `fp8_param_gather = False` on the DDP
config as validate() sees it: `cfg.mixed_precision`'s values where it is a mixed-precision
config (its `setup()` copies them onto `cfg.ddp`), else `cfg.ddp`'s own.

## Why it matters
`ConfigContainer.validate()` calls `ddp.finalize()`, which runs Megatron-Core's
`DistributedDataParallelConfig.__post_init__`: it asserts "Reuse grad buffer only when keeping
params in MXFP8." at job start. The `bf16_with_mxfp8_mixed` recipe turns both on; turning the
parameter all-gather off (`fp8_param_gather = False`, for example to save memory in a
debugging run) and keeping the buffer reuse stops the job. Megatron-FSDP does not skip this
check (it turns the reuse off only later in validate()).

## Example
```python
cfg.mixed_precision = get_mixed_precision_config("bf16_with_mxfp8_mixed")
cfg.mixed_precision.fp8_param_gather = False   # error: reuse_grad_buf_for_mxfp8_param_ag is True
```

## Fix
Set `reuse_grad_buf_for_mxfp8_param_ag = False` beside it (safe: the buffer can be reused only
for an FP8 parameter all-gather, which is off), or keep `fp8_param_gather = True`.

## Versions
0.3.x and 0.6.x (Megatron-Core 0.16.1 and 0.19.2 assert it the same way).

## Sources
MCore 0.19.2 megatron/core/distributed/distributed_data_parallel_config.py:250-254; MCore 0.16.1
megatron/core/distributed/distributed_data_parallel_config.py:150-154; 0.6.2
megatron/bridge/training/config.py:105-117 (`DistributedDataParallelConfig.finalize`), :1253-1254
(called in validate), :1873-1877 (`mixed_precision.setup` before it);
megatron/bridge/training/mixed_precision.py:78-95 (fp8_param and fp8_param_gather kept in sync),
:113-135 (setup), :255-266 (`bf16_with_mxfp8_mixed`). Oracle:
`llama3_8b_pretrain_2gpu_h100_fp8mx_config mixed_precision.fp8_param_gather=false` fails with that
message.
"""
    valid = [
        MXFP8,
        MXFP8 + "cfg.mixed_precision.fp8_param_gather = False\ncfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = False",
        # written on the DDP config, but the mixed-precision recipe's False is copied over it
        "cfg = _pretrain_common()\ncfg.mixed_precision = bf16_mixed()\ncfg.ddp.reuse_grad_buf_for_mxfp8_param_ag = True",
        # fp8_param written after the gather flag sets both
        MXFP8 + "cfg.mixed_precision.fp8_param_gather = False\ncfg.mixed_precision.fp8_param = True",
        MXFP8 + "for flag in [True, False]:\n    cfg.mixed_precision.fp8_param_gather = flag",
        Example(MXFP8, version="0.3"),
    ]
    invalid = [
        # the recipe's reuse comes from the factory: the assignment is added, a safe fix
        Example(MXFP8 + "cfg.mixed_precision.fp8_param_gather = False  # error",
                message="Reuse grad buffer only when keeping params in MXFP8", unsafe=False,
                fixed=MXFP8 + "cfg.mixed_precision.fp8_param_gather = False  # error\n"
                      "cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = False"),
        # fp8_param and fp8_param_gather are kept in sync: writing one writes both
        Example(MXFP8 + "cfg.mixed_precision.fp8_param = False  # error",
                message="mixed_precision.fp8_param_gather is False"),
        # no mixed-precision config: the DDP config's own values
        Example("cfg = _pretrain_common()\ncfg.mixed_precision = None\n"
                "cfg.ddp.reuse_grad_buf_for_mxfp8_param_ag = True  # error",
                message="ddp.fp8_param_gather is False"),
        # modelled on an MXFP8 recipe with the gather turned off on the command line
        Example(MXFP8, dotlist=("mixed_precision.fp8_param_gather=false",)),
        Example(MXFP8 + "cfg.mixed_precision.fp8_param_gather = False  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        reuse, reuse_path = precision_value(cfg, "ddp", REUSE)
        if reuse is not True:
            return
        gather, gather_path = precision_value(cfg, "ddp", "fp8_param_gather")
        if not known(gather) or gather is not False:
            return
        yield ctx.report(
            cfg,
            f"{reuse_path} is True, but {gather_path} is False; Megatron-Core's DistributedDataParallelConfig "
            "asserts 'Reuse grad buffer only when keeping params in MXFP8.' at job start",
            [gather_path, reuse_path],
            fixes=[FixIntent("set", reuse_path, False, safe=True, description=f"set {reuse_path} = False")],
        )
