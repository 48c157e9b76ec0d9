"""The engine orchestrates the readers; no reader reaches back into the engine (an import
cycle made the launch path go up and down the layers)."""

from __future__ import annotations

import ast
from pathlib import Path

import mblint

PACKAGE = Path(mblint.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function, absolute names."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name == "__init__.py":
        package += ".__init__"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level)[0]
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_reader_imports_the_engine():
    readers = sorted((PACKAGE / "readers").glob("*.py"))
    assert {path.stem for path in readers} >= {"__init__", "python", "overrides", "launch", "entry"}
    for path in readers:
        assert "mblint.engine" not in imported_modules(path), f"{module_name(path)} imports mblint.engine"


def test_nothing_the_engine_imports_imports_the_engine_back():
    """No module of the package that the engine reaches by its imports (at any depth) imports
    the engine: the engine is the top of the layers below the command line."""
    modules = {module_name(path): imported_modules(path) for path in PACKAGE.rglob("*.py")}
    reached, todo = set(), ["mblint.engine"]
    while todo:
        for name in modules.get(todo.pop(), ()):
            if name in modules and name not in reached:
                reached.add(name)
                todo.append(name)
    assert not {name for name in reached if "mblint.engine" in modules[name]}


def test_only_the_layers_above_import_the_engine():
    """The engine is imported by the command line and the test kit alone: every module below it
    (the rule run, the settings in force, the cache, the workers, suppressions, the fix loop,
    the readers) gets what it needs handed in, so none can close a cycle with it."""
    importers = {module_name(path) for path in PACKAGE.rglob("*.py") if "mblint.engine" in imported_modules(path)}
    assert importers == {"mblint.cli", "mblint.testing"}
