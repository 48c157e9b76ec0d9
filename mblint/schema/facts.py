"""Facts beyond dataclass fields, read with ``ast`` from Megatron-Bridge sources: which provider
fields the HF bridges fill, deprecated field renames, mixed-precision recipe names, where
``AutoBridge`` is importable from."""

from __future__ import annotations

import ast
import re
from collections import defaultdict

from mblint.schema.extract import ClassKinds, FieldExtractor, SourceIndex, dotted_name

BRIDGE_PREFIX = "megatron.bridge."
MAPPING_ATTRS = re.compile(r"(CONFIG_MAPPING|ROPE_SCALING_MAPPING)$")
REVERSE_METHODS = re.compile(r"(megatron_to_hf|to_hf|export)")
TARGET_NAMES = re.compile(r"(provider|kwargs)", re.I)
HF_NAMES = re.compile(r"(hf|config|pretrained)", re.I)


# --------------------------------------------------------------------------- HF-derived fields


class HFFieldCollector(ast.NodeVisitor):
    """Provider fields a bridge method writes: ``provider.x = ``, ``kwargs["x"] = ``,
    ``setattr(provider, "x", ...)``, ``kwargs.update(x=...)``, ``{"x": ...}`` literals."""

    def __init__(self):
        self.found: list[tuple[str, int, bool]] = []  # (field, line, value reads HF config)

    def _add(self, name: str, node: ast.AST, value: ast.AST | None) -> None:
        if name.isidentifier() and not name.startswith("_"):
            self.found.append((name, node.lineno, _reads_hf(value)))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node.value)
            if isinstance(target, ast.Name) and TARGET_NAMES.search(target.id):
                self._dict_literal(node.value)
                self._constructor_keywords(node.value)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self._constructor_keywords(node.value)
        self.generic_visit(node)

    def _constructor_keywords(self, value: ast.expr) -> None:
        """Keywords of ``provider = cls(...)``, ``dict(...)`` or ``return XProvider(...)``."""
        if isinstance(value, ast.Call):
            for keyword in value.keywords:
                if keyword.arg:
                    self._add(keyword.arg, keyword.value, keyword.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node.value)
        self.generic_visit(node)

    def _target(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            if TARGET_NAMES.search(target.value.id):
                self._add(target.attr, target, value)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            key = target.slice
            if TARGET_NAMES.search(target.value.id) and isinstance(key, ast.Constant) and isinstance(key.value, str):
                self._add(key.value, target, value)

    def _dict_literal(self, value: ast.expr) -> None:
        if isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    self._add(key.value, key, item)

    def visit_Call(self, node: ast.Call) -> None:
        func = dotted_name(node.func) or ""
        first = dotted_name(node.args[0]) if node.args else None
        if func.endswith("Provider") or (func.endswith("partial") and (first or "").endswith("Provider")):
            self._constructor_keywords(node)
        if func == "setattr" and len(node.args) == 3:
            obj, key, value = node.args
            if isinstance(obj, ast.Name) and TARGET_NAMES.search(obj.id) and isinstance(key, ast.Constant):
                self._add(str(key.value), node, value)
        elif func.endswith(".update") and TARGET_NAMES.search(func.split(".")[0]):
            for keyword in node.keywords:
                if keyword.arg:
                    self._add(keyword.arg, node, keyword.value)
            for arg in node.args:
                self._dict_literal(arg)
        self.generic_visit(node)


def _reads_hf(value: ast.AST | None) -> bool:
    if value is None:
        return False
    return any(
        isinstance(n, ast.Name) and HF_NAMES.search(n.id) or isinstance(n, ast.Attribute) and n.attr == "config"
        for n in ast.walk(value)
    )


def mapping_fields(node: ast.ClassDef) -> list[tuple[str, int]]:
    """Megatron names (second items) of ``(hf_name, megatron_name)`` pairs in *_MAPPING attrs."""
    result = []
    for stmt in node.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        if not any(isinstance(t, ast.Name) and MAPPING_ATTRS.search(t.id) for t in targets) or stmt.value is None:
            continue
        for item in ast.walk(stmt.value):
            if isinstance(item, ast.Tuple) and len(item.elts) == 2 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in item.elts
            ):
                result.append((item.elts[1].value, item.lineno))
    return result


def is_bridge_class(node: ast.ClassDef) -> bool:
    names = {s.name for s in node.body if isinstance(s, ast.FunctionDef)}
    has_mapping = bool(mapping_fields(node))
    return "provider_bridge" in names or "hf_config_to_provider_kwargs" in names or has_mapping


