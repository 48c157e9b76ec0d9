from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dispatcher, flex_backend, job_gpu, known

MOE = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=64)\n")
GB200 = "qwen3_30b_a3b_pretrain_8gpu_gb200_bf16_config"
APPLY_03 = "from megatron.bridge.training.flex_dispatcher_backend import apply_flex_dispatcher_backend\n"

# What validate_flex_dispatcher_backend accepts: the compute capability's major number, and for
# DeepEP also the Blackwell boards whose device name starts with these.
SUPPORTED_MAJORS = {"deepep": (8, 9), "hybridep": (8, 9, 10), "ncclep": (9, 10)}
DEEPEP_NAMES = ("NVIDIA B200", "NVIDIA B300")
BACKEND_NAMES = {"deepep": "DeepEP", "hybridep": "HybridEP", "ncclep": "NCCL EP"}


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
which (`..._64gpu_gb200_bf16_config`, Megatron-Bridge's naming): DeepEP needs compute
capability 8 or 9 or a B200/B300 board, HybridEP 8 to 10, NCCL EP 9 or 10. In practice: DeepEP
on GB200 and GB300.

The same GPU decides what `apply_flex_dispatcher_backend(cfg.model, backend)` leaves: mblint
reads that function from the Megatron-Bridge source at hand with the GPU's properties, so after
it the dispatcher is known where the recipe name gives the GPU (0.6.x falls back to "alltoall"
and clears the backend; 0.5.x and older leave the fields as they were).

## Why it matters
`ConfigContainer.validate()` calls `validate_flex_dispatcher_backend`, which raises at job start,
on every rank: `ValueError: DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300)
GPUs. Current GPU: NVIDIA GB200`. This is the failure of Megatron-Bridge PR 5207: the H100
Qwen3-235B recipe (DeepEP) run on GB200, where a later change turned the dispatcher back to
"flex" with the DeepEP backend left behind.

## Example
```python
def qwen3_30b_a3b_pretrain_8gpu_gb200_bf16_config():
    ...
    cfg.model.moe_token_dispatcher_type = "flex"
    cfg.model.moe_flex_dispatcher_backend = "deepep"   # error on GB200
```

## Fix
Use HybridEP, the backend Megatron-Bridge's GB200/GB300 recipes use (unsafe: another
communication library, which must be installed); or the "alltoall" dispatcher.

## Versions
0.3.x to 0.6.x (0.3.x compares the device name exactly, later releases by its start: on B200/B300
mblint says nothing).

## Sources
0.6.2 megatron/bridge/training/flex_dispatcher_backend.py:102-125 (`validate_flex_dispatcher_backend`),
33-99 (`apply_flex_dispatcher_backend`), training/config.py:1511-1515 (called by validate());
0.3.1 training/flex_dispatcher_backend.py and config.py:1608; recipes/utils/naming.py:41-55 (the
GPU in the recipe name); GPU names: Megatron-Bridge issues 5992 ("NVIDIA GB200", compute
capability 10.0) and 2725 ("NVIDIA B300 SXM6 AC").
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
                function="qwen3_235b_a22b_pretrain_64gpu_gb300_bf16_config", version="0.3"),
        # the H100 recipe's DeepEP kept by a command line that turns the dispatcher to flex
        Example(MOE + 'cfg.model.moe_flex_dispatcher_backend = "deepep"', function=GB200,
                dotlist=("model.moe_token_dispatcher_type=flex",)),
    ]

    def check(self, cfg, ctx):
        gpu, kind, backend = job_gpu(cfg), dispatcher(cfg), flex_backend(cfg)
        if gpu is None or not known(kind, backend) or kind != "flex" or backend not in SUPPORTED_MAJORS:
            return
        if gpu.major in SUPPORTED_MAJORS[backend]:
            return
        if backend == "deepep" and gpu.name_prefix.startswith(DEEPEP_NAMES):
            return
        label = BACKEND_NAMES[backend]
        said = (f"DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300) GPUs. Current GPU: {gpu.name_prefix}"
                if backend == "deepep" else f"{label} is not supported on {gpu.name_prefix}")
        yield ctx.report(
            cfg,
            f"model.moe_flex_dispatcher_backend is {backend!r} with the flex dispatcher, but the recipe is for "
            f"{gpu.key.upper()} (its name): validate() raises '{said}' at job start",
            ["model.moe_flex_dispatcher_backend", "model.moe_token_dispatcher_type"],
            fixes=[FixIntent("set", "model.moe_flex_dispatcher_backend", "hybridep", safe=False,
                             description='set moe_flex_dispatcher_backend to "hybridep"')],
        )
