"""Launches through a wrapper command: read through where the command runs with the script's
arguments, files and environment (``timeout``, ``nice``, ``stdbuf``, ``taskset``, ``sudo``),
said not analysed (LA002) where it runs elsewhere (a container, another host, MPI ranks), and
silent where the wrapped command is no training launch. Each wrapped launch below printed
"All checks passed (1 file, 0 configurations resolved)" before.

The launch runs llama32_1b_pretrain_config (TP 1, PP 1, CP 1 in the 0.6.2 recipe) on 8 processes
with model.tensor_model_parallel_size=3: 8 % 3 = 2, PB001 on the TP=3 token when it is read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mblint.engine import CheckOptions, Engine
from mblint.findings import Severity

RUNNER = "scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config"
TP3 = "model.tensor_model_parallel_size=3"
TORCHRUN = f"torchrun --nproc_per_node=8 {RUNNER} {TP3}"
DETERMINISTIC = "model.deterministic_mode=true model.cross_entropy_loss_fusion=false"


def lint(tmp_path: Path, mb06: Path, text: str, select: tuple = ()) -> list:
    (tmp_path / "launch.sh").write_text(text)
    engine = Engine(CheckOptions(search_paths=(mb06,), use_cache=False, select=select))
    engine.display_root = tmp_path
    report = engine.check_paths([str(tmp_path / "launch.sh")])
    assert not report.errors, report.errors
    return [f for f in report.findings
            if not any(r.message == "the recipe's own problem is here" for r in f.related)]


@pytest.mark.parametrize("wrapper,name", [
    ("docker run --rm --gpus all -v $PWD:/workspace -w /workspace nvcr.io/nvidia/nemo:25.09", "docker"),
    ("docker exec -it trainer", "docker"),
    ("podman run --rm img", "podman"),
    ("ssh node1", "ssh"),
    ("ssh -p 2222 -o StrictHostKeyChecking=no user@node1", "ssh"),
    ("apptainer exec --nv img.sif", "apptainer"),
    ("singularity exec --bind /data img.sif", "singularity"),
    ("enroot start --rw nemo", "enroot"),
    ("kubectl exec trainer-0 --", "kubectl"),
    ("mpirun -np 8", "mpirun"),
    ("xargs -a hosts.txt", "xargs"),
    ("timeout 3600 docker run img", "docker"),  # through a transparent one first
    ("sudo -i", "sudo"),  # a login shell: another folder, and the command parsed again
    ("sudo -D /opt", "sudo"),
    ("sudo --preserve-env=PATH", "sudo"),
    ("nice -10", "nice"),  # an option form mblint does not read
])
def test_a_launch_through_a_wrapper_that_runs_it_elsewhere_is_not_analysed(tmp_path, mb06, wrapper, name):
    [finding] = lint(tmp_path, mb06, f"#!/bin/bash\n{wrapper} {TORCHRUN}\n")
    assert (finding.rule_id, finding.severity, finding.location.line) == ("LA002", Severity.WARNING, 2)
    column = wrapper.index(name) + 1
    assert finding.location.column == column, finding.location
    assert finding.message.startswith(f"launch not checked: it runs through `{name}`")


def test_a_shell_string_in_a_container_is_not_analysed_either(tmp_path, mb06):
    [finding] = lint(tmp_path, mb06, f'docker run img bash -c "{TORCHRUN}"\n')
    assert (finding.rule_id, finding.location.line, finding.location.column) == ("LA002", 1, 1)


@pytest.mark.parametrize("wrapper", ["timeout 3600", "timeout -s KILL --kill-after=60 10h", "nice -n 5", "nice -n5",
                                     "stdbuf -oL -eL", "stdbuf --output=L", "taskset -c 0-7", "taskset 0xff",
                                     "sudo", "sudo -E", "sudo -E -u trainer", "sudo -nEu trainer", "sudo --",
                                     "sudo -E timeout 10h nice -n 1", "setsid", "setsid -f", "ionice -c2 -n7",
                                     "ionice -c 3", "flock /tmp/train.lock", "flock -w 10 -x /tmp/train.lock",
                                     "unbuffer", "setsid nohup stdbuf -oL"])
def test_a_wrapper_that_runs_the_same_arguments_and_files_is_read_through(tmp_path, mb06, wrapper):
    """The same command with the same arguments and files: the job is checked (PB001 on TP=3)."""
    findings = lint(tmp_path, mb06, f"{wrapper} {TORCHRUN}\n")
    assert [(f.rule_id, f.location.column) for f in findings] == [("PB001", len(f"{wrapper} {TORCHRUN}") - len(TP3) + 1)]


def test_sudo_resets_the_environment_unless_told_to_keep_it(tmp_path, mb06):
    """sudo's env_reset: what the script exports does not reach the job (sudoers' env_keep
    decides: unknown here), so NVLS is no error there, and CV006 says the check did not run;
    with -E the export is the job's and its error is reported."""
    launch = f"torchrun --nproc_per_node=8 {RUNNER} {DETERMINISTIC}\n"
    select = ("PR011", "CV006")
    reset = lint(tmp_path, mb06, f"export NCCL_ALGO=NVLS\nsudo {launch}", select)
    assert [(f.rule_id, f.location.line, f.location.column) for f in reset] == [("CV006", 2, 1)]
    assert "NCCL_ALGO (PR011)" in reset[0].message
    kept = lint(tmp_path, mb06, f"export NCCL_ALGO=NVLS\nsudo -E {launch}", select)
    assert [(f.rule_id, f.location.line) for f in kept] == [("PR011", 1)]
    after = lint(tmp_path, mb06, f"sudo NCCL_ALGO=NVLS -- {launch}".replace(" -- ", " "), select)
    assert [f.rule_id for f in after] == ["CV006"]  # sudo's own VAR=value: the rest is still unknown


