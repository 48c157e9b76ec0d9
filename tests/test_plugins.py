"""Rule packs register through the ``mblint`` entry-point group; a broken one is reported and
skipped. The packs are made visible to a fresh interpreter by a ``.dist-info`` folder on its
path, which is what installing them would create."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import rules

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


def test_the_built_in_pack_imports_only_the_rule_kit_from_mblint():
    """The built-in pack is written as a third-party pack would be: mblint.rulekit is its
    whole view of mblint."""
    import ast

    imported = set()
    for path in Path(rules.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add((node.module.split(".")[0], node.module))
            elif isinstance(node, ast.Import):
                imported.update((alias.name.split(".")[0], alias.name) for alias in node.names)
    assert {module for top, module in imported if top == "mblint"} == {"mblint.rulekit"}
    assert not {module for top, module in imported if top == "rules"}
