from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, known, value

DTYPE_FIELDS = ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")
FP32 = {"torch.float32", "float32", "torch.float", "fp32"}


class NonPrecisionAwareDtypes(Rule):
    id = "PR006"
    name = "non-precision-aware-dtypes"
    severity = Severity.ERROR
    summary = "Optimizer state dtypes other than fp32 need optimizer.use_precision_aware_optimizer = True."
    fixable = True
    tags = ("precision", "optimizer")
    doc = """## What it does
Flags `optimizer.main_grads_dtype`, `main_params_dtype`, `exp_avg_dtype` or
`exp_avg_sq_dtype` set to anything but `torch.float32` while
`optimizer.use_precision_aware_optimizer` is False.

## Why it matters
Megatron-Core's `OptimizerConfig.__post_init__` (run by `ConfigContainer.validate()` through
`optimizer.finalize()`) asserts "main_grads_dtype can only be fp32 when not using
precision-aware optimizer" (and the same for the other three) at job start (confirmed with
Megatron-Bridge 0.6.2).

## Example
```python
cfg.optimizer.use_precision_aware_optimizer = False
cfg.optimizer.exp_avg_dtype = torch.bfloat16
```

## Fix
Set `optimizer.use_precision_aware_optimizer = True` (which also needs Adam and the
distributed optimizer, see PR005), or keep the dtypes at `torch.float32`. Unsafe: either
changes optimizer memory and numerics. The automatic fix sets `torch.float32` in a YAML override
file only (Megatron-Bridge turns the string back into the dtype there); in Python the value is
the expression `torch.float32`, which mblint's fixes do not write (a string would fail the
assertion).

## Versions
0.3.x and 0.6.x. Dtypes written as `torch.<dtype>` in Python recipes and as strings in YAML or
command-line overrides are checked.

## Sources
MCore 0.19.2 megatron/core/optimizer/optimizer_config.py:466-482.
"""
    valid = [
        Example("cfg = _pretrain_common()", dotlist=("optimizer.use_precision_aware_optimizer=true",
                                                     "optimizer.exp_avg_dtype=torch.bfloat16")),
        Example("cfg = _pretrain_common()", dotlist=("optimizer.exp_avg_dtype=torch.float32",)),
        "cfg = _pretrain_common()\ncfg.optimizer.exp_avg_dtype = torch.float32",
    ]
    invalid = [
        # no fix in Python: mblint writes values, and torch.float32 is an expression there
        Example("cfg = _pretrain_common()\ncfg.optimizer.exp_avg_dtype = torch.bfloat16  # error",
                message="without the precision-aware optimizer it must be torch.float32",
                fixed="cfg = _pretrain_common()\ncfg.optimizer.exp_avg_dtype = torch.bfloat16  # error"),
        Example("cfg = _pretrain_common()", dotlist=("optimizer.main_grads_dtype=torch.bfloat16",)),
        Example("cfg = _pretrain_common()", yaml="optimizer:\n  exp_avg_sq_dtype: torch.float16  # error\n",
                fixed_yaml="optimizer:\n  exp_avg_sq_dtype: torch.float32  # error\n", unsafe=True),
    ]

    def check(self, cfg, ctx):
        aware = value(cfg, "optimizer.use_precision_aware_optimizer", False)
        if not known(aware) or aware:
            return
        for name in DTYPE_FIELDS:
            path = f"optimizer.{name}"
            dtype = value(cfg, path, None)
            if not known(dtype) or dtype is None or str(dtype) in FP32:
                continue
            # The str "torch.float32" stands for the dtype only where Megatron-Bridge converts
            # override strings (omegaconf_utils.py:498-503); written into Python it would stay a
            # str, which OptimizerConfig's `== torch.float32` assertion rejects.
            origin = cfg.last_origin(path)
            fixes = [FixIntent("set", path, "torch.float32", safe=False, description=f"set {path} = torch.float32")
                     ] if origin is not None and origin.kind == "override" else []
            yield ctx.report(cfg, f"{path} is {dtype}, but optimizer.use_precision_aware_optimizer is False; "
                                  f"without the precision-aware optimizer it must be torch.float32 "
                                  f"(OptimizerConfig asserts at job start)",
                             [path, "optimizer.use_precision_aware_optimizer"], primary=path, fixes=fixes)