@pytest.mark.parametrize("line", [
    "sudo pkill -f torchrun",
    "docker run img pip install deepspeed accelerate",
    "docker build -t torchrun .",
    "ssh node nvidia-smi",
    'ssh node "pkill -f torchrun"',
    'docker run img python -c "import torch"',
    "docker run img python setup.py install",
    "docker run -v $PWD:/ws img python tools/convert.py --in a --out b",
    "timeout 10 echo torchrun",
    "mpirun -np 8 hostname",
    "kubectl logs pod | grep torchrun",
    "sudo python setup.py install",
    "taskset -p 0x3 1234",
    "xargs -n1 echo < hosts.txt",
    "apptainer pull docker://nvcr.io/nvidia/nemo:25.09",
    "setsid pkill -f torchrun",
    "ionice -c3 -p 1234",
    "flock -n /tmp/train.lock echo torchrun",
])
def test_a_wrapped_command_that_is_no_training_launch_is_silent(tmp_path, mb06, line):
    assert lint(tmp_path, mb06, f"#!/bin/bash\n{line}\n") == []


def test_a_wrapped_training_script_with_configuration_arguments_is_not_analysed(tmp_path, mb06):
    [finding] = lint(tmp_path, mb06, "docker run img python train.py train.micro_batch_size=2\n")
    assert finding.rule_id == "LA002" and "`docker`" in finding.message


def test_hostile_wrappers_are_bounded_and_printable(tmp_path, mb06):
    """Thousands of nested wrappers and options: linear work, one finding, nothing of the
    script's text (an escape sequence as a host) in its message."""
    text = ("ssh $'\\x1b[31mhost' " + "sudo -u -u " * 1500 + "timeout -s -s 1 " * 1500 + "docker exec " * 1500
            + f"{TORCHRUN}\n")
    start = time.perf_counter()
    findings = lint(tmp_path, mb06, text)
    assert time.perf_counter() - start < 20
    [finding] = findings
    assert finding.rule_id == "LA002" and "`ssh`" in finding.message
    assert all(ord(c) >= 32 for c in finding.message)