def bridge_methods(node: ast.ClassDef) -> list[ast.FunctionDef]:
    return [
        s for s in node.body
        if isinstance(s, ast.FunctionDef) and not REVERSE_METHODS.search(s.name) and s.name != "mapping_registry"
    ]


def collect_hf_fields(index: SourceIndex) -> dict[str, dict]:
    """{field: {"from_config": bool, "sources": [path:line...]}} over every bridge class."""
    hits: dict[str, dict] = defaultdict(lambda: {"from_config": False, "sources": []})

    def record(name, path, line, from_config):
        entry = hits[name]
        entry["from_config"] = entry["from_config"] or from_config
        entry["sources"].append(f"{path}:{line}")

    for module, mod in sorted(index.modules.items()):
        if not module.startswith(BRIDGE_PREFIX + "models."):
            continue
        path = index.relpath(module)
        for node in mod.classes.values():
            _collect_class(node, module, path, record)
    return dict(hits)


def _collect_class(node: ast.ClassDef, module: str, path: str, record) -> None:
    if node.name == "AutoBridge":
        methods = [s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "to_megatron_provider"]
    elif is_bridge_class(node):
        for name, line in mapping_fields(node):
            record(name, path, line, True)
        methods = bridge_methods(node)
    else:
        return
    for method in methods:
        collector = HFFieldCollector()
        collector.visit(method)
        for name, line, from_config in collector.found:
            record(name, path, line, from_config)


def provider_field_names(classes: dict[str, dict], kinds_index: SourceIndex, provider_base: str) -> set[str]:
    """Field names of every class under megatron.bridge.models deriving from ``provider_base``."""
    kinds = ClassKinds(kinds_index)
    names: set[str] = set()
    for qualname, cls in classes.items():
        if qualname.startswith(BRIDGE_PREFIX + "models.") and provider_base in kinds.mro(qualname):
            names.update(cls["fields"])
    return names


def hf_derived(index: SourceIndex, classes: dict[str, dict], transformer_config: str) -> dict:
    hits = collect_hf_fields(index)
    valid = provider_field_names(classes, index, transformer_config)
    kept = {name: hit for name, hit in hits.items() if name in valid}
    files = sorted({s.rsplit(":", 1)[0] for hit in kept.values() for s in hit["sources"]})
    return {
        "hf_derived_fields": sorted(kept),
        "hf_derived_constant_only": sorted(n for n, h in kept.items() if not h["from_config"]),
        "hf_derived_source": _hf_source_text(files),
    }


def _hf_source_text(files: list[str]) -> str:
    core = [f for f in files if f.endswith(("model_bridge.py", "auto_bridge.py"))]
    return (
        "Union of provider fields written by HF->Megatron bridges: (hf, megatron) pairs in "
        "*CONFIG_MAPPING / *ROPE_SCALING_MAPPING class attributes and assignments in "
        "provider_bridge / hf_config_to_provider_kwargs and helper methods (provider.x = ..., "
        "provider_kwargs['x'] = ..., setattr(provider, 'x', ...)), plus AutoBridge.to_megatron_provider. "
        f"Core: {', '.join(core)}; {len(files)} files in total under megatron/bridge/models/."
    )


def hf_provider(index: SourceIndex) -> str | None:
    """The provider class ``to_megatron_provider`` is annotated to return."""
    for module, mod in index.modules.items():
        node = mod.classes.get("AutoBridge")
        if node is None or not module.startswith(BRIDGE_PREFIX):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "to_megatron_provider" and stmt.returns:
                return index.resolve_expr(module, stmt.returns)
    return None


def hf_provider_classes(index: SourceIndex, classes: dict, transformer_config: str) -> list[str]:
    """The provider classes an HF bridge can build: the ``register_bridge(provider=...)`` of
    each bridge class and every provider class its body names (a constructor call in
    ``provider_bridge``, a ``partial``), with the class ``to_megatron_provider`` is annotated to
    return (the ``PROVIDER_CLASS`` fallback). A superset where a name is only tested
    (``isinstance``): what it is used for is a field's default being known only where these
    classes agree."""
    kinds = ClassKinds(index)
    found = {hf_provider(index)}
    for module, mod in sorted(index.modules.items()):
        if not module.startswith(BRIDGE_PREFIX + "models."):
            continue
        for node in mod.classes.values():
            if not (is_bridge_class(node) or any(_name_tail(d) == "register_bridge" for d in node.decorator_list)):
                continue
            for item in ast.walk(node):
                if isinstance(item, (ast.Name, ast.Attribute)) and isinstance(item.ctx, ast.Load):
                    found.add(index.resolve_expr(module, item))
    return sorted(q for q in found if q in classes and _derives(kinds, q, transformer_config)
                  and any(base.endswith(".ModelProviderMixin") for base in kinds.mro(q)))


