"""Pure, import-free extraction of dataclass schemas from Python sources (``ast`` only).

Used by ``generate_schema.py``; nothing here touches the network or imports the code it reads.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from mblint.paths import read_regular

MAX_MODULE_BYTES = 4_000_000  # a module of the wheels read to build a bundled schema (the largest is about 170 kB)

UNKNOWN = object()
ENUM_ROOTS = {"enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag"}
DATACLASS_DECORATORS = {"dataclasses.dataclass", "dataclass"}
# The signal numbers POSIX fixes (the same on every platform); other signals' numbers vary.
POSIX_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGABRT": 6, "SIGKILL": 9, "SIGALRM": 14, "SIGTERM": 15}
BUILTIN_FACTORIES = {"list": [], "dict": {}, "set": [], "tuple": [], "OrderedDict": {}, "defaultdict": {}}


# --------------------------------------------------------------------------- source index


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    is_package: bool
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted target
    star_imports: list[str] = field(default_factory=list)
    assigns: dict[str, ast.expr] = field(default_factory=dict)
    functions: set[str] = field(default_factory=set)  # names of its unconditional top-level defs


class SourceIndex:
    """All modules below some roots, by dotted name, with their top-level names."""

    def __init__(self, modules: dict[str, Module], root_dir: Path | None = None):
        self.modules = modules
        self.root_dir = root_dir

    @classmethod
    def from_dirs(cls, roots: Iterable[Path], packages: Iterable[str] = ("megatron",)) -> "SourceIndex":
        modules: dict[str, Module] = {}
        for root in roots:
            for package in packages:
                for path in sorted((root / package).rglob("*.py")):
                    name = module_name(root, path)
                    if name not in modules:
                        modules[name] = parse_module(name, path)
        return cls(modules)

    def resolve(self, module: str, name: str, _seen: set | None = None) -> str | None:
        """Dotted qualname that ``name`` means inside ``module`` (classes, aliases, modules)."""
        seen = _seen if _seen is not None else set()
        if (module, name) in seen:
            return None
        seen.add((module, name))
        mod = self.modules.get(module)
        if mod is None:
            return None
        if name in mod.classes:
            return f"{module}.{name}"
        if name in mod.imports:
            return self.resolve_dotted(mod.imports[name], seen)
        if name in mod.assigns:
            return self.resolve_expr(module, mod.assigns[name], seen)
        if f"{module}.{name}" in self.modules:
            return f"{module}.{name}"
        for star in mod.star_imports:
            found = self.resolve(star, name, seen)
            if found:
                return found
        return None

    def resolve_dotted(self, dotted: str, seen: set | None = None) -> str:
        """``pkg.mod.Name`` -> where it is really defined (or itself when external)."""
        if dotted in self.modules:
            return dotted
        parent, _, last = dotted.rpartition(".")
        if parent in self.modules:
            return self.resolve(parent, last, seen) or dotted
        if parent:
            head = self.resolve_dotted(parent, seen)
            if head != parent and head in self.modules:
                return self.resolve(head, last, seen) or dotted
        return dotted

    def resolve_expr(self, module: str, node: ast.expr, seen: set | None = None) -> str | None:
        if isinstance(node, ast.Subscript):
            return self.resolve_expr(module, node.value, seen)
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.resolve(module, head, seen)
        if base is None:
            return None
        if not rest:
            return base
        return self.resolve_dotted(f"{base}.{rest}", seen)

    def class_node(self, qualname: str) -> ast.ClassDef | None:
        module, _, name = qualname.rpartition(".")
        mod = self.modules.get(module)
        return mod.classes.get(name) if mod else None

    def relpath(self, module: str) -> str:
        mod = self.modules[module]
        parts = module.split(".")
        suffix = "/__init__.py" if mod.is_package else ".py"
        return "/".join(parts) + suffix


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def parse_module(name: str, path: Path) -> Module:
    tree = ast.parse(read_regular(path, MAX_MODULE_BYTES).decode("utf-8"), filename=str(path))
    mod = Module(name=name, path=path, tree=tree, is_package=path.name == "__init__.py")
    package = name if mod.is_package else name.rpartition(".")[0]
    for node in tree.body:
        _index_statement(mod, node, package)
    return mod


def _index_statement(mod: Module, node: ast.stmt, package: str, conditional: bool = False) -> None:
    if isinstance(node, ast.ClassDef):
        mod.classes[node.name] = node
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        if not conditional:
            mod.functions.add(node.name)
    elif isinstance(node, ast.ImportFrom):
        source = _absolute_module(package, node.module, node.level)
        for alias in node.names:
            if alias.name == "*":
                mod.star_imports.append(source)
            else:
                mod.imports[alias.asname or alias.name] = f"{source}.{alias.name}"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                mod.imports[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                mod.imports.setdefault(head, head)
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        mod.assigns[node.targets[0].id] = node.value
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        mod.assigns[node.target.id] = node.value
    elif isinstance(node, ast.If | ast.Try):
        for child in _block_bodies(node):
            _index_statement(mod, child, package, conditional=True)


def _block_bodies(node: ast.If | ast.Try) -> list[ast.stmt]:
    if isinstance(node, ast.If):
        return node.body + node.orelse
    return node.body + [s for h in node.handlers for s in h.body] + node.orelse


def _absolute_module(package: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".")
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    return f"{base}.{module}" if module else base


def dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted_name(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


# --------------------------------------------------------------------------- class kinds


class ClassKinds:
    """Which classes are dataclasses / enums, and their resolved bases, with memoisation."""

    def __init__(self, index: SourceIndex):
        self.index = index
        self._bases: dict[str, list[str]] = {}
        self._dataclass: dict[str, bool] = {}
        self._enum: dict[str, bool] = {}

    def bases(self, qualname: str) -> list[str]:
        if qualname not in self._bases:
            node = self.index.class_node(qualname)
            module = qualname.rpartition(".")[0]
            result = []
            for base in node.bases if node else []:
                resolved = self.index.resolve_expr(module, base)
                text = resolved or ast.unparse(base.value if isinstance(base, ast.Subscript) else base)
                result.append(text)
            self._bases[qualname] = result
        return self._bases[qualname]

    def is_decorated_dataclass(self, qualname: str) -> bool:
        node = self.index.class_node(qualname)
        if node is None:
            return False
        module = qualname.rpartition(".")[0]
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            resolved = self.index.resolve_expr(module, target) or dotted_name(target)
            if resolved in DATACLASS_DECORATORS:
                return True
        return False

    def is_dataclass(self, qualname: str) -> bool:
        if qualname not in self._dataclass:
            self._dataclass[qualname] = False  # cycle guard
            self._dataclass[qualname] = self.is_decorated_dataclass(qualname) or any(
                self.is_dataclass(b) for b in self.bases(qualname) if self.index.class_node(b)
            )
        return self._dataclass[qualname]

    def is_enum(self, qualname: str) -> bool:
        if qualname in ENUM_ROOTS:
            return True
        if qualname not in self._enum:
            self._enum[qualname] = False
            self._enum[qualname] = self.index.class_node(qualname) is not None and any(
                self.is_enum(b) for b in self.bases(qualname)
            )
        return self._enum[qualname]

    def mro(self, qualname: str) -> list[str]:
        """C3 linearisation over the classes we can see (unknown bases are left out)."""
        known = [b for b in self.bases(qualname) if self.index.class_node(b)]
        return [qualname] + _c3_merge([self.mro(b) for b in known] + [known])


def _c3_merge(sequences: list[list[str]]) -> list[str]:
    result: list[str] = []
    seqs = [list(s) for s in sequences if s]
    while seqs:
        for seq in seqs:
            head = seq[0]
            if not any(head in s[1:] for s in seqs):
                break
        else:  # inconsistent hierarchy: fall back to depth-first order
            head = seqs[0][0]
        result.append(head)
        seqs = [[c for c in s if c != head] for s in seqs]
        seqs = [s for s in seqs if s]
    return result


# --------------------------------------------------------------------------- values


# Steps (expressions evaluated) per default: real defaults take a few dozen; names that
# repeat names (``A = (B, B, ...)``, ``B = (C, C, ...)``) would take width ** depth.
MAX_EVALUATION_STEPS = 10_000


class ValueEvaluator:
    """Evaluates default expressions that are knowable without running code, each within
    ``MAX_EVALUATION_STEPS`` (beyond, the value is unknown)."""

    def __init__(self, index: SourceIndex, kinds: ClassKinds):
        self.index = index
        self.kinds = kinds
        self._steps: int | None = None  # steps taken by the evaluation under way

    def evaluate(self, module: str, node: ast.expr, depth: int = 0) -> Any:
        if self._steps is not None:  # part of the evaluation under way: its budget
            return self._evaluate(module, node, depth)
        self._steps = 0
        try:
            return self._evaluate(module, node, depth)
        finally:
            self._steps = None

    def _evaluate(self, module: str, node: ast.expr, depth: int) -> Any:
        self._steps += 1
        if depth > 8 or self._steps > MAX_EVALUATION_STEPS:
            return UNKNOWN
        method = getattr(self, f"_eval_{type(node).__name__}", None)
        return method(module, node, depth + 1) if method else UNKNOWN

    def _eval_Constant(self, module, node, depth):
        value = node.value
        if isinstance(value, float) and not math.isfinite(value):
            return UNKNOWN
        if value is Ellipsis or isinstance(value, bytes | complex):
            return UNKNOWN
        return value

    def _eval_UnaryOp(self, module, node, depth):
        value = self.evaluate(module, node.operand, depth)
        if isinstance(node.op, ast.USub) and _is_number(value):
            return -value
        if isinstance(node.op, ast.UAdd) and _is_number(value):
            return value
        if isinstance(node.op, ast.Not) and isinstance(value, bool):
            return not value
        return UNKNOWN

    def _eval_BinOp(self, module, node, depth):
        left = self.evaluate(module, node.left, depth)
        right = self.evaluate(module, node.right, depth)
        if not (_is_number(left) and _is_number(right)):
            return UNKNOWN
        ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b,
               ast.Pow: lambda a, b: a**b if abs(b) < 64 else UNKNOWN}
        if any(isinstance(v, int) and v.bit_length() > 256 for v in (left, right)):
            return UNKNOWN  # bounded work on untrusted source: no huge integers
        op = ops.get(type(node.op))
        try:
            result = op(left, right) if op else UNKNOWN
            return UNKNOWN if isinstance(result, int) and result.bit_length() > 256 else result
        except (ZeroDivisionError, OverflowError):
            return UNKNOWN

    def _eval_sequence(self, module, elts, depth):
        values = []
        for element in elts:
            value = self.evaluate(module, element, depth)
            if value is UNKNOWN:
                return UNKNOWN
            values.append(value)
        return values

    def _eval_Tuple(self, module, node, depth):
        return self._eval_sequence(module, node.elts, depth)

    _eval_List = _eval_Tuple

    def _eval_Dict(self, module, node, depth):
        if any(k is None for k in node.keys):
            return UNKNOWN
        keys = self._eval_sequence(module, node.keys, depth)
        values = self._eval_sequence(module, node.values, depth)
        if keys is UNKNOWN or values is UNKNOWN or not all(isinstance(k, str) for k in keys):
            return UNKNOWN
        return dict(zip(keys, values))

    def _eval_Name(self, module, node, depth):
        mod = self.index.modules.get(module)
        if mod and node.id in mod.assigns:
            return self.evaluate(module, mod.assigns[node.id], depth)
        if mod and node.id in mod.imports:
            target = self.index.resolve_dotted(mod.imports[node.id])
            return self._eval_qualified_constant(target, depth)
        return UNKNOWN

    def _eval_qualified_constant(self, target: str, depth: int) -> Any:
        parent, _, name = target.rpartition(".")
        mod = self.index.modules.get(parent)
        if mod and name in mod.assigns:
            return self.evaluate(parent, mod.assigns[name], depth)
        return UNKNOWN

    def _eval_Attribute(self, module, node, depth):
        dotted = dotted_name(node)
        if dotted is None:
            return UNKNOWN
        owner = self.index.resolve_expr(module, node.value)
        if owner == "torch" or (owner or "").startswith("torch."):
            return f"{owner}.{node.attr}"
        if owner and self.kinds.is_enum(owner):
            return self.enum_members(owner).get(node.attr, UNKNOWN)
        return UNKNOWN

    def function_name(self, module: str, node: ast.expr) -> str | None:
        """The qualified name of the function a default names: a top-level ``def`` of the
        sources read (where the name resolves to one, through imports), or an attribute of
        ``torch.nn.functional`` (a module of functions). None for anything else."""
        if not isinstance(node, ast.Name | ast.Attribute):
            return None
        if isinstance(node, ast.Attribute) and self.index.resolve_expr(module, node.value) == "torch.nn.functional":
            return f"torch.nn.functional.{node.attr}"
        mod = self.index.modules.get(module)
        if isinstance(node, ast.Name) and mod is not None and node.id in mod.functions \
                and node.id not in mod.assigns and node.id not in mod.imports:
            return f"{module}.{node.id}"
        target = self.index.resolve_expr(module, node)
        parent, _, name = (target or "").rpartition(".")
        owner = self.index.modules.get(parent)
        if owner is not None and name in owner.functions and name not in owner.assigns and name not in owner.imports:
            return target
        return None

    def special_default(self, module: str, node: ast.expr) -> Any:
        """Defaults that are no literal: an infinite float (``float("inf")``, ``math.inf``) and
        a signal whose number POSIX fixes (``signal.SIGTERM`` is 15 on every platform)."""
        sign = 1.0
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, node = -1.0, node.operand
        if isinstance(node, ast.Call) and not node.keywords and len(node.args) == 1 \
                and self.index.resolve_expr(module, node.func) in (None, "float") and dotted_name(node.func) == "float" \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and node.args[0].value.strip().lower() in ("inf", "infinity", "+inf"):
            return sign * math.inf
        if isinstance(node, ast.Attribute) and self.index.resolve_expr(module, node.value) == "math" and node.attr == "inf":
            return sign * math.inf
        if sign == 1.0 and isinstance(node, ast.Attribute) and self.index.resolve_expr(module, node.value) == "signal":
            return POSIX_SIGNALS.get(node.attr, UNKNOWN)
        return UNKNOWN

    def enum_members(self, qualname: str) -> dict[str, Any]:
        node = self.index.class_node(qualname)
        if node is None:
            return {}
        module = qualname.rpartition(".")[0]
        is_str_enum = any(b in ("enum.StrEnum", "str") for b in self.kinds.bases(qualname))
        members: dict[str, Any] = {}
        for position, (name, value) in enumerate(_enum_assignments(node), start=1):
            if _is_auto(value):
                members[name] = name.lower() if is_str_enum else position
                continue
            evaluated = self.evaluate(module, value)
            members[name] = None if evaluated is UNKNOWN else evaluated
        return members


def _enum_assignments(node: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    pairs = []
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            name, value = stmt.target.id, stmt.value
        else:
            continue
        if not name.startswith("_"):
            pairs.append((name, value))
    return pairs


def _is_auto(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and (dotted_name(node.func) or "").split(".")[-1] == "auto"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --------------------------------------------------------------------------- fields


class FieldExtractor:
    """Turns dataclass bodies into the JSON field records of ``mblint.schema``."""

    def __init__(self, index: SourceIndex):
        self.index = index
        self.kinds = ClassKinds(index)
        self.values = ValueEvaluator(index, self.kinds)

    def own_fields(self, qualname: str) -> dict[str, dict]:
        if not self.kinds.is_decorated_dataclass(qualname):
            return {}
        node = self.index.class_node(qualname)
        module = qualname.rpartition(".")[0]
        result = {}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                record = self.field_record(module, stmt)
                if record is not None:
                    result[stmt.target.id] = record
        return result

    def fields(self, qualname: str) -> dict[str, dict]:
        """The dataclass fields as ``dataclasses`` resolves them: every base in reverse MRO
        order contributes its *whole* field table (inherited fields included), then the class
        its own. With multiple inheritance a later base's inherited default can so win over an
        earlier base's own one (MLAModelProvider: MLATransformerConfig's inherited Megatron-Core
        defaults over GPTModelProvider's)."""
        memo = self.__dict__.setdefault("_fields_memo", {})
        if qualname not in memo:
            merged: dict[str, dict] = {}
            for base in reversed(self.kinds.mro(qualname)[1:]):
                holder = next((c for c in self.kinds.mro(base) if self.kinds.is_dataclass(c)), None)
                if holder is not None:
                    merged.update(self.fields(holder))
            if self.kinds.is_dataclass(qualname):
                merged.update(self.own_fields(qualname))
            memo[qualname] = merged
        return memo[qualname]

    def field_record(self, module: str, stmt: ast.AnnAssign) -> dict | None:
        annotation = _annotation_expr(stmt.annotation)
        head = dotted_name(annotation.value if isinstance(annotation, ast.Subscript) else annotation) or ""
        if head.split(".")[-1] in ("ClassVar", "InitVar"):
            return None
        mentioned = self.annotation_classes(module, annotation)
        record = {
            "annotation": ast.unparse(annotation),
            "classes": [q for q in mentioned if self.kinds.is_dataclass(q)],
        }
        enums = [q for q in mentioned if self.kinds.is_enum(q)]
        if enums:
            record["enums"] = enums
        record.update(self.default_record(module, stmt.value))
        return record

    def annotation_classes(self, module: str, annotation: ast.expr) -> list[str]:
        found = set()
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    inner = ast.parse(node.value, mode="eval").body
                except SyntaxError:
                    continue
                found.update(self.annotation_classes(module, inner))
            elif isinstance(node, ast.Name | ast.Attribute):
                resolved = self.index.resolve_expr(module, node)
                if resolved and self.index.class_node(resolved) and (
                    self.kinds.is_dataclass(resolved) or self.kinds.is_enum(resolved)
                ):
                    found.add(resolved)
        return sorted(found)

    def default_record(self, module: str, value: ast.expr | None) -> dict:
        if value is None:
            return {"default_kind": "required", "default": None}
        if isinstance(value, ast.Call) and self._is_field_call(module, value):
            return self.field_call_record(module, value)
        return self._value_record(module, value)

    def _value_record(self, module: str, value: ast.expr) -> dict:
        function = self.values.function_name(module, value)
        if function is not None:
            return {"default_kind": "function", "default": function}
        special = self.values.special_default(module, value)
        if special is not UNKNOWN:
            return {"default_kind": "value", "default": special}
        evaluated = self.values.evaluate(module, value)
        if evaluated is UNKNOWN:
            return {"default_kind": "unknown", "default": None, "default_source": _short_source(value)}
        return {"default_kind": "value", "default": evaluated}

    def _is_field_call(self, module: str, call: ast.Call) -> bool:
        resolved = self.index.resolve_expr(module, call.func) or dotted_name(call.func)
        return resolved in ("dataclasses.field", "field")

    def field_call_record(self, module: str, call: ast.Call) -> dict:
        kwargs = {k.arg: k.value for k in call.keywords if k.arg}
        if "default" in kwargs:
            record = self._value_record(module, kwargs["default"])
        elif "default_factory" in kwargs:
            record = self.factory_record(module, kwargs["default_factory"])
        else:
            record = {"default_kind": "required", "default": None}
        if isinstance(kwargs.get("init"), ast.Constant) and kwargs["init"].value is False:
            record["init"] = False
        return record

    def factory_record(self, module: str, factory: ast.expr) -> dict:
        if isinstance(factory, ast.Lambda):
            return self._lambda_factory(module, factory.body)
        name = dotted_name(factory)
        if name in BUILTIN_FACTORIES:
            return {"default_kind": "factory", "default": BUILTIN_FACTORIES[name]}
        resolved = self.index.resolve_expr(module, factory)
        if resolved and self.index.class_node(resolved) and self.kinds.is_dataclass(resolved):
            return {"default_kind": "factory", "default": None, "factory_class": resolved}
        return {"default_kind": "unknown", "default": None, "default_source": _short_source(factory)}

    def _lambda_factory(self, module: str, body: ast.expr) -> dict:
        if isinstance(body, ast.Call) and not body.args and not body.keywords:
            return self.factory_record(module, body.func)
        evaluated = self.values.evaluate(module, body)
        if evaluated is UNKNOWN:
            return {"default_kind": "unknown", "default": None, "default_source": _short_source(body)}
        return {"default_kind": "factory", "default": evaluated}


