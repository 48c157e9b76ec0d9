"""A fresh clone's tests need nothing but the repository and what ``pip install -e ".[test]"``
installs: no folder beside the clone, no path of a development machine."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys

from integration_support import REPO, SARIF_SCHEMA

# A development machine's folders, or a walk up out of the clone (spelled in pieces so that this
# file does not match itself). scripts/ holds development tools and may name them.
OUTSIDE = re.compile("|".join([re.escape("/wo" + "rk/"), re.escape("REPO" + ".parent")]))


def _project_files():
    for folder in ("tests", "mblint", "rules", ".ci", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in (".py", "") and "__pycache__" not in path.parts:
                yield path


def test_no_test_or_code_names_a_place_outside_the_clone():
    offenders = []
    for path in _project_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_sarif_schema_copy_is_the_published_one():
    """tests/data/README.md names the source; this is the sha256 of the file published there."""
    digest = hashlib.sha256(SARIF_SCHEMA.read_bytes()).hexdigest()
    assert digest == "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    assert SARIF_SCHEMA.is_relative_to(REPO)


def test_ci_runs_the_readme_test_command_from_a_lone_clone():
    ci = (REPO / ".ci" / "run").read_text()
    assert "git clone" in ci and "mktemp -d" in ci
    readme_lines = [line for line in (REPO / "README.md").read_text().splitlines()
                    if 'pip install -e ".[test]"' in line]
    assert len(readme_lines) == 1
    assert readme_lines[0].endswith("python -m pytest -q")


def test_readme_pytest_command_shows_the_passed_line():
    """README runs ``pytest -q``; a ``-q`` in the project's addopts too makes it ``-qq``, which
    drops the 'N passed in X s' line a user looks for."""
    one_test = "tests/test_self_contained.py::test_sarif_schema_copy_is_the_published_one"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", one_test],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^1 passed in [0-9.]+s", done.stdout, re.MULTILINE), done.stdout
