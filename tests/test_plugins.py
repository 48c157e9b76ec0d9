"""Rule packs register through the ``mblint`` entry-point group; a broken one is reported and
skipped. The packs are made visible to a fresh interpreter by a ``.dist-info`` folder on its
path, which is what installing them would create."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "fixtures" / "plugins"
RECIPE = '''\
from megatron.bridge.training.config import ConfigContainer, TrainingConfig


def tiny_pretrain_config():
    cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1, global_batch_size=8))
    return cfg
'''


def install_pack(site: Path, package: str, source: Path) -> None:
    shutil.copytree(source / package, site / package)
    info = site / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[mblint]\n{package} = {package}\n")


def run_mblint(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "mblint", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_third_party_pack_rule_runs_and_broken_pack_is_skipped(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install_pack(site, "mblint_example_pack", FIXTURES / "example_pack")
    install_pack(site, "mblint_broken_pack", FIXTURES / "broken_pack")
    (tmp_path / "recipe.py").write_text(RECIPE)

    listed = run_mblint(site, tmp_path, "rules")
    assert "EX001" in listed.stdout and "PK001" in listed.stdout
    assert "mblint_broken_pack" in listed.stderr and "broken on purpose" in listed.stderr

    result = run_mblint(site, tmp_path, "check", "recipe.py", "--no-cache")
    assert result.returncode == 1, result.stderr
    assert "recipe.py:5:" in result.stdout and "EX001" in result.stdout
    assert "below this team's minimum of 16" in result.stdout


def test_without_the_pack_its_rule_is_absent(tmp_path):
    (tmp_path / "recipe.py").write_text(RECIPE)
    result = run_mblint(tmp_path, tmp_path, "check", "recipe.py", "--no-cache")
    assert "EX001" not in result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


def test_entry_point_scan_agrees_with_importlib_metadata(tmp_path):
    """mblint reads entry points itself (importing importlib.metadata costs a cold run 20 ms);
    on a path with dist-info and egg-info folders, a distribution installed twice (the first
    wins), comments, extras and other groups, both must give the same answer."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    packs = [(first, "Alpha_Pack-2.0.dist-info", "Alpha_Pack", "2.0", "[mblint]\nalpha = alpha.rules:pack [extra]\n"),
             (first, "beta.egg-info", "beta", "0.5", "# comment\n[other]\nx = y\n\n[mblint]\nbeta = beta\n"),
             (second, "alpha_pack-1.0.dist-info", "alpha-pack", "1.0", "[mblint]\nold_alpha = old\n"),
             (second, "gamma-3.dist-info", "gamma", "3", "[mblint]\ngamma = gamma:rules\n")]
    for folder, info, name, version, entry_points in packs:
        (folder / info).mkdir()
        metadata = "PKG-INFO" if info.endswith(".egg-info") else "METADATA"
        (folder / info / metadata).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n")
        (folder / info / "entry_points.txt").write_text(entry_points)
    script = (
        "from importlib.metadata import entry_points\n"
        "from mblint.plugins import scan_entry_points\n"
        "for group in ('mblint', 'other', 'console_scripts'):\n"
        "    ours = scan_entry_points(group)\n"
        "    theirs = [(e.name, e.value, e.dist.version) for e in entry_points(group=group)]\n"
        "    print(group, ours == theirs, ours)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(first), str(second), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert [line.split()[1] for line in lines] == ["True", "True", "True"], result.stdout
    for expected in ("('alpha', 'alpha.rules:pack [extra]', '2.0')", "('beta', 'beta', '0.5')", "('gamma', 'gamma:rules', '3')"):
        assert expected in lines[0]
    assert "old_alpha" not in lines[0] and "'x', 'y'" in lines[1]


def test_entry_point_values_load_as_importlib_metadata_loads_them():
    from mblint.plugins import _load_entry_point

    assert _load_entry_point("os.path") is os.path
    assert _load_entry_point("os : path.join [extra]") is os.path.join


def test_built_in_pack_walk_agrees_with_pkgutil(tmp_path, monkeypatch):
    """The built-in pack lists its modules with one directory scan per folder; the names and
    their order are pkgutil.walk_packages', on the pack itself and on a package with the odd
    entries pkgutil skips or keeps; the rule classes are the ones inspect.getmembers finds."""
    import importlib
    import inspect
    import pkgutil

    import rules
    from mblint.rule import Rule

    def pkgutil_names(paths, prefix):
        return [info.name for info in pkgutil.walk_packages(paths, prefix)]

    assert list(rules.module_names(rules.__path__, "rules.")) == pkgutil_names(rules.__path__, "rules.")
    package = tmp_path / "oddpack"
    for folder in ("inner/deeper", "inner/__pycache__", "no_init", "twin", "dotted.name"):
        (package / folder).mkdir(parents=True)
    for file in ("__init__.py", "b.py", "a.pyc", "c.cpython-311-x86_64-linux-gnu.so", "twin.py", "notes.txt",
                 "inner/__init__.py", "inner/x.py", "inner/deeper/__init__.py", "inner/deeper/y.py",
                 "inner/__pycache__/x.cpython-311.pyc", "no_init/z.py", "twin/__init__.py", "dotted.name/__init__.py"):
        (package / file).write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    ours = list(rules.module_names([str(package)], "oddpack."))
    assert ours == pkgutil_names([str(package)], "oddpack.") and "oddpack.inner.deeper.y" in ours
    expected = []
    for name in pkgutil_names(rules.__path__, "rules."):
        module = importlib.import_module(name)
        expected += [value for _, value in inspect.getmembers(module, inspect.isclass)
                     if issubclass(value, Rule) and value is not Rule and value.__module__ == name and value.id]
    assert rules.mblint_rules() == expected


FRESH_PACK_LOAD = '''
import importlib, json, sys
from importlib.machinery import SourceFileLoader
asked = []


class Watcher:
    @staticmethod
    def find_spec(name, path=None, target=None):
        asked.append(name) if name.startswith("rules.") else None
        return None


sys.meta_path.insert(0, Watcher)
import rules

classes = rules.mblint_rules()
loaded = {name: [module.__file__, module.__cached__, isinstance(module.__loader__, SourceFileLoader),
                 getattr(sys.modules[name.rpartition(".")[0]], name.rpartition(".")[2]) is module]
          for name, module in sys.modules.items() if name.startswith("rules.")}
sys.meta_path.remove(Watcher)
expected = {}
for name in loaded:
    del sys.modules[name]
for name in loaded:
    module = importlib.import_module(name)
    expected[name] = [module.__file__, module.__cached__, isinstance(module.__loader__, SourceFileLoader), True]
print(json.dumps([asked, loaded, expected, len(classes)]))
'''


def test_built_in_pack_loads_its_modules_from_the_files_it_lists(tmp_path):
    """In a fresh interpreter, the rule modules the walk found as lone ``.py`` files are loaded
    from those files without asking the import system's finders (only the packages are
    imported through them), and look as the import system would have made them."""
    import json

    import rules

    done = subprocess.run([sys.executable, "-c", FRESH_PACK_LOAD], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(Path(rules.__file__).parent.parent)}, check=True)
    asked, loaded, expected, classes = json.loads(done.stdout)
    packages = {name for name in loaded if loaded[name][0].endswith("__init__.py")}
    assert classes > 100 and len(packages) > 5
    assert set(asked) == packages
    assert loaded == expected


