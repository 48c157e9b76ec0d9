"""Run-level results (mblint/run_results.py): a second identical `mblint check` writes what
the first wrote without running the engine; any change to what the output depends on runs
it again, with the output a run without any cache gives; runs with side effects never use
one; a damaged entry is a miss."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mblint import cache, run_results
from mblint.cli import main
from mblint.engine import Engine
from tests.test_cache import COMMON, make_project

FINDING_AT_LINE_5 = "recipe.py:5:"  # cfg = _base() in RECIPE: PK001 (MBS 2 with packed sequences)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project with one recipe (one PK001 finding), the working folder; its files are old
    enough to be recorded by their stat signature (no racy window)."""
    make_project(tmp_path, mbs=2)
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_ACTIONS", "NO_COLOR", "FORCE_COLOR", "MBLINT_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    settle(monkeypatch)
    return tmp_path


def settle(monkeypatch) -> None:
    """Files written so far are older than the next run's racy window (see test_cache._settle),
    mblint's own too (a checkout just made: the plugin catalog, and so the run, is recorded)."""
    time.sleep(0.05)
    monkeypatch.setattr(cache, "RACY_WINDOW_NS", 0)  # the result cache's and the plugin catalog's


@pytest.fixture
def engine_runs(monkeypatch) -> list:
    """The paths of each run of the engine (a run served by its run-level result has none)."""
    runs = []
    check_paths = Engine.check_paths

    def counted(self, paths):
        runs.append(paths)
        return check_paths(self, paths)

    monkeypatch.setattr(Engine, "check_paths", counted)
    return runs


