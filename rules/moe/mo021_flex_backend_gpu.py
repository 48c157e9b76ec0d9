from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    dispatcher,
    flex_backend,
    job_gpu,
    known,
    release_fact,
)

MOE = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=64)\n")
GB200 = "qwen3_30b_a3b_pretrain_8gpu_gb200_bf16_config"
APPLY_03 = "from megatron.bridge.training.flex_dispatcher_backend import apply_flex_dispatcher_backend\n"
GPU_NAME = "{gpu}"  # where the release's message names the device (mblint.schema.runtime_facts)


class FlexBackendGpu(Rule):
    id = "MO021"
    name = "flex-backend-unsupported-gpu"
    severity = Severity.ERROR
    summary = "The flex dispatcher's backend does not run on the recipe's GPU (DeepEP on GB200/GB300): validate() raises."
    fixable = True
    tags = ("moe",)
    doc = """## What it does
Flags `model.moe_token_dispatcher_type == "flex"` with a `model.moe_flex_dispatcher_backend`
that Megatron-Bridge does not accept on the GPU the job runs on, where the recipe's name says
which (`..._64gpu_gb200_bf16_config`, Megatron-Bridge's naming). Which GPUs each backend accepts,
and the error, are the release's own: mblint reads them from its `validate_flex_dispatcher_backend`
(bundled per release, or from the source at hand). In every release so far DeepEP needs compute
capability 8 or 9 or a B200/B300 board, HybridEP 8 to 10, and 0.6.x's NCCL EP 9 or 10. In
practice: DeepEP on GB200 and GB300.

The same GPU decides what `apply_flex_dispatcher_backend(cfg.model, backend)` leaves: mblint
reads that function from the Megatron-Bridge source at hand with the GPU's properties, so after
it the dispatcher is known where the recipe name gives the GPU (0.6.x falls back to "alltoall"
and clears the backend; 0.5.x and older leave the fields as they were).

## Why it matters
`ConfigContainer.validate()` calls `validate_flex_dispatcher_backend`, which raises at job start,
on every rank: `ValueError: DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300)
GPUs. Current GPU: NVIDIA GB200` (0.4 and later; 0.3.x says `... Blackwell (only B200 and B300)
GPUs`). This is the failure of Megatron-Bridge PR 5207: the H100 Qwen3-235B recipe (DeepEP) run
on GB200, where a later change turned the dispatcher back to "flex" with the DeepEP backend left
behind.

## Example
```python
def qwen3_30b_a3b_pretrain_8gpu_gb200_bf16_config():
    ...
    cfg.model.moe_token_dispatcher_type = "flex"
    cfg.model.moe_flex_dispatcher_backend = "deepep"   # error on GB200
```

## Fix
Use HybridEP, the backend Megatron-Bridge's GB200/GB300 recipes use (unsafe: another
communication library, which must be installed), where the release accepts it on that GPU; or
the "alltoall" dispatcher.

## Versions
0.3.x to 0.6.x, each with its own check: 0.3.x compares the device name exactly with "NVIDIA
B200"/"NVIDIA B300", later releases its start. mblint knows only how a board's name starts, so
on B200/B300 it says nothing.

## Sources
`validate_flex_dispatcher_backend` in megatron/bridge/training/flex_dispatcher_backend.py:
0.6.2 lines 107-125 (DeepEP, HybridEP, NCCL EP), 0.5.1 and 0.4.2 lines 80-93, 0.3.1 lines
77-84; called by validate() (0.6.2 training/config.py:1511-1515, 0.3.1 config.py:1608);
`apply_flex_dispatcher_backend`, 0.6.2 lines 33-99; recipes/utils/naming.py:41-55 (the GPU in
the recipe name); GPU names: Megatron-Bridge issues 5992 ("NVIDIA GB200", compute capability
10.0) and 2725 ("NVIDIA B300 SXM6 AC").
"""
    valid = [
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "hybridep"',
                function=GB200),
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "deepep"',
                function="qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config"),
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "deepep"',
                function="qwen3_30b_a3b_pretrain_8gpu_b300_bf16_config"),
        # the GPU unknown
        MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "deepep"',
        # 0.6.x falls back to alltoall on GB200 and clears the backend
        Example(MOE + 'apply_flex_dispatcher_backend(cfg.model, "deepep")', function=GB200),
        # 0.3.x leaves the fields as they were on GB200: not flex
        Example(MOE + APPLY_03 + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                'apply_flex_dispatcher_backend(cfg.model, "deepep")', function=GB200, version="0.3"),
    ]
    invalid = [
        # a GB200 recipe choosing DeepEP (Megatron-Bridge issue 5992)
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\n'
                'cfg.model.moe_flex_dispatcher_backend = "deepep"  # error', function=GB200,
                message="DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300) GPUs. Current GPU: NVIDIA GB200",
                fixed=MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\n'
                      'cfg.model.moe_flex_dispatcher_backend = "hybridep"  # error', unsafe=True),
        # PR 5207: DeepEP left behind by apply on GB200 (0.3.x), the dispatcher turned back to flex
        Example(MOE + APPLY_03 + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                'cfg.model.moe_flex_dispatcher_backend = "deepep"  # error\n'
                'apply_flex_dispatcher_backend(cfg.model, cfg.model.moe_flex_dispatcher_backend)\n'
                'cfg.model.moe_token_dispatcher_type = "flex"',
                function="qwen3_235b_a22b_pretrain_64gpu_gb300_bf16_config", version="0.3",
                message="'DeepEP is supported for Ampere, Hopper, and Blackwell (only B200 and B300) GPUs' at job start"),
        # the H100 recipe's DeepEP kept by a command line that turns the dispatcher to flex
        Example(MOE + 'cfg.model.moe_flex_dispatcher_backend = "deepep"', function=GB200,
                dotlist=("model.moe_token_dispatcher_type=flex",)),
    ]

    def check(self, cfg, ctx):
        gpu, kind, backend = job_gpu(cfg), dispatcher(cfg), flex_backend(cfg)
        if gpu is None or not known(kind, backend) or kind != "flex" or not isinstance(backend, str):
            return
        accepted = release_fact(cfg, "flex_backend_gpus") or {}
        if backend not in accepted or runs_on(accepted[backend], gpu) is not False:
            return
        said = accepted[backend]["message"].replace(GPU_NAME, gpu.name_prefix)
        fixes = [FixIntent("set", "model.moe_flex_dispatcher_backend", "hybridep", safe=False,
                           description='set moe_flex_dispatcher_backend to "hybridep"')]
        yield ctx.report(
            cfg,
            f"model.moe_flex_dispatcher_backend is {backend!r} with the flex dispatcher, but the recipe is for "
            f"{gpu.key.upper()} (its name): validate() raises '{said}' at job start",
            ["model.moe_flex_dispatcher_backend", "model.moe_token_dispatcher_type"],
            fixes=fixes if "hybridep" in accepted and runs_on(accepted["hybridep"], gpu) is True else [],
        )


def runs_on(accepted: dict, gpu) -> bool | None:
    """Whether the release's check of a backend passes on ``gpu``: its compute capability's
    major number, or its device name; None where the check needs more of the name than its
    start, which is all mblint knows ("NVIDIA B300" may be "NVIDIA B300 SXM6 AC")."""
    if gpu.major in accepted["majors"]:
        return True
    answers = {_name_matches(gpu.name_prefix, name, accepted["names_match"]) for name in accepted["names"]}
    return True if True in answers else None if None in answers else False


def _name_matches(start: str, name: str, how: str) -> bool | None:
    """Whether a device name that starts with ``start`` is ``name`` (``how`` "exact") or starts
    with it ("start")."""
    if how == "start" and start.startswith(name):
        return True
    return None if name.startswith(start) else False