def _name_tail(node: ast.expr) -> str | None:
    """``register_bridge`` of ``@MegatronModelBridge.register_bridge(...)``."""
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


# --------------------------------------------------------------------------- AutoBridge locations


def autobridge_modules(index: SourceIndex) -> list[str]:
    """Modules where ``AutoBridge`` is defined or re-exported."""
    found = []
    for module, mod in sorted(index.modules.items()):
        if not module.startswith("megatron.bridge"):
            continue
        if "AutoBridge" in mod.classes:
            found.append(module)
        elif mod.is_package and "AutoBridge" in mod.imports:
            resolved = index.resolve(module, "AutoBridge")
            if resolved.endswith(".AutoBridge") and index.class_node(resolved):
                found.append(module)
    return found


def factories(index: SourceIndex, overlay: dict) -> dict:
    methods = overlay.get("hf_factory_methods", ["from_hf_pretrained"])
    modules = autobridge_modules(index)
    node_module = next(m for m in modules if "AutoBridge" in index.modules[m].classes)
    defined = {s.name for s in index.modules[node_module].classes["AutoBridge"].body if isinstance(s, ast.FunctionDef)}
    return {
        "autobridge_modules": modules,
        "hf_model_factories": [f"{m}.AutoBridge.{meth}" for meth in methods if meth in defined for m in modules],
        "hf_provider_methods": [m for m in overlay.get("hf_provider_methods", []) if m in defined],
        "hf_provider_methods_missing": [m for m in overlay.get("hf_provider_methods", []) if m not in defined],
    }


# --------------------------------------------------------------------------- mixed precision


def mixed_precision_recipes(index: SourceIndex) -> list[str]:
    """Functions decorated with ``@register`` in training/mixed_precision.py; ``register`` also
    adds the hyphenated spelling, and ``get_mixed_precision_config`` maps '-' to '_'."""
    mod = index.modules.get(BRIDGE_PREFIX + "training.mixed_precision")
    if mod is None:
        return []
    names = []
    for node in mod.tree.body:
        if isinstance(node, ast.FunctionDef) and any(dotted_name(d) == "register" for d in node.decorator_list):
            names.append(node.name)
            if "_" in node.name:
                names.append(node.name.replace("_", "-"))
    return sorted(names)


MIXED_PRECISION_LOOKUP = "get_mixed_precision_config"


def mixed_precision_lookup(index: SourceIndex) -> dict | None:
    """Where ``runtime_config_update()`` turns a recipe name into a MixedPrecisionConfig: the
    module holding the registered factories and the function that looks a name up."""
    module = BRIDGE_PREFIX + "training.mixed_precision"
    mod = index.modules.get(module)
    if mod is None:
        return None
    if not any(isinstance(n, ast.FunctionDef) and n.name == MIXED_PRECISION_LOOKUP for n in mod.tree.body):
        return None
    return {"module": module, "function": MIXED_PRECISION_LOOKUP}


# --------------------------------------------------------------------------- deprecations


DEPRECATION_TEXT = re.compile(
    r"(?:(?P<cls>\w+)\.)?(?P<old>\w+) is deprecated.*?[Uu]se (?:(?P<newcls>\w+)\.)?(?P<new>\w+)(?: instead)?",
    re.S,
)


def container_paths(classes: dict[str, dict], root: str, index: SourceIndex) -> dict[str, str]:
    """Class qualname -> the ConfigContainer field whose type it is (or a base of)."""
    kinds = ClassKinds(index)
    paths: dict[str, str] = {}
    for name, spec in classes[root]["fields"].items():
        for candidate in spec.get("classes", []):
            for ancestor in kinds.mro(candidate):
                paths.setdefault(ancestor, name)
    return paths


def deprecated_fields(index: SourceIndex, classes: dict[str, dict], root: str) -> dict[str, dict]:
    paths = container_paths(classes, root, index)
    by_name = {q.rsplit(".", 1)[-1]: q for q in paths}
    result: dict[str, dict] = {}
    for module, mod in sorted(index.modules.items()):
        for cls_name, node in mod.classes.items():
            qualname = f"{module}.{cls_name}"
            for warn, loop_class in _deprecation_warnings(node):
                entries = _deprecation_entries(warn, loop_class, qualname, paths, by_name, classes, index, module)
                for key, value in entries:
                    value["source"] = f"{index.relpath(module)}:{warn.lineno}"
                    result.setdefault(key, value)
    return result


