from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    env_var,
    env_var_origin,
    has_check,
    known,
    megatron_fsdp,
    value,
)

P = "cfg = _pretrain_common()\n"
ON = P + "cfg.ddp.use_megatron_fsdp = True\ncfg.checkpoint.ckpt_format = 'fsdp_dtensor'\n"
CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"
# Megatron-Bridge's runner on a 0.6 recipe, with Megatron-FSDP turned on on its command line
FSDP_LAUNCH = ("torchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config "
               "ddp.use_megatron_fsdp=true checkpoint.ckpt_format=fsdp_dtensor\n")


class FsdpContract(Rule):
    id = "OT007"
    name = "fsdp-contract"
    severity = Severity.ERROR
    summary = "Megatron-FSDP prerequisites: not with torch FSDP2, fsdp_dtensor checkpoints, CUDA_DEVICE_MAX_CONNECTIONS != 1, manual registration only with nccl_ub, no TP-PP-DP mapping."
    fixable = True
    tags = ("general", "fsdp")
    doc = """## What it does
Flags `dist.use_megatron_fsdp` together with `dist.use_torch_fsdp2`, and, when Megatron-FSDP
is on (`dist.use_megatron_fsdp` or `ddp.use_megatron_fsdp`):
- a checkpoint `save` or `load` path with `checkpoint.ckpt_format` other than `"fsdp_dtensor"`;
- `CUDA_DEVICE_MAX_CONNECTIONS` equal to 1 (0.5.x and later): set by the job's launch script
  (`export CUDA_DEVICE_MAX_CONNECTIONS=1` before the launch line, `CUDA_DEVICE_MAX_CONNECTIONS=1
  torchrun ...`; reported there) or, where the launch does not set it, by
  `cfg.env_vars["CUDA_DEVICE_MAX_CONNECTIONS"] = 1` (0.6.x);
- `ddp.fsdp_manual_registration` without `ddp.nccl_ub` (0.6.x);
- `dist.use_tp_pp_dp_mapping`;
- the `optim_grads_params` sharding strategy with
  `train.check_weight_hash_across_dp_replicas_interval` set (0.6.x).

## Why it matters
`ConfigContainer.validate()` raises "use_megatron_fsdp and use_torch_fsdp2 are mutually
exclusive." and `_validate_and_apply_megatron_fsdp_configs` asserts "Megatron-FSDP requires the
fsdp_dtensor checkpointing format!", "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset.",
"DDP.fsdp_manual_registration requires DDP.nccl_ub!" and "use_tp_pp_dp_mapping is not supported
with Megatron FSDP" at job start (all confirmed with Megatron-Bridge 0.6.2). The variable is
read with `os.getenv` in validate(), after `apply_environment_variables` copied `cfg.env_vars`
into the process with `os.environ.setdefault`: a value the launch environment already has wins,
so a launch script that exports another value makes a recipe's `1` harmless, and one that
exports `1` trips FSDP whatever the recipe says. The user's own shell is not seen: a variable
the launch script does not set is taken as not set. Many recipes set
`CUDA_DEVICE_MAX_CONNECTIONS = 1` for TP communication overlap, so turning FSDP on in an
override trips it.

## Example
```python
cfg.ddp.use_megatron_fsdp = True
cfg.checkpoint.save = "/ckpt"              # ckpt_format stays "torch_dist"
```

## Fix
Set `checkpoint.ckpt_format = "fsdp_dtensor"` (safe for new runs; existing torch_dist
checkpoints cannot be resumed in that format), drop the conflicting setting.

## Versions
0.3.x and 0.6.x (manual-registration and weight-hash checks only in 0.6.x; the environment check
from 0.5.x, `cfg.env_vars` from 0.6.x).

## Sources
0.6.2 megatron/bridge/training/config.py:1065-1116, :1341-1345, :1832-1851 and :1870
(`apply_environment_variables` before `validate()`); 0.5.1 megatron/bridge/training/config.py:1142;
0.3.1 megatron/bridge/training/config.py:1461-1476.
"""
    valid = [
        ON + "cfg.checkpoint.save = '/ckpt'",
        P + "cfg.ddp.use_megatron_fsdp = False\ncfg.checkpoint.save = '/ckpt'\ncfg.env_vars['CUDA_DEVICE_MAX_CONNECTIONS'] = 1",
        ON + "cfg.ddp.nccl_ub = True\ncfg.ddp.fsdp_manual_registration = True",
        ON + "for v in [1, 8]:\n    cfg.env_vars['CUDA_DEVICE_MAX_CONNECTIONS'] = v",
        Example(P + "cfg.ddp.use_megatron_fsdp = True\ncfg.checkpoint.save = '/ckpt'\ncfg.checkpoint.ckpt_format = 'fsdp_dtensor'",
                version="0.3"),
        # the launch environment wins over cfg.env_vars (os.environ.setdefault): 8 is what validate() reads
        Example("", launch="export CUDA_DEVICE_MAX_CONNECTIONS=8\n"
                           + FSDP_LAUNCH.replace("\n", " +env_vars.CUDA_DEVICE_MAX_CONNECTIONS=1\n")),
    ]
    invalid = [
        Example(P + "cfg.checkpoint.save = '/ckpt'\ncfg.ddp.use_megatron_fsdp = True  # error",
                message="Megatron-FSDP is on (ddp.use_megatron_fsdp = True) and checkpoint.save is set, but "
                        "checkpoint.ckpt_format is 'torch_dist'; Megatron-FSDP checkpoints need 'fsdp_dtensor'",
                fixed=P + "cfg.checkpoint.save = '/ckpt'\ncfg.checkpoint.ckpt_format = 'fsdp_dtensor'\n"
                      "cfg.ddp.use_megatron_fsdp = True  # error",
                unsafe=True),
        P + "cfg.dist.use_torch_fsdp2 = True\ncfg.dist.use_megatron_fsdp = True  # error",
        ON + "cfg.env_vars = {'CUDA_DEVICE_MAX_CONNECTIONS': 1}  # error",
        ON + "cfg.ddp.nccl_ub = False\ncfg.ddp.fsdp_manual_registration = True  # error",
        ON + "cfg.dist.use_tp_pp_dp_mapping = True  # error",
        Example(P + "cfg.checkpoint.load = '/ckpt'\ncfg.ddp.use_megatron_fsdp = True  # error", version="0.3"),
        Example(P + "cfg.checkpoint.save = '/ckpt'", dotlist=("dist.use_megatron_fsdp=true",)),
        Example("", launch="export CUDA_DEVICE_MAX_CONNECTIONS=1  # error\n" + FSDP_LAUNCH,
                message="the launch environment sets CUDA_DEVICE_MAX_CONNECTIONS=1"),
    ]

    def check(self, cfg, ctx):
        dist_fsdp = value(cfg, "dist.use_megatron_fsdp", False)
        fsdp2 = value(cfg, "dist.use_torch_fsdp2", False)
        if dist_fsdp is True and fsdp2 is True:
            yield ctx.report(cfg, "dist.use_megatron_fsdp and dist.use_torch_fsdp2 are both True; they are mutually "
                                  "exclusive (validate() raises at job start)",
                             ["dist.use_megatron_fsdp", "dist.use_torch_fsdp2"])
            return
        if megatron_fsdp(cfg) is not True:
            return
        flag = "ddp.use_megatron_fsdp" if value(cfg, "ddp.use_megatron_fsdp", False) is True else "dist.use_megatron_fsdp"
        fmt = value(cfg, "checkpoint.ckpt_format", "torch_dist")
        save, load = value(cfg, "checkpoint.save", None), value(cfg, "checkpoint.load", None)
        paths = [p for p, v in (("checkpoint.save", save), ("checkpoint.load", load)) if known(v) and v is not None]
        if paths and known(fmt) and fmt != "fsdp_dtensor":
            yield ctx.report(cfg, f"Megatron-FSDP is on ({flag} = True) and {paths[0]} is set, but checkpoint.ckpt_format "
                                  f"is {fmt!r}; Megatron-FSDP checkpoints need 'fsdp_dtensor' (validate() asserts at job "
                                  f"start)", [flag, "checkpoint.ckpt_format", *paths],
                             fixes=[FixIntent("set", "checkpoint.ckpt_format", "fsdp_dtensor", safe=False,
                                              description="use the fsdp_dtensor format (existing checkpoints differ)")])
        conns = env_var(cfg, CONNECTIONS) if has_check(cfg, "fsdp_rejects_one_device_connection") else None
        if known(conns) and conns == "1":
            launched = env_var_origin(cfg, CONNECTIONS)
            if launched is None:
                yield ctx.report(cfg, f"Megatron-FSDP is on ({flag} = True), but env_vars['{CONNECTIONS}'] is 1; FSDP "
                                      f"needs it above 1 or unset (validate() asserts at job start)",
                                 [flag, f"env_vars.{CONNECTIONS}"])
            else:
                yield ctx.report(cfg, f"Megatron-FSDP is on ({flag} = True), but the launch environment sets "
                                      f"{CONNECTIONS}=1; FSDP needs it above 1 or unset (validate() asserts at job "
                                      f"start)", [flag], location=launched)
        nccl_ub = value(cfg, "ddp.nccl_ub", False)
        manual = value(cfg, "ddp.fsdp_manual_registration", False)
        if known(nccl_ub, manual) and manual is True and nccl_ub is False \
                and has_check(cfg, "fsdp_manual_registration_needs_nccl_ub"):
            yield ctx.report(cfg, "ddp.fsdp_manual_registration is True with Megatron-FSDP, but ddp.nccl_ub is False; "
                                  "manual registration requires NCCL user buffers (validate() asserts at job start)",
                             ["ddp.fsdp_manual_registration", "ddp.nccl_ub", flag])
        strategy = value(cfg, "ddp.data_parallel_sharding_strategy", None)
        interval = value(cfg, "train.check_weight_hash_across_dp_replicas_interval", None)
        if known(strategy, interval) and strategy == "optim_grads_params" and interval is not None \
                and has_check(cfg, "fsdp_rejects_weight_hash_check"):
            yield ctx.report(cfg, f"train.check_weight_hash_across_dp_replicas_interval is {interval} with the "
                                  f"Megatron-FSDP 'optim_grads_params' sharding strategy, which does not support it "
                                  f"(validate() asserts at job start)",
                             ["train.check_weight_hash_across_dp_replicas_interval",
                              "ddp.data_parallel_sharding_strategy"])
        mapping = value(cfg, "dist.use_tp_pp_dp_mapping", False)
        if known(mapping) and mapping is True:
            yield ctx.report(cfg, f"dist.use_tp_pp_dp_mapping is True with Megatron-FSDP ({flag} = True); it is not "
                                  f"supported (validate() asserts at job start)", ["dist.use_tp_pp_dp_mapping", flag])