def _annotation_expr(annotation: ast.expr) -> ast.expr:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return annotation
    return annotation


def _short_source(node: ast.expr, limit: int = 80) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- classes


def extract_classes(index: SourceIndex, prefixes: tuple[str, ...] = ("megatron.",)) -> dict[str, dict]:
    """Every dataclass (decorated or derived) with at least one field, in JSON form."""
    extractor = FieldExtractor(index)
    result = {}
    for module_name_, mod in sorted(index.modules.items()):
        if not module_name_.startswith(prefixes) and module_name_ not in {p.rstrip(".") for p in prefixes}:
            continue
        for name in mod.classes:
            qualname = f"{module_name_}.{name}"
            if not extractor.kinds.is_dataclass(qualname):
                continue
            fields = extractor.fields(qualname)
            if fields:
                result[qualname] = class_record(index, extractor, qualname, fields)
    return result


def class_record(index: SourceIndex, extractor: FieldExtractor, qualname: str, fields: dict) -> dict:
    module, _, name = qualname.rpartition(".")
    node = index.class_node(qualname)
    return {
        "name": name,
        "module": module,
        "source": f"{index.relpath(module)}:{node.lineno}",
        "bases": extractor.kinds.bases(qualname),
        "fields": fields,
    }


def extract_enums(index: SourceIndex, classes: dict[str, dict]) -> dict[str, dict]:
    """Enums that config fields mention, as {member: value}."""
    extractor = FieldExtractor(index)
    wanted = {q for cls in classes.values() for f in cls["fields"].values() for q in f.get("enums", ())}
    return {
        q: extractor.values.enum_members(q)
        for q in sorted(wanted)
        if extractor.kinds.is_enum(q)
    }