def _deprecation_warnings(node: ast.ClassDef):
    """(warnings.warn call, class iterated by an enclosing ``for f in fields(X)`` or None)."""
    for method in node.body:
        if isinstance(method, ast.FunctionDef):
            yield from _warns_in(method, None)


def _warns_in(node: ast.AST, loop_class: str | None):
    for child in ast.iter_child_nodes(node):
        current = loop_class
        if isinstance(child, ast.For) and isinstance(child.iter, ast.Call) and dotted_name(child.iter.func) == "fields":
            arg = child.iter.args[0] if child.iter.args else None
            current = dotted_name(arg) if arg is not None else None
        if isinstance(child, ast.Call) and (dotted_name(child.func) or "").endswith("warn"):
            yield child, current
        yield from _warns_in(child, current)


def _message_text(call: ast.Call) -> str:
    if not call.args:
        return ""
    parts = []
    for node in ast.walk(call.args[0]):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parts.append(node.value)
        elif isinstance(node, ast.FormattedValue):
            parts.append("{" + (ast.unparse(node.value)) + "}")
    return "".join(parts)


def _deprecation_entries(warn, loop_class, qualname, paths, by_name, classes, index, module):
    match = DEPRECATION_TEXT.search(_message_text(warn).replace("{f.name}", "FNAME"))
    if not match:
        return []
    owner = by_name.get(match.group("cls") or "") or qualname
    new_owner = by_name.get(match.group("newcls") or "") or owner
    if owner not in paths or new_owner not in paths:
        return []
    olds = [match.group("old")]
    news = [match.group("new")]
    if match.group("old") == "FNAME" and loop_class:
        looped = index.resolve(module, loop_class)
        names = sorted(classes.get(looped, {}).get("fields", {}))
        olds, news = names, names
    return [
        (f"{paths[owner]}.{old}", {"replacement": f"{paths[new_owner]}.{new}"})
        for old, new in zip(olds, news)
        if old in classes.get(owner, {}).get("fields", {}) or old in _all_fields(owner, classes, index)
    ]


def _all_fields(qualname: str, classes: dict, index: SourceIndex) -> set[str]:
    names: set[str] = set()
    kinds = ClassKinds(index)
    for other, spec in classes.items():
        if qualname in kinds.mro(other):
            names.update(spec["fields"])
    return names


__all__ = [
    "FieldExtractor",
    "autobridge_modules",
    "deprecated_fields",
    "factories",
    "hf_derived",
    "hf_provider",
    "mixed_precision_recipes",
]


# --------------------------------------------------------------------------- validation facts

TRANSFORMER_CONFIG_MODULE = "megatron.core.transformer.transformer_config"
GRAPH_CONFIG_MODULE = "megatron.core.transformer.cuda_graph_config"
CHECKED_FIELDS = ("recompute_modules", "offload_modules", "cuda_graph_impl")


def allowed_values(index: SourceIndex) -> dict[str, dict]:
    """Values ``TransformerConfig.__post_init__`` accepts for a field, read from its checks:
    ``set(self.F) - NAME`` with ``NAME = {...}`` in the same function, and
    ``assert self.F in [...]`` (plus the value an enclosing ``if self.F != V`` lets through).
    {field: {"values": [...], "source": "path:line"}}."""
    mod = index.modules.get(TRANSFORMER_CONFIG_MODULE)
    node = mod.classes.get("TransformerConfig") if mod else None
    if node is None:
        return {}
    found: dict[str, dict] = {}
    path = index.relpath(TRANSFORMER_CONFIG_MODULE)
    for method in node.body:
        if isinstance(method, ast.FunctionDef):
            _set_difference_checks(method, path, found)
            _membership_asserts(method, path, found, ())
    return {name: found[name] for name in sorted(found)}


def _set_difference_checks(function: ast.FunctionDef, path: str, found: dict) -> None:
    literals: list[tuple[int, str, list[str]]] = []  # (line, name, strings) of NAME = {...}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            strings = _string_items(node.value)
            if strings is not None:
                literals.append((node.lineno, node.targets[0].id, strings))
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.right, ast.Name):
            left = node.left
            if isinstance(left, ast.Call) and dotted_name(left.func) == "set" and len(left.args) == 1:
                field = _self_field(left.args[0])
                before = [item for item in literals if item[1] == node.right.id and item[0] <= node.lineno]
                if field and before and field not in found:
                    strings = max(before)[2]
                    found[field] = {"values": sorted(strings), "source": f"{path}:{node.lineno}"}