def test_files_are_read_whole(tmp_path):
    """``read_bytes`` (the pack's loader, the entry-point scan) reads a file as a buffered
    ``open`` would, whatever its size."""
    import rules
    from mblint.paths import read_bytes

    loader = rules._SourceLoader("x", str(tmp_path / "x.py"))
    for size in (0, 1, 65535, 65536, 200_001):
        target = tmp_path / f"data{size}"
        target.write_bytes(bytes(range(256)) * (size // 256) + b"z" * (size % 256))
        assert read_bytes(str(target)) == loader.get_data(str(target)) == target.read_bytes()


def test_built_in_pack_lists_lone_sources(tmp_path):
    """Only a module whose one file is ``name.py`` is loaded from its file; twins (a package
    beside a module, a ``.py`` beside a compiled module) go through the import system."""
    import rules

    for file in ("a.py", "b.py", "b.cpython-311-x86_64-linux-gnu.so", "c.pyc", "pkg/__init__.py", "pkg.py"):
        (tmp_path / file).parent.mkdir(exist_ok=True)
        (tmp_path / file).write_text("")
    assert rules._folder_modules(str(tmp_path)) == [
        ("a", False, str(tmp_path / "a.py")), ("b", False, None), ("c", False, None), ("pkg", True, None)]


def test_loading_the_rules_leaves_run_time_helpers_unimported(tmp_path):
    """The command line, the engine, the worker pool and the built-in rules import no module
    that only some runs use (suggestions for unknown names, example bodies, killing workers):
    a cold run pays for every import before it forks its workers."""
    import rules

    script = ("import sys, mblint.cli, mblint.engine, mblint.workers, rules\n"
              "rules.mblint_rules()\n"
              "print(sorted({'difflib', 'textwrap', 'signal'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(rules.__file__).parent.parent)})
    assert done.stdout.strip() == "[]"
