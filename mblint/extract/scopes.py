"""Module scopes, frames and imports: where names come from."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mblint.extract.limits import BudgetExceeded
from mblint.extract.modules import ModuleSource, SourceError, SourceLimit, module_file
from mblint.extract.python_builtins import _BUILTIN_NAMES
from mblint.extract.values import External, FuncRef, ModuleRef, Obj
from mblint.model import UNKNOWN

if TYPE_CHECKING:
    from mblint.extract.interpreter import Interpreter


class Return(Exception):
    """A ``return`` (or a ``raise``: value None, dead) leaving the current function body."""

    def __init__(self, value: Any, dead: bool = False) -> None:
        self.value = value
        self.dead = dead


@dataclass
class LazyImport:
    """A name an import statement in ``from_file`` binds, resolved when it is first read
    (``level``: the dots of a relative import)."""

    module: str | None  # absolute module name, or None for relative
    attr: str | None
    from_file: Path
    level: int = 0


# Packages whose modules are never run: no recipe value comes from them, and running the
# bodies of transformers' lazy-import machinery takes a recipe's whole step budget. (Model
# config classes are read without running them: mblint.extract.hf_transformers.)
NOT_FOLLOWED = frozenset({"transformers", "torch"})


class ModuleScope:
    """The top-level namespace of one module, built on first use."""

    def __init__(self, interp: "Interpreter", source: ModuleSource) -> None:
        self.source = source
        self.names: dict[str, Any] = {}
        self.star_imports: list[LazyImport] = []
        self._interp = interp
        self._built = False
        self._building = False
        self._searching_stars = False
        self.deps: set[Path] = set()  # modules this one's imports resolved to
        self._resolved_path: Path | None = None

    @property
    def path(self) -> Path:
        return self.source.path

    @property
    def resolved_path(self) -> Path:
        if self._resolved_path is None:
            self._resolved_path = self._interp.finder.real_paths.of(self.source.path)
        return self._resolved_path

    def dotted_name(self) -> str | None:
        """The module's dotted name under the first import root that holds it (a file outside
        them: its path, as shown), None for a file with no name."""
        path = self.resolved_path
        for root in self._interp.finder.roots:
            try:
                parts = list(path.relative_to(root).with_suffix("").parts)
            except ValueError:
                continue
            if parts and parts[-1] == "__init__":
                parts.pop()
            if parts and all(part.isidentifier() for part in parts):
                return ".".join(parts)
        return self.source.display_path or None

    def lookup(self, name: str) -> Any:
        self.build()
        if name in self.names:
            value = self.names[name]
            if isinstance(value, LazyImport):
                value = self._interp.resolve_import(value)
                self.names[name] = value
            return value
        if self._searching_stars:
            return _NOT_FOUND
        self._searching_stars = True
        try:
            for star in self.star_imports:
                target = self._interp.resolve_import(star)
                if isinstance(target, ModuleRef) and target.scope is not self:
                    value = target.scope.lookup(name)
                    if value is not _NOT_FOUND:
                        return value
        finally:
            self._searching_stars = False
        return _NOT_FOUND

    def build(self) -> None:
        if self._built or self._building:
            return
        self._building = True
        try:
            self._interp.run_module_body(self)
        finally:
            self._building = False
            self._built = True


class _NotFound:
    pass


_NOT_FOUND = _NotFound()


@dataclass(eq=False, repr=False)
class Frame:
    """One function call (or module body) being interpreted."""

    scope: ModuleScope
    locals: dict[str, Any] = field(default_factory=dict)
    returns: list[tuple[Any, dict]] = field(default_factory=list)
    function: str = "<module>"
    # name -> (the ``name = ...`` statement, the value it stored): where a local got its value,
    # made into an origin only when the value is stored into a config field (``through``)
    local_sites: dict[str, tuple[ast.Assign, Any]] = field(default_factory=dict)


class ScopesMixin:
    """Module scopes, imports and name look-up. Part of ``Interpreter``."""

    def scope_for(self, path: Path) -> ModuleScope:
        scope = self.scopes.get(path)
        if scope is None:
            key = self.finder.real_paths.of(path)
            scope = self.scopes.get(key)
            if scope is None:
                scope = ModuleScope(self, self.finder.load(path))
                self.scopes[key] = scope
            self.scopes[path] = scope
        return scope

    def resolve_import(self, imp: LazyImport) -> Any:
        known_class = self.megatron_class(imp)
        if known_class is not None:
            return known_class
        if not imp.level and (imp.module or "").split(".")[0] in NOT_FOLLOWED:
            return self.external(f"{imp.module}.{imp.attr}" if imp.attr else imp.module or "")
        owner = self.scopes.get(imp.from_file)
        searched = owner.deps if owner is not None else None  # where the module was looked for in vain
        if imp.level:
            path = self.finder.find_relative(imp.from_file, imp.level, imp.module, searched)
            label = f"{'.' * imp.level}{imp.module or ''}"
        else:
            path = (self.finder.find(imp.module or "", searched)
                    or self.finder.find_beside(imp.from_file, imp.module or "", searched))
            label = imp.module or ""
        if owner is not None and path is not None:
            owner.deps.add(path)
        if imp.attr is None:
            return self._module_value(path, label)
        if path is not None:
            scope = self._scope_or_none(path)
            if scope is not None:
                value = scope.lookup(imp.attr)
                if value is not _NOT_FOUND:
                    return value
            submodule = self._submodule(imp, path)
            if submodule is not None:
                return submodule
        return self.external(f"{label}.{imp.attr}".lstrip("."))

    def dependencies(self, path: Path) -> set[Path]:
        """Every module file that ``path``'s module reached through imports, transitively, and
        the other files its values came from (a model's config.json)."""
        seen: set[Path] = set()
        stack = [path]
        while stack:
            current = stack.pop()
            scope = self.scopes.get(current)
            if scope is None:
                if current != path:
                    seen.add(current)  # a file that is no module (or a module never read)
                continue
            if scope.resolved_path in seen:
                continue
            seen.add(scope.resolved_path)
            stack.extend(scope.deps)
        return seen

    def _submodule(self, imp: LazyImport, package_file: Path) -> Any:
        if package_file.name != "__init__.py":
            return None
        owner = self.scopes.get(imp.from_file)
        searched: list[Path] = []
        candidate = module_file(package_file.parent, [imp.attr], self.finder.folders, searched)
        if owner is not None:
            owner.deps.update(searched)
        if candidate is not None:
            if owner is not None:
                owner.deps.add(candidate)
            scope = self._scope_or_none(candidate)
            return ModuleRef(scope) if scope else UNKNOWN
        return None

    def _module_value(self, path: Path | None, label: str) -> Any:
        if path is None:
            return External(label)
        scope = self._scope_or_none(path)
        return ModuleRef(scope) if scope else External(label)

    def _scope_or_none(self, path: Path) -> ModuleScope | None:
        try:
            return self.scope_for(path)
        except SourceError as error:
            self.notes.append(f"{error.path}:{error.line}: {error.message}")
            if isinstance(error, SourceLimit):
                self.limit(f"imported module {self.finder.display(error.path)}: {error.message}")
            else:
                self.unreadable_modules[path] = error
            return None

    def run_module_body(self, scope: ModuleScope) -> None:
        frame = Frame(scope, locals=scope.names)
        for stmt in scope.source.tree.body:
            try:
                self.exec_module_stmt(stmt, frame)
            except (Return, BudgetExceeded):
                break
            except RecursionError:
                self.limit(f"{scope.source.display_path}:{stmt.lineno}: Python recursion limit reached "
                           "(nested too deeply): the statement is not interpreted")

    def exec_module_stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            frame.locals[stmt.name] = FuncRef(frame.scope, stmt)
        elif isinstance(stmt, ast.ClassDef):
            frame.locals[stmt.name] = self._class_value(stmt.name, frame.scope)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self.exec_import(stmt, frame)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.exec_stmt(stmt, frame)
        elif isinstance(stmt, ast.If):
            self.exec_stmt(stmt, frame)
        elif isinstance(stmt, ast.Try):
            for inner in stmt.body:
                self.exec_module_stmt(inner, frame)

    def exec_import(self, stmt: ast.Import | ast.ImportFrom, frame: Frame) -> None:
        path = frame.scope.path
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    frame.locals[alias.asname] = LazyImport(alias.name, None, path)
                else:
                    top = alias.name.split(".")[0]
                    frame.locals[top] = LazyImport(top, None, path)
            return
        for alias in stmt.names:
            imp = LazyImport(stmt.module, alias.name, path, stmt.level)
            if alias.name == "*":
                frame.scope.star_imports.append(LazyImport(stmt.module, None, path, stmt.level))
            else:
                frame.locals[alias.asname or alias.name] = imp

    def lookup(self, name: str, frame: Frame) -> Any:
        if name in frame.locals:
            value = frame.locals[name]
            if isinstance(value, LazyImport):
                value = self.resolve_import(value)
                frame.locals[name] = value
            return value
        if frame.locals is not frame.scope.names:
            value = frame.scope.lookup(name)
            if value is not _NOT_FOUND:
                return self.copy_obj(value, {}) if isinstance(value, Obj) else value
        return _BUILTIN_NAMES.get(name, UNKNOWN)

