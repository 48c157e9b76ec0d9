"""Discovery leaves out what git ignores (checked against git itself) and what a run reads as a
dependency (a search path such as a vendored Megatron-Bridge source), unless a path given names it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from integration_support import BAD_RECIPE, GOOD_RECIPE, run

from mblint.discover import discover

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

IGNORES = {
    ".gitignore": "*.log.py\nbuild/\n/top.py\ngen/**/*.yaml\nconf/*.yaml\n!conf/keep.yaml\n# a comment\n\\#hash.py\n",
    "sub/.gitignore": "!important.log.py\nlocal.py\n/anchored.py\n",
    "sub/deeper/.gitignore": "!local.py\n",
}
FILES = ["a.log.py", "sub/important.log.py", "sub/other.log.py", "build/x.py", "sub/build/y.py", "top.py",
         "sub/top.py", "gen/a/b/c.yaml", "gen/c.yaml", "conf/a.yaml", "conf/keep.yaml", "sub/local.py",
         "local.py", "sub/deeper/local.py", "anchored.py", "sub/anchored.py", "sub/x/anchored.py", "secret.py",
         "sub/secret.py", "#hash.py", "plain.py", "sub/plain.yaml"]


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout


@needs_git
def test_discovery_leaves_out_exactly_what_git_ignores(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", ".")
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("secret.py\n")
    for name, text in IGNORES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("X = 1\n")
    kept_by_git = set(_git(tmp_path, "ls-files", "--others", "--exclude-standard").split()) & set(FILES)
    assert {"plain.py", "sub/important.log.py", "conf/keep.yaml"} <= kept_by_git  # the cases are real
    assert {"build/x.py", "secret.py", "sub/local.py", "a.log.py"}.isdisjoint(kept_by_git)
    os.chdir(tmp_path)  # as a user runs `mblint check .`
    found = discover(["."])
    assert {path.as_posix() for path in found.python + found.yaml} == kept_by_git
    found = discover([str(tmp_path / "sub")])  # a folder below the work tree's root: the root's rules apply too
    assert {path.relative_to(tmp_path).as_posix() for path in found.python + found.yaml} == {
        name for name in kept_by_git if name.startswith("sub/")}


def test_a_folder_outside_any_work_tree_walks_everything(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "a.py").write_text("X = 1\n")
    assert [path.name for path in discover([str(tmp_path)]).python] == ["a.py"]


def _vendored(root: Path) -> None:
    """The layout docs/integrations.md suggests: an unzipped Megatron-Bridge in .megatron-bridge-src."""
    recipes = root / ".megatron-bridge-src" / "megatron" / "bridge" / "recipes"
    recipes.mkdir(parents=True)
    (recipes / "llama.py").write_text(BAD_RECIPE)
    (root / "recipes").mkdir()
    (root / "recipes" / "mine.py").write_text(GOOD_RECIPE)


def _linted(root: Path, *paths: str) -> tuple[list[str], str]:
    result = run(["check", "--no-cache", "--format", "json", *paths], root)
    document = json.loads(result.stdout)
    return sorted({f["location"]["path"] for f in document["findings"]}), result.stderr


@needs_git
def test_a_vendored_megatron_bridge_in_gitignore_is_not_linted(tmp_path: Path) -> None:
    _vendored(tmp_path)
    _git(tmp_path, "init", "-q", ".")
    assert _linted(tmp_path, ".")[0] == [".megatron-bridge-src/megatron/bridge/recipes/llama.py"]
    (tmp_path / ".gitignore").write_text(".megatron-bridge-src/\n.mb-wheel/\n")
    assert _linted(tmp_path, ".")[0] == []
    # named on the command line, it is linted (as git lists an ignored file given by name)
    assert _linted(tmp_path, ".megatron-bridge-src/megatron/bridge/recipes")[0] == [
        ".megatron-bridge-src/megatron/bridge/recipes/llama.py"]


def test_a_search_path_inside_the_project_is_a_dependency_not_the_projects_code(tmp_path: Path) -> None:
    _vendored(tmp_path)
    (tmp_path / "mblint.toml").write_text('search-paths = [".megatron-bridge-src"]\n')
    findings, notes = _linted(tmp_path, ".")
    assert findings == []
    assert "1 file in .megatron-bridge-src not linted: it is a search path, read as a dependency" in notes
    assert _linted(tmp_path, ".megatron-bridge-src")[0] == [".megatron-bridge-src/megatron/bridge/recipes/llama.py"]
    (tmp_path / "mblint.toml").write_text("")
    assert _linted(tmp_path, "--search-path", ".megatron-bridge-src", ".")[0] == []
