"""The real pre-commit (from PyPI) runs this repository's hooks with ``try-repo`` against a
temporary git repository holding a bad recipe. Slow-ish (pre-commit builds a virtualenv with
mblint in it, ~30 s), so the check half runs once, with every assertion in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from integration_support import BAD_RECIPE, FIXABLE_RECIPE, GOOD_RECIPE, PK001_LINE, REPO

pytest.importorskip("pre_commit", reason="pre-commit is in the test extra: pip install -e .[test]")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def target(tmp_path: Path) -> tuple[Path, dict]:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "recipe.py").write_text(BAD_RECIPE)
    (repo / "good.py").write_text(GOOD_RECIPE)
    (repo / "generated").mkdir()
    (repo / "generated" / "recipe.py").write_text(BAD_RECIPE)
    (repo / "mblint.toml").write_text("exclude = ['generated']\n")
    git(repo, "add", "-A")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "PRE_COMMIT_HOME")}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PRE_COMMIT_COLOR="never",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return repo, env


def try_repo(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), *args]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def test_check_hook_fails_on_bad_recipe_and_honours_excludes(target) -> None:
    repo, env = target
    done = try_repo(repo, env, "mblint", "--files", "recipe.py", "good.py", "generated/recipe.py")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "mblint..." in output and "Failed" in output, output
    assert f"recipe.py:{PK001_LINE}:" in output and "PK001" in output, output
    assert "generated/recipe.py" not in output, output  # excluded although passed explicitly
    assert "Found 1 finding" in output, output


def test_fix_hook_then_check_hook_passes(target) -> None:
    repo, env = target
    (repo / "fixable.py").write_text(FIXABLE_RECIPE)
    git(repo, "add", "fixable.py")
    fixing = try_repo(repo, env, "mblint-fix", "--files", "fixable.py", "good.py")
    output = fixing.stdout + fixing.stderr
    assert fixing.returncode == 1, output  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in output and "Fixed 1 finding with 1 edit in 1 file." in output, output
    fixed = (repo / "fixable.py").read_text()
    assert "cfg.model.use_te_rng_tracker = True" in fixed and "cfg.rng.te_rng_tracker" not in fixed, fixed
    checking = try_repo(repo, env, "mblint", "--files", "fixable.py", "good.py")
    output = checking.stdout + checking.stderr
    assert checking.returncode == 0, output
    assert "mblint...." in output and "Passed" in output, output
