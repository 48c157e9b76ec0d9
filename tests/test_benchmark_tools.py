"""Fast checks of the benchmark helpers (no network, no timing)."""

from __future__ import annotations

import ast
import importlib.util
import sys
import zipfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


gen = _load("generate_synthetic")
prep = _load("prepare_corpus")


def _config_functions(tree: ast.Module) -> list[str]:
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_config")]


def test_synthetic_tree_parses_and_has_expected_shape(tmp_path):
    manifest = gen.generate(5, tmp_path)
    root = tmp_path / gen.PACKAGE
    recipe_files = sorted(p for p in root.rglob("*.py")
                          if p.name not in ("__init__.py", "common.py", "environment.py"))
    assert len(recipe_files) == 5 == manifest["n_modules"] == len(manifest["modules"])

    total_configs = 0
    for entry in manifest["modules"]:
        path = tmp_path / entry["path"]
        text = path.read_text()
        tree = ast.parse(text)
        configs = _config_functions(tree)
        assert configs == entry["configs"]
        assert 3 <= len(configs) <= 6
        assert 150 <= text.count("\n") <= 500
        total_configs += len(configs)
        # every recipe starts from a seed builder or another recipe
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in configs):
            first = fn.body[1]  # after the docstring
            assert isinstance(first, ast.Assign) and first.targets[0].id == "cfg"
    assert total_configs == manifest["n_configs"]

    common = ast.parse((root / "common.py").read_text())
    names = {n.name for n in common.body if isinstance(n, ast.FunctionDef)}
    assert {"_pretrain_common", "_sft_common"} <= names
    for path in root.rglob("*.py"):
        ast.parse(path.read_text())  # everything, __init__ and helpers included, is valid Python


def test_synthetic_generation_is_deterministic_and_prefix_stable(tmp_path):
    a = gen.generate(3, tmp_path / "a")
    gen.generate(5, tmp_path / "b")
    for entry in a["modules"]:
        assert (tmp_path / "a" / entry["path"]).read_text() == (tmp_path / "b" / entry["path"]).read_text()


def test_unzip_filter_keeps_only_recipes(tmp_path):
    wheel = tmp_path / "megatron_bridge-9.9.9-py3-none-any.whl"
    members = {
        "megatron/bridge/__init__.py": "",
        "megatron/bridge/training/config.py": "x = 1\n",
        "megatron/bridge/recipes/__init__.py": "",
        "megatron/bridge/recipes/llama/llama3.py": "def a_config(): pass\n",
        "megatron/bridge/perf_recipes/llama/h100/llama3.py": "def b_config(): pass\n",
        "megatron/bridge/diffusion/recipes/wan/wan.py": "",  # nested 'recipes' elsewhere: dropped
        "megatron/bridge/recipes_extra/x.py": "",  # prefix look-alike: dropped
        "megatron_bridge-9.9.9.dist-info/METADATA": "Name: megatron-bridge\n",
        "../evil/recipes.py": "",
    }
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
        zf.writestr("megatron/bridge/recipes/qwen/", "")  # a directory entry

    dest = tmp_path / "out" / "mb-9.9.9"
    n = prep.extract_recipes(wheel, dest)
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*.py"))
    assert got == [
        "megatron/bridge/perf_recipes/llama/h100/llama3.py",
        "megatron/bridge/recipes/__init__.py",
        "megatron/bridge/recipes/llama/llama3.py",
    ]
    assert n == 3
    assert (dest / prep.MARKER).exists()
    assert (dest / "pyproject.toml").exists()  # root marker for gitignore-honouring tools
    assert not (tmp_path / "evil").exists()

    package = tmp_path / "out" / "mb-9.9.9-package"
    assert prep.extract_recipes(wheel, package, keep=prep.keep_package_member) == 7
    assert sorted(str(p.relative_to(package)) for p in package.rglob("*.py")) == [
        "megatron/bridge/__init__.py",
        "megatron/bridge/diffusion/recipes/wan/wan.py",
        "megatron/bridge/perf_recipes/llama/h100/llama3.py",
        "megatron/bridge/recipes/__init__.py",
        "megatron/bridge/recipes/llama/llama3.py",
        "megatron/bridge/recipes_extra/x.py",
        "megatron/bridge/training/config.py",
    ]
    assert (package / "megatron/bridge/training/config.py").read_text() == "x = 1\n"
    assert not (package / "megatron_bridge-9.9.9.dist-info").exists()


