"""Places where the launch reader stops are findings (issue 31, item 3): a shell syntax error,
a reader limit inside command substitutions, a sourced file that is not read. Each test is
modelled on a script that ended in "All checks passed" or a note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integration_support import run

RUNNER = "scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config"
PASSED = "All checks passed"


def findings(tmp_path: Path, name: str, *options: str) -> list[tuple]:
    document = json.loads(run(["check", "--no-cache", "--format", "json", *options, name], tmp_path).stdout)
    return [(f["rule"], f["severity"], f["location"]["line"], f["location"]["column"], f["message"])
            for f in document["findings"]]


def test_a_shell_syntax_error_is_a_finding_in_every_format(tmp_path: Path) -> None:
    """bash stops at `echo (` (exit 2, 'syntax error near unexpected token'), so the launch
    line after it never runs; tree-sitter reads lines 2-5 as one error and mblint did not see
    the launch line: that was a note and "All checks passed"."""
    (tmp_path / "go.sh").write_text(f"#!/bin/bash\nif [ x = y ]; then\n  echo (\nfi\ntorchrun {RUNNER}\n")
    [(rule, severity, line, column, message)] = findings(tmp_path, "go.sh")
    assert (rule, severity, line, column) == ("LA002", "warning", 2, 1)
    assert message.startswith("shell syntax error (lines 2-5 not read): bash stops a script at its first syntax")
    text = run(["check", "--no-cache", "go.sh"], tmp_path)
    assert text.exit_code == 1 and PASSED not in text.stdout and "go.sh:2:1: LA002 [warning]" in text.stdout
    sarif = json.loads(run(["check", "--no-cache", "--format", "sarif", "go.sh"], tmp_path).stdout)
    (notification,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notification["associatedRule"]["id"] == "LA002" and notification["level"] == "warning"
    assert notification["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    github = run(["check", "--no-cache", "--format", "github", "go.sh"], tmp_path).stdout
    assert "::warning file=go.sh,line=2,col=1" in github and "title=mblint LA002" in github


def test_a_syntax_error_in_a_yaml_command_entry_is_a_finding(tmp_path: Path) -> None:
    (tmp_path / "card.yaml").write_text(f"command: 'torchrun {RUNNER} && echo ('\n")
    errors = [(rule, line) for rule, _, line, _, message in findings(tmp_path, "card.yaml") if "syntax" in message]
    assert errors == [("LA002", 1)]


def test_a_launch_line_inside_a_command_substitution_is_read(tmp_path: Path) -> None:
    """`$(...)` runs its commands: a launch line there is a job (here one mblint cannot check
    without Megatron-Bridge's sources, which it says), not nothing."""
    (tmp_path / "go.sh").write_text(f"LOG=$(torchrun --nproc_per_node=8 {RUNNER} 2>&1)\n")
    [(rule, severity, line, _, message)] = findings(tmp_path, "go.sh")
    assert (rule, severity, line) == ("LA002", "warning", 1) and "megatron.bridge.recipes could not be read" in message


def test_what_a_command_substitution_assigns_stays_in_it(tmp_path: Path) -> None:
    from mblint.extract.shell import parse_script

    script = parse_script("X=1\nY=$(X=2; echo $X)\necho $X\n")
    assert [[w.text for w in c.words] for c in script.commands] == [["echo", "2"], ["echo", "1"]]


def test_command_substitutions_nested_past_the_limit_are_a_reader_limit(tmp_path: Path) -> None:
    """5,000 nested `$(` around the GPU count ended in an unknown world size and no word of
    where reading stopped; the nesting limit (100) is SY002, as for `${A:-${A:-...}}`."""
    gpus = "$(" * 5000 + "echo 8" + ")" * 5000
    (tmp_path / "go.sh").write_text(f"GPUS={gpus}\ntorchrun --nproc_per_node=$GPUS {RUNNER}\n")
    [(rule, severity, line, _, message)] = findings(tmp_path, "go.sh")
    assert (rule, severity, line) == ("SY002", "info", 1)
    assert message == "nesting limit (100 levels) reached: the script is not read from here on"


def test_command_substitutions_share_the_script_s_budget() -> None:
    """Each `$(...)` copies the variables for its subshell: 2,000 of them under 2,000 variables
    stop at the copy limit (SY002) instead of copying 4,000,000 values."""
    from mblint.extract.shell import parse_script

    text = "".join(f"V{i}=1\n" for i in range(2000)) + "echo " + " ".join("$(true)" for _ in range(2000)) + "\n"
    [(line, _, message)] = parse_script(text).limits
    assert line == 2001 and message.startswith("variable copy limit (2,000,000 per script) reached")


def test_a_syntax_error_message_quotes_nothing_of_the_script() -> None:
    from mblint.extract.shell import parse_script

    [(line, column, message)] = parse_script("X=1\necho \x1b]0;title\x07 )\n").errors
    assert (line, message) == (2, "shell syntax error") and "\x1b" not in message


def test_a_sourced_file_a_launch_line_takes_values_from_is_a_finding_at_the_source_line(tmp_path: Path) -> None:
    """`source ~/.bashrc` then `$EXTRA` among the overrides: the file is rightly not read, and
    "All checks passed" followed, though EXTRA may hold any override. Now LA002 once, at the
    source line, naming what the launch takes from it, in every format."""
    (tmp_path / "go.sh").write_text(f"#!/bin/bash\nsource ~/.bashrc\ntorchrun --nproc_per_node=8 {RUNNER} $EXTRA\n"
                                    f"torchrun --nproc_per_node=8 {RUNNER} $EXTRA $MORE\n")
    sourced = [f for f in findings(tmp_path, "go.sh") if f[2] == 2]
    [(rule, severity, line, column, message)] = sourced
    assert (rule, severity, line, column) == ("LA002", "warning", 2, 1)
    assert message.startswith("the file this sources (~/.bashrc) is not read (mblint reads no sourced file), and the "
                              "launch at line 3 uses $EXTRA, which it may set")
    sarif = json.loads(run(["check", "--no-cache", "--format", "sarif", "go.sh"], tmp_path).stdout)
    notified = [n for n in sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
                if n["locations"][0]["physicalLocation"]["region"]["startLine"] == 2]
    assert [n["associatedRule"]["id"] for n in notified] == ["LA002"]
    github = run(["check", "--no-cache", "--format", "github", "go.sh"], tmp_path).stdout
    assert "::warning file=go.sh,line=2,col=1" in github
    assert "go.sh:2:1: LA002 [warning]" in run(["check", "--no-cache", "go.sh"], tmp_path).stdout


def test_only_the_world_size_from_a_sourced_file_is_info(tmp_path: Path) -> None:
    (tmp_path / "go.sh").write_text(f". ./cluster.env\ntorchrun --nproc_per_node=$GPUS {RUNNER}\n")
    assert [(rule, severity, line) for rule, severity, line, _, message in findings(tmp_path, "go.sh")
            if "sources" in message] == [("LA002", "info", 1)]


def test_a_sourced_file_that_cannot_affect_the_job_is_no_gap(tmp_path: Path) -> None:
    """After the launch line, or before it when the launch uses nothing it may set (or a value
    the script sets again after it): nothing to report."""
    from mblint.extract.shell import parse_script, sourced_names

    cases = [f"torchrun {RUNNER} a.b=$X\nsource ./env.sh\n",
             f"source ./env.sh\ntorchrun --nproc_per_node=8 {RUNNER} a.b=1\n",
             f"source ./env.sh\nX=2\ntorchrun {RUNNER} a.b=$X\n"]
    for text in cases:
        assert [sourced_names(c.words) for c in parse_script(text).commands] == [[]], text
    names = [n.name for n in sourced_names(parse_script(f"source ./env.sh\nY=$X\ntorchrun {RUNNER} a.b=$Y\n")
                                             .commands[0].words)]
    assert names == ["X"]  # through another variable, by the name the sourced file may set


def test_hostile_sourced_files_are_bounded_findings(tmp_path: Path) -> None:
    """2,000 sources, a 5,000-character file name with control characters, 500 variables: one
    finding per source a launch uses, its text bounded and escaped."""
    name = "\x1b]0;pwn\x07" + "x" * 5000
    variables = " ".join(f"a{i}.b=$V{i}" for i in range(500))
    text = "".join(f"source ./env{i}.sh\n" for i in range(2000)) + f"source '{name}'\ntorchrun {RUNNER} {variables}\n"
    (tmp_path / "go.sh").write_text(text)
    sourced = [f for f in findings(tmp_path, "go.sh") if "sources" in f[4]]
    [(rule, _, line, _, message)] = sourced
    assert (rule, line) == ("LA002", 2001) and len(message) < 400 and "and 496 more" in message
    output = run(["check", "--no-cache", "go.sh"], tmp_path).stdout
    assert "\x1b" not in output and "\x07" not in output


def test_a_command_a_sourced_file_may_define_with_a_launch_s_arguments_is_a_finding(tmp_path: Path) -> None:
    """`source ./common.sh; launch_job --recipe X train.micro_batch_size=2`: the launch is a
    function of the unread file, and the run said "All checks passed (1 file, 0 configurations
    resolved)". A command with no launch argument, a builtin, a function of the script, or one
    before the source is not reported."""
    (tmp_path / "go.sh").write_text("source ./common.sh\nmkdir -p out\necho a.b=1\n"
                                    "launch_job --recipe llama32_1b_pretrain_config train.micro_batch_size=2\n")
    [(rule, severity, line, _, message)] = findings(tmp_path, "go.sh")
    assert (rule, severity, line) == ("LA002", "warning", 1)
    assert "`launch_job` at line 4, which the script does not define, runs with a launch's arguments" in message
    quiet = ["mkdir -p out\nsource ./common.sh\nmkdir -p out\nrun_training\n",
             "launch_job() { echo; }\nsource ./common.sh\nlaunch_job --recipe x\n",
             "launch_job --recipe x a.b=1\nsource ./common.sh\n"]
    for text in quiet:
        (tmp_path / "go.sh").write_text(text)
        assert findings(tmp_path, "go.sh") == [], text
    # a command whose name the sourced file may set
    (tmp_path / "go.sh").write_text("source ./common.sh\n$LAUNCHER --recipe llama32_1b_pretrain_config a.b=1\n")
    [(rule, severity, line, _, message)] = findings(tmp_path, "go.sh")
    assert (rule, severity, line) == ("LA002", "warning", 1)
    assert "the command at line 2, whose name mblint does not know, runs with a launch's arguments" in message
    (tmp_path / "go.sh").write_text(f"source ./c.sh\n'\x1b[2J{'y' * 5000}' --recipe x\n")
    [(_, _, _, _, message)] = findings(tmp_path, "go.sh")
    assert len(message) < 400
    assert "\x1b" not in run(["check", "--no-cache", "go.sh"], tmp_path).stdout


TRAINING_SCRIPT = (
    "import argparse\n"
    "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
    "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n"
    "from mycompany.tweaks import tweak, name, extra, part, code\n\n"
    "def main():\n"
    "    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--config-file', default='conf/o.yaml')\n"
    "    args, rest = parser.parse_known_args()\n"
    "    cfg = llama32_1b_peft_config()\n"
    "    cfg.dataset.enable_offline_packing = True\n"
    "{statement}"
    "    cfg = process_config_with_overrides(config=cfg, config_filepath=args.config_file)\n")


@pytest.mark.parametrize("statement, says", [
    ("setattr(cfg.train, name, 1)", "passes the recipe's configuration to setattr()"),
    ("tweak(cfg.train)", "passes the recipe's configuration to tweak()"),
    ("cfg.train.__dict__.update(extra)", "changes the recipe's configuration through `cfg.train.__dict__.update(extra)`"),
    ("getattr(cfg, part).micro_batch_size = 1", "changes the recipe's configuration through `getattr(cfg, part)"),
    ("del cfg.train.micro_batch_size", "changes the recipe's configuration through `del cfg.train.micro_batch_size`"),
    ("exec(code)", "runs code with exec() where the recipe's configuration is in reach"),
])
def test_a_training_script_statement_mblint_does_not_follow_is_said(tmp_path, mb06, statement, says):
    """In a training script run by a launch line, these changed the configuration and were
    skipped in silence (main a164b78: PK001 of the packed PEFT recipe with micro-batch 2, as if
    the statement were not there). Now the launch is LA002, naming the statement."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "o.yaml").write_text("train:\n  micro_batch_size: 2\n  global_batch_size: 64\n")
    (tmp_path / "train.py").write_text(TRAINING_SCRIPT.format(statement=f"    {statement}\n"))
    (tmp_path / "go.sh").write_text("torchrun --nproc_per_node=8 train.py --config-file conf/o.yaml\n")
    got = findings(tmp_path, "go.sh", "--search-path", str(mb06), "--select", "LA002,PK001")
    assert [(rule, line) for rule, _, line, _, _ in got] == [("LA002", 1)], got
    assert got[0][4].startswith(f"launch not checked: train.py {says}") and "which mblint does not follow" in got[0][4]


@pytest.mark.parametrize("statement", ["setattr(cfg.train, 'micro_batch_size', 2)", "print(cfg.train)"])
def test_a_training_script_statement_mblint_follows_is_no_gap(tmp_path, mb06, statement):
    """A literal setattr is the assignment it makes (PK001 from it); a part printed is read."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "o.yaml").write_text("train:\n  global_batch_size: 64\n")
    (tmp_path / "train.py").write_text(TRAINING_SCRIPT.format(statement=f"    {statement}\n").replace(
        "tweak, name, extra, part, code", "tweak"))
    (tmp_path / "go.sh").write_text("torchrun --nproc_per_node=8 train.py --config-file conf/o.yaml\n")
    got = [rule for rule, *_ in findings(tmp_path, "go.sh", "--search-path", str(mb06), "--select", "LA002,PK001")]
    assert got == (["PK001"] if "setattr" in statement else []), got


def test_a_training_script_whose_configuration_comes_from_no_known_recipe_is_not_checked(tmp_path: Path) -> None:
    """`torchrun train.py`, where train.py calls Megatron-Bridge's pretrain() on `my_config()`
    of the project's own module (not a recipes/ folder): the entry reader found no recipe call
    and the run said "All checks passed (1 file, 0 configurations resolved)". A script calling
    no training entry point of Megatron-Bridge (a local `train`) stays no launch of a job."""
    (tmp_path / "myrec.py").write_text("def my_config():\n    return None\n")
    (tmp_path / "train.py").write_text(
        "from megatron.bridge.training.pretrain import pretrain\nfrom myrec import my_config\n\n\n"
        "def main():\n    pretrain(my_config(), None)\n\n\nif __name__ == '__main__':\n    main()\n")
    (tmp_path / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n")
    [(rule, severity, line, _, message)] = findings(tmp_path, "go.sh")
    assert (rule, severity, line) == ("LA002", "warning", 2)
    assert "train.py calls pretrain() on a configuration that comes from no recipe mblint knows" in message
    (tmp_path / "train.py").write_text("from myrec import my_config\n\n\ndef train(cfg):\n    pass\n\n\n"
                                       "train(my_config())\n")
    assert findings(tmp_path, "go.sh") == []