def _membership_asserts(node: ast.AST, path: str, found: dict, let_through: tuple) -> None:
    for child in ast.iter_child_nodes(node):
        passed = let_through
        if isinstance(child, ast.If):
            passed = let_through + tuple(_not_equal_guards(child.test))
        if isinstance(child, ast.Assert) and isinstance(child.test, ast.Compare) and len(child.test.ops) == 1 \
                and isinstance(child.test.ops[0], ast.In):
            field = _self_field(child.test.left)
            strings = _string_items(child.test.comparators[0])
            if field and strings is not None and field not in found:
                extra = [value for guarded, value in passed if guarded == field]
                found[field] = {"values": sorted(set(strings) | set(extra)), "source": f"{path}:{child.lineno}"}
        _membership_asserts(child, path, found, passed if isinstance(child, ast.If) else let_through)


def _not_equal_guards(test: ast.expr):
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq):
        field = _self_field(test.left)
        right = test.comparators[0]
        if field and isinstance(right, ast.Constant) and isinstance(right.value, str):
            yield field, right.value


def _self_field(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _string_items(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Set | ast.List | ast.Tuple) and node.elts and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]
    return None


def graph_name_deprecations(index: SourceIndex) -> list[str]:
    """Names ``normalize_cuda_graph_modules`` still accepts with a deprecation warning (the
    keys of ``CUDA_GRAPH_MODULES_DEPRECATIONS``)."""
    mod = index.modules.get(GRAPH_CONFIG_MODULE)
    value = mod.assigns.get("CUDA_GRAPH_MODULES_DEPRECATIONS") if mod else None
    if not isinstance(value, ast.Dict):
        return []
    return sorted(k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))


LIST_ASSIGNMENT = re.compile(rb"\.(recompute_modules|offload_modules)\s*=\s*\[([^\]]*)\]")
QUOTED = re.compile(rb"""["']([A-Za-z_][A-Za-z0-9_]*)["']""")


def bridge_used_values(files, allowed: dict[str, dict]) -> dict[str, list[str]]:
    """Names Megatron-Bridge's own recipes assign to a checked list field that the Megatron-Core
    facts do not list: the release was written against a newer Megatron-Core than the one it
    pins (its DeepSeek-V4 recipes recompute "mhc"), so they are accepted. ``files`` yields bytes."""
    used: dict[str, set[str]] = {}
    for text in files:
        for match in LIST_ASSIGNMENT.finditer(text):
            field = match.group(1).decode()
            names = {m.decode() for m in QUOTED.findall(match.group(2))}
            used.setdefault(field, set()).update(names - set(allowed.get(field, {}).get("values", ())))
    return {field: sorted(names) for field, names in sorted(used.items()) if names and field in allowed}


# --------------------------------------------------------------------------- aliases


def field_aliases(index: SourceIndex, classes: dict[str, dict]) -> dict:
    """``@property def x(self): return self.y`` on a config class whose fields hold ``y`` but
    not ``x``: ``x`` reads and writes ``y`` (0.3.x-0.5.x GPTDatasetConfig.seq_length).
    {ClassName: {x: y}}, and the sources."""
    aliases: dict[str, dict[str, str]] = {}
    sources = []
    for qualname, cls in sorted(classes.items()):
        if not qualname.startswith(BRIDGE_PREFIX):
            continue
        node = index.class_node(qualname)
        for stmt in node.body if node else []:
            target = _property_target(stmt)
            if target and target in cls["fields"] and stmt.name not in cls["fields"]:
                aliases.setdefault(cls["name"], {})[stmt.name] = target
                sources.append(f"{index.relpath(cls['module'])}:{stmt.lineno}")
    return {**aliases, "_source": "properties returning a field: " + ", ".join(sources)} if aliases else {}


def _property_target(stmt: ast.stmt) -> str | None:
    if not isinstance(stmt, ast.FunctionDef) or not any(dotted_name(d) == "property" for d in stmt.decorator_list):
        return None
    body = [s for s in stmt.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        value = body[0].value
        if isinstance(value, ast.Call) and dotted_name(value.func) == "getattr" and len(value.args) >= 2 \
                and isinstance(value.args[0], ast.Name) and value.args[0].id == "self" \
                and isinstance(value.args[1], ast.Constant) and isinstance(value.args[1].value, str):
            return value.args[1].value
        return _self_field(value)
    return None


def init_aliases(index: SourceIndex, classes: dict[str, dict]) -> dict:
    """A config class whose own ``__init__`` takes ``x`` and passes it on as field ``y``
    (``super().__init__(y=x)``) without a field ``x`` of its own being set from it first:
    {ClassName: {x: y}}, and the sources (0.6.x GPTDatasetConfig(seq_length=...))."""
    aliases: dict[str, dict[str, str]] = {}
    sources = []
    for qualname, cls in sorted(classes.items()):
        if not qualname.startswith(BRIDGE_PREFIX):
            continue
        node = index.class_node(qualname)
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None) if node else None
        if init is None:
            continue
        params = {a.arg for a in init.args.args + init.args.kwonlyargs}
        for name, target, line in _passed_on(init, params):
            if name != target and target in cls["fields"]:
                aliases.setdefault(cls["name"], {})[name] = target
                sources.append(f"{index.relpath(cls['module'])}:{line}")
    return {**aliases, "_source": "__init__ arguments passed on as another field: " + ", ".join(sources)} if aliases else {}


