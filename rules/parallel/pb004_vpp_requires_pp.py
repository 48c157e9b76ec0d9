from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, int_values, parallel

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class VppRequiresPp(Rule):
    id = "PB004"
    name = "vpp-requires-pp"
    severity = Severity.ERROR
    summary = "virtual_pipeline_model_parallel_size needs pipeline_model_parallel_size > 1."
    fixable = True
    tags = ("parallelism", "pipeline")
    doc = """## What it does
Flags `model.virtual_pipeline_model_parallel_size` set (not None) while
`model.pipeline_model_parallel_size` is 1.

## Why it matters
The interleaved schedule splits each pipeline stage into virtual chunks; without pipeline
parallelism there is nothing to interleave. Megatron-Core's `initialize_model_parallel` raises
"pipeline-model-parallel size should be greater than 1 with interleaved schedule" at
distributed start-up.

## Example
```python
cfg.model.pipeline_model_parallel_size = 1
cfg.model.virtual_pipeline_model_parallel_size = 2
```

## Fix
Safe: set `model.virtual_pipeline_model_parallel_size = None` (or raise PP).

## Versions
0.3.x and 0.6.x.

## Sources
Megatron-Core 0.19.2 megatron/core/parallel_state.py:827-831; 0.6.2
megatron/bridge/training/initialize.py:811 (passes VPP through).
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 2\n"
        "cfg.model.virtual_pipeline_model_parallel_size = 2",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 1\n"
        "cfg.model.virtual_pipeline_model_parallel_size = None",
        "cfg = _pretrain_common()\n" + MODEL + "for pp in (1, 2):\n    cfg.model.pipeline_model_parallel_size = pp\n"
        "cfg.model.virtual_pipeline_model_parallel_size = 2",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
                "cfg.model.virtual_pipeline_model_parallel_size = 2", version="0.3"),
    ]
    invalid = [
        # None replaces what the recipe wrote: unsafe
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.virtual_pipeline_model_parallel_size = 2  # error",
                message="the interleaved schedule needs PP > 1", unsafe=True,
                fixed="cfg = _pretrain_common()\n" + MODEL + "cfg.model.virtual_pipeline_model_parallel_size = None  # error"),
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.virtual_pipeline_model_parallel_size = 2  # error\ncfg.model.pipeline_model_parallel_size = 1",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.virtual_pipeline_model_parallel_size = 2  # error",
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        par = parallel(cfg)
        if par.vpp is None or not int_values(par.vpp, par.pp) or par.pp > 1:
            return
        message = (f"model.virtual_pipeline_model_parallel_size is {par.vpp}, but pipeline_model_parallel_size is "
                   f"{par.pp}; the interleaved schedule needs PP > 1")
        yield ctx.report(cfg, message, ["model.virtual_pipeline_model_parallel_size",
                                        "model.pipeline_model_parallel_size"],
                         fixes=[FixIntent("set", "model.virtual_pipeline_model_parallel_size", None,
                                          description="set virtual_pipeline_model_parallel_size to None")])
