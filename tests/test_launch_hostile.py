"""Hostile launch scripts (issue 32, the launch surface): reads stay in the project, work and
memory are bounded, nothing becomes an internal error. Each test is modelled on an attack that
broke a promise of docs/robustness.md; the attacks that need size are scaled down where the
bound is structural (the test then checks what grows, not the time)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from integration_support import run
from mblint.engine import CheckOptions, Engine
from mblint.extract.shell import parse_script

RUNNER = "scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config"


def check(tmp_path: Path, *paths: str, **options):
    engine = Engine(CheckOptions(use_cache=False, **options))
    engine.display_root = tmp_path
    return engine.check_paths([str(tmp_path / p) for p in paths])


# ----- reads outside the project (item 1) ----------------------------------------------------


def test_a_linked_launch_script_outside_the_project_is_never_read(tmp_path):
    """`hist.sh -> outside` and a suffix-less link to a shebang file outside: not read, so the
    token in it never reaches a message, in any format."""
    project, outside = tmp_path / "p", tmp_path / "outside"
    (project / ".git").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "history"
    secret.write_text(f"#!/bin/bash\ntorchrun {RUNNER} hf_SECRET_abc123\n")
    (project / "hist.sh").symlink_to(secret)
    (project / "hist").symlink_to(secret)
    for output in ("text", "json", "sarif", "github"):
        result = run(["check", "--no-cache", "--format", output, "."], project)
        assert "hf_SECRET" not in result.stdout + result.stderr
    document = json.loads(run(["check", "--no-cache", "--format", "json", "."], project).stdout)
    assert [(f["rule"], f["location"]["path"], f["message"]) for f in document["findings"]] == [
        ("SY001", "hist.sh", "not read: outside the project and its search paths")]


def test_a_shell_script_holding_a_nul_byte_is_said_to_be_binary(tmp_path):
    (tmp_path / "go.sh").write_bytes(b"torchrun x.py\x00\n")
    [finding] = check(tmp_path, "go.sh").findings
    assert (finding.rule_id, finding.message) == ("SY001", "file is binary (contains NUL bytes), not a shell script")


# ----- bounded work and memory (items 5 and 6) -----------------------------------------------


def test_sbatch_directives_are_read_once_not_per_command(monkeypatch):
    """30,000 #SBATCH lines x 20,000 commands recomputed the world for every command."""
    import mblint.extract.launch as launch

    calls = []
    original = launch._sbatch_world
    monkeypatch.setattr(launch, "_sbatch_world", lambda *args: calls.append(1) or original(*args))
    script = parse_script("#SBATCH --nodes=2\n" * 50 + f"torchrun {RUNNER}\n" * 40)
    assert len(launch.find_launches(script.commands, script.directives)) == 40
    assert len(calls) == 1


def test_a_long_sbatch_export_is_read_in_one_pass():
    """``#SBATCH --export=ALL,V0=1,...,V44999=1`` (394 kB) took 27 s: each name searched the
    whole value for its place and copied the set of exported names. 30,000 names took 8 s;
    in one pass they take a tenth of a second."""
    import time

    text = "#SBATCH --export=ALL," + ",".join(f"V{i}=1" for i in range(30_000)) + f"\ntorchrun {RUNNER}\n"
    start = time.process_time()
    script = parse_script(text)
    assert time.process_time() - start < 3
    [command] = script.commands
    assert command.environment.variables["V29999"].value == "1"


