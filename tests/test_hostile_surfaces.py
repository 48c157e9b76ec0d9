"""Hostile input, round three (issue #32), on the surfaces added since round two: config.json
files from the Hugging Face cache or a local folder, the bridge index of a Megatron-Bridge
tree, schema derivation from that tree, the settings, and fixes racing an editor. Each test is
modelled on an attack that broke a promise of docs/robustness.md."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mblint.cli import main

MBLINT = Path(__file__).parent.parent / "mblint"
# meta-llama/Meta-Llama-3-8B's architecture fields, with 93 layers: PB005 fires at PP 8 when
# this file is read.
LLAMA_93_LAYERS = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "num_attention_heads": 32,
    "num_hidden_layers": 93, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256,
}
RECIPE = """from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _pretrain_common


def model_config():
    cfg = _pretrain_common()
    cfg.model = AutoBridge.from_hf_pretrained({model!r}).to_megatron_provider(load_weights=False)
    cfg.model.pipeline_model_parallel_size = 8
    return cfg
"""


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text("[project]\nname = 'victim'\n")
    monkeypatch.chdir(work)
    return work


def check(*args: str):
    result = CliRunner().invoke(main, ["check", "--no-cache", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def write_hub_config(hub: Path, repo: str, config: dict | str) -> Path:
    """The hub cache layout huggingface_hub writes: refs/main names snapshots/<commit>."""
    commit = "1" * 40
    folder = hub / ("models--" + repo.replace("/", "--"))
    (folder / "snapshots" / commit).mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    path = folder / "snapshots" / commit / "config.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config))
    return path


# ----- reads stay in the project, its search paths and the Hugging Face cache ---------------


@pytest.mark.parametrize("model", ["ABSOLUTE", "../outside", "~/outside"])
def test_a_local_model_folder_outside_the_project_is_not_read(project, tmp_path, monkeypatch, mb06, model):
    """Issue #32 item 2: AutoBridge.from_hf_pretrained('/abs' | '../x' | '~/x') read
    <folder>/config.json wherever it was; its 93 layers reached PB005."""
    monkeypatch.setenv("HOME", str(tmp_path))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps(LLAMA_93_LAYERS))
    model = str(outside) if model == "ABSOLUTE" else model
    (project / "recipe.py").write_text(RECIPE.format(model=model))
    result = check("--search-path", str(mb06), "--select", "PB005", "recipe.py")
    # not "93" alone: the absolute path in the note is pytest's, /tmp/pytest-of-root/pytest-938/...
    assert "PB005" not in result.stdout and "num_layers 93" not in result.output
    assert f"Hugging Face config {model}: not read: outside the project" in result.stderr


def test_the_same_model_folder_inside_the_project_is_read(project, mb06):
    (project / "models" / "llama").mkdir(parents=True)
    (project / "models" / "llama" / "config.json").write_text(json.dumps(LLAMA_93_LAYERS))
    (project / "recipe.py").write_text(RECIPE.format(model="./models/llama"))
    result = check("--search-path", str(mb06), "--select", "PB005", "recipe.py")
    assert "num_layers 93 is not divisible by pipeline_model_parallel_size 8" in result.stdout


def test_the_bridge_index_never_opens_a_committed_link_out_or_waits_on_stdin(project, tmp_path):
    """Issue #32 item 3: the bridge index opened every ``.py`` below megatron/bridge/models
    with a plain open(): a committed link to a FIFO outside the project, or to
    /proc/self/fd/0 while stdin is a pipe, blocked the run forever."""
    models = project / "megatron" / "bridge" / "models"
    (models / "conversion").mkdir(parents=True)
    for folder in (project / "megatron" / "bridge", models, models / "conversion"):
        (folder / "__init__.py").write_text("")
    (models / "conversion" / "model_bridge.py").write_text("class MegatronModelBridge:\n    pass\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (models / "aa.py").symlink_to(fifo)
    (models / "ab.py").symlink_to("/proc/self/fd/0")
    hub = tmp_path / "hub"
    write_hub_config(hub, "org/llama", LLAMA_93_LAYERS)
    (project / "recipe.py").write_text(RECIPE.format(model="org/llama"))
    env = {**os.environ, "HF_HUB_CACHE": str(hub)}
    with subprocess.Popen([sys.executable, "-m", "mblint", "check", "--no-cache", "recipe.py"], cwd=project,
                          env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        try:  # stdin stays open: a read of /proc/self/fd/0 would wait for ever
            out, err = run.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            run.kill()
            run.communicate()
            pytest.fail("mblint waited on a FIFO or on stdin reached through a committed link")
    assert run.returncode in (0, 1), err.decode()
    assert b"no Megatron-Bridge model bridge" not in out  # notes only



@pytest.fixture
def hub(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(folder))
    return folder


def test_an_oversized_config_json_is_said_to_be_too_large(project, hub, mb06):
    """Issue #32 item 9: a config.json over the size limit was reported as "not available here"."""
    from mblint.hf_config import MAX_CONFIG_BYTES

    write_hub_config(hub, "org/llama", json.dumps(LLAMA_93_LAYERS) + " " * MAX_CONFIG_BYTES)
    (project / "recipe.py").write_text(RECIPE.format(model="org/llama"))
    result = check("--search-path", str(mb06), "--select", "PB005", "recipe.py")
    assert "not available here" not in result.stderr
    assert f"config.json: too large ({MAX_CONFIG_BYTES + len(json.dumps(LLAMA_93_LAYERS)):,} " \
           f"bytes): over the {MAX_CONFIG_BYTES:,}-byte limit for a config.json, not read" in result.stderr


