"""A recipe reached through a re-export alias (as 0.6.2's recipes/llama/llama3.py re-exports
the functions of recipes/llama/h100/llama3.py under legacy names) is reported in the file and
at the line that set the value, never at that line number in the alias file (issue 21,
section 4)."""

from __future__ import annotations

import json
from pathlib import Path

from integration_support import BAD_RECIPE, PK001_LINE, run

ALIASES = '''"""Compatibility aliases for legacy recipe names."""

from recipes.h100.defs import (
    sft_config as legacy_sft_config,
)
'''


def _tree(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "recipes" / "h100").mkdir(parents=True)
    (tmp_path / "recipes" / "__init__.py").write_text("")
    (tmp_path / "recipes" / "h100" / "__init__.py").write_text("")
    (tmp_path / "recipes" / "h100" / "defs.py").write_text("\n" * 20 + BAD_RECIPE)  # the def beyond the alias file's end
    (tmp_path / "recipes" / "aliases.py").write_text(ALIASES)


def _places(result) -> list[tuple[str, int]]:
    return [(f["location"]["path"], f["location"]["line"]) for f in json.loads(result.stdout)["findings"]]


def test_findings_land_in_the_defining_file_when_both_are_linted(tmp_path: Path) -> None:
    _tree(tmp_path)
    result = run(["check", "--no-cache", "--format", "json", "recipes"], tmp_path)
    assert _places(result) == [("recipes/h100/defs.py", PK001_LINE + 20)]


def test_the_alias_file_alone_reports_nothing_at_a_line_it_does_not_have(tmp_path: Path) -> None:
    _tree(tmp_path)
    result = run(["check", "--no-cache", "--format", "json", "recipes/aliases.py"], tmp_path)
    lines = len(ALIASES.splitlines())
    assert all(path != "recipes/aliases.py" or line <= lines for path, line in _places(result))
