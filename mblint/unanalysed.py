"""Why a recipe was not analysed, in words a user can act on (SY005).

Two causes are found from the module's syntax alone, after the interpreter gave up:

- ``unread_imports``: names the recipe function uses that come from an import mblint could
  not read (Megatron-Bridge or a team package not on mblint's import roots), or from a module
  it read that does not define them (an ImportError when the recipe runs);
- ``main_only_calls``: functions of the module called with arguments from its ``if __name__ == "__main__":``
  block, which mblint never runs, whose configuration no recipe analysed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import NamedTuple

# The settings' `search-paths` take only folders inside the project (others are refused), so
# a Megatron-Bridge source, which lives outside it, is named with --search-path or installed.
HOW_TO_PROVIDE_MEGATRON = ("install Megatron-Bridge where mblint runs, or give the folder holding its megatron/ "
                           "(a checkout's src/, an unzipped wheel) with --search-path; `search-paths` in the "
                           "settings takes only folders inside the project")
HOW_TO_PROVIDE = ("give the folder holding it with --search-path (or `search-paths` in the settings, for a folder "
                  "inside the project), or install it where mblint runs")


class UnreadImport(NamedTuple):
    name: str  # the name the function uses
    module: str  # as written in the import ("megatron.bridge.recipes.llama", ".helpers")
    line: int  # of the import statement
    undefined: bool = False  # the module was read and does not define the name


def unread_imports(tree: ast.Module, function: ast.FunctionDef, path: Path, finder, schema) -> list[UnreadImport]:
    """The imports of ``tree`` whose names ``function`` uses and that ``finder`` cannot find
    (the standard library and config classes the schema knows are never counted)."""
    used = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    called = {node.func.id for node in ast.walk(function)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    unread = []
    for statement in tree.body:
        for name, module, attr, level in _imported_names(statement):
            if name not in used:
                continue
            written = "." * level + (module or "")
            if not _readable(module, attr, level, path, finder, schema):
                unread.append(UnreadImport(name, written, statement.lineno))
            elif attr and not _defines(module, attr, level, path, finder):
                unread.append(UnreadImport(name, written, statement.lineno, undefined=True))
    # The likely cause first: a function the recipe calls, from Megatron-Bridge or the project.
    return sorted(unread, key=lambda u: (not u.undefined, u.name not in called,
                                         not u.module.startswith(("megatron", "."))))


def _imported_names(statement: ast.stmt):
    """(local name, module, attribute or None, level) of each name an import binds."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            yield (alias.asname or alias.name.split(".")[0]), alias.name, None, 0
    elif isinstance(statement, ast.ImportFrom):
        for alias in statement.names:
            if alias.name != "*":
                yield alias.asname or alias.name, statement.module, alias.name, statement.level


def _readable(module: str | None, attr: str | None, level: int, path: Path, finder, schema) -> bool:
    if not level and module and module.split(".")[0] in sys.stdlib_module_names:
        return True
    if attr and module and module.startswith("megatron") and (
            schema.find_class(attr, module) is not None or schema.find_enum(attr) is not None):
        return True  # a config class: mblint knows it without reading its module
    if level:
        return finder.find_relative(path, level, module) is not None
    return finder.find(module or "") is not None or finder.find_beside(path, module or "") is not None


def _defines(module: str | None, attr: str, level: int, path: Path, finder) -> bool:
    """Whether the module an import names (found and readable) binds ``attr`` at its top level
    or has it as a submodule. Anything mblint cannot rule out (a star import, a module-level
    ``__getattr__``, a module it cannot parse) counts as defined."""
    if level:
        found = finder.find_relative(path, level, module)
        submodule = finder.find_relative(path, level, f"{module}.{attr}" if module else attr)
    else:
        found = finder.find(module or "") or finder.find_beside(path, module or "")
        submodule = finder.find(f"{module}.{attr}") or finder.find_beside(path, f"{module}.{attr}")
    if found is None or submodule is not None or found.suffix != ".py":
        return True
    try:
        tree = finder.load(found).tree
    except Exception:  # noqa: BLE001 - an unreadable module is reported elsewhere
        return True
    names = _top_level_names(tree)
    return attr in names or "*" in names or "__getattr__" in names


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names a module may bind when it runs, ``*`` for a star import. Generous on purpose (names
    bound inside its functions count too): a name counted here is never reported missing."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update("*" if alias.name == "*" else alias.asname or alias.name.split(".")[0]
                         for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def unread_message(function: str, unread: list[UnreadImport]) -> str:
    first = unread[0]
    more = f" (and {len(unread) - 1} more)" if len(unread) > 1 else ""
    if first.undefined:
        return (f"{function} was not analysed: it uses {first.name} from {first.module} (imported on line "
                f"{first.line}){more}, which that module does not define: the import fails when the recipe runs")
    return (f"{function} was not analysed: it uses {first.name} from {first.module} (imported on line "
            f"{first.line}){more}, a module mblint could not read; {how_to_provide(first.module)}")


def how_to_provide(module: str) -> str:
    return HOW_TO_PROVIDE_MEGATRON if module.split(".")[0] == "megatron" else HOW_TO_PROVIDE


class MainOnlyCall(NamedTuple):
    function: str
    call: ast.Call


def main_only_calls(tree: ast.Module, analysed: set[str]) -> list[MainOnlyCall]:
    """Calls with arguments, in the module's ``if __name__ == "__main__":`` blocks, of functions
    the module defines that build a configuration (they mention ConfigContainer or call a ``*_config``
    function) and that no analysed recipe stands for (``analysed``: the function names whose
    configuration was resolved)."""
    builders = {node.name: node for node in tree.body
                if isinstance(node, ast.FunctionDef) and (node.name.endswith("_config") or builds_config(node))}
    calls = []
    for block in (node for node in tree.body if _is_main_block(node)):
        for node in ast.walk(block):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in builders
                    and node.func.id not in analysed and (node.args or node.keywords)):
                calls.append(MainOnlyCall(node.func.id, node))
    return calls


def main_only_message(found: MainOnlyCall) -> str:
    return (f"{found.function}(...) is called only from the `if __name__ == \"__main__\":` block, which mblint "
            f"does not run, so the configuration it builds was not analysed; call it from a recipe function "
            f"(`def my_config(): return {found.function}(...)` with these arguments) to have it checked")


def _is_main_block(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    sides = [test.left, *test.comparators]
    return (len(sides) == 2 and isinstance(test.ops[0], ast.Eq)
            and any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def builds_config(function: ast.FunctionDef) -> bool:
    """It names ConfigContainer or calls a ``*_config`` function."""
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == "ConfigContainer":
            return True
        if isinstance(node, ast.Call):
            callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if callee.endswith("_config"):
                return True
    return False