@pytest.mark.parametrize("layers", [-1, 0, 2.5, "93", True])
def test_an_invalid_layer_count_in_config_json_is_said_to_be_invalid(project, hub, mb06, layers):
    """Issue #32 item 9: num_hidden_layers = -1 was reported as "not divisible by PP"."""
    write_hub_config(hub, "org/llama", {**LLAMA_93_LAYERS, "num_hidden_layers": layers})
    (project / "recipe.py").write_text(RECIPE.format(model="org/llama"))
    result = check("--search-path", str(mb06), "recipe.py")
    assert "PB005" not in result.stdout and "divisible" not in result.output
    assert f"num_hidden_layers = {json.dumps(layers)} is not a valid value (a count of at least 1)" in result.stderr



@pytest.mark.parametrize("kind", ["link out", "fifo"])
def test_a_config_json_that_is_a_link_out_or_a_fifo_is_said_to_be_refused(project, tmp_path, mb06, kind):
    """Campaign of issue #32: an hf-config-paths folder's config.json linking outside it, or a
    FIFO in its place, was reported as "not available here" (it is there, and refused)."""
    folder = project / "configs" / "org" / "m"
    folder.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(folder / "config.json")
    else:
        (tmp_path / "secret.json").write_text(json.dumps({**LLAMA_93_LAYERS, "token": "SECRET"}))
        (folder / "config.json").symlink_to(tmp_path / "secret.json")
    (project / "pyproject.toml").write_text("[project]\nname = 'victim'\n\n[tool.mblint]\nhf-config-paths = ['configs']\n")
    (project / "recipe.py").write_text(RECIPE.format(model="org/m"))
    result = check("--search-path", str(mb06), "recipe.py")
    assert "not available here" not in result.stderr and "SECRET" not in result.output
    why = "a link out of " if kind == "link out" else "not a regular file (a FIFO, socket or device)"
    assert f"configs/org/m/config.json: not read: {why}" in result.stderr


OPENERS = {"open", "fdopen", "read_text", "read_bytes", "FileIO"}
WRITE_MODES = ("w", "a", "x")
# mblint's own package data (the bundled schemas), never a linted file.
PACKAGE_DATA = {("mblint/schema/__init__.py", "releases.json"), ("mblint/schema/__init__.py", "entry['file']")}