def test_prepare_uses_wheels_dir_and_is_idempotent(tmp_path, monkeypatch):
    wheel = tmp_path / "wheels" / "megatron_bridge-9.9.9-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("megatron/bridge/recipes/a.py", "A = 1\n")
    monkeypatch.setattr(prep, "VERSIONS", {"9.9.9": []})

    def no_download(*a, **k):
        raise AssertionError("must not download when the wheel is in --wheels-dir")

    monkeypatch.setattr(prep, "download_wheel", no_download)
    root = tmp_path / "corpus"
    dirs = prep.prepare(wheels_dir=wheel.parent, root=root, quiet=True)
    target = dirs["9.9.9"] / "megatron/bridge/recipes/a.py"
    assert target.read_text() == "A = 1\n"
    whole = prep.package_path("9.9.9", root) / "megatron/bridge/recipes/a.py"
    assert whole.read_text() == "A = 1\n"
    mtime = target.stat().st_mtime_ns
    prep.prepare(wheels_dir=None, root=root, quiet=True)  # already complete: nothing redone
    assert target.stat().st_mtime_ns == mtime


def test_prefork_stops_where_the_worker_would_be_forked(tmp_path):
    """benchmarks/prefork.py runs a cold check's start only: where the same check forks a
    worker and reports findings, it prints nothing and exits 0."""
    import subprocess

    recipe = ("from megatron.bridge.training.config import ConfigContainer, TrainingConfig\n\n\n"
              "def a_config() -> ConfigContainer:\n    cfg = ConfigContainer(train=TrainingConfig())\n"
              "    cfg.train.eval_iters = 10\n    return cfg\n")
    files = []
    for family in ("llama", "qwen"):
        path = tmp_path / "recipes" / family / "r.py"
        path.parent.mkdir(parents=True)
        path.write_text(recipe)
        files.append(str(path.relative_to(tmp_path)))
    (tmp_path / "pyproject.toml").write_text("# a project root\n")

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *command, "-j", "2", *files], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    full = run("-m", "mblint", "check", "--no-cache")
    start_only = run(str(BENCH / "prefork.py"))
    assert full.returncode == 1 and "OT008" in full.stdout
    assert (start_only.returncode, start_only.stdout) == (0, "")


def test_paired_ratios_pair_repetitions_and_skip_failed_measures():
    run = _load("run")
    measurements = {
        "cold": {"status": "ok", "times": [0.9, 1.2, 0.8]},
        "ruff": {"status": "ok", "times": [0.3, 0.2, 0.0]},
        "warm": {"status": "failed", "times": [0.1]},
    }
    # rep 1: 0.9 / 0.3 = 3.0; rep 2: 1.2 / 0.2 = 6.0; rep 3 has no ruff time to divide by
    assert [round(r, 6) for r in run.paired_ratios(measurements, "cold", "ruff")] == [3.0, 6.0]
    assert run.paired_ratios(measurements, "warm", "ruff") == []
    assert run.paired_ratios(measurements, "fixit", "ruff") == []
    line = run.spread_line("cold/ruff", [3.0, 6.0, 3.5], 4.0)
    assert "min 3.00, median 3.50, max 6.00; 1 of 3 over 4.0" in line


def test_two_core_slowdown_is_a_ratio_of_spin_times(monkeypatch):
    run = _load("run")
    answers = {1: [0.2], 2: [0.25, 0.3]}
    monkeypatch.setattr(run, "_spin_times", lambda copies: answers[copies])
    assert round(run.two_core_slowdown(), 6) == 1.5  # the slower of the pair, 0.3, over 0.2 alone

    def broken(copies):
        raise OSError("no interpreter")

    monkeypatch.setattr(run, "_spin_times", broken)
    assert run.two_core_slowdown() is None


def test_spin_times_runs_the_loop_in_separate_processes():
    run = _load("run")
    times = run._spin_times(2)
    assert len(times) == 2 and all(t > 0 for t in times)