def _passed_on(init: ast.FunctionDef, params: set[str]):
    """(parameter, field, line) for ``kwargs["field"] = parameter`` and
    ``...__init__(field=parameter)`` in an ``__init__``."""
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Name) \
                and node.value.id in params:
            target = node.targets[0]
            if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                    and isinstance(target.slice.value, str):
                yield node.value.id, target.slice.value, node.lineno
        elif isinstance(node, ast.Call) and (dotted_name(node.func) or "").endswith("__init__"):
            for keyword in node.keywords:
                if keyword.arg and isinstance(keyword.value, ast.Name) and keyword.value.id in params:
                    yield keyword.value.id, keyword.arg, node.lineno


# --------------------------------------------------------------------------- checks in the code

# Checks that Megatron-Bridge or Megatron-Core run at job start and that came or went between
# releases, each recognised by a piece of its code (a message, a condition) in one file below
# ``megatron/``. The schema records where each was found ("path:line"); rules ask
# ``schema.has_check(name)`` instead of comparing versions.
SOURCE_CHECKS: dict[str, tuple[str, str]] = {
    "a2a_p2p_needs_hcp_sizes": (
        "bridge/training/config.py", r"hierarchical_context_parallel_sizes must be set when cp_comm_type"),
    "hcp_product_checked": ("bridge/training/config.py", r"Product of hierarchical_context_parallel_sizes"),
    "decentralized_pg_rejects_hcp": ("bridge/training/initialize.py", r"Decentralized process"),
    "mxfp8_reuse_check_skipped_with_fsdp": ("bridge/training/config.py", r"not is_fsdp\s+and self\.mixed_precision"),
    "deterministic_rejects_flash": ("bridge/training/config.py", r"AttnBackend\.flash"),
    "eval_batch_divisibility": ("bridge/training/config.py", r"self\.validation\.eval_global_batch_size\s*%"),
    "fsdp_turns_off_grad_accum_fusion": (
        "bridge/training/config.py", r"Gradient accumulation fusion is not supported with Megatron FSDP, setting"),
    "async_save_allows_fsdp_dtensor": ("bridge/training/config.py", r"""ckpt_format in \["torch_dist", "fsdp_dtensor"\]"""),
    "fsdp_rejects_one_device_connection": ("bridge/training/config.py", r"FSDP requires CUDA_DEVICE_MAX_CONNECTIONS"),
    "fsdp_manual_registration_needs_nccl_ub": ("bridge/training/config.py", r"self\.ddp\.fsdp_manual_registration"),
    "fsdp_rejects_weight_hash_check": (
        "bridge/training/config.py", r"TrainingConfig\.check_weight_hash_across_dp_replicas_interval is not"),
    "ep_overlap_allows_mtp_zero": ("bridge/training/comm_overlap.py", r"mtp_num_layers in \(None, 0, 1\)"),
    "graphs_with_delay_wgrad_need_fusion": (
        "bridge/training/comm_overlap.py", r"CUDA graph with delay_wgrad_compute requires gradient_accumulation_fusion"),
    "te_cross_entropy_fusion_warned": (
        "core/model_parallel_config.py", r"Transformer Engine cross entropy loss fusion has known stability issues"),
    "local_graphs_full_iteration_only": ("bridge/utils/cuda_graph.py", r"def is_full_iteration_cuda_graph"),
    "energon_mbs_mirror": ("bridge/training/config.py", r"EnergonDatasetConfig\.micro_batch_size must match"),
    "energon_native_packing_qwen_vl": (
        "bridge/data/builders/energon.py", r"Energon native sequence packing currently supports only QwenVLEnergonTaskEncoderConfig"),
    # issue 24: what Megatron-Bridge does to a configuration before Megatron-Core sees it
    "none_graph_impl_clears_scope": (
        "bridge/utils/cuda_graph.py", r'if cuda_graph_impl == "none":\s*\n\s*clear_cuda_graph_modules\(config\)'),
    "hybridep_eager_packing_pads_uneven_inputs": ("bridge/models/transformer_config.py", r"def _enable_safe_hybridep_dispatch"),
    "sequence_parallel_off_without_tp": (
        "bridge/models/transformer_config.py",
        r"if self\.sequence_parallel and self\.tensor_model_parallel_size <= 1:\s*\n\s*self\.sequence_parallel = False"),
    "qwen3_vl_moe_finalize_forces_sp": (
        "bridge/models/qwen_vl/qwen3_vl_provider.py",
        r"if self\.tensor_model_parallel_size > 1:\s*\n\s*self\.sequence_parallel = True"),
    "qwen_vl_finalize_per_token_loss_with_cp": (
        "bridge/models/qwen_vl/qwen3_vl_provider.py",
        r"if \(self\.context_parallel_size or 1\) > 1:\s*\n\s*self\.calculate_per_token_loss = True"),
    # Megatron-Bridge main (#5740): validate() turns a backend-less flex dispatcher to alltoall
    "flex_without_backend_falls_back": (
        "bridge/training/flex_dispatcher_backend.py",
        r"moe_flex_dispatcher_backend is None:\s*\n\s*_fallback_to_alltoall\(model_config\)"),
    "shared_expert_overlap_allows_flex": (
        "core/transformer/transformer_config.py", r"moe_shared_expert_overlap only works with alltoall or flex"),
}


