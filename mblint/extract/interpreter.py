"""A small abstract interpreter over recipe functions. It reads the code (``ast``) and never
imports or runs it. Values it cannot know become ``UNKNOWN``; a branch on an unknown condition
runs both ways and merges (equal -> known, different -> unknown); stores inside loops and
objects handed to calls it cannot follow become unknown.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import re
from itertools import compress, repeat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from mblint.extract.modules import ModuleFinder, ModuleSource, SourceError, SourceLimit
from mblint.extract.values import (
    _versions,
    BoundMethod,
    ClassRef,
    EnumRef,
    External,
    FuncRef,
    HFBridge,
    ModuleRef,
    Obj,
    Rebase,
    children_among,
    is_missing,
    is_unknown,
    merge_values,
    true_slots,
)
from mblint.model import UNKNOWN, Origin, Unknown
from mblint.schema import ClassSpec, Schema

# Limits of the interpretation (docs/robustness.md). Real Megatron-Bridge recipes stay far
# below them: at most about 200 steps per recipe and 2,000 per file.
MAX_CALL_DEPTH = 24
MAX_STEPS = 200_000  # statements (and comprehension items, and copies) per recipe
MAX_EXPR_DEPTH = 200
MAX_COMPREHENSION = 10_000
MAX_VALUE_SIZE = 10_000  # characters of a string, elements of a list or tuple (nested ones counted)
MAX_INT_BITS = 4_096
MAX_RECIPES_PER_FILE = 500
MAX_FILE_STEPS = 2_000_000
# Results of recipes that mblint called (not code it reads) stay memoized until a call reuses
# them, but only the latest this many: most recipes are called by no other, and each kept
# result holds its whole configuration. Reuse comes soon (the same file, a sibling file).
MAX_UNUSED_RECIPE_RESULTS = 64
HF_PROVIDER_LABEL = "HFModelProvider"
# torch dtypes are values in configs, spelled as Megatron-Bridge's schema spells defaults.
TORCH_DTYPES = {"float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "uint8",
                "int16", "int32", "int64", "bool", "float8_e4m3fn", "float8_e5m2"}
LIST_MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"}


class Return(Exception):
    """A ``return`` (or a ``raise``: value None, dead) leaving the current function body."""

    def __init__(self, value: Any, dead: bool = False) -> None:
        self.value = value
        self.dead = dead


class BudgetExceeded(Exception):
    pass


@dataclass
class LazyImport:
    module: str | None  # absolute module name, or None for relative
    attr: str | None
    from_file: Path
    level: int = 0


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
_FAST_PATH_DEPTH = MAX_EXPR_DEPTH - 1  # eval() of a leaf below it cannot reach the depth limit
_new_origin = Origin.at
_FIELDS, _OPEN, _VERSION, _CHILDREN = (operator.attrgetter(name) for name in ("fields", "open", "version", "_children"))
_BUILT_PER_OBJECT = object()  # default_table(): default_for() builds a new value each time
_HF_DERIVED = object()  # default_table(): an HF provider field read from the HF config


@dataclass(eq=False, repr=False)
class Frame:
    """One function call (or module body) being interpreted."""

    scope: ModuleScope
    locals: dict[str, Any] = field(default_factory=dict)
    returns: list[tuple[Any, dict]] = field(default_factory=list)
    function: str = "<module>"


BINARY_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
COMPARE_OPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
SCALARS = (int, float, str, bool, type(None))
_PLAIN_TYPES = frozenset(SCALARS)  # exact types (no subclass) of the arguments of memoized calls


def _known_seq(values: Iterable[Any]) -> bool:
    return all(not is_unknown(v) and not isinstance(v, Obj) for v in values)


def _pure(fn, numbers_only: bool = False):
    """A builtin applied to known arguments. ``numbers_only``: refused unless every argument
    (or element) is a number of bounded size, since the result could be huge (``sum`` of
    lists, ``math.prod`` of a string and a count, ``math.lcm`` of big numbers)."""
    def call(args, kwargs):
        if kwargs or not _known_seq(args):
            return UNKNOWN
        if numbers_only and not _small_numbers(args):
            return UNKNOWN
        try:
            result = fn(*args)
        except Exception:  # noqa: BLE001 - a call that would raise yields unknown
            return UNKNOWN
        return UNKNOWN if _oversized(result) else result

    return call


def _small_numbers(args: list) -> bool:
    items = [x for a in args for x in (a if isinstance(a, (list, tuple, set)) else (a,))]
    if not all(isinstance(x, (int, float)) for x in items):
        return False
    return sum(x.bit_length() for x in items if isinstance(x, int)) <= MAX_INT_BITS


PURE_BUILTINS = {
    "min": _pure(min),
    "max": _pure(max),
    "abs": _pure(abs),
    "int": _pure(int),
    "float": _pure(float),
    "str": _pure(str),
    "bool": _pure(bool),
    "round": _pure(round),
    "len": _pure(len),
    "sum": _pure(sum, numbers_only=True),
    "sorted": _pure(lambda *a: list(sorted(*a))),
    "any": _pure(any),
    "all": _pure(all),
    "tuple": _pure(lambda *a: tuple(*a)),
    "list": _pure(lambda *a: list(*a)),
    "math.lcm": _pure(math.lcm, numbers_only=True),
    "math.gcd": _pure(math.gcd),
    "math.ceil": _pure(math.ceil),
    "math.floor": _pure(math.floor),
    "math.prod": _pure(math.prod, numbers_only=True),
    "math.sqrt": _pure(math.sqrt),
    "math.log2": _pure(math.log2),
}
MATH_NAMES = {"lcm", "gcd", "ceil", "floor", "prod", "sqrt", "log2"}


class CallSite:
    """A call the interpreter went through (``Origin.via``). Its position is worked out only
    when a finding is reported through it."""

    __slots__ = ("source", "node", "_origin")

    def __init__(self, source: ModuleSource, node: ast.AST) -> None:
        self.source = source
        self.node = node
        self._origin: Origin | None = None

    def origin(self) -> Origin:
        if self._origin is None:
            node, source = self.node, self.source
            end_line = getattr(node, "end_lineno", None) or node.lineno
            self._origin = Origin(source.display_path, node.lineno, source.char_column(node.lineno, node.col_offset),
                                  end_line, source.char_column(end_line, getattr(node, "end_col_offset", None)
                                                               or node.col_offset))
        return self._origin


class _CallTrace:
    """What a memoized call did besides returning its result: the clock before and after it
    (its origins' ``seq`` lie between), the call chain it was made through, and the notes and
    attribute errors it recorded."""

    __slots__ = ("low", "high", "entry", "notes", "attribute_errors")

    def __init__(self, low: int, high: int, entry: tuple, notes: list, attribute_errors: list) -> None:
        self.low = low
        self.high = high
        self.entry = entry
        self.notes = notes
        self.attribute_errors = attribute_errors


class Interpreter:
    """Evaluates recipe functions over one ``Schema``. One instance serves many recipes; each
    recipe evaluation gets fresh objects."""

    def __init__(self, schema: Schema, finder: ModuleFinder) -> None:
        self.schema = schema
        self.finder = finder
        self.scopes: dict[Path, ModuleScope] = {}
        self.objects: list[Obj] = []
        self.uncopied = 0  # objects of memoized results handed out uncopied, counted as if in ``objects``
        self.call_stack: list[ast.AST] = []
        self.call_sites: tuple["CallSite", ...] = ()  # the Origin.via of what is set now
        self.havoc_depth = 0
        self.steps = 0
        self.budget_hit = False
        self.memo: dict = {}
        self.unused_recipe_results: dict[tuple, None] = {}  # memo keys, oldest first
        self.clock = 0
        self.default_tables: dict[tuple, tuple] = {}  # (ClassSpec, for an HF provider) -> default_table()
        self.expr_depth = 0
        self.notes: list[str] = []
        self.limits: list[str] = []  # the limits this recipe hit (SY002), first one first
        self.limit_hits = 0
        self._running_stmt: ast.stmt | None = None  # the statement being run, for limit messages
        self._running_scope: ModuleScope | None = None  # and the module it is in
        overlay = schema.overlay or {}
        self.hf_factories = {q.rsplit(".", 2)[-2] + "." + q.rsplit(".", 1)[-1]
                             for q in overlay.get("hf_model_factories", [])} or {"AutoBridge.from_hf_pretrained"}
        # Methods missing from a release are still recognised: recipes written for newer
        # Megatron-Bridge lines call them (e.g. get_model_config).
        self.hf_methods = set(overlay.get("hf_provider_methods", [])) | set(overlay.get("hf_provider_methods_missing", []))
        self.init_aliases = {k: v for k, v in overlay.get("init_aliases", {}).items() if not k.startswith("_")}
        self.field_aliases = {k: v for k, v in overlay.get("field_aliases", {}).items() if not k.startswith("_")}
        # Attribute stores on values that are not config objects (a string, None): they raise
        # AttributeError when the recipe runs. (origin, target source, owner, attribute)
        self.attribute_errors: list[tuple] = []

    # ----- modules -------------------------------------------------------------------------

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
        if imp.level:
            path = self.finder.find_relative(imp.from_file, imp.level, imp.module)
            label = f"{'.' * imp.level}{imp.module or ''}"
        else:
            path = self.finder.find(imp.module or "") or self.finder.find_beside(imp.from_file, imp.module or "")
            label = imp.module or ""
        owner = self.scopes.get(imp.from_file)
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
        """Every module file that ``path``'s module reached through imports, transitively."""
        seen: set[Path] = set()
        stack = [path]
        while stack:
            current = stack.pop()
            scope = self.scopes.get(current)
            if scope is None or scope.resolved_path in seen:
                continue
            seen.add(scope.resolved_path)
            stack.extend(scope.deps)
        return seen

    def megatron_class(self, imp: LazyImport) -> Any:
        """A Megatron config class or enum named by an import is taken from the schema
        without reading (or even finding) the module that defines it."""
        if imp.level or imp.attr is None or not (imp.module or "").startswith("megatron"):
            return None
        spec = self.schema.find_class(imp.attr, imp.module)
        if spec is not None and spec.name == imp.attr:
            return ClassRef(spec)
        members = self.schema.find_enum(imp.attr)
        if members is not None:
            return EnumRef(imp.attr, tuple(members.items()))
        return None

    def _submodule(self, imp: LazyImport, package_file: Path) -> Any:
        if package_file.name != "__init__.py":
            return None
        candidate = package_file.parent / f"{imp.attr}.py"
        if not candidate.is_file():
            candidate = package_file.parent / imp.attr / "__init__.py"
        if candidate.is_file():
            owner = self.scopes.get(imp.from_file)
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
            return None

    @property
    def where(self) -> str:
        """path:line of the statement being run, for limit messages (formatted only then)."""
        stmt, scope = self._running_stmt, self._running_scope
        return f"{scope.source.display_path}:{stmt.lineno}" if scope is not None else ""

    def start_recipe(self) -> None:
        self.objects = []
        self.uncopied = 0
        self.steps = 0
        self.budget_hit = False
        self.notes = []
        self.limits = []
        self.attribute_errors = []

    def limit(self, message: str) -> None:
        """Record that a limit was hit (once per message); the value at hand becomes unknown."""
        self.limit_hits += 1
        if message not in self.limits:
            self.limits.append(message)

    def external(self, qualname: str) -> Any:
        name = qualname.rsplit(".", 1)[-1]
        module = qualname.rsplit(".", 1)[0] if "." in qualname else None
        spec = self.schema.find_class(name, module) if _may_be_config_class(qualname) else None
        if spec is not None:
            return ClassRef(spec)
        members = self.schema.find_enum(name) if _may_be_config_class(qualname) else None
        if members is not None:
            return EnumRef(name, tuple(members.items()))
        return External(qualname)

    def named_mixed_precision(self, name: str) -> "Obj | None":
        """The MixedPrecisionConfig that Megatron-Bridge's ``get_mixed_precision_config(name)``
        builds at job start: the registered factory of that name (hyphens read as
        underscores), interpreted like any other function. None when it cannot be followed."""
        lookup = self.schema.mixed_precision_lookup
        if lookup is None or name not in self.schema.mixed_precision_recipes:
            return None
        path = self.finder.find(lookup["module"])
        scope = self._scope_or_none(path) if path is not None else None
        factory = scope.lookup(name.replace("-", "_")) if scope is not None else None
        if not isinstance(factory, FuncRef):
            return None
        saved = (self.steps, list(self.notes), self.call_sites)
        self.call_sites = ()
        try:
            result = self.call_function(factory, [], {}, None)
        except (BudgetExceeded, Return, RecursionError):
            result = None
        finally:
            self.steps, self.notes, self.call_sites = saved
        if isinstance(result, Obj) and result.cls is not None and result.cls.name == "MixedPrecisionConfig":
            return result
        return None

    def is_mixed_precision_lookup(self, func: FuncRef, args: list, kwargs: dict) -> bool:
        """``get_mixed_precision_config("name")``: its registry is filled by decorators at
        import time, which mblint does not run, so the factory is looked up by name instead."""
        lookup = self.schema.mixed_precision_lookup
        if lookup is None or func.name != lookup["function"] or kwargs or len(args) != 1 or not isinstance(args[0], str):
            return False
        path = self.finder.find(lookup["module"])
        return path is not None and func.module.resolved_path == self.finder.real_paths.of(path)

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

    def _class_value(self, name: str, scope: ModuleScope) -> Any:
        spec = self.schema.find_class(name, _module_name_guess(scope.path))
        if spec is not None and spec.name == name and _is_megatron_path(scope.path):
            return ClassRef(spec)
        members = self.schema.find_enum(name) if _is_megatron_path(scope.path) else None
        if members is not None:
            return EnumRef(name, tuple(members.items()))
        module = _module_name_guess(scope.path)
        return External(f"{module}.{name}" if module else f"<class {name}>")

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

    # ----- snapshots -----------------------------------------------------------------------

    def new_obj(self, cls: ClassSpec | None, origin: Origin | None) -> Obj:
        obj = Obj(cls, origin)
        self.objects.append(obj)
        return obj

    def copy_obj(self, obj: Obj, memo: dict, frozen: dict | None = None, rebase: Rebase | None = None) -> Obj:
        """A module-level object read from a recipe, or a memoized result: each call gets its
        own copy. ``frozen``: the states a result's objects were frozen in (``freeze_result``);
        ``rebase``: how the origins of a reused result read in the call reusing it."""
        copy = memo.get(obj.oid)
        if copy is not None:
            return copy
        if frozen is None:
            fields = obj.fields
        else:
            fields, is_open, children, declared, stored = frozen[obj.oid]
        size = len(fields)
        if size >= 100:
            self.charge(size)
        if frozen is None:
            keys = obj.child_keys()
            copy = obj.twin()
        else:
            keys = children[1]
            copy = obj.twin_in(fields, is_open, children, declared, stored)
        if rebase is not None:
            copy.rebase += (rebase,)
        memo[obj.oid] = copy
        self.objects.append(copy)
        if not keys:
            return copy
        copy.fields = table = dict(fields)
        copy.shared = False
        if copy.declared is fields:  # the same keys
            copy.declared = table
        for key in keys:
            value, origins = table[key]
            table[key] = (self.copy_obj(value, memo, frozen, rebase), origins)
        copy._children = (table, keys)
        return copy

    def snapshot(self, frame: Frame) -> dict:
        """The state of every object and local; field tables are shared, not copied."""
        objects = self.objects
        self.charge(len(objects) + self.uncopied)
        for obj in objects:
            obj.shared = True
        return {"objects": list(objects), "fields": list(map(_FIELDS, objects)), "open": list(map(_OPEN, objects)),
                "versions": list(map(_VERSION, objects)), "children": list(map(_CHILDREN, objects)),
                "locals": dict(frame.locals)}

    def restore(self, snap: dict, frame: Frame) -> None:
        states = zip(snap["objects"], snap["fields"], snap["open"], snap["versions"], snap["children"])
        for obj, fields, is_open, version, children in states:
            if obj.version == version and obj.fields is fields and obj.open == is_open and obj.shared:
                continue  # untouched since the snapshot
            obj.fields = fields
            obj._children = children  # true of ``fields`` if it was then
            obj.shared = True
            obj.open = is_open
            obj.version = version
        frame.locals.clear()
        frame.locals.update(snap["locals"])

    def merge_into_current(self, other: dict, frame: Frame, base: dict | None = None) -> None:
        """Merge a snapshot taken at the end of another path into the current state. Objects
        whose version is the ``base`` one on both paths were not touched and are skipped."""
        base_versions = base["versions"] if base is not None else []
        states = zip(other["objects"], other["fields"], other["open"], other["versions"])
        for index, (obj, fields, is_open, version) in enumerate(states):
            if index < len(base_versions) and version == base_versions[index] == obj.version:
                continue
            if fields is obj.fields and is_open == obj.open:
                continue
            obj.open = obj.open or is_open
            current = obj.fields
            obj.fields = merged = _merge_tables(fields, current)
            children = obj._children
            # A merged slot holds an object only where both paths hold that same object.
            obj._children = children_among(merged, children[1]) if children and children[0] is current else None
            obj.shared = False
            obj.version = next(_versions)
        for name in _ordered_union(frame.locals, other["locals"]):
            frame.locals[name] = merge_values(other["locals"].get(name, UNKNOWN), frame.locals.get(name, UNKNOWN))

    def merge_start_into_current(self, start: dict, frame: Frame) -> None:
        """The state that ``restore(start)`` then ``merge_into_current(current, start)`` leave
        (a path that changed nothing merged with the current one), without the snapshot of the
        current state: a table only this path wrote is merged in place."""
        states = zip(start["objects"], start["fields"], start["open"], start["versions"], start["children"])
        for obj, fields, is_open, version, children in states:
            if obj.version == version or (obj.fields is fields and obj.open == is_open):
                continue
            current = obj.fields
            obj.open = is_open or obj.open
            if obj.shared:
                obj.fields = merged = _merge_tables(current, fields)
            else:  # only this object holds it
                obj.fields = merged = _merge_into_first(current, fields)
                obj.declared = None  # not a table its class declares after merging, as a new table is not
            obj._children = children_among(merged, children[1]) if children and children[0] is fields else None
            obj.shared = False
            obj.version = next(_versions)
        current_locals = dict(frame.locals)
        frame.locals.clear()
        frame.locals.update(start["locals"])
        for name in _ordered_union(frame.locals, current_locals):
            frame.locals[name] = merge_values(current_locals.get(name, UNKNOWN), frame.locals.get(name, UNKNOWN))

    # ----- functions -----------------------------------------------------------------------

    def call_recipe(self, func: FuncRef) -> Any:
        """The result of a recipe function that mblint calls. Memoized as any call's, but
        dropped from the memo when ``MAX_UNUSED_RECIPE_RESULTS`` later ones are kept unused."""
        key = self.memo_key(func, [], {})
        new = key is not None and key not in self.memo
        result = self.call_function(func, [], {}, None)
        if new and key in self.memo:
            unused = self.unused_recipe_results
            unused[key] = None
            if len(unused) > MAX_UNUSED_RECIPE_RESULTS:
                oldest = next(iter(unused))
                del unused[oldest]
                del self.memo[oldest]
        return result

    def call_function(self, func: FuncRef, args: list, kwargs: dict, site: ast.AST | None) -> Any:
        key = self.memo_key(func, args, kwargs)
        if key is not None and key in self.memo:
            self.unused_recipe_results.pop(key, None)
            return self.reuse(*self.memo[key])
        hits = self.limit_hits
        start, notes, errors = self.clock, len(self.notes), len(self.attribute_errors)
        entry = self.call_sites
        result = self.call_function_uncached(func, args, kwargs, site)
        # A result cut short by a limit depends on the calls around it: not reused.
        if key is not None and self.call_stack_clean() and self.limit_hits == hits:
            trace = _CallTrace(start, self.clock, entry, self.notes[notes:], self.attribute_errors[errors:])
            self.remember(key, result, trace)
        return result

    def memo_key(self, func: FuncRef, args: list, kwargs: dict) -> tuple | None:
        """Calls whose arguments are all plain scalars cannot touch the caller's objects, and
        module-level objects are copied on read: their results can be reused."""
        if self.havoc_depth:
            return None
        for value in args:
            if type(value) not in _PLAIN_TYPES:
                return None
        for value in kwargs.values():
            if type(value) not in _PLAIN_TYPES:
                return None
        return (id(func.node), tuple(args), tuple(sorted(kwargs.items())))

    def call_stack_clean(self) -> bool:
        return self.steps < MAX_STEPS and not self.budget_hit

    def remember(self, key: tuple, result: Any, trace: "_CallTrace") -> None:
        """Memoize a result that this call hands out as it is: later calls get copies of the
        state it is in now. The copy this call once handed out instead is still charged."""
        try:
            frozen = self.freeze_result(result)
        except RecursionError:  # too deep, as copying it was: not handed out, copied as it is
            self.memo[key] = (result, None, trace)
            raise
        self.memo[key] = (result, frozen, trace)
        self.charge_first_copy(frozen)

    def reuse(self, result: Any, frozen: dict | None, trace: "_CallTrace") -> Any:
        """A memoized call's result (a copy), with all the call left behind, as if the call
        were made now: its origins numbered from now on and reached through the current call
        chain, its notes and attribute errors recorded again."""
        self.notes.extend(trace.notes)
        rebase = Rebase(trace.low, trace.high, self.clock - trace.low, trace.entry, self.call_sites)
        self.clock += trace.high - trace.low
        for origin, *rest in trace.attribute_errors:
            self.attribute_errors.append((rebase.origin(origin), *rest))
        return self.copy_result(result, frozen, rebase)

    def freeze_result(self, value: Any) -> dict:
        """The states of a result's objects, by oid in the order ``copy_obj`` copies them:
        (field table, open, ``_children``, ``declared``, ``rebase``). The tables are marked
        shared: never written."""
        states: dict = {}
        if isinstance(value, Obj):
            value.freeze_into(states)
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Obj):
                    item.freeze_into(states)
        return states

    def charge_first_copy(self, frozen: dict) -> None:
        """The steps of a copy of a frozen result, and its objects counted as snapshots count
        ``objects``, as when the first call got a copy too (the step budget is unchanged)."""
        for fields, _, _, _, _ in frozen.values():
            size = len(fields)
            if size >= 100:
                self.charge(size)
            self.uncopied += 1

    def copy_result(self, value: Any, frozen: dict | None, rebase: Rebase) -> Any:
        memo: dict = {}
        if isinstance(value, Obj):
            return self.copy_obj(value, memo, frozen, rebase)
        if isinstance(value, tuple) and any(isinstance(v, Obj) for v in value):
            return tuple(self.copy_obj(v, memo, frozen, rebase) if isinstance(v, Obj) else v for v in value)
        return value

    def call_function_uncached(self, func: FuncRef, args: list, kwargs: dict, site: ast.AST | None) -> Any:
        recursive = func.node in self.call_stack  # ast nodes compare by identity
        if recursive or len(self.call_stack) >= MAX_CALL_DEPTH:
            if recursive:
                self.limit(f"{self.where}: recursive call of {func.name}: its result is unknown")
            else:
                self.limit(f"{self.where}: call depth limit ({MAX_CALL_DEPTH} nested calls) reached at "
                           f"{func.name}: its result is unknown")
            self.havoc_values(args + list(kwargs.values()), None, None)
            return UNKNOWN
        frame = Frame(func.module, function=func.name)
        self.bind_arguments(func, args, kwargs, frame)
        self.call_stack.append(func.node)
        try:
            completed = self.exec_block(func.node.body, frame)
        finally:
            self.call_stack.pop()
        if completed:
            frame.returns.append((None, self.snapshot(frame)))
        return self.finish_returns(frame)

    def finish_returns(self, frame: Frame) -> Any:
        if not frame.returns:
            return UNKNOWN
        value, snap = frame.returns[0]
        self.restore(snap, frame)
        for other_value, other_snap in frame.returns[1:]:
            self.merge_into_current(other_snap, frame)
            value = merge_values(value, other_value)
        return value

    def bind_arguments(self, func: FuncRef, args: list, kwargs: dict, frame: Frame) -> None:
        spec = func.node.args
        positional = spec.posonlyargs + spec.args
        defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        default_frame = None  # where defaults are evaluated: made for the first one
        for index, (param, default) in enumerate(zip(positional, defaults)):
            if index < len(args):
                value = args[index]
            elif param.arg in kwargs:
                value = kwargs.pop(param.arg)
            elif default is not None:
                default_frame = default_frame or Frame(func.module)
                value = self.eval(default, default_frame)
            else:
                value = UNKNOWN
            frame.locals[param.arg] = value
        if spec.vararg:
            extra = args[len(positional):]
            frame.locals[spec.vararg.arg] = tuple(extra) if _known_seq(extra) else UNKNOWN
        for param, default in zip(spec.kwonlyargs, spec.kw_defaults):
            if param.arg in kwargs:
                frame.locals[param.arg] = kwargs.pop(param.arg)
            elif default is not None:
                default_frame = default_frame or Frame(func.module)
                frame.locals[param.arg] = self.eval(default, default_frame)
            else:
                frame.locals[param.arg] = UNKNOWN
        if spec.kwarg:
            frame.locals[spec.kwarg.arg] = self.dict_from(kwargs, None)

    # ----- statements ----------------------------------------------------------------------

    def exec_block(self, body: list[ast.stmt], frame: Frame) -> bool:
        """Run statements; False when the block always leaves (return/raise). ``exec_stmt``,
        inlined: a call per statement."""
        scope = frame.scope
        for stmt in body:
            self._running_stmt = stmt
            self._running_scope = scope
            self.steps += 1
            if self.steps > MAX_STEPS:
                self.tick(0)
            handler = _STMT_HANDLERS.get(type(stmt))
            if handler is None:
                self.havoc_stmt(stmt, frame)
                continue
            try:
                handler(self, stmt, frame)
            except Return as leaving:
                if not leaving.dead:
                    frame.returns.append((leaving.value, self.snapshot(frame)))
                return False
            except BudgetExceeded:
                raise
            except Exception as error:  # noqa: BLE001 - an interpreter gap must not crash the lint
                self.stmt_failed(stmt, frame, error)
        return True

    def tick(self, cost: int = 1) -> None:
        self.steps += cost
        if self.steps > MAX_STEPS:
            if not self.budget_hit:
                self.limit(f"step limit ({MAX_STEPS:,} steps per recipe) reached at {self.where}: "
                           "the recipe's values are unknown")
            self.budget_hit = True
            raise BudgetExceeded()

    def charge(self, size: int) -> None:
        """Copies and snapshots of many objects count as steps (one per hundred)."""
        if size >= 100:
            self.tick(size // 100)

    def exec_stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        self._running_stmt = stmt
        self._running_scope = frame.scope
        self.steps += 1
        if self.steps > MAX_STEPS:
            self.tick(0)
        handler = _STMT_HANDLERS.get(type(stmt))
        if handler is None:
            self.havoc_stmt(stmt, frame)
            return
        try:
            handler(self, stmt, frame)
        except (Return, BudgetExceeded):
            raise
        except Exception as error:  # noqa: BLE001 - an interpreter gap must not crash the lint
            self.stmt_failed(stmt, frame, error)

    def stmt_failed(self, stmt: ast.stmt, frame: Frame, error: Exception) -> None:
        """What a statement the interpreter failed on may set becomes unknown."""
        if isinstance(error, RecursionError):
            self.limit(f"{self.where}: Python recursion limit reached (nested too deeply): "
                       "what the statement sets is unknown")
        else:
            self.notes.append(f"{frame.scope.source.display_path}:{stmt.lineno}: not understood ({type(error).__name__})")
        self.havoc_stmt(stmt, frame)

    def stmt_Expr(self, stmt: ast.Expr, frame: Frame) -> None:
        value_node = stmt.value
        if type(value_node) is not ast.Constant:
            self.eval(value_node, frame)

    def stmt_Pass(self, stmt: ast.Pass, frame: Frame) -> None:
        pass

    stmt_Assert = stmt_Pass
    stmt_Global = stmt_Pass
    stmt_Nonlocal = stmt_Pass

    def stmt_Import(self, stmt: ast.Import, frame: Frame) -> None:
        self.exec_import(stmt, frame)

    stmt_ImportFrom = stmt_Import

    def stmt_FunctionDef(self, stmt: ast.FunctionDef, frame: Frame) -> None:
        frame.locals[stmt.name] = FuncRef(frame.scope, stmt)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, stmt: ast.ClassDef, frame: Frame) -> None:
        frame.locals[stmt.name] = UNKNOWN

    def stmt_Return(self, stmt: ast.Return, frame: Frame) -> None:
        value_node = stmt.value
        raise Return(self.eval(value_node, frame) if value_node is not None else None)

    def stmt_Raise(self, stmt: ast.Raise, frame: Frame) -> None:
        raise Return(None, dead=True)

    def stmt_Assign(self, stmt: ast.Assign, frame: Frame) -> None:
        parts = stmt.__dict__  # one generic attribute look-up for the statement's six parts
        value_node = parts["value"]
        if type(value_node) is ast.Constant and self.expr_depth < MAX_EXPR_DEPTH:  # most recipe lines
            value = value_node.value
            if type(value) not in _PLAIN_TYPES:  # a constant is of its exact type
                value = UNKNOWN
        else:
            value = self.eval(value_node, frame)
        self.clock += 1  # origin(), inlined: a statement has a position
        source = frame.scope.source
        if source.wide_lines:
            origin = _origin_at(stmt, source, self.clock, self.call_sites)
        else:  # _origin_at(), inlined: UTF-8 byte offsets are character columns
            line, column = parts["lineno"], parts["col_offset"]
            origin = _new_origin(source.display_path, line, column + 1, parts["end_lineno"] or line,
                                 (parts["end_col_offset"] or column) + 1, "set", self.clock, self.call_sites)
        targets = parts["targets"]
        target = targets[0]
        if type(target) is ast.Attribute and len(targets) == 1 and not self.havoc_depth:  # store(), inlined: most lines
            owner_node = target.value
            owner = _NOT_FOUND
            if type(owner_node) is ast.Attribute and self.expr_depth < _FAST_PATH_DEPTH:  # cfg.train: eval()'s fast path
                holder_node = owner_node.value
                holder = frame.locals.get(holder_node.id) if type(holder_node) is ast.Name else None
                if type(holder) is Obj and holder.cls is not None:
                    slot = holder.fields.get(owner_node.attr)
                    if slot is not None:
                        owner = slot[0]
            if owner is _NOT_FOUND:
                owner = self.eval(owner_node, frame)
            if type(owner) is Obj and not self.field_aliases:
                owner.set(target.attr, value, origin)
            else:
                self.store_attribute(owner, target, value, origin)
            return
        for target in targets:
            self.store(target, value, frame, origin)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign, frame: Frame) -> None:
        if stmt.value is None:
            return
        self.store(stmt.target, self.eval(stmt.value, frame), frame, self.origin(stmt, frame))

    def stmt_AugAssign(self, stmt: ast.AugAssign, frame: Frame) -> None:
        current = self.eval(stmt.target, frame)
        value = self.binary(type(stmt.op), current, self.eval(stmt.value, frame))
        self.store(stmt.target, value, frame, self.origin(stmt, frame))

    def stmt_Delete(self, stmt: ast.Delete, frame: Frame) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                container = self.eval(target.value, frame)
                key = self.eval(target.slice, frame)
                if isinstance(container, Obj) and container.is_dict and not is_unknown(key):
                    container.writable().pop(key, None)
                    continue
            self.havoc_target(target, frame)

    def stmt_If(self, stmt: ast.If, frame: Frame) -> None:
        test = self.truth(self.eval(stmt.test, frame))
        if test is True:
            self._run_branch(stmt.body, frame)
        elif test is False:
            self._run_branch(stmt.orelse, frame)
        else:
            self.exec_both(stmt.body, stmt.orelse, frame)

    def _run_branch(self, body: list[ast.stmt], frame: Frame) -> None:
        if not self.exec_block(body, frame):
            raise Return(None, dead=True)

    def exec_both(self, first: list[ast.stmt], second: list[ast.stmt], frame: Frame) -> None:
        start = self.snapshot(frame)
        first_open = self.exec_block(first, frame)
        if not second:  # most branches: an `if` without `else`, a loop body
            self.charge(len(self.objects) + self.uncopied)  # as the snapshot after the first path did
            if first_open:
                self.merge_start_into_current(start, frame)
            else:
                self.restore(start, frame)
            return
        after_first = self.snapshot(frame)
        self.restore(start, frame)
        second_open = self.exec_block(second, frame)
        if first_open and second_open:
            self.merge_into_current(after_first, frame, start)
        elif first_open:
            self.restore(after_first, frame)
        elif not second_open:
            raise Return(None, dead=True)

    def stmt_For(self, stmt: ast.For, frame: Frame) -> None:
        self.eval(stmt.iter, frame)
        self.havoc_loop([stmt.target], stmt.body + stmt.orelse, frame)

    stmt_AsyncFor = stmt_For

    def stmt_While(self, stmt: ast.While, frame: Frame) -> None:
        self.havoc_loop([], stmt.body + stmt.orelse, frame)

    def havoc_loop(self, targets: list[ast.expr], body: list[ast.stmt], frame: Frame) -> None:
        self.havoc_depth += 1
        try:
            for target in targets:
                self.havoc_target(target, frame)
            start_returns = len(frame.returns)
            self.exec_both(body, [], frame)
            for index in range(start_returns, len(frame.returns)):
                frame.returns[index] = (UNKNOWN, frame.returns[index][1])
        finally:
            self.havoc_depth -= 1

    def stmt_Break(self, stmt: ast.stmt, frame: Frame) -> None:
        raise Return(None, dead=True)

    stmt_Continue = stmt_Break

    def stmt_With(self, stmt: ast.With, frame: Frame) -> None:
        for item in stmt.items:
            self.eval(item.context_expr, frame)
            if item.optional_vars is not None:
                self.havoc_target(item.optional_vars, frame)
        if not self.exec_block(stmt.body, frame):
            raise Return(None, dead=True)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, stmt: ast.Try, frame: Frame) -> None:
        if not stmt.handlers:
            self._run_branch(stmt.body + stmt.orelse + stmt.finalbody, frame)
            return
        handlers = [s for handler in stmt.handlers for s in handler.body]
        self.exec_both(stmt.body + stmt.orelse, handlers, frame)
        self._run_branch(stmt.finalbody, frame)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, stmt: ast.stmt, frame: Frame) -> None:
        self.havoc_stmt(stmt, frame)

    # ----- stores --------------------------------------------------------------------------

    def store(self, target: ast.expr, value: Any, frame: Frame, origin: Origin | None) -> None:
        if self.havoc_depth:
            value = UNKNOWN
        kind = type(target)
        if kind is ast.Attribute:
            self.store_attribute(self.eval(target.value, frame), target, value, origin)
        elif kind is ast.Name:
            frame.locals[target.id] = value
        elif isinstance(target, ast.Subscript):
            owner = self.eval(target.value, frame)
            key = self.eval(target.slice, frame)
            if isinstance(owner, Obj):
                if is_unknown(key) or isinstance(key, Obj):
                    self.havoc_obj(owner, origin)
                else:
                    owner.set(key, value, origin)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.store_sequence(target, value, frame, origin)
        elif isinstance(target, ast.Starred):
            self.store(target.value, UNKNOWN, frame, origin)

    def store_attribute(self, owner: Any, target: ast.Attribute, value: Any, origin: Origin | None) -> None:
        """``target`` (``owner.name``) set to ``value``, ``owner`` being the value of ``target.value``."""
        if type(owner) is Obj:
            if self.field_aliases:
                self.store_attr(owner, target.attr, value, origin)
            else:
                owner.set(target.attr, value, origin)
        elif isinstance(owner, (str, int, float, bool)) or owner is None:
            self.attribute_errors.append((origin, ast.unparse(target.value), owner, target.attr))

    def store_sequence(self, target: ast.Tuple | ast.List, value: Any, frame: Frame, origin: Origin | None) -> None:
        items = list(value) if isinstance(value, (tuple, list)) else None
        if items is None or len(items) != len(target.elts) or any(isinstance(e, ast.Starred) for e in target.elts):
            for element in target.elts:
                self.store(element, UNKNOWN, frame, origin)
            return
        for element, item in zip(target.elts, items):
            self.store(element, item, frame, origin)

    def store_attr(self, owner: Obj, name: str, value: Any, origin: Origin | None) -> None:
        owner.set(name, value, origin)
        aliases = self.field_aliases.get(owner.type_name) if self.field_aliases else None
        alias = aliases.get(name) if aliases else None
        if alias:
            owner.set(alias, value, origin)

    def havoc_target(self, target: ast.expr, frame: Frame) -> None:
        self.havoc_depth += 1
        try:
            self.store(target, UNKNOWN, frame, self.origin(target, frame))
        except Exception:  # noqa: BLE001
            pass
        finally:
            self.havoc_depth -= 1

    def havoc_stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        """A statement mblint cannot follow: whatever it may store or touch becomes unknown."""
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    self.havoc_target(target, frame)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                self.havoc_target(node.target, frame)
            elif isinstance(node, ast.Call):
                for arg in list(node.args) + [kw.value for kw in node.keywords]:
                    try:
                        self.havoc_values([self.eval(arg, frame)], node, frame)
                    except Exception:  # noqa: BLE001
                        pass

    def havoc_values(self, values: list, site: ast.AST | None, frame: Frame | None) -> None:
        origin = self.origin(site, frame) if site is not None and frame is not None else None
        for value in values:
            if isinstance(value, Obj):
                self.havoc_obj(value, origin)

    def havoc_obj(self, obj: Obj, origin: Origin | None, seen: set | None = None) -> None:
        seen = seen if seen is not None else set()
        if obj.oid in seen:
            return
        seen.add(obj.oid)
        obj.mark_open()
        fields = obj.writable()
        children = []
        # A run of fields with the same origins (a constructor's defaults) shares one new slot.
        origins_before = slot = None
        for key, (value, origins) in list(fields.items()):
            if isinstance(value, Obj):
                children.append(key)
                self.havoc_obj(value, origin, seen)
            else:
                if origins is not origins_before:
                    origins_before, slot = origins, (UNKNOWN, origins + ((origin,) if origin else ()))
                fields[key] = slot
        obj._children = (fields, tuple(children))

    # ----- expressions ---------------------------------------------------------------------

    def eval(self, node: ast.expr | None, frame: Frame) -> Any:
        if node is None:
            return None
        kind = type(node)
        # Fast paths: what cannot evaluate anything else, nor reach the depth limit.
        if self.expr_depth < _FAST_PATH_DEPTH:
            if kind is ast.Constant:
                value = node.value
                return value if type(value) in _PLAIN_TYPES else UNKNOWN
            if kind is ast.Name:
                value = frame.locals.get(node.id, _NOT_FOUND)
                if value is not _NOT_FOUND and type(value) is not LazyImport:
                    return value
            elif kind is ast.Attribute and type(owner_node := node.value) is ast.Name:  # cfg.model
                owner = frame.locals.get(owner_node.id)
                if type(owner) is Obj and owner.cls is not None:
                    slot = owner.fields.get(node.attr)
                    if slot is not None:
                        return slot[0]
        self.expr_depth += 1
        try:
            if self.expr_depth > MAX_EXPR_DEPTH:
                self.limit(f"{self.where}: expression depth limit ({MAX_EXPR_DEPTH}) reached: the value is unknown")
                return UNKNOWN
            handler = _EXPR_HANDLERS.get(kind)
            return handler(self, node, frame) if handler else UNKNOWN
        finally:
            self.expr_depth -= 1

    def expr_Constant(self, node: ast.Constant, frame: Frame) -> Any:
        return node.value if isinstance(node.value, SCALARS) else UNKNOWN

    def expr_Name(self, node: ast.Name, frame: Frame) -> Any:
        return self.lookup(node.id, frame)

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

    def expr_Attribute(self, node: ast.Attribute, frame: Frame) -> Any:
        owner = self.eval(node.value, frame)
        if type(owner) is Obj and owner.cls is not None:  # a field of a config object: most reads
            slot = owner.fields.get(node.attr)
            if slot is not None:
                return slot[0]
        return self.get_attr(owner, node.attr)

    def get_attr(self, owner: Any, name: str) -> Any:
        if isinstance(owner, Obj):
            if not owner.is_dict:
                value = owner.get(name)
                if not is_missing(value):
                    return value
            return BoundMethod(owner, name)
        if isinstance(owner, ModuleRef):  # a module-level object: each read gets its copy, as in lookup()
            value = owner.scope.lookup(name)
            if isinstance(value, Obj):
                return self.copy_obj(value, {})
            return UNKNOWN if value is _NOT_FOUND else value
        if isinstance(owner, External):
            if owner.qualname == "torch" and name in TORCH_DTYPES:
                return f"torch.{name}"
            return self.external(f"{owner.qualname}.{name}")
        if isinstance(owner, EnumRef):
            for member, value in owner.members:
                if member == name:
                    return _enum_value(member, value)
            return UNKNOWN
        if isinstance(owner, (ClassRef, HFBridge, str)):
            return BoundMethod(owner, name)
        return UNKNOWN

    def expr_Subscript(self, node: ast.Subscript, frame: Frame) -> Any:
        owner = self.eval(node.value, frame)
        key = self.eval(node.slice, frame)
        if is_unknown(key) or isinstance(key, Obj):
            return UNKNOWN
        if isinstance(owner, Obj) and owner.is_dict:
            value = owner.get(key)
            return UNKNOWN if is_missing(value) else value
        if isinstance(owner, EnumRef) and isinstance(key, str):
            return self.get_attr(owner, key)
        if isinstance(owner, (tuple, list, str)) and isinstance(key, (int, slice)):
            try:
                return owner[key]
            except (IndexError, TypeError):
                return UNKNOWN
        return UNKNOWN

    def expr_Slice(self, node: ast.Slice, frame: Frame) -> Any:
        parts = [self.eval(p, frame) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return UNKNOWN if any(is_unknown(p) for p in parts) else slice(*parts)

    def expr_Tuple(self, node: ast.Tuple, frame: Frame) -> Any:
        items = self.eval_elements(node.elts, frame)
        return UNKNOWN if items is None else self.sized(tuple(items))

    def expr_List(self, node: ast.List, frame: Frame) -> Any:
        items = self.eval_elements(node.elts, frame)
        return UNKNOWN if items is None else self.sized(list(items))

    def expr_Set(self, node: ast.Set, frame: Frame) -> Any:
        items = self.eval_elements(node.elts, frame)
        if items is None or not _known_seq(items):
            return UNKNOWN
        try:
            return set(items)
        except TypeError:
            return UNKNOWN

    def eval_elements(self, elements: list[ast.expr], frame: Frame) -> list | None:
        items: list = []
        for element in elements:
            if isinstance(element, ast.Starred):
                value = self.eval(element.value, frame)
                if not isinstance(value, (tuple, list)):
                    return None
                items.extend(value)
            else:
                items.append(self.eval(element, frame))
        return items

    def expr_Dict(self, node: ast.Dict, frame: Frame) -> Any:
        obj = self.new_obj(None, self.origin(node, frame))
        for key_node, value_node in zip(node.keys, node.values):
            if key_node is None:
                self.splat_into(obj, self.eval(value_node, frame))
                continue
            key = self.eval(key_node, frame)
            value = self.eval(value_node, frame)
            if is_unknown(key) or isinstance(key, Obj):
                obj.open = True
            else:
                obj.set(key, value, self.origin(value_node, frame))
        return obj

    def splat_into(self, obj: Obj, source: Any) -> None:
        """``source``'s items written into ``obj``, a new dict."""
        if isinstance(source, Obj) and source.is_dict:
            obj.writable().update(true_slots(source))
            if source.open:
                obj.mark_open()
        elif source is None or (isinstance(source, dict) and not source):
            return
        else:
            obj.mark_open()

    def dict_from(self, items: dict, origin: Origin | None) -> Obj:
        obj = self.new_obj(None, origin)
        for key, value in items.items():
            obj.set(key, value, origin)
        return obj

    def expr_JoinedStr(self, node: ast.JoinedStr, frame: Frame) -> Any:
        parts = []
        length = 0
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and value.format_spec is None and value.conversion == -1:
                inner = self.eval(value.value, frame)
                if is_unknown(inner) or not isinstance(inner, SCALARS):
                    return UNKNOWN
                parts.append(str(inner))
            else:
                return UNKNOWN
            length += len(parts[-1])
            if length > MAX_VALUE_SIZE:
                return self.too_big()
        return "".join(parts)

    def expr_BinOp(self, node: ast.BinOp, frame: Frame) -> Any:
        return self.binary(type(node.op), self.eval(node.left, frame), self.eval(node.right, frame))

    def binary(self, op: type, left: Any, right: Any) -> Any:
        if isinstance(left, Obj) and isinstance(right, Obj) and op is ast.BitOr and left.is_dict and right.is_dict:
            merged = self.new_obj(None, left.created_at)
            self.splat_into(merged, left)
            self.splat_into(merged, right)
            return merged
        if is_unknown(left) or is_unknown(right) or not _scalarish(left) or not _scalarish(right):
            return UNKNOWN
        if _result_too_big(op, left, right):
            return self.too_big()
        try:
            return self.sized(BINARY_OPS[op](left, right))
        except Exception:  # noqa: BLE001 - e.g. division by zero: the real code would raise
            return UNKNOWN

    def sized(self, value: Any) -> Any:
        """``value``, or unknown when it is over the value size limits."""
        return self.too_big() if _oversized(value) else value

    def too_big(self) -> Unknown:
        self.limit(f"{self.where}: value size limit ({MAX_VALUE_SIZE:,} elements or characters, "
                   f"{MAX_INT_BITS:,}-bit integers) reached: the value is unknown")
        return UNKNOWN

    def expr_UnaryOp(self, node: ast.UnaryOp, frame: Frame) -> Any:
        operand = self.eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            truth = self.truth(operand)
            return UNKNOWN if truth is None else not truth
        if is_unknown(operand) or not isinstance(operand, (int, float)):
            return UNKNOWN
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)](operand)

    def expr_BoolOp(self, node: ast.BoolOp, frame: Frame) -> Any:
        is_and = isinstance(node.op, ast.And)
        result: Any = None
        for value_node in node.values:
            value = self.eval(value_node, frame)
            truth = self.truth(value)
            if truth is None:
                return UNKNOWN
            result = value
            if truth is not is_and:
                return value
        return result

    def expr_Compare(self, node: ast.Compare, frame: Frame) -> Any:
        left = self.eval(node.left, frame)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node, frame)
            outcome = self.compare(type(op), left, right)
            if outcome is not True:
                return outcome
            left = right
        return True

    def compare(self, op: type, left: Any, right: Any) -> Any:
        if op in (ast.Is, ast.IsNot):
            if is_unknown(left) or is_unknown(right):
                return UNKNOWN
            same = left is right if not (left is None or right is None) else (left is None and right is None)
            return same if op is ast.Is else not same
        if op in (ast.In, ast.NotIn):
            if is_unknown(left) or isinstance(left, Obj):
                return UNKNOWN
            if isinstance(right, Obj) and right.is_dict:
                present = left in right.fields
                if not present and right.open:
                    return UNKNOWN
            elif isinstance(right, (tuple, list, set, str)) and _known_seq(right if not isinstance(right, str) else ()):
                try:
                    present = left in right
                except TypeError:
                    return UNKNOWN
            else:
                return UNKNOWN
            return present if op is ast.In else not present
        if is_unknown(left) or is_unknown(right) or isinstance(left, Obj) or isinstance(right, Obj):
            return UNKNOWN
        try:
            return COMPARE_OPS[op](left, right)
        except TypeError:
            return UNKNOWN

    def truth(self, value: Any) -> bool | None:
        if is_unknown(value):
            return None
        if isinstance(value, Obj):
            if value.is_dict:
                if value.fields:
                    return True
                return None if value.open else False
            return True
        if isinstance(value, (External, BoundMethod, HFBridge)):
            return None
        try:
            return bool(value)
        except Exception:  # noqa: BLE001
            return None

    def expr_IfExp(self, node: ast.IfExp, frame: Frame) -> Any:
        test = self.truth(self.eval(node.test, frame))
        if test is True:
            return self.eval(node.body, frame)
        if test is False:
            return self.eval(node.orelse, frame)
        return merge_values(self.eval(node.body, frame), self.eval(node.orelse, frame))

    def expr_NamedExpr(self, node: ast.NamedExpr, frame: Frame) -> Any:
        value = self.eval(node.value, frame)
        self.store(node.target, value, frame, self.origin(node, frame))
        return value

    def expr_Lambda(self, node: ast.Lambda, frame: Frame) -> Any:
        return UNKNOWN

    # ----- comprehensions over known iterables -----------------------------------------------

    def comprehension_items(self, node: ast.expr, frame: Frame, element) -> list | None:
        """Evaluate ``element(frame)`` for every binding of the generators, or None when an
        iterable or a condition is unknown."""
        results: list = []
        scope = Frame(frame.scope, locals=dict(frame.locals), function=frame.function)
        if not self._comprehend(node.generators, 0, scope, element, results):
            return None
        return results

    def _comprehend(self, generators: list, index: int, frame: Frame, element, results: list) -> bool:
        if index == len(generators):
            results.append(element(frame))
            return True
        generator = generators[index]
        iterable = self.iterate(self.eval(generator.iter, frame))
        if iterable is None or len(iterable) > MAX_COMPREHENSION:
            return False
        for item in iterable:
            self.tick()
            self.store(generator.target, item, frame, None)
            keep = True
            for condition in generator.ifs:
                truth = self.truth(self.eval(condition, frame))
                if truth is None:
                    return False
                keep = keep and truth
            if keep and not self._comprehend(generators, index + 1, frame, element, results):
                return False
        return True

    def iterate(self, value: Any) -> list | None:
        if isinstance(value, (list, tuple, set, str)):
            return list(value) if not isinstance(value, set) else sorted(value, key=repr)
        if isinstance(value, Obj) and value.is_dict and not value.open:
            return list(value.fields)
        if isinstance(value, EnumRef):
            return [_enum_value(name, member) for name, member in value.members]
        return None

    def expr_ListComp(self, node: ast.ListComp, frame: Frame) -> Any:
        items = self.comprehension_items(node, frame, lambda f: self.eval(node.elt, f))
        return UNKNOWN if items is None else self.sized(items)

    def expr_GeneratorExp(self, node: ast.GeneratorExp, frame: Frame) -> Any:
        items = self.comprehension_items(node, frame, lambda f: self.eval(node.elt, f))
        return UNKNOWN if items is None else self.sized(tuple(items))

    def expr_SetComp(self, node: ast.SetComp, frame: Frame) -> Any:
        items = self.comprehension_items(node, frame, lambda f: self.eval(node.elt, f))
        if items is None or not _known_seq(items):
            return UNKNOWN
        try:
            return set(items)
        except TypeError:
            return UNKNOWN

    def expr_DictComp(self, node: ast.DictComp, frame: Frame) -> Any:
        pairs = self.comprehension_items(node, frame, lambda f: (self.eval(node.key, f), self.eval(node.value, f)))
        if pairs is None:
            return UNKNOWN
        obj = self.new_obj(None, self.origin(node, frame))
        for key, value in pairs:
            if is_unknown(key) or isinstance(key, Obj):
                obj.open = True
            else:
                obj.set(key, value, self.origin(node, frame))
        return obj

    # ----- calls ---------------------------------------------------------------------------

    def expr_Call(self, node: ast.Call, frame: Frame) -> Any:
        func_node = node.func
        if type(func_node) is ast.Attribute and func_node.attr in LIST_MUTATORS:
            holder = self.eval(func_node.value, frame)
            if isinstance(holder, list):
                return self.mutate_list(holder, node, frame)
        func = self.eval(func_node, frame)
        args: list = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                value = self.eval(arg.value, frame)
                if isinstance(value, (tuple, list)):
                    args.extend(value)
                else:
                    self.havoc_values([value], node, frame)
                    return self.unmodelled_call(func, args, {}, node, frame)
            else:
                args.append(self.eval(arg, frame))
        kwargs: dict = {}
        kw_origins: dict = {}
        for keyword in node.keywords:
            value = self.eval(keyword.value, frame)
            name = keyword.arg
            if name is None:
                if isinstance(value, Obj) and value.is_dict and not value.open:
                    for key, (item, origins) in true_slots(value).items():
                        kwargs[key] = item
                        kw_origins[key] = origins[-1] if origins else self.reserve_origin(keyword, frame)
                else:
                    return self.unmodelled_call(func, args, kwargs, node, frame)
            else:
                kwargs[name] = value
                kw_origins[name] = self.reserve_origin(keyword, frame)
        return self.call(func, args, kwargs, node, frame, kw_origins)

    def mutate_list(self, current: list, node: ast.Call, frame: Frame) -> Any:
        """Lists are values here, so ``x.append(v)`` stores the new list back into ``x``."""
        name = node.func.attr
        args = [self.eval(arg, frame) for arg in node.args]
        updated: Any = UNKNOWN
        if name == "append" and len(args) == 1:
            updated = current + [args[0]]
        elif name == "extend" and len(args) == 1 and isinstance(args[0], (list, tuple)):
            updated = current + list(args[0])
        elif name == "insert" and len(args) == 2 and isinstance(args[0], int):
            updated = list(current)
            updated.insert(args[0], args[1])
        elif name == "clear" and not args:
            updated = []
        if not is_unknown(updated):
            updated = self.sized(updated)
        self.store(node.func.value, updated, frame, self.origin(node, frame))
        return None

    def call(self, func: Any, args: list, kwargs: dict, node: ast.AST, frame: Frame, kw_origins: dict) -> Any:
        if isinstance(func, FuncRef) and self.is_mixed_precision_lookup(func, args, kwargs):
            named = self.named_mixed_precision(args[0])
            return named if named is not None else UNKNOWN
        if isinstance(func, FuncRef):
            outer = self.call_sites
            self.call_sites = outer + (CallSite(frame.scope.source, node),)
            try:
                return self.call_function(func, args, dict(kwargs), node)
            finally:
                self.call_sites = outer
        if isinstance(func, ClassRef):
            return self.construct(func.spec, args, kwargs, node, frame, kw_origins)
        if isinstance(func, BoundMethod):
            return self.call_method(func, args, kwargs, node, frame)
        if isinstance(func, External):
            return self.call_external(func, args, kwargs, node, frame, kw_origins)
        return self.unmodelled_call(func, args, kwargs, node, frame)

    def unmodelled_call(self, func: Any, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
        self.havoc_values(list(args) + list(kwargs.values()), node, frame)
        return UNKNOWN

    def call_external(self, func: External, args: list, kwargs: dict, node: ast.AST, frame: Frame, kw_origins: dict) -> Any:
        qualname = func.qualname
        pure, special = _external_builtin(qualname)
        if pure is not None:
            return pure(args, kwargs)
        if special is not None:
            return special(self, args, kwargs, node, frame)
        tail = ".".join(qualname.rsplit(".", 2)[-2:])
        if tail in self.hf_factories:
            return HFBridge(args[0] if args else kwargs.get("hf_path", UNKNOWN))
        precision = self.unread_precision_factory(qualname, args, kwargs)
        if precision is not None:
            result = self.new_obj(precision, self.origin(node, frame))
            result.open = True  # fields unknown until the recipe sets them
            return result
        return self.unmodelled_call(func, args, kwargs, node, frame)

    def unread_precision_factory(self, qualname: str, args: list, kwargs: dict) -> ClassSpec | None:
        """MixedPrecisionConfig, for a call of a registered mixed-precision factory
        (``bf16_mixed()``, or ``get_mixed_precision_config("bf16_mixed")``) in a module mblint
        cannot read: every factory returns one. Its fields are unknown, but the result is no
        unknown value (``isinstance(cfg.mixed_precision, str)`` is known, and fields the recipe
        sets on it afterwards are known). None for any other call."""
        lookup = self.schema.mixed_precision_lookup
        module, _, name = qualname.rpartition(".")
        if lookup is None or module != lookup["module"] or kwargs:
            return None
        recipes = self.schema.mixed_precision_recipes
        if name == lookup["function"]:
            is_factory = len(args) == 1 and isinstance(args[0], str) and args[0] in recipes
        else:
            is_factory = not args and name in recipes
        return self.schema.find_class("MixedPrecisionConfig", module) if is_factory else None

    def call_method(self, method: BoundMethod, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
        target, name = method.target, method.name
        if isinstance(target, HFBridge) and name in self.hf_methods:
            return self.hf_provider(node, frame, target.model_id)
        if isinstance(target, ClassRef):
            if name in self.hf_factories_names():
                return HFBridge(args[0] if args else UNKNOWN)
            return self.unmodelled_call(method, args, kwargs, node, frame)
        if isinstance(target, str):
            return _string_method(target, name, args, kwargs)
        if isinstance(target, Obj) and target.is_dict:
            return self.dict_method(target, name, args, kwargs, node, frame)
        return self.unmodelled_call(method, args + [target], kwargs, node, frame)

    def hf_factories_names(self) -> set[str]:
        return {entry.split(".")[-1] for entry in self.hf_factories}

    def dict_method(self, target: Obj, name: str, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
        origin = self.origin(node, frame)
        if name == "get" and args and not is_unknown(args[0]) and not isinstance(args[0], Obj):
            value = target.get(args[0])
            if is_missing(value):
                return args[1] if len(args) > 1 else None
            return value
        if name in ("update", "setdefault") and not self.havoc_depth:
            if name == "update" and args and isinstance(args[0], Obj) and args[0].is_dict:
                for key, (value, _) in args[0].fields.items():
                    target.set(key, value, origin)
                if args[0].open:
                    target.mark_open()
                for key, value in kwargs.items():
                    target.set(key, value, origin)
                return None
            if name == "update" and not args:
                for key, value in kwargs.items():
                    target.set(key, value, origin)
                return None
            if name == "setdefault" and args and not is_unknown(args[0]):
                current = target.get(args[0])
                if is_missing(current):
                    value = args[1] if len(args) > 1 else None
                    target.set(args[0], value, origin)
                    return value
                return current
        if name == "copy":
            copy = self.new_obj(None, origin)
            self.splat_into(copy, target)
            return copy
        if name in ("keys", "values", "items") and not target.open:
            if name == "keys":
                return list(target.fields)
            if name == "values":
                return [slot[0] for slot in target.fields.values()]
            return [(key, slot[0]) for key, slot in target.fields.items()]
        if name == "pop" and args and not is_unknown(args[0]) and not self.havoc_depth:
            slot = target.writable().pop(args[0], None)
            if slot is None:
                return args[1] if len(args) > 1 else UNKNOWN
            return slot[0]
        self.havoc_obj(target, origin)
        return UNKNOWN

    def construct(self, spec: ClassSpec, args: list, kwargs: dict, node: ast.AST, frame: Frame, kw_origins: dict) -> Any:
        call_origin = self.origin(node, frame)
        obj = self.new_obj(spec, call_origin)
        default_origin = _with_kind(call_origin, "default")
        defaults = (default_origin,) if default_origin else ()
        table = self.default_table(spec, hf_provider=False)
        init_fields = table.init_fields
        for index, value in enumerate(args):
            if index < len(init_fields):
                kwargs.setdefault(init_fields[index], value)
                kw_origins.setdefault(init_fields[index], call_origin)
        # Every field in the class's order, then the slots that are not plain defaults.
        obj.fields = fields = table.slots(defaults)
        for name, fspec in table.built:
            if name not in kwargs:
                fields[name] = (self.default_for(fspec, default_origin), defaults)
        for name, value in kwargs.items():  # a field in its place; any other after them (the real constructor raises)
            origin = _stamp(kw_origins.get(name, call_origin))
            fields[name] = (value, (origin,) if origin is not None else ())
        for name, target in self.init_aliases.get(spec.name, {}).items():
            slot = obj.fields.get(name)
            if slot is not None and slot[1] and slot[1][-1].kind != "default":
                obj.fields[target] = slot
        declared = spec.fields
        aliases = self.init_aliases.get(spec.name, {}).values()
        if all(name in declared for name in kwargs) and all(name in declared for name in aliases):
            obj.declared = fields  # its other keys are the class's fields
        return obj

    def default_table(self, spec: ClassSpec, hf_provider: bool) -> tuple[tuple, list]:
        """((name, field spec, default) per field, names of the ``__init__`` fields) of a
        class. The default is what ``default_for`` gives, or ``_BUILT_PER_OBJECT`` where it
        makes a new object or list, or ``_HF_DERIVED`` for a field of an HF provider that
        comes from the Hugging Face config."""
        key = (spec, hf_provider)
        table = self.default_tables.get(key)
        if table is None:
            derived = self.schema.hf_derived_fields if hf_provider else ()
            rows = tuple((name, fspec, _HF_DERIVED if name in derived else
                          _BUILT_PER_OBJECT if fspec.default_kind == "factory" else fspec.default_value())
                         for name, fspec in spec.fields.items())
            table = self.default_tables[key] = _DefaultTable(rows, [name for name, f in spec.fields.items() if f.init])
        return table

    def default_for(self, fspec, origin: Origin | None) -> Any:
        if fspec.default_kind == "factory":
            if fspec.factory_class:
                spec = self.schema.classes.get(fspec.factory_class)
                if spec is not None:
                    obj = self.new_obj(spec, origin)
                    for name, inner in spec.fields.items():
                        obj.set(name, self.default_for(inner, origin), origin)
                    return obj
                return UNKNOWN
            if isinstance(fspec.default, dict):
                obj = self.new_obj(None, origin)
                for key, value in fspec.default.items():
                    obj.set(key, value, origin)
                return obj
            if isinstance(fspec.default, list):
                return list(fspec.default)
            return UNKNOWN
        return fspec.default_value()

    def hf_provider(self, node: ast.AST, frame: Frame, model_id: Any = None) -> Any:
        spec = self.schema.classes.get(self.schema.hf_provider or "") or self.schema.find_class("GPTModelProvider")
        if spec is None:
            return UNKNOWN
        origin = self.origin(node, frame)
        obj = self.new_obj(spec, origin)
        # The provider class depends on the model family (GPT, Mamba, ...): mblint only
        # knows the fields every provider shares, so the class itself stays unknown.
        obj.label = HF_PROVIDER_LABEL
        unknown_origin = (_with_kind(origin, "unknown"),)
        default_origin = _with_kind(origin, "default")
        defaults = (default_origin,)
        table = self.default_table(spec, hf_provider=True)
        # Every field in the class's order, then the slots that are not plain defaults.
        obj.fields = fields = table.slots(defaults)
        fields.update(zip(table.derived, repeat((Unknown("from the Hugging Face config"), unknown_origin))))
        for name, fspec in table.built:
            fields[name] = (self.default_for(fspec, default_origin), defaults)
        if "hf_model_id" in obj.fields and isinstance(model_id, str):
            obj.fields["hf_model_id"] = (model_id, (origin,))
        obj._children = children_among(fields, [name for name, _ in table.built])  # defaults are no objects
        obj.open = True
        return obj

    # ----- positions -----------------------------------------------------------------------

    def origin(self, node: ast.AST | None, frame: Frame | None) -> Origin | None:
        if node is None or frame is None or not hasattr(node, "lineno"):
            return None
        self.clock += 1
        return _origin_at(node, frame.scope.source, self.clock, self.call_sites)

    def reserve_origin(self, node: ast.AST, frame: Frame) -> tuple | None:
        """``origin()`` numbered now (its ``seq``) but made only if used: ``_stamp()`` makes it.
        Keyword arguments of calls other than constructors need no origin."""
        if not hasattr(node, "lineno"):
            return None
        self.clock += 1
        return (node, frame.scope.source, self.clock, self.call_sites)


class _DefaultTable:
    """What ``Interpreter.default_table`` works out once per class from its rows ((name, field
    spec, default) per field): the field names and defaults in the class's order, where
    ``_BUILT_PER_OBJECT`` and ``_HF_DERIVED`` stand for the defaults of the fields listed in
    ``built`` ((name, field spec)) and ``derived``."""

    __slots__ = ("init_fields", "names", "values", "built", "derived", "_keys")

    def __init__(self, rows: tuple, init_fields: list) -> None:
        self.init_fields = init_fields
        self.names = tuple(name for name, _, _ in rows)
        self.values = tuple(default for _, _, default in rows)
        self.built = tuple((name, fspec) for name, fspec, default in rows if default is _BUILT_PER_OBJECT)
        self.derived = tuple(name for name, _, default in rows if default is _HF_DERIVED)
        self._keys = dict.fromkeys(self.names)

    def slots(self, origins: tuple) -> dict:
        """A field table: every field in the class's order with its default and ``origins``.
        Filling a copy of a table of the keys costs less than building one (no resizes)."""
        table = self._keys.copy()
        table.update(zip(self.names, zip(self.values, repeat(origins))))
        return table


def _handlers(prefix: str) -> dict[type, Any]:
    """Interpreter methods ``<prefix><NodeClass>`` by ``ast`` node class, looked up once."""
    return {getattr(ast, name[len(prefix):]): method for name, method in vars(Interpreter).items()
            if name.startswith(prefix) and hasattr(ast, name[len(prefix):])}


_STMT_HANDLERS = _handlers("stmt_")
_EXPR_HANDLERS = _handlers("expr_")


def _origin_at(node: ast.AST, source: ModuleSource, seq: int, via: tuple) -> Origin:
    line, column = node.lineno, node.col_offset
    end_line = node.end_lineno or line
    end_column = node.end_col_offset or column
    wide_lines = source.wide_lines
    if not wide_lines:  # UTF-8 byte offsets are character columns
        return _new_origin(source.display_path, line, column + 1, end_line, end_column + 1, "set", seq, via)
    return _new_origin(source.display_path, line,
                       source.char_column(line, column) if line in wide_lines else column + 1, end_line,
                       source.char_column(end_line, end_column) if end_line in wide_lines else end_column + 1,
                       "set", seq, via)


def _stamp(origin: Origin | tuple | None) -> Origin | None:
    """The origin that ``Interpreter.reserve_origin`` reserved, made now."""
    if type(origin) is tuple:
        return _origin_at(*origin)
    return origin


def _enum_value(name: str, value: Any) -> Any:
    """Enum members stand for their string value, or their name when the value is not a
    string (``CudaGraphScope.attn`` -> "attn"): Megatron-Bridge accepts member names."""
    return value if isinstance(value, str) else name


def _ordered_union(first: dict, second: dict) -> list:
    return list(first) + [key for key in second if key not in first]


def _merge_tables(other: dict, current: dict) -> dict:
    """Field tables of two paths merged slot by slot, in ``current``'s order then ``other``'s
    new keys; slots both paths share are kept as they are."""
    merged = dict(current)
    if len(other) == len(current) and list(other) == list(current):  # the same keys: compared in step
        for key in list(compress(other, map(operator.is_not, other.values(), current.values()))):
            merged[key] = _merge_slots(other[key], current[key])
        return merged
    differing = compress(other, map(operator.is_not, other.values(), map(current.get, other)))
    for key in list(differing):
        merged[key] = _merge_slots(other[key], current.get(key))
    for key in current.keys() - other.keys():
        merged[key] = _merge_slots(None, current[key])
    return merged


def _merge_into_first(other: dict, current: dict) -> dict:
    """``_merge_tables(other, current)``, written into ``other`` when it holds ``current``'s keys
    in their order, then its new keys (the merged table's order)."""
    keys = list(other)
    if keys[:len(current)] != list(current):
        return _merge_tables(other, current)
    for key in list(compress(keys, map(operator.is_not, other.values(), map(current.get, keys)))):
        other[key] = _merge_slots(other[key], current.get(key))
    return other


def _merge_slots(left: tuple | None, right: tuple | None) -> tuple:
    if left is None or right is None:
        present = left or right
        return (UNKNOWN, present[1])
    value = merge_values(left[0], right[0])
    origins = left[1] if left[1] == right[1] else _merge_origins(left[1], right[1])
    return (value, origins)


def _merge_origins(left: tuple, right: tuple) -> tuple:
    merged = list(left)
    for origin in right:
        if origin not in merged:
            merged.append(origin)
    return tuple(merged)


def _with_kind(origin: Origin | None, kind: str) -> Origin | None:
    if origin is None:
        return None
    return Origin.at(origin.path, origin.line, origin.column, origin.end_line, origin.end_column, kind, origin.seq,
                     origin.via)


def _oversized(value: Any) -> bool:
    """Over ``MAX_VALUE_SIZE`` (nested elements counted) or ``MAX_INT_BITS``; stops counting
    at the limit, so the check costs at most the limit."""
    kind = type(value)
    if kind is int:
        return value.bit_length() > MAX_INT_BITS
    if kind is str:
        return len(value) > MAX_VALUE_SIZE
    if (kind is list or kind is tuple) and len(value) <= MAX_VALUE_SIZE:  # most values checked
        flat = _flat_oversized(value)
        if flat is not None:
            return flat
    return _walked_oversized(value)


def _walked_oversized(value: Any) -> bool:
    """``_oversized`` by walking every nested element until the limit is reached."""
    budget = MAX_VALUE_SIZE
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > MAX_INT_BITS:
                return True
            budget -= 1
        elif isinstance(item, str):
            budget -= len(item)
        elif isinstance(item, (list, tuple, set, frozenset)):
            budget -= len(item)
            if budget >= 0:
                stack.extend(item)
        else:
            budget -= 1
        if budget < 0:
            return True
    return False


def _flat_oversized(items: list | tuple) -> bool | None:
    """``_oversized`` of a list or tuple of plain scalars and of lists and tuples of them (a
    pipeline layout), None when an item is anything else."""
    budget = _flat_budget(items, MAX_VALUE_SIZE, nested=True)
    return None if budget is None else budget < 0


def _flat_budget(items: list | tuple, budget: int, nested: bool) -> int | None:
    """What is left of ``budget`` once ``items`` are counted as ``_walked_oversized`` counts
    them, negative when an int is too big; None when an item is not a plain scalar, nor
    (``nested``) a list or tuple of them."""
    budget -= len(items)
    for item in items:
        kind = type(item)
        if kind is str:
            budget -= len(item)
        elif kind is int:
            if item.bit_length() > MAX_INT_BITS:
                return -1
            budget -= 1
        elif kind is float or kind is bool or item is None or kind is Unknown:
            budget -= 1
        elif (kind is list or kind is tuple) and nested:
            budget = _flat_budget(item, budget, nested=False)
            if budget is None or budget < 0:
                return budget
        else:
            return None
    return budget


def _size(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length()
    return len(value) if isinstance(value, (str, list, tuple)) else 1


def _result_too_big(op: type, left: Any, right: Any) -> bool:
    """Would ``left <op> right`` be over the size limits? Decided before computing it: ``2 **
    10 ** 9`` or ``"x" * 10 ** 9`` would take minutes and gigabytes."""
    ints = all(isinstance(v, int) for v in (left, right))
    if op is ast.Pow and ints:
        return right > 0 and abs(left) > 1 and left.bit_length() * right > MAX_INT_BITS
    if op is ast.LShift and ints:
        return right > MAX_INT_BITS or left.bit_length() + max(right, 0) > MAX_INT_BITS
    if op is ast.Mult:
        if ints:
            return left.bit_length() + right.bit_length() > MAX_INT_BITS
        for sequence, count in ((left, right), (right, left)):
            if isinstance(sequence, (str, list, tuple)) and isinstance(count, int):
                return len(sequence) * count > MAX_VALUE_SIZE
    if op is ast.Mod and isinstance(left, str):
        return _format_too_big(left, right if isinstance(right, tuple) else (right,), "%")
    return False


_WIDE_SPEC = re.compile(r"\d{5,}|\*")


def _format_too_big(template: str, args: tuple, marker: str) -> bool:
    """A printf or str.format template: a width of five digits or more (or ``*``), or more
    output than the size limit."""
    if marker == "%" and re.search(r"%[^a-zA-Z%]*(?:\d{5,}|\*)", template):
        return True
    if marker == "{" and re.search(r"\{[^{}]*(?:\d{5,}|\{)", template):
        return True
    longest = max((len(str(a)) if isinstance(a, (str, int, float)) else MAX_VALUE_SIZE for a in args), default=0)
    return len(template) + template.count(marker) * longest > MAX_VALUE_SIZE


def _scalarish(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool, tuple, list)) or value is None


def _may_be_config_class(qualname: str) -> bool:
    return qualname.startswith("megatron") or "." not in qualname or qualname.startswith(".")


def _is_megatron_path(path: Path) -> bool:
    return "megatron" in path.parts


def _module_name_guess(path: Path) -> str | None:
    parts = list(path.with_suffix("").parts)
    if "megatron" not in parts:
        return None
    index = len(parts) - 1 - parts[::-1].index("megatron")
    names = parts[index:]
    if names[-1] == "__init__":
        names = names[:-1]
    return ".".join(names)


def _string_method(text: str, name: str, args: list, kwargs: dict) -> Any:
    if kwargs or not _known_seq(args):
        return UNKNOWN
    if _string_result_too_big(text, name, args):
        return UNKNOWN
    if name in ("lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "replace", "split",
                "rsplit", "join", "format", "title", "partition", "rpartition", "removeprefix", "removesuffix",
                "count", "find", "isdigit", "zfill"):
        try:
            return getattr(text, name)(*args)
        except Exception:  # noqa: BLE001
            return UNKNOWN
    return UNKNOWN


def _string_result_too_big(text: str, name: str, args: list) -> bool:
    if name == "zfill":
        return bool(args) and isinstance(args[0], int) and args[0] > MAX_VALUE_SIZE
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        places = text.count(args[0]) if args[0] else len(text) + 1
        return len(text) + places * len(args[1]) > MAX_VALUE_SIZE
    if name == "join" and args and isinstance(args[0], (list, tuple)):
        return _oversized(list(args[0])) or len(text) * len(args[0]) > MAX_VALUE_SIZE
    if name == "format":
        return _format_too_big(text, tuple(args), "{")
    return False


def _isinstance(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) != 2:
        return UNKNOWN
    value, kinds = args
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    answers = [_isinstance_one(interp, value, kind) for kind in kinds]
    if any(answer is True for answer in answers):
        return True
    if all(answer is False for answer in answers):
        return False
    return UNKNOWN


def _isinstance_one(interp: Interpreter, value: Any, kind: Any) -> Any:
    builtin_types = {"builtins.str": str, "builtins.int": int, "builtins.float": float,
                     "builtins.bool": bool, "builtins.list": list, "builtins.tuple": tuple, "builtins.dict": dict}
    if is_unknown(value):
        return UNKNOWN
    if isinstance(kind, External) and kind.qualname in builtin_types:
        python_type = builtin_types[kind.qualname]
        if isinstance(value, Obj):
            return value.is_dict and python_type is dict
        if isinstance(value, (External, BoundMethod, HFBridge, FuncRef, ClassRef, ModuleRef, EnumRef)):
            return UNKNOWN
        return isinstance(value, python_type)
    if isinstance(kind, ClassRef):
        if isinstance(value, Obj) and value.label:
            return UNKNOWN
        if isinstance(value, Obj) and value.cls is not None:
            return interp.schema.is_subclass(value.cls.qualname, kind.spec.qualname) or UNKNOWN
        if isinstance(value, SCALARS) or (isinstance(value, Obj) and value.is_dict):
            return False
    return UNKNOWN


def _getattr(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) < 2 or not isinstance(args[1], str):
        return UNKNOWN
    owner = args[0]
    if isinstance(owner, Obj) and not owner.is_dict:
        value = owner.get(args[1])
        if is_missing(value):
            if owner.cls is not None and args[1] not in owner.cls.fields and len(args) > 2 and not owner.open:
                return args[2]
            return UNKNOWN
        return value
    return UNKNOWN


def _hasattr(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) != 2 or not isinstance(args[1], str):
        return UNKNOWN
    owner = args[0]
    if isinstance(owner, Obj) and not owner.is_dict:
        if args[1] in owner.fields:
            return True
        return UNKNOWN if owner.open else False
    return UNKNOWN


def _setattr(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    if len(args) == 3 and isinstance(args[0], Obj):
        if isinstance(args[1], str):
            value = UNKNOWN if interp.havoc_depth else args[2]
            args[0].set(args[1], value, interp.origin(node, frame))
        else:
            interp.havoc_obj(args[0], interp.origin(node, frame))
    return None


def _dict(interp: Interpreter, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
    obj = interp.new_obj(None, interp.origin(node, frame))
    for arg in args:
        interp.splat_into(obj, arg)
    for key, value in kwargs.items():
        obj.set(key, value, interp.origin(node, frame))
    return obj


BUILTIN_SPECIALS = {
    "isinstance": _isinstance,
    "getattr": _getattr,
    "hasattr": _hasattr,
    "setattr": _setattr,
    "dict": _dict,
}
# What a name no scope defines stands for (each builtin's External made once).
_BUILTIN_NAMES = {"True": True, "False": False, "None": None,
                  **{name: External(f"builtins.{name}") for name in (*PURE_BUILTINS, *BUILTIN_SPECIALS)}}


@functools.lru_cache(maxsize=None)
def _external_builtin(qualname: str) -> tuple:
    """(pure function, special handler) that ``Interpreter.call_external`` applies to an
    External of this name; None where there is none."""
    short = qualname[len("builtins."):] if qualname.startswith("builtins.") else qualname
    if short.startswith("math.") or (short.rsplit(".", 1)[-1] in MATH_NAMES and "math" in short):
        short = "math." + short.rsplit(".", 1)[-1]
    return PURE_BUILTINS.get(short), None if short in PURE_BUILTINS else BUILTIN_SPECIALS.get(short)
