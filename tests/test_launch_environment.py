"""A launch job's environment (issue 31, item 1): the variables its launch script sets, which
the training processes inherit. Megatron-Bridge 0.6.2 copies ``cfg.env_vars`` into the process
with ``os.environ.setdefault`` (training/config.py:1832-1851) in ``runtime_config_update``
before ``cfg.validate()`` (:1870), and validate() reads the variables with ``os.getenv``
(CUDA_DEVICE_MAX_CONNECTIONS :1102, NCCL_ALGO :1058, NVTE_CPU_OFFLOAD_V1 :2055): a value the
launch environment has wins over the recipe's.

The scripts are written in the style of Megatron-Bridge's own Slurm examples: an ``#SBATCH``
header, hardware variables with ``${VAR:-default}``, exports of NCCL and CUDA variables, the
launch through ``srun`` or ``torchrun``, assignments in front of the launcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from mblint.engine import CheckOptions, Engine
from mblint.extract.launch import find_launches
from mblint.extract.shell import parse_script
from mblint.findings import Severity

RUNNER = "scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config"
HEADER = """#!/bin/bash
#SBATCH --job-name=llama32-1b
#SBATCH --nodes=1
#SBATCH --gpus-per-node=8
#SBATCH --time=01:00:00
set -euo pipefail

GPUS_PER_NODE=${GPUS_PER_NODE:-8}
"""
FSDP = "ddp.use_megatron_fsdp=true checkpoint.ckpt_format=fsdp_dtensor"
OFFLOAD = "model.fine_grained_activation_offloading=true model.offload_modules=[core_attn]"
DETERMINISTIC = "model.deterministic_mode=true model.cross_entropy_loss_fusion=false"


def environment(text: str) -> dict:
    """Each variable of the (one) launch's environment: (value, line, column) or None unknown."""
    script = parse_script(text)
    [launch] = find_launches(script.commands, script.directives)
    shell = launch.environment
    if shell.unknown:
        return {"*": "unknown"}
    found = {name: (variable.value, variable.span.line, variable.span.column) if variable.span else (None,)
             for name, variable in shell.variables.items()}
    if shell.open_at is not None:
        found["*"] = ("open", shell.open_at.line)
    return found


LAUNCH = f"torchrun --nproc_per_node=$GPUS_PER_NODE {RUNNER}\n"