def source_checks(text_of, packages: tuple[str, ...] = ("bridge", "core")) -> dict[str, str]:
    """{check: "megatron/<file>:<line>"} of the SOURCE_CHECKS found; ``text_of(relative path
    below megatron/)`` gives a file's text or None."""
    import re as _re

    found = {}
    texts: dict[str, str | None] = {}
    for name, (relative, pattern) in SOURCE_CHECKS.items():
        if relative.split("/", 1)[0] not in packages:
            continue
        if relative not in texts:
            texts[relative] = text_of(relative)
        text = texts[relative]
        match = _re.search(pattern, text) if text else None
        if match:
            found[name] = f"megatron/{relative}:{text.count(chr(10), 0, match.start()) + 1}"
    return found


# --------------------------------------------------------------------------- provider attributes

PROVIDER_NAMES = frozenset({"provider", "model_provider", "provider_config", "model_cfg", "model_config", "config"})


def provider_attributes(index: SourceIndex, classes: dict, transformer_config: str) -> list[str]:
    """Attributes Megatron-Bridge's own code (recipes excluded) sets on model providers
    (``provider.x = ...``) or reads by name (``getattr``/``hasattr``) that no provider class
    declares: used by some code path (often one needing a newer Megatron-Core, as the
    DeepSeek-V4 bridge's), so an assignment to one is not dead. OT001 adds them to the union of
    provider fields it checks AutoBridge models against."""
    kinds = ClassKinds(index)
    declared = {name for qualname, cls in classes.items() if _derives(kinds, qualname, transformer_config)
                for name in cls["fields"]}
    found: set[str] = set()
    for name, module in index.modules.items():
        if not name.startswith(BRIDGE_PREFIX) or ".recipes" in name:
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id in PROVIDER_NAMES):
                        found.add(target.attr)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str)):
                found.add(node.args[1].value)
    return sorted(name for name in found - declared if name.isidentifier())


def _derives(kinds: ClassKinds, qualname: str, base: str) -> bool:
    return base in kinds.mro(qualname)


# --------------------------------------------------------------------------- constructor data flow


