from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    has_check,
    hf_model,
    known,
    knows_field,
    megatron_fsdp,
    value,
)

P = "cfg = _pretrain_common()\n"
HF = P + hf_model()
PROF = P + "cfg.profiling = ProfilingConfig()\n"


class ProfilingLoggingMisc(Rule):
    id = "OT011"
    name = "profiling-logging-misc"
    severity = Severity.ERROR
    summary = "Profiling, logging and ModelOpt settings validate() rejects: both profilers, step range backwards, MLflow/Comet without a run name, ModelOpt with gradient-accumulation fusion."
    fixable = True
    tags = ("general",)
    doc = """## What it does
Flags
- `profiling.use_pytorch_profiler` and `profiling.use_nsys_profiler` both True;
- `profiling.profile_step_start`/`profile_step_end` negative, or end before start;
- `logger.mlflow_experiment` without `logger.mlflow_run_name`;
- `logger.comet_project` without `logger.comet_experiment_name` (0.6.x);
- `model.restore_modelopt_state` with `model.gradient_accumulation_fusion`.

## Why it matters
`ProfilingConfig.finalize()`, `LoggerConfig.finalize()` and `ConfigContainer.validate()` assert
or raise on each at job start ("Exactly one of pytorch or nsys profiler should be enabled",
"profile_step_end (5) must be >= profile_step_start (10)", "Set logger.mlflow_run_name when
enabling MLFlow logging.", "Gradient accumulation fusion is not supported with
ModelOpt/Quantized models."; confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.profiling.profile_step_start = 10
cfg.profiling.profile_step_end = 5
```

## Fix
Follow the message. Setting `gradient_accumulation_fusion = False` is safe (same math).

## Versions
0.3.x and 0.6.x (Comet only in 0.6.x; on 0.3.x Megatron-FSDP turns the fusion off first).

## Sources
0.6.2 megatron/bridge/training/config.py:684-733, :755-764, :1376-1383; 0.3.1
megatron/bridge/training/config.py:1043-1046, :1100-1116, :1493-1498.
"""
    valid = [
        PROF + "cfg.profiling.use_nsys_profiler = True\ncfg.profiling.profile_step_start = 5\ncfg.profiling.profile_step_end = 10",
        P + "cfg.logger.mlflow_experiment = 'exp'\ncfg.logger.mlflow_run_name = 'run1'",
        HF + "cfg.model.restore_modelopt_state = True\ncfg.model.gradient_accumulation_fusion = False",
        PROF + "cfg.profiling.profile_step_start = 10\nfor n in [5, 20]:\n    cfg.profiling.profile_step_end = n",
        Example(P + "cfg.logger.mlflow_experiment = 'exp'\ncfg.logger.mlflow_run_name = 'r'", version="0.3"),
    ]
    invalid = [
        PROF + "cfg.profiling.profile_step_start = 10\ncfg.profiling.profile_step_end = 5  # error",
        PROF + "cfg.profiling.use_pytorch_profiler = True\ncfg.profiling.use_nsys_profiler = True  # error",
        P + "cfg.logger.mlflow_experiment = 'exp'  # error",
        P + "cfg.logger.comet_project = 'proj'  # error",
        # replacing a value the recipe wrote is unsafe
        Example(HF + "cfg.model.gradient_accumulation_fusion = True  # error\ncfg.model.restore_modelopt_state = True",
                message="gradient-accumulation fusion is not supported with ModelOpt/quantized models",
                fixed=HF + "cfg.model.gradient_accumulation_fusion = False  # error\ncfg.model.restore_modelopt_state = True",
                unsafe=True),
        Example(P + "cfg.logger.mlflow_experiment = 'exp'  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if cfg.type_of("profiling") is not None:
            torch_prof = value(cfg, "profiling.use_pytorch_profiler", False)
            nsys = value(cfg, "profiling.use_nsys_profiler", False)
            if torch_prof is True and nsys is True:
                yield ctx.report(cfg, "profiling.use_pytorch_profiler and profiling.use_nsys_profiler are both True; "
                                      "enable only one profiler (ProfilingConfig asserts at job start)",
                                 ["profiling.use_pytorch_profiler", "profiling.use_nsys_profiler"])
            start = value(cfg, "profiling.profile_step_start", 10)
            end = value(cfg, "profiling.profile_step_end", 12)
            if known(start, end) and isinstance(start, int) and isinstance(end, int):
                if start < 0 or end < 0:
                    yield ctx.report(cfg, f"profiling.profile_step_start = {start} and profile_step_end = {end}; both must be "
                                          f">= 0 (ProfilingConfig asserts at job start)",
                                     ["profiling.profile_step_start", "profiling.profile_step_end"])
                elif end < start:
                    yield ctx.report(cfg, f"profiling.profile_step_end = {end} is before profiling.profile_step_start = "
                                          f"{start}; the end must be >= the start (ProfilingConfig asserts at job start)",
                                     ["profiling.profile_step_start", "profiling.profile_step_end"])
        pairs = [("mlflow_experiment", "mlflow_run_name", "MLflow")]
        if knows_field(cfg, "comet_project"):
            pairs.append(("comet_project", "comet_experiment_name", "Comet ML"))
        for on, name, label in pairs:
            enabled, run = value(cfg, f"logger.{on}", None), value(cfg, f"logger.{name}", None)
            if known(enabled, run) and enabled and not run:
                yield ctx.report(cfg, f"logger.{on} is {enabled!r}, but logger.{name} is {run!r}; {label} logging needs a "
                                      f"run name (LoggerConfig raises at job start)", [f"logger.{on}", f"logger.{name}"],
                                 primary=f"logger.{on}")
        restore = value(cfg, "model.restore_modelopt_state", False)
        fusion = value(cfg, "model.gradient_accumulation_fusion", False)
        if known(restore, fusion) and restore is True and fusion is True:
            if has_check(cfg, "fsdp_turns_off_grad_accum_fusion") and megatron_fsdp(cfg) is not False:
                return
            yield ctx.report(cfg, "model.restore_modelopt_state is True with model.gradient_accumulation_fusion True; "
                                  "gradient-accumulation fusion is not supported with ModelOpt/quantized models "
                                  "(validate() asserts at job start)",
                             ["model.restore_modelopt_state", "model.gradient_accumulation_fusion"],
                             fixes=[FixIntent("set", "model.gradient_accumulation_fusion", False, safe=True,
                                              description="disable gradient-accumulation fusion")])