@pytest.mark.parametrize("text,expected", [
    # export NAME=VALUE, an export of a variable assigned before, declare -x, an assignment to
    # a variable already exported (its place: where the value the process gets was written)
    (f"export NCCL_ALGO=Ring\n{LAUNCH}", {"NCCL_ALGO": ("Ring", 1, 1)}),
    (f"NCCL_ALGO=Tree\nexport NCCL_ALGO\n{LAUNCH}", {"NCCL_ALGO": ("Tree", 2, 1)}),
    (f"declare -x NCCL_ALGO=Ring\n{LAUNCH}", {"NCCL_ALGO": ("Ring", 1, 1)}),
    (f"export NCCL_ALGO=Ring\nNCCL_ALGO=NVLS\n{LAUNCH}", {"NCCL_ALGO": ("NVLS", 2, 1)}),
    (f"set -a\nNCCL_ALGO=Ring\nset +a\nOTHER=1\n{LAUNCH}", {"NCCL_ALGO": ("Ring", 2, 1)}),
    # not exported, or no longer
    (f"NCCL_ALGO=Ring\n{LAUNCH}", {}),
    (f"export NCCL_ALGO=Ring\nexport -n NCCL_ALGO\n{LAUNCH}", {}),
    (f"export NCCL_ALGO=Ring\nunset NCCL_ALGO\n{LAUNCH}", {}),
    # in front of the launch command, or of env before it
    (f"NCCL_ALGO=Ring {LAUNCH}", {"NCCL_ALGO": ("Ring", 1, 1)}),
    (f"env NCCL_ALGO=Ring {LAUNCH}", {"NCCL_ALGO": ("Ring", 1, 5)}),
    (f"export CUDA_DEVICE_MAX_CONNECTIONS=1\nenv -i NCCL_ALGO=Ring {LAUNCH}", {"NCCL_ALGO": ("Ring", 2, 8)}),
    (f"export NCCL_ALGO=Ring\nenv -u NCCL_ALGO {LAUNCH}", {}),
    # the Slurm forms that are simple; others leave the environment unknown
    (f"#SBATCH --export=ALL,NCCL_ALGO=Ring\n{LAUNCH}", {"NCCL_ALGO": ("Ring", 1, 9)}),
    (f"srun --export=ALL,NCCL_ALGO=Ring {LAUNCH}", {"NCCL_ALGO": ("Ring", 1, 6)}),
    (f"#SBATCH --export=NONE\nexport NCCL_ALGO=Ring\nsrun {LAUNCH}", {"*": "unknown"}),
    (f"export NCCL_ALGO=Ring\nsrun --export=NONE {LAUNCH}", {"*": "unknown"}),
    (f"srun --export=ALL,NCCL_ALGO=$ALGO {LAUNCH}", {"*": "unknown"}),
    # a value mblint cannot know; what a sourced file or an eval may set
    (f"export NCCL_ALGO=$(cat algo.txt)\n{LAUNCH}", {"NCCL_ALGO": (None, 1, 1)}),
    (f"if [ -n \"$X\" ]; then\n  export NCCL_ALGO=Ring\nfi\n{LAUNCH}", {"NCCL_ALGO": (None,)}),
    (f"export NCCL_ALGO=Ring\nsource cluster_env.sh\nexport NCCL_PROTO=Simple\n{LAUNCH}",
     {"NCCL_ALGO": (None,), "NCCL_PROTO": ("Simple", 3, 1), "*": ("open", 2)}),
    (f"eval \"$SETUP\"\n{LAUNCH}", {"*": ("open", 1)}),
    (f"export $NAME\n{LAUNCH}", {"*": ("open", 1)}),
    # a subshell, a pipeline's commands, another shell: what they export stays in their process
    (f"( export NCCL_ALGO=NVLS )\n{LAUNCH}", {}),
    (f"export NCCL_ALGO=NVLS | cat\n{LAUNCH}", {}),
    (f"bash -c \"export NCCL_ALGO=NVLS\"\n{LAUNCH}", {}),
    (f"bash <<EOF\nexport NCCL_ALGO=NVLS\nEOF\n{LAUNCH}", {}),
    (f"( source cluster_env.sh )\n{LAUNCH}", {}),
    (f"( export NCCL_ALGO=Ring; {LAUNCH} )\n", {"NCCL_ALGO": ("Ring", 1, 3)}),
    # after && or ||: an export that may not run, unless the test before it is known
    (f"[ -n \"$X\" ] && export NCCL_ALGO=NVLS\n{LAUNCH}", {"NCCL_ALGO": (None,)}),
    (f"grep -q nvl /etc/hosts || export NCCL_ALGO=NVLS\n{LAUNCH}", {"NCCL_ALGO": (None,)}),
    (f"X=\n[ -z \"$X\" ] && export NCCL_ALGO=Ring\n[ -n \"$X\" ] && export NCCL_ALGO=NVLS\n{LAUNCH}",
     {"NCCL_ALGO": ("Ring", 2, 16)}),
    (f"X=1\n[ -n \"$X\" ] || export NCCL_ALGO=NVLS\n{LAUNCH}", {}),
    # in front of a call of the script's function: exported to its commands while it runs
    (f"go() {{\n  {LAUNCH}}}\nNCCL_ALGO=Ring go\n", {"NCCL_ALGO": ("Ring", 4, 1)}),
    (f"go() {{\n  echo\n}}\nNCCL_ALGO=Ring go\n{LAUNCH}", {}),
])
def test_a_launch_has_the_environment_its_script_sets(text, expected):
    assert environment(text) == expected


def test_the_environment_follows_into_srun_bash_c():
    text = HEADER + ("export NCCL_ALGO=Ring\n"
                     f"srun bash -c \"NVTE_CPU_OFFLOAD_V1=1 torchrun --nproc_per_node=8 {RUNNER}\"\n")
    found = environment(text)
    assert found["NCCL_ALGO"] == ("Ring", 9, 1)
    assert found["NVTE_CPU_OFFLOAD_V1"][0] == "1"


def lint(tmp_path: Path, mb06: Path, script: str, select: str):
    (tmp_path / "launch.sh").write_text(script)
    engine = Engine(CheckOptions(search_paths=(mb06,), use_cache=False, select=(select,)))
    engine.display_root = tmp_path
    report = engine.check_paths([str(tmp_path / "launch.sh")])
    assert report.resolved, report.notes
    return [f for f in report.findings if f.rule_id == select]


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(text))


def test_an_exported_nvte_cpu_offload_v1_is_seen(tmp_path, mb06):
    """OF005: without the variable, today's warning; exported 1, nothing; exported 0, an error
    at the export (cfg.env_vars could not change it: the launch environment wins)."""
    launch = f"srun torchrun --nproc_per_node=$GPUS_PER_NODE {RUNNER} {OFFLOAD}\n"
    [missing] = lint(tmp_path, mb06, HEADER + launch, "OF005")
    assert "cfg.env_vars or the launch environment must set it" in missing.message
    assert lint(tmp_path, mb06, HEADER + "export NVTE_CPU_OFFLOAD_V1=1\n" + launch, "OF005") == []
    [wrong] = lint(tmp_path, mb06, HEADER + "export NVTE_CPU_OFFLOAD_V1=0\n" + launch, "OF005")
    assert (wrong.location.path, wrong.location.line) == ("launch.sh", line_of(tmp_path / "launch.sh", "export NVTE"))
    assert "the launch environment sets NVTE_CPU_OFFLOAD_V1 to '0'" in wrong.message
    assert wrong.severity is Severity.ERROR


