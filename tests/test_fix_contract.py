"""Fixes keep ruff's contract (issue 21, section 3): ``--unsafe-fixes`` only widens what
``--fix``/``--diff`` apply, a safe fix never contradicts an explicit literal, and fixes of
different findings touching the same fields are planned together."""

from __future__ import annotations

from pathlib import Path

from integration_support import BAD_RECIPE, run


def test_unsafe_fixes_alone_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)  # PK001, whose fix is unsafe
    result = run(["check", "--no-cache", "--unsafe-fixes", "r.py"], tmp_path)
    assert result.exit_code == 1
    assert "PK001" in result.stdout and "Fixed" not in result.stdout + result.stderr
    assert (tmp_path / "r.py").read_text() == BAD_RECIPE
