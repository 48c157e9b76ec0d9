"""Exclude patterns: answered per folder and per name from memory, as a whole-path test would."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from mblint.discover import DEFAULT_EXCLUDES, is_excluded


def _every_component(path: Path, patterns: tuple[str, ...]) -> bool:
    """The plain definition: a pattern with "/" against the path, the others against each
    component."""
    text = path.as_posix()
    for pattern in patterns:
        if "/" in pattern and (fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(text, f"*/{pattern}")
                               or fnmatch.fnmatch(text, f"{pattern}/*")):
            return True
    return any(fnmatch.fnmatch(part, pattern) for part in text.split("/") if part not in (".", "..")
               for pattern in patterns if "/" not in pattern)


def test_excludes_match_the_plain_definition() -> None:
    paths = ["a.py", "./a.py", "build/a.py", "src/build/x/a.py", "src/builder/a.py", "/abs/a.py", "/a.py",
             "//a.py", ".", "..", "../x/a.py", "x/../a.py", "pkg.egg-info/a.py", "gen/a.py", "x/gen",
             "conf/sub/a.yaml", "conf/a.yaml", "a/.venv", "dist", "*", "s p/a b.py", "[x]/a.py", "x/a]b/c.py",
             "ab.py", "A.PY"]
    pattern_sets = [DEFAULT_EXCLUDES, ("gen",), ("conf/**",), ("conf/*.yaml", "gen*"), ("*",), ("",),
                    ("a.py",), ("*.py", "x/*"), DEFAULT_EXCLUDES + ("src/*", "gen"), ("[x]", "a]b", "a?.py", "A.PY")]
    for patterns in pattern_sets:
        for raw in paths:
            path = Path(raw)
            assert is_excluded(path, patterns) == _every_component(path, patterns), (raw, patterns)
            assert is_excluded(path, patterns) == _every_component(path, patterns), (raw, patterns)  # from memory
