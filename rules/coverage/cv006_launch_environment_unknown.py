from __future__ import annotations

from mblint.rulekit import COVERAGE_TAG, Example, Rule, Severity

# Megatron-Bridge's runner on a 0.6 recipe, with Megatron-FSDP (OT007 reads
# CUDA_DEVICE_MAX_CONNECTIONS) or deterministic mode (PR011 reads NCCL_ALGO) on its command line
RUNNER = "torchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config"
FSDP_LAUNCH = f"{RUNNER} ddp.use_megatron_fsdp=true checkpoint.ckpt_format=fsdp_dtensor\n"
DETERMINISTIC_LAUNCH = f"{RUNNER} model.deterministic_mode=true model.cross_entropy_loss_fusion=false\n"


class LaunchEnvironmentUnknown(Rule):
    id = "CV006"
    name = "launch-environment-unknown"
    severity = Severity.INFO
    checks_configurations = False
    summary = ("A launch leaves an environment variable unknown that a rule needed for its job: that check did not "
               "run.")
    tags = (COVERAGE_TAG,)
    doc = """## What it does
Reports, for a job started by a launch script, the environment variables a rule read for that
job and could not know because of the launch, at the place that made them unknown, naming each
variable and the rules that needed it:
- after `source FILE` (`. FILE`), an `eval` of text mblint cannot know, an `export $NAME`, or
  a launcher option that replaces the environment in a way mblint does not read
  (`srun --export=NONE`, `#SBATCH --export=NONE`), every variable the script does not set
  again may have any value: the finding lands on that line;
- an `export NAME=$(...)` (or `NAME=$X torchrun ...`) gives the variable a value mblint cannot
  know: the finding lands on that assignment (on the launch line for a variable exported on
  one way of an `if` only).

One finding per place and job, however many variables and rules. Nothing is reported when no
rule needed the variable for that job (Megatron-FSDP is off, so OT007 never reads
`CUDA_DEVICE_MAX_CONNECTIONS`), when the script sets the variable again after that place
(`export NCCL_ALGO=Ring` after the `source`), or when the rules that read it are not selected.
A recipe linted alone, with no launch, has no launch environment and is never reported.

## Why it matters
A pass means checked. Megatron-Bridge 0.6 copies `cfg.env_vars` into the process environment
with `os.environ.setdefault` before `validate()`, and its checks read the variables with
`os.getenv`: a value the launch environment already has wins over the recipe's. So when the
launch may set a variable, neither the recipe's `cfg.env_vars` nor its absence says what the
job runs with, and the rule that checks it stays silent (OT007: FSDP with
`CUDA_DEVICE_MAX_CONNECTIONS=1`, PR011: deterministic mode's `NCCL_ALGO`, OF005:
`NVTE_CPU_OFFLOAD_V1`); this finding says so. Info, not a warning: the rest of the job was
checked, and sourcing a cluster's environment file is common; `--fail-on info` makes it fail a
run.

## Example
```sh
source ./cluster_env.sh            # may export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config \\
    ddp.use_megatron_fsdp=true checkpoint.ckpt_format=fsdp_dtensor
```

## Fix
Write the value into the launch script after the line reported (`export
CUDA_DEVICE_MAX_CONNECTIONS=8`), or in front of the launcher; or accept the gap with
`# mblint: ignore[CV006]` on that line. No automatic fix.

## Versions
All (the launch environment is read for every job a launch script starts).

## Sources
0.6.2 megatron/bridge/training/config.py:1832-1851 (`apply_environment_variables`:
`os.environ.setdefault(name, str(value))`, "explicit launcher or shell settings take precedence
over recipe defaults") and :1867-1870 (applied first in `runtime_config_update`); the checks'
`os.getenv`: CUDA_DEVICE_MAX_CONNECTIONS :1102, NCCL_ALGO :1058, NVTE_CPU_OFFLOAD_V1 :2055.
"""
    valid = [
        # Megatron-FSDP is off: OT007 never reads the variable
        Example("", launch=f"source ./cluster_env.sh\n{RUNNER}\n", alongside=("OT007",)),
        # the script sets the variable again after the source
        Example("", launch=f"source ./cluster_env.sh\nexport CUDA_DEVICE_MAX_CONNECTIONS=8\n{FSDP_LAUNCH}",
                alongside=("OT007",)),
        Example("", launch=f"source ./cluster_env.sh\nNCCL_ALGO=Ring {DETERMINISTIC_LAUNCH}", alongside=("PR011",)),
        # no rule that reads it is selected
        Example("", launch=f"source ./cluster_env.sh\n{FSDP_LAUNCH}"),
        # known values
        Example("", launch=f"export CUDA_DEVICE_MAX_CONNECTIONS=1\n{FSDP_LAUNCH}", alongside=("OT007",)),
    ]
    invalid = [
        Example("", launch=f"source ./cluster_env.sh  # error\n{FSDP_LAUNCH}", alongside=("OT007",),
                message="CUDA_DEVICE_MAX_CONNECTIONS (OT007)"),
        Example("", launch=f'eval "$SETUP"  # error\n{DETERMINISTIC_LAUNCH}', alongside=("PR011",),
                message="the job's environment is unknown from here on"),
        Example("", launch=f"export CUDA_DEVICE_MAX_CONNECTIONS=$(cat connections.txt)  # error\n{FSDP_LAUNCH}",
                alongside=("OT007",), message="the launch gives it a value mblint cannot know here"),
    ]