def _reads(path: Path):
    """The calls in ``path`` that open a file for reading (a writer passes a write mode or
    O_WRONLY/O_CREAT flags)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name not in OPENERS:
            continue
        text = ast.unparse(node)
        arguments = [ast.unparse(argument) for argument in node.args[1:]]
        if any(flag in text for flag in ("O_WRONLY", "O_CREAT")) or any(
                argument.strip("'\"").startswith(WRITE_MODES) for argument in arguments):
            continue
        yield node.lineno, text


def test_input_files_are_opened_only_through_the_one_way():
    """Issue #32 item 3: every file mblint reads is opened by mblint.paths.open_regular (no
    blocking on a FIFO, regular files only, bounded reads), so the promise of
    docs/robustness.md holds by construction, for every surface present and future."""
    found = []
    for path in sorted(MBLINT.rglob("*.py")):
        relative = path.relative_to(MBLINT.parent).as_posix()
        if relative in ("mblint/paths.py", "mblint/testing.py"):  # the one way; the rule-example harness
            continue
        for line, text in _reads(path):
            if not any(relative == module and data in text for module, data in PACKAGE_DATA):
                found.append(f"{relative}:{line}: {text}")
    assert found == []


# ----- fixes never lose an edit ----------------------------------------------------------------

ROBUSTNESS = Path(__file__).parent.parent / "fixtures" / "robustness"


EDITOR = """import sys, time
editor = open(sys.argv[1], "a")
print("opened", flush=True)
time.sleep(0.3)
editor.write(sys.argv[2])
editor.close()
"""


def edit_from_another_process(target: Path, text: str) -> subprocess.Popen:
    """An editor in another process that opens ``target`` to append ``text`` and writes a moment
    later, as a user saves; returns once its file is open or its open waits on mblint's lease
    of the file (mblint's descriptor then reports the lease broken)."""
    import fcntl
    import select
    import time

    real = os.path.realpath(target)
    leased = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") == real and fcntl.fcntl(int(fd), fcntl.F_GETLEASE) == fcntl.F_RDLCK:
                leased.append(int(fd))
    editor = subprocess.Popen([sys.executable, "-c", EDITOR, real, text], stdout=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if select.select([editor.stdout], [], [], 0.01)[0] or \
                any(fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK for fd in leased):
            break
    return editor


@pytest.mark.parametrize("when", ["before the rename", "during the rename"])
def test_an_edit_saved_while_a_fix_is_written_is_never_lost(project, monkeypatch, when):
    """Issue #32 item 8: a user's edit saved between mblint's last check of the file and its
    os.replace went to the replaced file and was lost. Here another process appends right
    before the new file takes the old one's place, or opened the file before and writes just
    after."""
    import shutil

    from mblint.fix import files

    shutil.copytree(ROBUSTNESS / "recipes", project / "recipes")
    target = project / "recipes" / "good.py"
    original = target.read_text()
    saved = "# saved by the editor\n"
    editors = []
    real_exchange = files._exchange

    def racing_exchange(first, second):
        if when == "before the rename":
            editors.append(edit_from_another_process(target, saved))
        done = real_exchange(first, second)
        if when == "during the rename":  # its open reached the old file before it left its place
            editors.append(edit_from_another_process(Path(first) if done else target, saved))
        return done

    monkeypatch.setattr(files, "_exchange", racing_exchange)
    result = check("--select", "PK001", "--fix", "--unsafe-fixes", "recipes/good.py")
    assert all(editor.wait(timeout=60) == 0 for editor in editors)
    assert target.read_text() == original + saved
    assert result.exit_code == 2 and "recipes/good.py: changed on disk" in result.stderr
    assert "Fixed" not in result.output
    assert not list(project.rglob("*.mblint-fix"))


def test_a_file_locked_by_another_writer_is_not_fixed(project):
    import fcntl
    import shutil

    shutil.copytree(ROBUSTNESS / "recipes", project / "recipes")
    target = project / "recipes" / "good.py"
    original = target.read_text()
    with open(target, "rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        result = check("--select", "PK001", "--fix", "--unsafe-fixes", "recipes/good.py")
    assert result.exit_code == 2 and "recipes/good.py: locked by another process; not overwritten" in result.stderr
    assert target.read_text() == original


# ----- schema derivation from the Megatron-Bridge source at hand ----------------------------------

BRIDGE_TREE = {"megatron/__init__.py": "", "megatron/bridge/__init__.py": "",
               "megatron/bridge/training/__init__.py": ""}
CONFIG_WITH = """from dataclasses import dataclass, field

{prelude}


@dataclass(kw_only=True)
class TrainingConfig:
    micro_batch_size: int = 1
    hostile: tuple = {default}


@dataclass(kw_only=True)
class ConfigContainer:
    train: TrainingConfig = field(default_factory=TrainingConfig)
"""
RECIPES = {f"recipes/r{number}.py": "def r_config():\n    return None\n" for number in range(3)}


def write_tree(root: Path, config: str) -> None:
    for relative, text in {**BRIDGE_TREE, "megatron/bridge/training/config.py": config, **RECIPES}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)


def test_names_repeating_names_in_a_default_take_bounded_steps(project, monkeypatch):
    """Issue #32 item 5: a 7 kB config.py of tuples of names, 200 wide and 9 deep
    (N9 = (N8, N8, ...)), hung schema derivation: its evaluator had no step budget."""
    from mblint.schema import extract

    prelude = "N0 = 1\n" + "".join(f"N{level} = ({', '.join([f'N{level - 1}'] * 200)},)\n" for level in range(1, 10))
    write_tree(project, CONFIG_WITH.format(prelude=prelude, default="N9"))
    calls = 0
    real = extract.ValueEvaluator.evaluate

    def counted(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        if calls > 100_000:
            raise AssertionError("more than 100,000 evaluation steps for one config.py")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(extract.ValueEvaluator, "evaluate", counted)
    result = check("--format", "json", "recipes")
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["schemas"][0]["source"].startswith("derived from")
    assert calls <= 3 * extract.MAX_EVALUATION_STEPS


def test_a_source_file_python_cannot_parse_costs_one_note_not_every_file(project):
    """Issue #32 item 7: a config.py of 100,000 unary minus signs (MemoryError in Python's
    parser) made every linted file an internal error."""
    write_tree(project, "x = " + "-" * 100_000 + "1\n")
    result = check("recipes")
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    assert result.stderr.count("no schema derived from this Megatron-Bridge source") == 1
    assert "megatron/bridge/training/config.py:1: cannot parse: expression nested too deeply" in result.stderr


# ----- settings ----------------------------------------------------------------------------------


def misspelt_names(count: int) -> list[str]:
    """Names like a rule name, none a rule's: 'layers-divisible-by-pp-vpq0', ..."""
    return [f"layers-divisible-by-pp-vpq{number}" for number in range(count)]


def write_settings(project: Path, key: str, values: list[str]) -> None:
    (project / "pyproject.toml").write_text(
        f"[project]\nname = 'victim'\n\n[tool.mblint]\n{key} = {json.dumps(values)}\n")
    (project / "recipes").mkdir(exist_ok=True)
    for number in range(3):
        (project / "recipes" / f"r{number}.py").write_text("def r_config():\n    return None\n")


def test_misspelt_ignore_names_cost_a_bounded_number_of_did_you_means(project, monkeypatch):
    """Issue #32 item 5: `ignore` with 1,000 misspelt names took 43 s (an edit distance from
    each to every rule id and name), 3,000 several minutes."""
    from mblint import suggestions

    distances = 0
    real = suggestions._edits

    def counted(*args):
        nonlocal distances
        distances += 1
        if distances > 20_000:
            raise AssertionError("more than 20,000 edit distances for one settings file")
        return real(*args)

    monkeypatch.setattr(suggestions, "_edits", counted)
    write_settings(project, "ignore", misspelt_names(1_000))
    result = check("recipes")
    assert result.exit_code == 2
    assert "'layers-divisible-by-pp-vpq0' selects no rule (did you mean 'layers-divisible-by-pp-vpp'?)" in result.stderr
    assert "and 990 more selectors select no rule" in result.stderr
    assert distances <= suggestions.MAX_SUGGESTED * 2 * 200  # ids and names of ~130 rules
    write_settings(project, "ignore", misspelt_names(3_000))
    result = check("recipes")
    assert "setting 'tool.mblint.ignore' has 3,000 entries; at most 1,000 are accepted" in result.stderr


def test_a_settings_file_in_error_is_read_once_per_run(project, monkeypatch):
    """Issue #32 item 5: `exclude` with 20,000 globs: the file was parsed again for each file
    it governs (165 files: 119 s of TOML parsing) and each glob matched separately."""
    from mblint import settings

    reads = []
    real = settings.read_settings_file
    monkeypatch.setattr(settings, "read_settings_file", lambda path: reads.append(path) or real(path))
    write_settings(project, "exclude", [f"generated{number}/*.py" for number in range(20_000)])
    result = check("recipes")
    assert result.exit_code == 2
    assert "setting 'tool.mblint.exclude' has 20,000 entries; at most 1,000 are accepted" in result.stderr
    assert len(reads) == 1


def test_each_file_is_matched_against_all_exclude_globs_at_once(project, monkeypatch):
    from mblint import settings

    relatives = 0
    real = settings.Settings.relative

    def counted(self, path):
        nonlocal relatives
        relatives += 1
        return real(self, path)

    monkeypatch.setattr(settings.Settings, "relative", counted)
    write_settings(project, "exclude", [f"generated{number}/*.py" for number in range(999)] + ["recipes/r1.py"])
    result = check("--format", "json", "recipes")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["files"] == 2
    assert relatives <= 3 * 2  # once per file and use, not once per glob


def test_a_file_another_process_has_open_for_writing_is_not_fixed(project):
    import shutil

    shutil.copytree(ROBUSTNESS / "recipes", project / "recipes")
    target = project / "recipes" / "good.py"
    original = target.read_text()
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(target)!r}, 'a'); print('opened', flush=True); "
                               "import time; time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"opened\n"
        result = check("--select", "PK001", "--fix", "--unsafe-fixes", "recipes/good.py")
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 2
    assert "recipes/good.py: open for writing by another process; not overwritten" in result.stderr
    assert target.read_text() == original


# ----- override files ------------------------------------------------------------------------------


def test_brackets_nested_past_the_limit_in_an_override_file_are_sy002_at_once(project, monkeypatch):
    """Campaign of issue #32: ruamel's scanner walks every open bracket level for each token,
    so 10,000 nested brackets (20 kB) took 25-32 s on a loaded machine before the composer's
    recursion stopped it. Depth beyond MAX_YAML_FLOW_DEPTH is a limit, reported before parsing."""
    from ruamel.yaml import scanner

    from mblint.overrides import MAX_YAML_FLOW_DEPTH

    scans = 0
    real = scanner.Scanner.stale_possible_simple_keys

    def counted(self):
        nonlocal scans
        scans += 1
        if scans > 100_000:
            raise AssertionError("ruamel's scanner ran past 100,000 tokens on a 20 kB file")
        return real(self)

    monkeypatch.setattr(scanner.Scanner, "stale_possible_simple_keys", counted)
    (project / "r.py").write_text("def r_config():\n    return None\n")
    (project / "o.yaml").write_text("# mblint: recipe=r.py::r_config\ntrain: " + "[" * 10_000 + "]" * 10_000 + "\n")
    result = check("--format", "json", "o.yaml")
    [finding] = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "SY002"]
    assert finding["message"] == (f"YAML nesting limit ({MAX_YAML_FLOW_DEPTH} levels of [ ] and {{ }}) exceeded: "
                                  "the override file is not applied")
    assert (finding["location"]["line"], finding["location"]["column"]) == (2, 8 + MAX_YAML_FLOW_DEPTH)
    assert scans == 0
    (project / "o.yaml").write_text("# mblint: recipe=r.py::r_config\ntrain: {micro_batch_size: [[1]]}\n")
    assert "SY002" not in check("o.yaml").stdout
