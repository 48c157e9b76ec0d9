from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, format_value, hf_model, known, precision_value, value

PAO = "optimizer.use_precision_aware_optimizer"


class PrecisionAwareOptimizer(Rule):
    id = "PR005"
    name = "precision-aware-optimizer"
    severity = Severity.ERROR
    summary = "The precision-aware optimizer needs Adam, optimizer.use_distributed_optimizer=True and matching model/optimizer bf16/fp16."
    fixable = True
    tags = ("precision", "optimizer")
    doc = """## What it does
With `optimizer.use_precision_aware_optimizer = True`, flags
- `optimizer.optimizer` other than `"adam"`;
- `optimizer.use_distributed_optimizer = False`, even when `ddp.use_distributed_optimizer` is
  True: the check runs in `optimizer.finalize()` before Megatron-Bridge syncs the two flags;
- model and optimizer half-precision flags that disagree (`model.bf16` without
  `optimizer.bf16`, `model.fp16` without `optimizer.fp16`, or an fp32 model with a half-precision
  optimizer), as seen after `cfg.mixed_precision` copied its values onto both.

## Why it matters
Megatron-Core's `OptimizerConfig.__post_init__` asserts "--use-precision-aware-optimizer only
supported with adam" / "... only supported with distributed optimizer", and
`_validate_mixed_precision_consistency` asserts the bf16/fp16 agreement, all at job start
(confirmed with Megatron-Bridge 0.6.2, including the case where only
`optimizer.use_distributed_optimizer` is False).

## Example
```python
cfg.optimizer.use_precision_aware_optimizer = True
cfg.optimizer.use_distributed_optimizer = False
```

## Fix
Set `optimizer.use_distributed_optimizer = True` (safe: the distributed optimizer is what the
precision-aware optimizer requires), use Adam, or turn the precision-aware optimizer off.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/optimizer/optimizer_config.py:430-436; 0.6.2
megatron/bridge/training/config.py:1260-1263 (`optimizer.finalize()` in `validate`), :1416
(`_validate_and_sync_distributed_optimizer_settings` runs later), :2004-2023; 0.3.1
megatron/bridge/training/config.py:1925-1942.
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.optimizer.use_precision_aware_optimizer = True",
        "cfg = _pretrain_common()\ncfg.optimizer.use_distributed_optimizer = False",
        "cfg = _pretrain_common()\ncfg.optimizer.use_precision_aware_optimizer = True\n"
        "for flag in [True, False]:\n    cfg.optimizer.use_distributed_optimizer = flag",
        # the mixed-precision name decides model/optimizer bf16: not known statically
        "cfg = _pretrain_common()\ncfg.optimizer.use_precision_aware_optimizer = True\ncfg.optimizer.bf16 = False",
        Example("cfg = _pretrain_common()\ncfg.optimizer.use_precision_aware_optimizer = True", version="0.3"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\ncfg.optimizer.use_precision_aware_optimizer = True\n"
                "cfg.optimizer.use_distributed_optimizer = False  # error\ncfg.ddp.use_distributed_optimizer = True",
                message="the precision-aware optimizer needs the distributed optimizer", unsafe=True,
                fixed="cfg = _pretrain_common()\ncfg.optimizer.use_precision_aware_optimizer = True\n"
                      "cfg.optimizer.use_distributed_optimizer = True  # error\ncfg.ddp.use_distributed_optimizer = True"),
        "cfg = _pretrain_common()\ncfg.optimizer.optimizer = 'sgd'\ncfg.optimizer.use_precision_aware_optimizer = True  # error",
        "cfg = _pretrain_common()\n" + hf_model() +
        "cfg.mixed_precision = None\ncfg.model.bf16 = True\ncfg.model.fp16 = False\ncfg.optimizer.bf16 = False\n"
        "cfg.optimizer.use_precision_aware_optimizer = True  # error",
        Example("cfg = _pretrain_common()", dotlist=("optimizer.use_precision_aware_optimizer=true",
                                                     "optimizer.use_distributed_optimizer=false")),
        Example("cfg = _pretrain_common()\ncfg.optimizer.use_distributed_optimizer = False  # error\n"
                "cfg.optimizer.use_precision_aware_optimizer = True", version="0.3"),
    ]

    def check(self, cfg, ctx):
        aware = value(cfg, PAO, False)
        if not known(aware) or aware is not True:
            return
        kind = value(cfg, "optimizer.optimizer", "adam")
        if known(kind) and kind != "adam":
            yield ctx.report(cfg, f"{PAO} is True, but optimizer.optimizer is {kind!r}; the precision-aware "
                                  f"optimizer only supports 'adam' (OptimizerConfig asserts at job start)",
                             [PAO, "optimizer.optimizer"])
        dist = value(cfg, "optimizer.use_distributed_optimizer", False)
        if known(dist) and dist is False:
            message = (f"{PAO} is True, but optimizer.use_distributed_optimizer is False; the precision-aware "
                       f"optimizer needs the distributed optimizer, and optimizer.finalize() asserts this before "
                       f"Megatron-Bridge syncs it with ddp.use_distributed_optimizer")
            yield ctx.report(cfg, message, [PAO, "optimizer.use_distributed_optimizer"],
                             fixes=[FixIntent("set", "optimizer.use_distributed_optimizer", True, safe=True,
                                              description="enable the distributed optimizer")])
        model_bf16, mb_path = precision_value(cfg, "model", "bf16")
        model_fp16, mf_path = precision_value(cfg, "model", "fp16")
        opt_bf16, ob_path = precision_value(cfg, "optimizer", "bf16")
        opt_fp16, of_path = precision_value(cfg, "optimizer", "fp16")
        if not known(model_bf16, model_fp16, opt_bf16, opt_fp16):
            return
        problem = None
        if model_bf16 and not opt_bf16:
            problem = (f"model.bf16 is True but optimizer.bf16 is {format_value(opt_bf16)}", [mb_path, ob_path])
        elif model_fp16 and not opt_fp16:
            problem = (f"model.fp16 is True but optimizer.fp16 is {format_value(opt_fp16)}", [mf_path, of_path])
        elif not model_bf16 and not model_fp16 and (opt_bf16 or opt_fp16):
            problem = ("the model runs in fp32 (model.bf16 and model.fp16 are False) but optimizer."
                       f"{'bf16' if opt_bf16 else 'fp16'} is True", [mb_path, mf_path, ob_path, of_path])
        if problem is not None and "mixed_precision" not in problem[1][0]:
            yield ctx.report(cfg, f"{PAO} is True, and {problem[0]}; the precision-aware optimizer needs the "
                                  f"optimizer's half-precision flags to match the model's (validate() asserts)",
                             [PAO, *dict.fromkeys(problem[1])])
