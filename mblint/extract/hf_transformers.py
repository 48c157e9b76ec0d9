"""What a transformers config class gives for a key its config.json does not hold, read from the
transformers source at hand (beside Megatron-Bridge, or on a search path); never imported.

``AutoConfig`` builds the class registered for the config's ``model_type``; an attribute the
file leaves out keeps the class's default. Found in ``transformers/models/<model_type>/
configuration_<model_type>.py`` (the class whose ``model_type`` is that name) and its bases:
annotated class attributes with a default (transformers 5) or ``__init__`` keyword defaults
stored as they are (``self.x = x``, transformers 4). A key some method assigns otherwise
(``__post_init__`` computing ``head_dim``), an ``attribute_map`` alias or a property is
unknown; a key no class of a fully read chain declares is absent (``hasattr`` is False).
"""

from __future__ import annotations

import ast
from typing import Any

from mblint.model import UNKNOWN

ABSENT_ATTRIBUTE = object()  # no class of the chain has it: hasattr() is False
_BASE_CONFIGS = ("PreTrainedConfig", "PretrainedConfig")
_MAX_BASES = 12


class ConfigClass:
    """A transformers config class and what it says about each attribute."""

    def __init__(self, interp: Any, scope: Any, node: ast.ClassDef) -> None:
        self.interp = interp
        self.scope = scope
        self.node = node
        self.defaults: dict[str, ast.expr | None] = {}  # declared attributes and their default expressions
        self.computed: set[str] = set()  # attributes some method assigns from other values
        self.assigned_by: dict[str, set[str]] = {}  # method name -> the attributes it assigns
        self.post_init: ast.FunctionDef | None = None  # its own __post_init__ (transformers 5)
        self.opaque = False  # __getattr__ / __getattribute__ of its own making
        aliases: set[str] = set()
        self.fields: set[str] = set()  # annotated attributes: its dataclass fields (transformers 5)
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                self.defaults[stmt.target.id] = stmt.value
                self.fields.add(stmt.target.id)
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.defaults[target.id] = stmt.value
                        if target.id == "attribute_map" and isinstance(stmt.value, ast.Dict):
                            aliases.update(k.value for k in stmt.value.keys if isinstance(k, ast.Constant))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.read_method(stmt)
        self.computed |= aliases

    def read_method(self, method: ast.FunctionDef) -> None:
        if method.name in ("__getattr__", "__getattribute__"):
            # The base config class's only redirects attribute_map aliases (counted as computed).
            self.opaque = self.node.name not in _BASE_CONFIGS
            return
        if any(isinstance(d, ast.Name) and d.id in ("property", "cached_property") for d in method.decorator_list):
            self.computed.add(method.name)
            return
        if method.name == "__post_init__":
            self.post_init = method
        assigned = self.assigned_by.setdefault(method.name, set())
        rebound = {node.id for node in ast.walk(method) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
        parameters = {a.arg: d for a, d in zip(method.args.args[::-1], method.args.defaults[::-1]) if a.arg not in rebound}
        for node in ast.walk(method):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self"):
                    continue
                name = target.attr
                assigned.add(name)
                stored_as_given = (method.name == "__init__" and isinstance(node, ast.Assign)
                                   and isinstance(node.value, ast.Name) and node.value.id == name
                                   and name in parameters)
                if stored_as_given:
                    self.defaults.setdefault(name, parameters[name])
                else:
                    self.computed.add(name)


class ConfigClassChain:
    """A config class and its bases, as far as they can be read."""

    def __init__(self, classes: list[ConfigClass], complete: bool) -> None:
        self.classes = classes
        self.complete = complete
        self._sub_configs: dict[str, ConfigClassChain | None] = {}

    def default(self, key: str) -> tuple[Any, Any]:
        """(value, (scope, expression) or None): what the class gives ``key`` when config.json
        leaves it out: a plain value, ``ABSENT_ATTRIBUTE``, or UNKNOWN."""
        if any(key in cls.computed for cls in self.classes):
            return UNKNOWN, None
        for cls in self.classes:
            if key in cls.defaults:
                expr = cls.defaults[key]
                return _constant(expr), ((cls.scope, expr) if expr is not None else None)
        if self.complete and not any(cls.opaque for cls in self.classes):
            return ABSENT_ATTRIBUTE, None
        return UNKNOWN, None

    def model_default(self, key: str) -> Any:
        """The model class's own declared default for ``key`` unless its own methods assign it
        (the base classes' methods only normalise the format: transformers 5 turns a None
        ``rope_parameters`` into the default, unscaled RoPE); ``ABSENT_ATTRIBUTE`` when the
        model class does not declare it."""
        model = self.classes[0]
        if key in model.computed:
            return UNKNOWN
        if key in model.defaults:
            return _constant(model.defaults[key])
        return ABSENT_ATTRIBUTE

    def post_init_keys(self) -> set[str]:
        """The attributes only the model class's own ``__post_init__`` assigns (no other method
        of it, no method of a base): what running that method alone decides. Empty when the
        chain is not fully read."""
        model = self.classes[0]
        if model.post_init is None or not self.complete or any(cls.opaque for cls in self.classes):
            return set()
        others = set().union(*(keys for name, keys in model.assigned_by.items() if name != "__post_init__"),
                             *(cls.computed for cls in self.classes[1:]))
        return model.assigned_by["__post_init__"] - others

    def sub_config(self, key: str) -> "ConfigClassChain | None":
        """The chain of the class the model class's ``sub_configs`` names for ``key``
        (``{"text_config": Qwen2_5_VLTextConfig, ...}``), None where it cannot be read."""
        if key not in self._sub_configs:
            self._sub_configs[key] = self._read_sub_config(key)
        return self._sub_configs[key]

    def _read_sub_config(self, key: str) -> "ConfigClassChain | None":
        model = self.classes[0]
        table = model.defaults.get("sub_configs")
        if not isinstance(table, ast.Dict):
            return None
        for name, value in zip(table.keys, table.values):
            if isinstance(name, ast.Constant) and name.value == key:
                found = _class_node(model.interp, model.scope, value)
                return _chain(model.interp, *found) if found is not None else None
        return None

    def builds_from_flat_keys(self, key: str) -> tuple[bool, bool]:
        """(whether the model class's ``__post_init__`` builds the sub-config ``key`` from the
        top-level keys that are parameters of its class, ``inspect.signature(
        self.sub_configs[key].__init__)`` (a hub config saved as a flat dict), whether it
        also gives it ``text_kwargs["dtype"]``, the config's dtype)."""
        method = self.classes[0].post_init
        if method is None:
            return False, False
        flat = dtype = False
        for node in ast.walk(method):
            if isinstance(node, ast.Call) and _name_tail(node.func) == "signature" and node.args \
                    and _sub_config_key(node.args[0]) == key:
                flat = True
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "dtype"
                    for t in node.targets):
                dtype = True
        return flat, flat and dtype

    def flat_extra_keys(self, key: str) -> set[str]:
        """Keys the flat build adds to the sub-config class's parameters: the string
        constants of a list added to them (``list(text_params) + ["rope_parameters", ...]``)."""
        method = self.classes[0].post_init
        found: set[str] = set()
        for node in ast.walk(method) if method is not None else ():
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.right, ast.List):
                found.update(item.value for item in node.right.elts
                             if isinstance(item, ast.Constant) and isinstance(item.value, str))
        return found

    def field_names(self) -> set[str]:
        """The dataclass fields of the chain: the parameters of its ``__init__``."""
        return {name for cls in self.classes for name in cls.fields}

    def declared_default(self, key: str) -> Any:
        """The literal default of the first class that declares ``key`` (a dataclass field
        default, before ``__post_init__``), UNKNOWN when it is none."""
        for cls in self.classes:
            if key in cls.defaults:
                return _constant(cls.defaults[key])
        return UNKNOWN

    @property
    def closed(self) -> bool:
        """Every attribute the config can have is known to this chain."""
        return self.complete and not any(cls.opaque for cls in self.classes)

    def declared(self) -> set[str]:
        return {key for cls in self.classes for key in (*cls.defaults, *cls.computed)}


