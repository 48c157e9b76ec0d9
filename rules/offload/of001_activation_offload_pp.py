from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, cpu_offloading_known_on, hf_model, known, parallel, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class ActivationOffloadWithPipeline(Rule):
    id = "OF001"
    name = "activation-offload-pp"
    severity = Severity.ERROR
    summary = "Layer-wise activation CPU offloading (model.cpu_offloading) does not support pipeline parallelism."
    tags = ("offload", "parallelism")
    doc = """## What it does
Flags `model.cpu_offloading = True` with `model.pipeline_model_parallel_size > 1`.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `ConfigContainer.validate()` at job
start) raises "Currently there is no support for Pipeline parallelism with CPU offloading"
(confirmed with Megatron-Bridge 0.6.2).

## Example
```python
cfg.model.cpu_offloading = True
cfg.model.pipeline_model_parallel_size = 2
```

## Fix
Drop activation offloading and use optimizer offloading
(`optimizer.optimizer_cpu_offload`) or recompute, or use PP=1. No automatic fix: each choice
changes memory and parallel layout.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1714-1717;
skills/nemo-mbridge-perf-cpu-offloading/SKILL.md (cpu-offloading SKILL.md:89-95).
"""
    valid = [
        HF + "cfg.model.cpu_offloading = True\ncfg.model.cpu_offloading_num_layers = 1",
        HF + "cfg.model.cpu_offloading = False\ncfg.model.pipeline_model_parallel_size = 4",
        HF + "cfg.model.cpu_offloading = True\nfor pp in [1, 2]:\n    cfg.model.pipeline_model_parallel_size = pp",
        Example(HF + "cfg.model.cpu_offloading = True", version="0.3"),
    ]
    invalid = [
        HF + "cfg.model.cpu_offloading = True\ncfg.model.pipeline_model_parallel_size = 2  # error",
        Example(HF + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.cpu_offloading = True  # error",
                version="0.3"),
        Example(HF + "cfg.model.pipeline_model_parallel_size = 2", dotlist=("model.cpu_offloading=true",)),
    ]

    precondition = cpu_offloading_known_on

    def check(self, cfg, ctx):
        offload = value(cfg, "model.cpu_offloading", False)
        pp = parallel(cfg).pp
        if offload is not True or not known(pp) or not isinstance(pp, int) or pp <= 1:
            return
        message = (f"model.cpu_offloading is True with model.pipeline_model_parallel_size = {pp}; "
                   f"activation CPU offloading requires PP = 1 (TransformerConfig raises at job start)")
        yield ctx.report(cfg, message, ["model.cpu_offloading", "model.pipeline_model_parallel_size"])
