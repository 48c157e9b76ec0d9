from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, is_number, value

P = ("from megatron.bridge.training.config import NVRxStragglerDetectionConfig\ncfg = _pretrain_common()\n"
     "cfg.nvrx_straggler = NVRxStragglerDetectionConfig(enabled=True)\n")
NODE = "nvrx_straggler"
THRESHOLDS = ("gpu_relative_perf_threshold", "gpu_individual_perf_threshold")


class NvrxStragglerSettings(Rule):
    id = "OT023"
    name = "nvrx-straggler-settings"
    severity = Severity.ERROR
    summary = ("Enabled NVRx straggler detection needs one of its performance scores, a positive report interval "
               "and thresholds in [0, 1].")
    tags = ("general",)
    doc = """## What it does
With `cfg.nvrx_straggler` set and `enabled = True`, flags
- `calc_relative_gpu_perf` and `calc_individual_gpu_perf` both False;
- `report_time_interval` of 0 or less;
- `gpu_relative_perf_threshold` or `gpu_individual_perf_threshold` outside [0, 1].

## Why it matters
`NVRxStragglerDetectionConfig.finalize()`, run by `ConfigContainer.validate()`, raises "At least
one of calc_relative_gpu_perf or calc_individual_gpu_perf must be True when NVRx straggler
detection is enabled.", "report_time_interval must be positive." and "gpu_relative_perf_threshold
must be between 0.0 and 1.0." (or the individual one) at job start. A threshold written as a
percentage (70 for 0.7) is the usual slip.

## Example
```python
cfg.nvrx_straggler = NVRxStragglerDetectionConfig(enabled=True, gpu_relative_perf_threshold=70)
```

## Fix
Give the thresholds as fractions, a positive interval in seconds, and keep one score on. No
automatic fix.

## Versions
0.3.x to 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:883-896 (`finalize`, called by `validate()` at :1270-1271;
defaults at :849-868); 0.3.1 the same checks. Oracle (0.6.2, a Llama-3 8B recipe given
`NVRxStragglerDetectionConfig(enabled=True)`): both scores off, `report_time_interval=0`,
`gpu_relative_perf_threshold=70` and `gpu_individual_perf_threshold=-0.1` fail with these messages.
"""
    valid = [
        P,
        P + "cfg.nvrx_straggler.gpu_relative_perf_threshold = 0.5",
        P.replace("enabled=True", "enabled=False") + "cfg.nvrx_straggler.gpu_relative_perf_threshold = 70",
        P + "for t in (0.5, 70):\n    cfg.nvrx_straggler.gpu_relative_perf_threshold = t",
        Example(P + "cfg.nvrx_straggler.report_time_interval = 60.0", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.nvrx_straggler.gpu_relative_perf_threshold = 70  # error",
                message="gpu_relative_perf_threshold must be between 0.0 and 1.0."),
        Example(P + "cfg.nvrx_straggler.report_time_interval = 0  # error",
                message="report_time_interval must be positive."),
        Example(P + "cfg.nvrx_straggler.calc_relative_gpu_perf = False\n"
                "cfg.nvrx_straggler.calc_individual_gpu_perf = False  # error",
                message="At least one of calc_relative_gpu_perf or calc_individual_gpu_perf must be True"),
        # modelled on a percentage threshold given on the launch line
        Example(P, dotlist=("nvrx_straggler.gpu_individual_perf_threshold=70",)),
        Example(P + "cfg.nvrx_straggler.gpu_relative_perf_threshold = 70  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if cfg.type_of(NODE) is None or value(cfg, f"{NODE}.enabled", False) is not True:
            return
        relative = value(cfg, f"{NODE}.calc_relative_gpu_perf", True)
        individual = value(cfg, f"{NODE}.calc_individual_gpu_perf", True)
        if relative is False and individual is False:
            yield ctx.report(cfg, "nvrx_straggler.calc_relative_gpu_perf and calc_individual_gpu_perf are both False; "
                                  "NVRxStragglerDetectionConfig.finalize() raises 'At least one of "
                                  "calc_relative_gpu_perf or calc_individual_gpu_perf must be True when NVRx straggler "
                                  "detection is enabled.' at job start",
                             [f"{NODE}.calc_relative_gpu_perf", f"{NODE}.calc_individual_gpu_perf"])
        interval = value(cfg, f"{NODE}.report_time_interval", None)
        if is_number(interval) and interval <= 0:
            yield ctx.report(cfg, f"{NODE}.report_time_interval is {interval}; NVRxStragglerDetectionConfig.finalize() "
                                  "raises 'report_time_interval must be positive.' at job start",
                             [f"{NODE}.report_time_interval"])
        for name in THRESHOLDS:
            threshold = value(cfg, f"{NODE}.{name}", None)
            if is_number(threshold) and not 0.0 <= threshold <= 1.0:
                yield ctx.report(cfg, f"{NODE}.{name} is {threshold}; NVRxStragglerDetectionConfig.finalize() raises "
                                      f"'{name} must be between 0.0 and 1.0.' at job start (a fraction, not a "
                                      "percentage)", [f"{NODE}.{name}"])