def test_cold_in_package_runs_the_cold_command_in_the_package_folder(tmp_path):
    run = _load("run")
    recipes, package = tmp_path / "mb-9.9.9", tmp_path / "mb-9.9.9-package"
    for folder in (recipes, package):
        (folder / "megatron/bridge/recipes").mkdir(parents=True)
        (folder / "megatron/bridge/recipes/a.py").write_text("A = 1\n")
    corpus = run.Corpus.load("mb-9.9.9", recipes)
    tools = {"mblint": ["mblint"], "ruff": ["ruff"], "fixit": None}

    assert run.package_root_for("9.9.9", corpus) is None  # no marker: not a finished extraction
    (package / run.prepare_corpus.MARKER).write_text("x\n")
    assert run.package_root_for("9.9.9", corpus) == package
    assert "cold-in-package" not in run.commands(corpus, tools, skip_fixit=True)

    corpus.package_root = package
    commands = run.commands(corpus, tools, skip_fixit=True)
    assert commands["cold-in-package"] == commands["cold"] == ["mblint", "check", "--no-cache",
                                                               "megatron/bridge/recipes/a.py"]
    assert run.command_cwd(corpus, "cold-in-package") == package
    assert run.command_cwd(corpus, "cold") == recipes
    assert run.display(commands["cold-in-package"], corpus, "cold-in-package").endswith("(in mb-9.9.9-package/)")

    (package / "megatron/bridge/recipes/a.py").unlink()  # the package lacks a file of the corpus
    assert run.package_root_for("9.9.9", corpus) is None


SPIN_IN_CHILD = """
import os, time
def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
pid = os.fork()
if pid == 0:
    spin(0.3)
    os._exit(0)
spin(0.2)
os.waitpid(pid, 0)
"""


def test_run_once_counts_the_cpu_of_the_command_and_the_workers_it_waited_for(tmp_path):
    run = _load("run")
    busy = run.run_once([sys.executable, "-c", SPIN_IN_CHILD], tmp_path, 60)
    assert busy.returncode == 0
    assert busy.cpu >= 0.5  # 0.2 s in the command, 0.3 s in the process it forked and reaped
    idle = run.run_once([sys.executable, "-c", "import time; time.sleep(0.4)"], tmp_path, 60)
    assert idle.returncode == 0 and idle.wall >= 0.4
    assert idle.cpu < 0.2  # sleeping costs wall time, not CPU time


def test_cpu_times_are_kept_beside_the_wall_times_of_a_measure(tmp_path):
    run = _load("run")
    measure = run.Measure("spin", "spin")
    for _ in range(3):
        run.timed(measure, [sys.executable, "-c", SPIN_IN_CHILD], tmp_path, 60)
    data = measure.to_json()
    assert len(data["cpu_times"]) == len(data["times"]) == 3
    assert data["cpu_median_s"] >= 0.5


def test_quiet_ratios_keep_the_repetitions_with_both_cores_free():
    run = _load("run")
    measurements = {
        "cold": {"status": "ok", "times": [0.50, 0.80, 0.52, 0.60]},
        "ruff": {"status": "ok", "times": [0.125, 0.16, 0.13, 0.12]},
    }
    slowdowns = [1.02, 1.50, None, 1.15]
    # rep 1: 0.50 / 0.125 = 4.0 (quiet); rep 2 busy; rep 3 not measured; rep 4: 0.60 / 0.12 = 5.0 (at the limit)
    assert [round(r, 6) for r in run.quiet_ratios(measurements, "cold", "ruff", slowdowns, 1.15)] == [4.0, 5.0]
    assert run.quiet_ratios(measurements, "cold", "ruff", slowdowns[:3], 1.15) == []  # times do not line up
    corpus = {"measurements": measurements, "two_core_slowdown_per_repetition": slowdowns}
    assert run.quiet_line(corpus, ("cold", "ruff"), 4.0).endswith("median 4.50 over 2 of 4; 1 over 4.0")
    corpus["two_core_slowdown_per_repetition"] = [1.5, 1.5, 1.5, 1.5]
    assert run.quiet_line(corpus, ("cold", "ruff"), 4.0).endswith(": none of 4")


def test_quiet_ratios_of_a_measure_that_never_ran_are_empty():
    run = _load("run")
    assert run.quiet_ratios({"ruff": {"status": "ok", "times": []}}, "cold", "ruff", [], 1.15) == []


def test_quiet_line_says_n_a_when_the_repetitions_do_not_line_up():
    run = _load("run")
    corpus = {"measurements": {"cold": {"status": "failed", "times": [0.5]}, "ruff": {"status": "ok", "times": [0.1, 0.1]}},
              "two_core_slowdown_per_repetition": [1.0, 1.0]}
    assert run.quiet_line(corpus, ("cold", "ruff"), 4.0).endswith(": n/a (not every repetition of both measures ran)")