def _constant(expr: ast.expr | None) -> Any:
    """A literal default; ``interval(...)(default=x)`` and ``field(default=x)`` give x."""
    if expr is None:
        return UNKNOWN
    if isinstance(expr, ast.Call):
        for keyword in expr.keywords:
            if keyword.arg == "default":
                return _constant(keyword.value)
        return UNKNOWN
    try:
        value = ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN
    return value if isinstance(value, (bool, int, float, str, type(None))) else UNKNOWN


def config_class_chain(interp: Any, model_type: Any) -> ConfigClassChain | None:
    """The chain of the config class registered for ``model_type``, None when the transformers
    source is not at hand."""
    if not isinstance(model_type, str) or not model_type.replace("_", "").isalnum():
        return None
    path = interp.finder.find(f"transformers.models.{model_type}.configuration_{model_type}")
    scope = interp._scope_or_none(path) if path is not None else None
    if scope is None:
        return None
    for stmt in scope.source.tree.body:
        if isinstance(stmt, ast.ClassDef) and _declares_model_type(stmt, model_type):
            return _chain(interp, scope, stmt)
    return None


def _declares_model_type(node: ast.ClassDef, model_type: str) -> bool:
    for stmt in node.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        value = getattr(stmt, "value", None)
        if any(isinstance(t, ast.Name) and t.id == "model_type" for t in targets) and \
                isinstance(value, ast.Constant) and value.value == model_type:
            return True
    return False


def _chain(interp: Any, scope: Any, node: ast.ClassDef) -> ConfigClassChain:
    classes: list[ConfigClass] = []
    complete = True
    pending = [(scope, node)]
    seen: set[int] = set()
    while pending and len(classes) < _MAX_BASES:
        scope, node = pending.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        classes.append(ConfigClass(interp, scope, node))
        for base in node.bases:
            found = _class_node(interp, scope, base)
            if found is None:
                complete = False
            else:
                pending.append(found)
    return ConfigClassChain(classes, complete and not pending)


def _class_node(interp: Any, scope: Any, base: ast.expr) -> tuple | None:
    """The class a base names: defined in the module, or imported by name (read from the
    import statement: transformers modules are large, their bodies are not run)."""
    if not isinstance(base, ast.Name):
        return None
    for stmt in scope.source.tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == base.id:
            return scope, stmt
    for stmt in scope.source.tree.body:
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) == base.id:
                    path = (interp.finder.find_relative(scope.path, stmt.level, stmt.module) if stmt.level
                            else interp.finder.find(stmt.module or ""))
                    other = interp._scope_or_none(path) if path is not None else None
                    if other is None:
                        return None
                    return _class_node(interp, other, ast.Name(id=alias.name))
    return None


def _name_tail(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _sub_config_key(node: ast.expr) -> Any:
    """``KEY`` of ``self.sub_configs[KEY].__init__`` (or of ``self.sub_configs[KEY]``)."""
    if isinstance(node, ast.Attribute) and node.attr == "__init__":
        node = node.value
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "sub_configs" \
            and isinstance(node.slice, ast.Constant):
        return node.slice.value
    return None