def test_commands_share_the_shell_environment():
    """40,000 variables then 20,000 commands copied the environment into every command (3 GB
    from 400 kB); scaled down, the memory must not grow with variables x commands."""
    text = "".join(f"V{i}=x\n" for i in range(3000)) + "echo x\n" * 1500
    tracemalloc.start()
    try:
        script = parse_script(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(script.commands) == 1500
    assert peak < 40_000_000  # 4.5 million copied variables took about 250 MB


def test_exported_variables_count_against_the_copy_budget():
    """Each command reads the variables exported before it (its environment, shared with the
    command before while unchanged): 700 exports then 3,000 commands read 2.1 million, past the
    copy limit, which stops the reading and says where."""
    script = parse_script("".join(f"export V{i}=x\n" for i in range(700)) + "echo x\n" * 3000)
    assert [message for _, _, message in script.limits] == [
        "variable copy limit (2,000,000 per script) reached: the script is not read from here on"]
    assert script.commands[0].environment.variables is script.commands[1].environment.variables


def test_each_command_string_counts_against_the_copy_budget():
    """``eval "$S"`` looked through every variable for the places a string keeps, outside any
    budget: 30,000 variables then 15,000 evals took 9 s. Each command string now costs a copy
    of the variables: 3,000 then 1,000 evals are 3 million, past the copy limit."""
    script = parse_script("".join(f"V{i}=x\n" for i in range(3000)) + "eval x\n" * 1000)
    assert [message for _, _, message in script.limits] == [
        "variable copy limit (2,000,000 per script) reached: the script is not read from here on"]


def test_a_long_variable_expanded_again_and_again_hits_the_character_limit():
    """One 64k-character variable copied 30,000 times took 4 GB: values over 10,000 characters
    are unknown, and the characters of words and values made per script are bounded."""
    script = parse_script("A=" + "x" * 64_000 + "\n" + "echo $A\n" * 50)
    assert [w.text for w in script.commands[0].words] == ["echo", None] and not script.limits
    script = parse_script("A=" + "x" * 9_000 + "\n" + "B=$A\necho $A\n" * 300)
    assert script.limits and "character limit (1,000,000 characters" in script.limits[0][2]
    assert len(script.commands) < 120


def test_a_yaml_command_aliased_many_times_is_read_within_a_budget(tmp_path):
    """A 300 kB command: aliased 999 times was parsed 999 times; the command: entries of a file
    are read up to 500,000 characters in all, and the rest is said (SY002)."""
    command = f"torchrun --nproc_per_node=8 {RUNNER} checkpoint.save=/{'x' * 60_000}"
    items = "".join("  - command: *c\n" for _ in range(40))
    (tmp_path / "card.yaml").write_text(f'x: &c "{command}"\nitems:\n{items}')
    report = check(tmp_path, "card.yaml")
    limits = [f for f in report.findings if f.rule_id == "SY002"]
    assert len(limits) == 1 and "command limit (500,000 characters" in limits[0].message


def test_a_yaml_file_with_command_entries_is_loaded_once(tmp_path, monkeypatch):
    """The override-file reader loads the YAML (ruamel) and hands the document to the launch
    reader for its command: entries; it was loaded a second time there."""
    import mblint.overrides

    loads = []
    load_yaml = mblint.overrides.load_yaml
    monkeypatch.setattr(mblint.overrides, "load_yaml", lambda path, *rest: loads.append(path) or load_yaml(path, *rest))
    (tmp_path / "card.yaml").write_text(f'items:\n  - command: "torchrun --nproc_per_node=8 {RUNNER}"\n')
    check(tmp_path, "card.yaml")
    assert [Path(path).name for path in loads] == ["card.yaml"]


def test_function_calls_cannot_multiply_the_work():
    """Each function calls the next twice: 2**30 calls unbounded; the step limit stops it."""
    text = "f0() { echo x; }\n" + "".join(f"f{i}() {{ f{i - 1}; f{i - 1}; }}\n" for i in range(1, 31)) + "f30\n"
    script = parse_script(text)
    assert script.limits and "limit" in script.limits[0][2]


# ----- internal errors (item 7) ----------------------------------------------------------------


@pytest.mark.parametrize("name, text", [
    ("superscript.sh", f"#SBATCH --job-name=\u00b2\n#SBATCH --nodes=\u00b2\ntorchrun {RUNNER}\n"),
    ("digits.sh", f"torchrun --nnodes={'9' * 5000} --nproc_per_node=8 {RUNNER}\n"),
    ("arithmetic.sh", f"X=$(({'9' * 5000}+1))\nY=$((9223372036854775807 * 4))\ntorchrun {RUNNER} a.b=$X\n"),
    ("bash_c.sh", "X='bash -c \"$X\"'; bash -c \"$X\"\n"),
    ("nested_if.sh", "if true; then\n" * 2000 + "echo\n" + "fi\n" * 2000),
    ("nested_default.sh", "echo " + "${A:-" * 2000 + "x" + "}" * 2000 + "\n"),
    ("nested_eval.sh", "eval " + "'eval " * 200 + "echo" + "'" * 200 + "\n"),
])
def test_hostile_shell_is_a_finding_or_unknown_never_an_internal_error(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    report = check(tmp_path, name)
    assert not report.errors, report.errors
    assert all(f.rule_id in ("SY002", "LA001", "LA002") for f in report.findings)


def test_a_number_beyond_the_shell_s_arithmetic_is_unknown():
    script = parse_script(f"X=$(({'9' * 5000}+1))\nY=$((2 * 3))\nZ=$((9223372036854775807 + 1))\necho $X $Y $Z\n")
    assert [w.text for w in script.commands[0].words] == ["echo", None, "6", None]


def test_nesting_past_the_limit_is_said():
    script = parse_script("if true; then\n" * 150 + "echo\n" + "fi\n" * 150)
    assert script.limits and script.limits[0][2].startswith("nesting limit (100 levels) reached")


def test_the_limits_are_where_the_docs_say(tmp_path):
    """docs/robustness.md names these limits; keep them in step."""
    from mblint.extract import shell

    text = (Path(__file__).resolve().parents[1] / "docs" / "robustness.md").read_text()
    rows = {line.split("|")[3].strip(): line.split("|")[2].strip() for line in text.split("## Launch scripts")[1]
            .split("## Fixes")[0].splitlines() if line.startswith("| ") and "`MAX_" in line}
    for name in ("MAX_SCRIPT_BYTES", "MAX_WORDS", "MAX_CHARS", "MAX_STEPS", "MAX_ENV_COPIES", "MAX_VALUE_CHARS"):
        [where] = [where for where in rows if f"`{name}`" in where]
        assert rows[where].startswith(f"{getattr(shell, name):,}"), name
    assert rows["`MAX_DEPTH`"] == f"{shell.MAX_DEPTH} levels"


def test_an_entry_script_cannot_grow_a_string_without_bound():
    """A training script run by a launch line, holding ``A1 = A0 + A0`` doubled 35 times, took
    over 2 GB and ended in MemoryError (an internal error): the entry reader's values are bounded
    as the interpreter's are (10,000 characters or elements), past that unknown."""
    import ast

    from mblint.readers.entry import UNKNOWN, _EntryReader

    text = 'A0 = "xxxxxxxxxxxxxxxx"\n' + "".join(f"A{i} = A{i - 1} + A{i - 1}\n" for i in range(1, 21))
    text += 'P = Path("/a") / A20\nF = f"{A9}{A9}"\n'
    constants = _EntryReader(None, Path("train.py"), ast.parse(text)).constants
    assert constants["A9"] == "x" * 8192
    assert constants["A10"] is UNKNOWN and constants["A20"] is UNKNOWN and constants["P"] is UNKNOWN
    assert constants["F"] is UNKNOWN


def test_a_rule_that_crashes_on_a_launch_fails_the_run(tmp_path, mb06, monkeypatch):
    """Issue 32 item 4: on the launch path a crashing rule was a note and the run passed."""
    from mblint_rules.parallel.pb001_world_divisible_by_dense_grid import WorldDivisibleByDenseGrid

    def crash(self, cfg, ctx):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(WorldDivisibleByDenseGrid, "check", crash)
    (tmp_path / "go.sh").write_text(f"torchrun --nproc_per_node=8 {RUNNER}\n")
    report = check(tmp_path, "go.sh", search_paths=(mb06,))
    assert [e.message for e in report.errors if "internal error in rule PB001" in e.message]