def test_nccl_algo_in_front_of_the_launcher_is_seen(tmp_path, mb06):
    """PR011: NCCL_ALGO=Ring in front of torchrun, no warning; NVLS (not deterministic), an
    error at that assignment, the deterministic_mode override related."""
    launch = f"torchrun --nproc_per_node=$GPUS_PER_NODE {RUNNER} {DETERMINISTIC}\n"
    [missing] = lint(tmp_path, mb06, HEADER + launch, "PR011")
    assert "NCCL_ALGO is not set in cfg.env_vars" in missing.message
    assert lint(tmp_path, mb06, HEADER + "NCCL_ALGO=Ring " + launch, "PR011") == []
    [wrong] = lint(tmp_path, mb06, HEADER + "NCCL_ALGO=NVLS " + launch, "PR011")
    assert (wrong.location.line, wrong.location.column, wrong.location.end_column) == (9, 1, 15)
    assert "the launch environment sets NCCL_ALGO to 'NVLS'" in wrong.message
    assert any("model.deterministic_mode = True" in related.message for related in wrong.related), wrong.related


def test_fsdp_with_one_device_connection_exported(tmp_path, mb06):
    """OT007: the export of 1 before an FSDP launch is the error, at the export; a recipe's
    env_vars value of 1 that the launch environment replaces with 32 is not."""
    launch = f"srun torchrun --nproc_per_node=$GPUS_PER_NODE {RUNNER} {FSDP}\n"
    [error] = lint(tmp_path, mb06, HEADER + "export CUDA_DEVICE_MAX_CONNECTIONS=1\n" + launch, "OT007")
    assert (error.location.path, error.location.line) == ("launch.sh", 9)
    assert [r.origin.line for r in error.related] == [10]  # the FSDP flag on the launch line
    recipe_one = launch.replace("\n", " +env_vars.CUDA_DEVICE_MAX_CONNECTIONS=1\n")
    assert len(lint(tmp_path, mb06, HEADER + recipe_one, "OT007")) == 1
    assert lint(tmp_path, mb06, HEADER + "export CUDA_DEVICE_MAX_CONNECTIONS=32\n" + recipe_one, "OT007") == []


def test_what_a_sourced_file_may_set_is_unknown(tmp_path, mb06):
    """After ``source``, a variable the script does not set again may be anything: silence."""
    launch = f"torchrun --nproc_per_node=$GPUS_PER_NODE {RUNNER} {DETERMINISTIC}\n"
    assert lint(tmp_path, mb06, HEADER + "source ./cluster_env.sh\n" + launch, "PR011") == []
    fsdp = f"torchrun --nproc_per_node=$GPUS_PER_NODE {RUNNER} {FSDP}\n"
    script = HEADER + "export CUDA_DEVICE_MAX_CONNECTIONS=1\nsource ./cluster_env.sh\n" + fsdp
    assert lint(tmp_path, mb06, script, "OT007") == []


# ----- CV006: a launch environment the rules needed and mblint could not read ----------------

FSDP_LAUNCH = f"torchrun --nproc_per_node=$GPUS_PER_NODE {RUNNER} {FSDP}\n"


def gaps(tmp_path: Path, mb06: Path, script: str, select: tuple = ("CV006", "OT007", "PR011", "OF005"),
         ignore: tuple = ()) -> list:
    (tmp_path / "launch.sh").write_text(script)
    engine = Engine(CheckOptions(search_paths=(mb06,), use_cache=False, select=select, ignore=ignore))
    engine.display_root = tmp_path
    report = engine.check_paths([str(tmp_path / "launch.sh")])
    assert report.resolved, report.notes
    return [f for f in report.findings if f.rule_id == "CV006"]


@pytest.mark.parametrize("opening", ["source ./cluster_env.sh", ". /etc/profile.d/cluster.sh", 'eval "$SETUP"',
                                     "export $NAME"])
def test_a_variable_a_rule_needed_after_an_unreadable_line_is_a_finding_there(tmp_path, mb06, opening):
    """FSDP on: OT007 reads CUDA_DEVICE_MAX_CONNECTIONS, which the line before the launch may
    set (an environment value wins over cfg.env_vars: os.environ.setdefault, 0.6.2
    training/config.py:1851): info at that line, naming the variable and the rule."""
    [gap] = gaps(tmp_path, mb06, HEADER + f"{opening}\n" + FSDP_LAUNCH)
    assert (gap.location.path, gap.location.line, gap.location.column) == ("launch.sh", 9, 1)
    assert gap.severity is Severity.INFO
    assert "CUDA_DEVICE_MAX_CONNECTIONS (OT007)" in gap.message
    assert "wins over cfg.env_vars" in gap.message and "unknown from here on" in gap.message