TRAINING_SCRIPT = '''from megatron.bridge.recipes.llama import llama32_1b_pretrain_config
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.pretrain import pretrain


def main() -> None:
    cfg = llama32_1b_pretrain_config()
    pretrain(cfg, forward_step)


if __name__ == "__main__":
    main()
'''


def test_a_wrapped_training_script_is_not_analysed_once_it_is_there(tmp_path, mb06):
    """`python train.py` in a container: silent while train.py is not beside the script (no
    training launch mblint can tell), LA002 once it is one, through the cache too."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "launch.sh").write_text("docker run img python train.py\n")

    def run():
        engine = Engine(CheckOptions(search_paths=(mb06,), use_cache=True))
        engine.display_root = tmp_path
        return [f.rule_id for f in engine.check_paths([str(tmp_path / "launch.sh")]).findings]

    assert run() == []
    (tmp_path / "train.py").write_text(TRAINING_SCRIPT)
    assert run() == ["LA002"]


@pytest.mark.parametrize("line,column", [
    (f'ssh node1 "cd /workspace && {TORCHRUN}"', 1),
    (f"ssh -p 2222 -o BatchMode=yes node2 'export NCCL_ALGO=Ring; {TORCHRUN}'", 1),
    (f'for h in a b; do ssh "$h" "{TORCHRUN}" & done', 18),
])
def test_a_launch_in_the_string_ssh_runs_remotely_is_not_analysed(tmp_path, mb06, line, column):
    """ssh joins the words after the host with blanks and the remote shell parses them."""
    [finding] = lint(tmp_path, mb06, f"{line}\n")
    assert (finding.rule_id, finding.location.line, finding.location.column) == ("LA002", 1, column)
    assert "`ssh`" in finding.message


@pytest.mark.parametrize("line", ['ssh node "pkill -f torchrun"', 'ssh node "nvidia-smi; hostname"',
                                  "ssh node ls -l /checkpoints"])
def test_a_remote_command_that_is_no_training_launch_is_silent(tmp_path, mb06, line):
    assert lint(tmp_path, mb06, f"{line}\n") == []


def test_nested_remote_strings_are_bounded(tmp_path, mb06):
    """ssh inside ssh: 3,000 hosts in a row before the string, and strings quoted in strings
    (each level quadruples the quotes: 7 levels)."""
    chained = "ssh h " * 3000 + f'"{TORCHRUN}"'
    quoted = TORCHRUN
    for _ in range(7):
        quoted = "ssh h '" + quoted.replace("'", "'\\''") + "'"
    for text in (chained, quoted):
        start = time.perf_counter()
        findings = lint(tmp_path, mb06, text + "\n")
        assert time.perf_counter() - start < 20
        assert [f.rule_id for f in findings] == ["LA002"], [f.message for f in findings]


@pytest.mark.parametrize("line", ["srun pkill -f torchrun", "nohup pkill -f torchrun", "time grep torchrun log.txt",
                                  "env X=1 pgrep -f torchrun", "srun -N 2 --ntasks-per-node=1 killall torchrun",
                                  "timeout 60 pkill -f deepspeed"])
def test_a_wrapper_running_another_program_that_names_a_launcher_is_silent(tmp_path, mb06, line):
    """What srun, nohup, time, env run here is pkill, grep...: no launch (these were LA002,
    "mblint does not read this form of launch line")."""
    assert lint(tmp_path, mb06, f"#!/bin/bash\n{line}\n") == []


@pytest.mark.parametrize("wrapper", ["nohup nsys profile -o out", "numactl --cpunodebind=0", "srun numactl -N 0"])
def test_a_wrapper_whose_options_are_not_read_still_says_the_launch_is_not_analysed(tmp_path, mb06, wrapper):
    [finding] = lint(tmp_path, mb06, f"{wrapper} {TORCHRUN}\n")
    assert finding.rule_id == "LA002" and "does not read this form" in finding.message