def mblint(*args: str, stdin: str | None = None) -> tuple:
    result = CliRunner().invoke(main, ["check", *args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_entries(root: Path) -> list[Path]:
    return sorted((root / ".mblint_cache").glob("*/run-*.json"))


def test_a_second_identical_run_is_served_with_the_output_of_a_cold_run(project, engine_runs):
    cold = mblint("proj/recipe.py", "--no-cache")
    assert cold[0] == 1 and FINDING_AT_LINE_5 in cold[1] and "mblint: note:" in cold[2]
    assert mblint("proj/recipe.py") == cold
    assert len(run_entries(project)) == 1 and len(engine_runs) == 2
    assert mblint("proj/recipe.py") == cold
    assert len(engine_runs) == 2  # served: the engine did not run


def test_coloured_output_is_served_as_written(project, engine_runs, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = mblint("proj/recipe.py")
    assert "\x1b[" in coloured[1]
    assert mblint("proj/recipe.py") == coloured and len(engine_runs) == 1


def test_a_served_run_reads_nothing_but_its_entry(project, engine_runs, monkeypatch):
    mblint("proj/recipe.py")
    from mblint import paths

    opened = []
    open_regular = paths.open_regular

    def recorded(path, *args, **kwargs):
        opened.append(str(path))
        return open_regular(path, *args, **kwargs)

    monkeypatch.setattr(paths, "open_regular", recorded)
    assert mblint("proj/recipe.py")[0] == 1 and len(engine_runs) == 1
    assert opened == [str(run_entries(project)[0])]


# The console script in a process of its own (-P: the working folder is not on the import
# path, as for the installed script), files trusted at once; "block" makes importing click fail.
CONSOLE = ("import sys, mblint.cache; mblint.cache.RACY_WINDOW_NS = 0; "
           "{block}from mblint.console import run; run()")


# Says "run_key" on stderr each time the run-level key is built.
COUNT_KEYS = ("import mblint.run_results as results; built = results.run_key; "
              "results.run_key = lambda args: (sys.stderr.write('run_key\\n'), built(args))[1]; ")


def console(*args: str, block_click: bool = False, count_keys: bool = False) -> tuple:
    script = CONSOLE.format(block=("sys.modules['click'] = None; " if block_click else "")
                            + (COUNT_KEYS if count_keys else ""))
    done = subprocess.run([sys.executable, "-P", "-c", script, *args], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_the_console_script_answers_before_importing_click(project):
    cold = console("check", "proj/recipe.py", "--no-cache")
    assert cold[0] == 1 and FINDING_AT_LINE_5 in cold[1]
    assert console("check", "proj/recipe.py") == cold
    assert console("check", "proj/recipe.py", block_click=True) == cold  # served: click never imported
    (project / "proj" / "recipe.py").write_text("\n" + (project / "proj" / "recipe.py").read_text())
    changed = console("check", "proj/recipe.py", block_click=True)
    assert changed[0] != 0 and "ModuleNotFoundError" in changed[2]  # not served: it needed click


def test_a_command_not_served_builds_its_key_once(project):
    missed = console("check", "proj/recipe.py", count_keys=True)  # looked up, run, recorded
    assert missed[0] == 1 and missed[2].count("run_key") == 1
    served = console("check", "proj/recipe.py", count_keys=True)
    assert served[2].count("run_key") == 1 and served[1] == missed[1]  # recorded under the key looked up


def edit_recipe(root: Path, monkeypatch) -> list[str]:
    (root / "proj" / "recipe.py").write_text("\n\n" + (root / "proj" / "recipe.py").read_text())
    return ["proj/recipe.py"]


def edit_dependency(root: Path, monkeypatch) -> list[str]:
    (root / "proj" / "common.py").write_text(COMMON.format(mbs=1))  # same size: one digit for another
    return ["proj/recipe.py"]


def add_file_to_linted_folder(root: Path, monkeypatch) -> list[str]:
    shutil.copy(root / "proj" / "recipe.py", root / "proj" / "sub" / "second.py")
    return ["proj"]


def create_settings_file(root: Path, monkeypatch) -> list[str]:
    (root / "proj" / "mblint.toml").write_text('ignore = ["PK001"]\n')
    return ["proj/recipe.py"]


def add_megatron_bridge_source(root: Path, monkeypatch) -> list[str]:
    bridge = root / "megatron" / "bridge"  # in the recipe's import root: its version picks the schema
    bridge.mkdir(parents=True)
    (bridge / "__init__.py").write_text("")
    (bridge / "package_info.py").write_text("MAJOR = 0\nMINOR = 3\nPATCH = 1\n")
    return ["proj/recipe.py"]


def change_option(root: Path, monkeypatch) -> list[str]:
    return ["proj/recipe.py", "--format", "concise"]


def change_environment(root: Path, monkeypatch) -> list[str]:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # the github format by default
    return ["proj/recipe.py"]


def change_baseline(root: Path, monkeypatch) -> list[str]:
    document = json.loads((root / "baseline.json").read_text())
    (root / "baseline.json").write_text(json.dumps({**document, "entries": []}))
    return ["proj/recipe.py", "--baseline", "baseline.json"]


@pytest.mark.parametrize("change", [edit_recipe, edit_dependency, add_file_to_linted_folder, create_settings_file,
                                    add_megatron_bridge_source, change_option, change_environment, change_baseline])
def test_a_changed_input_runs_the_engine_and_gives_the_new_output(project, engine_runs, monkeypatch, change):
    folder_run = change is add_file_to_linted_folder
    before = ["proj"] if folder_run else ["proj/recipe.py"]
    if folder_run:  # a folder discovery lists that holds no linted file yet
        (project / "proj" / "sub").mkdir()
        settle(monkeypatch)
    if change is change_baseline:  # a baseline holding the finding, then one without it
        assert mblint("proj/recipe.py", "--no-cache", "--write-baseline", "baseline.json")[0] == 0
        before = ["proj/recipe.py", "--baseline", "baseline.json"]
        settle(monkeypatch)
    runs = len(engine_runs)
    first = mblint(*before)
    assert mblint(*before) == first and len(engine_runs) == runs + 1 and run_entries(project)
    args = change(project, monkeypatch)
    settle(monkeypatch)
    expected = mblint(*args, "--no-cache")
    assert expected != first
    runs = len(engine_runs)
    assert mblint(*args) == expected and len(engine_runs) == runs + 1
    assert mblint(*args) == expected and len(engine_runs) == runs + 1  # recorded anew, then served


def test_a_file_changed_within_the_racy_window_records_no_run(project, engine_runs, monkeypatch):
    monkeypatch.setattr(cache, "RACY_WINDOW_NS", 60_000_000_000)  # every file was changed "just now"
    first = mblint("proj/recipe.py")
    assert mblint("proj/recipe.py") == first
    assert len(engine_runs) == 2 and not run_entries(project)


def test_an_input_the_result_cache_does_not_record_is_held_to_the_racy_window_too(project, engine_runs, monkeypatch):
    monkeypatch.setattr(cache, "RACY_WINDOW_NS", 500_000_000)
    time.sleep(0.6)  # the project's files are older than the window, the baseline written now is not
    assert mblint("proj/recipe.py", "--no-cache", "--write-baseline", "baseline.json")[0] == 0
    first = mblint("proj/recipe.py", "--baseline", "baseline.json")
    assert mblint("proj/recipe.py", "--baseline", "baseline.json") == first
    assert len(engine_runs) == 3 and not run_entries(project)
    assert mblint("proj/recipe.py")[0] == 1 and run_entries(project)  # without it: recorded


def test_a_cache_folder_that_came_from_elsewhere_is_not_believed(project, engine_runs):
    first = mblint("proj/recipe.py")
    mblint("proj/recipe.py")
    copied = project / "copied"
    shutil.copytree(project / ".mblint_cache", copied)  # as a checkout would bring it: a new folder
    shutil.rmtree(project / ".mblint_cache")
    copied.rename(project / ".mblint_cache")
    assert mblint("proj/recipe.py") == first and len(engine_runs) == 2


def damage_truncated(entry: dict, text: str) -> str:
    return text[: len(text) // 2]


def damage_exit_code(entry: dict, text: str) -> str:
    return json.dumps({**entry, "exit": "1"})


def damage_output(entry: dict, text: str) -> str:
    return json.dumps({**entry, "output": [[1, 2]]})


def damage_deps(entry: dict, text: str) -> str:
    return json.dumps({**entry, "deps": {"relative/path": "absent"}})


def damage_deps_type(entry: dict, text: str) -> str:
    return json.dumps({**entry, "deps": [["/", "exists"]]})


def damage_dep_record(entry: dict, text: str) -> str:
    return json.dumps({**entry, "deps": {path: "x" for path in entry["deps"]}})


def damage_nul_path(entry: dict, text: str) -> str:
    return json.dumps({**entry, "deps": {"/a\u0000b": [1, 2, 3, 4]}})


def damage_key(entry: dict, text: str) -> str:
    return json.dumps({**entry, "key": "another command"})


def damage_not_an_object(entry: dict, text: str) -> str:
    return "[1, 2, 3]"


@pytest.mark.parametrize("damage", [damage_truncated, damage_exit_code, damage_output, damage_deps, damage_deps_type,
                                    damage_dep_record, damage_nul_path, damage_key,
                                    damage_not_an_object])
def test_a_damaged_entry_is_a_miss(project, engine_runs, damage):
    first = mblint("proj/recipe.py")
    [entry_path] = run_entries(project)
    text = entry_path.read_text()
    entry_path.write_text(damage(json.loads(text), text))
    assert mblint("proj/recipe.py") == first and len(engine_runs) == 2
    assert mblint("proj/recipe.py") == first and len(engine_runs) == 2  # rewritten: served again


def test_an_entry_larger_than_the_limit_is_a_miss(project, engine_runs, monkeypatch):
    first = mblint("proj/recipe.py")
    [entry_path] = run_entries(project)
    monkeypatch.setattr(run_results, "MAX_ENTRY_BYTES", entry_path.stat().st_size - 1)
    assert mblint("proj/recipe.py") == first and len(engine_runs) == 2


@pytest.mark.parametrize("args", [
    ["--fix"], ["--diff"], ["--write-baseline", "written.json"], ["--output-json", "out.json"],
    ["--output-file", "text=out.txt"], ["--no-cache"],
])
def test_runs_with_side_effects_never_use_nor_write_a_run_result(project, engine_runs, monkeypatch, args):
    assert mblint("proj/recipe.py")[0] == 1 and mblint("proj/recipe.py")[0] == 1
    entries = {path: path.read_bytes() for path in run_entries(project)}
    assert len(entries) == 1 and len(engine_runs) == 1
    monkeypatch.setattr(run_results, "RunResults", None)  # not even looked for
    for _ in range(2):
        runs = len(engine_runs)
        mblint("proj/recipe.py", *args)
        assert len(engine_runs) > runs
    assert {path: path.read_bytes() for path in run_entries(project)} == entries
    written = [name for name in ("written.json", "out.json", "out.txt") if name in args[-1]]
    assert all((project / name).exists() for name in written)


def test_the_source_on_stdin_never_uses_a_run_result(project, engine_runs, monkeypatch):
    text = (project / "proj" / "recipe.py").read_text()
    monkeypatch.setattr(run_results, "RunResults", None)  # not even looked for
    for _ in range(3):
        assert mblint("-", "--stdin-filename", "proj/recipe.py", stdin=text)[0] == 1
    assert len(engine_runs) == 3 and not run_entries(project)


def test_the_folder_keeps_a_bounded_number_of_run_results(project):
    for world_size in range(1, run_results.MAX_RUN_RESULTS + 4):
        mblint("proj/recipe.py", "--world-size", str(world_size))
    assert len(run_entries(project)) == run_results.MAX_RUN_RESULTS


def test_every_environment_variable_mblint_reads_is_in_the_key():
    source = "\n".join(path.read_text() for path in Path(run_results.__file__).parent.rglob("*.py"))
    names = set(re.findall(r"""(?:environ|getenv|\benv)(?:\.get)?\s*[\[(]\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""", source))
    names |= set(re.findall(r"""envvar\s*=\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""", source))
    if re.search(r"expanduser|Path\.home\(\)", source):
        names.add("HOME")
    assert {"MBLINT_CACHE_DIR", "GITHUB_ACTIONS", "HF_HOME", "HOME"} <= names  # the scan finds them
    assert names <= set(run_results.ENVIRONMENT_VARIABLES)