def test_every_rule_and_variable_of_the_job_in_one_finding(tmp_path, mb06):
    launch = FSDP_LAUNCH.replace("\n", f" {DETERMINISTIC} {OFFLOAD}\n")
    [gap] = gaps(tmp_path, mb06, HEADER + "export CUDA_DEVICE_MAX_CONNECTIONS=1\nsource ./env.sh\n" + launch)
    assert gap.location.line == 10  # the source: what was exported before it may be changed there
    for part in ("CUDA_DEVICE_MAX_CONNECTIONS (OT007)", "NCCL_ALGO (PR011)", "NVTE_CPU_OFFLOAD_V1 (OF005)"):
        assert part in gap.message


def test_an_exported_value_mblint_cannot_know_is_a_finding_at_the_export(tmp_path, mb06):
    [gap] = gaps(tmp_path, mb06, HEADER + "export CUDA_DEVICE_MAX_CONNECTIONS=$(cat n.txt)\n" + FSDP_LAUNCH)
    assert gap.location.line == 9 and "value mblint cannot know" in gap.message
    [gap] = gaps(tmp_path, mb06, HEADER + "NCCL_ALGO=$ALGO " + FSDP_LAUNCH.replace("\n", f" {DETERMINISTIC}\n"))
    assert (gap.location.line, gap.location.column) == (9, 1) and "NCCL_ALGO (PR011)" in gap.message


def test_srun_that_replaces_the_environment_is_the_place(tmp_path, mb06):
    [gap] = gaps(tmp_path, mb06, HEADER + "srun --export=NONE " + FSDP_LAUNCH)
    assert (gap.location.line, gap.location.column) == (9, 6)


@pytest.mark.parametrize("script", [
    # Megatron-FSDP off: OT007 returns before reading the variable
    HEADER + "source ./env.sh\n" + f"torchrun --nproc_per_node=8 {RUNNER}\n",
    # the script sets it again after the source, as an export or in front of the launcher
    HEADER + "source ./env.sh\nexport CUDA_DEVICE_MAX_CONNECTIONS=8\n" + FSDP_LAUNCH,
    HEADER + "source ./env.sh\nCUDA_DEVICE_MAX_CONNECTIONS=8 " + FSDP_LAUNCH,
    # the source runs after the launch, or in a subshell of its own
    HEADER + FSDP_LAUNCH + "source ./env.sh\n",
    HEADER + "( source ./env.sh )\n" + FSDP_LAUNCH,
    # no unknown: the export is read
    HEADER + "export CUDA_DEVICE_MAX_CONNECTIONS=32\n" + FSDP_LAUNCH,
])
def test_no_finding_where_no_rule_needed_an_unknown_variable(tmp_path, mb06, script):
    assert gaps(tmp_path, mb06, script) == []


def test_the_recipe_setting_the_variable_does_not_close_the_gap(tmp_path, mb06):
    """cfg.env_vars is applied with os.environ.setdefault: what the sourced file exports wins,
    so the recipe's value does not decide (0.6.2 training/config.py:1832-1851)."""
    launch = FSDP_LAUNCH.replace("\n", " +env_vars.CUDA_DEVICE_MAX_CONNECTIONS=8\n")
    [gap] = gaps(tmp_path, mb06, HEADER + "source ./env.sh\n" + launch)
    assert "CUDA_DEVICE_MAX_CONNECTIONS (OT007)" in gap.message


def test_no_finding_when_the_rules_that_need_it_are_not_selected(tmp_path, mb06):
    script = HEADER + "source ./env.sh\n" + FSDP_LAUNCH
    assert gaps(tmp_path, mb06, script, ignore=("OT007",)) == []
    assert gaps(tmp_path, mb06, script, select=("CV006",)) == []


def test_the_gap_is_a_job_not_fully_checked(tmp_path, mb06):
    """Not "All checks passed": the summary counts the job, in JSON too."""
    from mblint.coverage import jobs_not_fully_checked

    other = FSDP_LAUNCH.replace("llama32_1b_pretrain_config", "llama32_3b_pretrain_config")
    (tmp_path / "launch.sh").write_text(HEADER + "source ./env.sh\n" + FSDP_LAUNCH + other)
    engine = Engine(CheckOptions(search_paths=(mb06,), use_cache=False, select=("CV006", "OT007")))
    engine.display_root = tmp_path
    report = engine.check_paths([str(tmp_path / "launch.sh")])
    assert [f.location.line for f in report.findings if f.rule_id == "CV006"] == [9]  # once for both jobs
    assert jobs_not_fully_checked(report) == (2, {"CV006": 2})