def setattr_syncs(index: SourceIndex, classes: dict) -> dict:
    """``__setattr__`` that mirrors one field onto another (``if name == "x" and hasattr(self, "y"):
    ... object.__setattr__(self, "y", value)``, MixedPrecisionConfig's fp8_param/fp8_param_gather):
    {ClassName: {x: y}}, and the sources. Writing x writes y too."""
    found: dict[str, dict[str, str]] = {}
    sources = []
    for qualname, cls in sorted(classes.items()):
        node = index.class_node(qualname) if qualname.startswith(BRIDGE_PREFIX) else None
        method = next((s for s in (node.body if node else []) if isinstance(s, ast.FunctionDef)
                       and s.name == "__setattr__"), None)
        if method is None:
            continue
        for branch in ast.walk(method):
            if not isinstance(branch, ast.If):
                continue
            names = [c.value for c in ast.walk(branch.test) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            mirrored = [c.args[1].value for c in ast.walk(ast.Module(body=branch.body, type_ignores=[]))
                        if isinstance(c, ast.Call) and dotted_name(c.func) == "object.__setattr__" and len(c.args) == 3
                        and isinstance(c.args[1], ast.Constant) and isinstance(c.args[1].value, str)]
            if len(names) >= 1 and mirrored and names[0] in cls["fields"] and mirrored[0] in cls["fields"] \
                    and names[0] != mirrored[0]:
                found.setdefault(cls["name"], {})[names[0]] = mirrored[0]
                sources.append(f"{index.relpath(cls['module'])}:{branch.lineno}")
    return {**found, "_source": "__setattr__ mirroring a field: " + ", ".join(sources)} if found else {}


def init_normalisations(index: SourceIndex, classes: dict, syncs: dict, inherited: dict | None = None) -> dict:
    """What a constructor does to its fields beyond storing the arguments: ``self.x = <constant>``
    in the ``__post_init__`` the class has (its own or a base's) ({"value": v}), also under
    ``if self.flag:`` / ``if not self.flag:`` ({"value": v, "if": flag} / {"value": v,
    "if_not": flag}), and a mirrored pair of ``syncs`` whose later field in declaration order
    overwrites the earlier one during ``__init__`` ({"from": later}). {ClassName: {field: rule}},
    and the sources. ``inherited``: the rules already known per class name, kept for a class whose
    ``__post_init__`` is in a base this index cannot see (a derived schema without Megatron-Core)."""
    found: dict[str, dict[str, dict]] = {}
    sources = []
    kinds = ClassKinds(index)
    for qualname, cls in sorted(classes.items()):
        if not qualname.startswith(BRIDGE_PREFIX):
            continue
        order = list(cls["fields"])
        for source, target in (syncs.get(cls["name"]) or {}).items():
            if source in order and target in order and order.index(source) > order.index(target):
                found.setdefault(cls["name"], {})[target] = {"from": source}
        owner, post_init = _post_init(index, kinds, qualname)
        if owner is None:
            kept = {f: r for f, r in ((inherited or {}).get(cls["name"]) or {}).items() if "value" in r}
            if kept:
                found.setdefault(cls["name"], {}).update(kept)
            continue
        for stmt in post_init.body if post_init else []:
            for field, rule in _constructor_assignments(stmt, cls["fields"]):
                found.setdefault(cls["name"], {})[field] = rule
                sources.append(f"{index.relpath(owner.rpartition('.')[0])}:{stmt.lineno}")
    return {**found, "_source": "constructor assignments: " + ", ".join(dict.fromkeys(sources))} if found else {}


def _post_init(index: SourceIndex, kinds: ClassKinds, qualname: str) -> tuple[str | None, ast.FunctionDef | None]:
    """(the class whose ``__post_init__`` the class runs, that method): None for the method when
    no class has one, None for the class too when a base the index cannot see may have it."""
    for name in kinds.mro(qualname):
        node = index.class_node(name)
        method = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__post_init__"), None)
        if method is not None:
            return name, method
        if any(index.class_node(base) is None and base.startswith("megatron.") for base in kinds.bases(name)):
            return None, None
    return qualname, None


def _constructor_assignments(stmt: ast.stmt, fields) -> list[tuple[str, dict]]:
    """``self.x = <constant>``, or one under ``if [not] self.flag:`` (no ``else``)."""
    condition = {}
    body = [stmt]
    if isinstance(stmt, ast.If) and not stmt.orelse:
        negated = isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)
        flag = _self_field(stmt.test.operand if negated else stmt.test)
        if flag not in fields:
            return []
        condition = {"if_not" if negated else "if": flag}
        body = stmt.body
    found = []
    for inner in body:
        if (isinstance(inner, ast.Assign) and len(inner.targets) == 1 and _self_field(inner.targets[0]) in fields
                and isinstance(inner.value, ast.Constant)
                and isinstance(inner.value.value, (bool, int, float, str, type(None)))):
            found.append((_self_field(inner.targets[0]), {"value": inner.value.value, **condition}))
    return found if len(found) == len(body) else []


def constructor_facts(index: SourceIndex, classes: dict, inherited: dict | None = None) -> tuple[dict, dict]:
    """(field_aliases, init_normalisations) of the overlay: property aliases and
    ``__setattr__`` mirrors, and what constructors assign themselves (``inherited``: see
    ``init_normalisations``)."""
    syncs = setattr_syncs(index, classes)
    aliases = field_aliases(index, classes)
    for name, pairs in syncs.items():
        if name == "_source":
            aliases["_source"] = "; ".join(filter(None, (aliases.get("_source"), pairs)))
        else:
            aliases.setdefault(name, {}).update(pairs)
    return aliases, init_normalisations(index, classes, syncs, inherited)
