"""What transformers' configuration classes default to, as facts bundled with mblint: read with
``ast`` from the transformers release each bundled Megatron-Bridge release pins
(``scripts/generate_transformers_facts.py``), used when no transformers source is at hand
(``mblint.extract.hf_transformers`` reads that source when it is).

Data format (``data/transformers.json``: ``{"format": 1, "releases": {"<Megatron-Bridge
release>": "<file>"}}``; each file ``tf-<hash>.json.gz``)::

    {"format": 1, "transformers": ["5.8.0", "5.12.1"],      # the versions read; facts agree in all
     "model_types": {"<model_type>": "<class id>"},
     "classes": {"<class id>": {
         "defaults": {key: value},        # declared, a literal default (the first class that declares it)
         "unknown": [key...],             # declared, but computed or not a literal
         "closed": bool,                  # every attribute is declared: any other key is absent
         "complete": bool,                # every base class was read
         "fields": [key...],              # the dataclass fields (transformers 5)
         "model_defaults": {key: value}, "model_unknown": [key...],   # the model class's own
         "initial": {key: value},         # a post-init key's declared default, before __post_init__
         "post_init": [rule...],          # what the model class's own __post_init__ assigns
         "sub_configs": {key: class id},  # e.g. text_config
         "flat": {key: {"dtype": bool, "extra": [key...]}}}}}  # built from a flat hub config

A post-init rule is ``{"key", "when": "always"|"none"|"falsy"|"unknown", "value": expr}``:
``self.key = expr`` unconditionally, only when the attribute is None, or when it is falsy
(``self.key = self.key or expr``); "unknown" where the method assigns it in a form not read.
A rule with ``"init": true`` comes from a transformers 4 ``__init__`` (no ``__post_init__``):
its parameters stand for their attributes, and config.json's own value of a key wins over an
unconditional one.
An expression is ``["attr", name]``, ``["const", value]`` or ``[op, left, right]`` with op one
of ``+ - * // / %``. A key declared by a config class but whose value the facts cannot give is
unknown, never guessed.
"""

from __future__ import annotations

import ast
import gzip
import json
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from mblint.model import UNKNOWN, is_known
from mblint.paths import read_regular

DATA_DIR = Path(__file__).parent / "data"
INDEX_FILE = "transformers.json"
FORMAT = 1
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Div: "/", ast.Mod: "%"}
_SUB_CONFIG_KEYS = ("text_config",)
MAX_SOURCE_BYTES = 4 << 20  # a transformers module, read by the generator
MAX_DATA_BYTES = 32 << 20  # the facts of one release, uncompressed


# --------------------------------------------------------------------------- reading the source


class _Package:
    """An unpacked transformers package, with what ``hf_transformers`` asks of the interpreter:
    modules found by name or relative import, parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root  # the folder holding ``transformers/``
        self.finder = self
        self._parsed: dict[Path, Any] = {}

    def find(self, name: str) -> Path | None:
        return self._module_file(self.root, name.split(".")) if name else None

    def find_relative(self, from_file: Path, level: int, name: str | None) -> Path | None:
        base = from_file.parent
        for _ in range(level - 1):
            base = base.parent
        return self._module_file(base, name.split(".")) if name else None

    @staticmethod
    def _module_file(base: Path, parts: list[str]) -> Path | None:
        target = base.joinpath(*parts)
        for candidate in (target / "__init__.py", target.with_suffix(".py")):  # a package first, as Python looks
            if candidate.is_file():
                return candidate
        return None

    def _scope_or_none(self, path: Path) -> Any:
        if path not in self._parsed:
            try:
                tree = ast.parse(read_regular(path, MAX_SOURCE_BYTES), filename=str(path))
            except (OSError, SyntaxError, ValueError):
                tree = None
            self._parsed[path] = SimpleNamespace(path=path, source=SimpleNamespace(tree=tree)) if tree else None
        return self._parsed[path]


def read_config_facts(root: Path) -> dict:
    """The facts of every configuration class registered for a model type in the transformers
    package under ``root`` (the folder holding ``transformers/``)."""
    from mblint.extract.hf_transformers import _chain, _declares_model_type

    package = _Package(root)
    registered = _registered_classes(root)
    facts: dict = {"model_types": {}, "classes": {}}
    for path in sorted((root / "transformers" / "models").glob("*/configuration_*.py")):
        scope = package._scope_or_none(path)
        if scope is None:
            continue
        for node in scope.source.tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            model_type = _model_type(node)
            if model_type is None or not _declares_model_type(node, model_type):
                continue
            if registered and registered.get(model_type) != node.name:
                continue  # AutoConfig builds another class for it (or none)
            class_id = _class_id(root, path, node.name)
            facts["model_types"][model_type] = class_id
            _add_class(facts["classes"], class_id, _chain(package, scope, node), root)
    return facts


def _registered_classes(root: Path) -> dict[str, str]:
    """``CONFIG_MAPPING_NAMES`` of ``models/auto/configuration_auto.py``: model type -> the
    class name ``AutoConfig`` builds; empty where it cannot be read."""
    path = root / "transformers" / "models" / "auto" / "configuration_auto.py"
    try:
        tree = ast.parse(read_regular(path, MAX_SOURCE_BYTES))
    except (OSError, SyntaxError, ValueError):
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CONFIG_MAPPING_NAMES"
                                                for t in node.targets):
            found = {}
            for item in ast.walk(node.value):
                if isinstance(item, ast.Tuple) and len(item.elts) == 2 and all(
                        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in item.elts):
                    found[item.elts[0].value] = item.elts[1].value
            return found
    return {}


def _model_type(node: ast.ClassDef) -> str | None:
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_type" for t in stmt.targets) \
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return stmt.value.value
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "model_type" \
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return stmt.value.value
    return None


def _class_id(root: Path, path: Path, name: str) -> str:
    module = ".".join(path.relative_to(root).with_suffix("").parts)
    return f"{module}.{name}"


def _add_class(classes: dict, class_id: str, chain: Any, root: Path) -> None:
    if class_id in classes:
        return
    from mblint.extract.hf_transformers import ABSENT_ATTRIBUTE

    record: dict = {"defaults": {}, "unknown": [], "closed": chain.closed, "complete": chain.complete,
                    "fields": sorted(chain.field_names()), "model_defaults": {}, "model_unknown": [],
                    "initial": {}, "post_init": [], "sub_configs": {}, "flat": {}}
    classes[class_id] = record
    for key in sorted(chain.declared()):
        value, _ = chain.default(key)
        if is_known(value) and value is not ABSENT_ATTRIBUTE:
            record["defaults"][key] = value
        else:
            record["unknown"].append(key)
    model = chain.classes[0]
    for key in sorted({*model.defaults, *model.computed}):
        value = chain.model_default(key)
        if is_known(value) and value is not ABSENT_ATTRIBUTE:
            record["model_defaults"][key] = value
        else:
            record["model_unknown"].append(key)
    keys = chain.post_init_keys()
    if keys:
        record["post_init"] = post_init_rules(model.post_init, keys)
        record["initial"] = {key: chain.declared_default(key) for key in sorted(keys)
                             if is_known(chain.declared_default(key))}
    elif model.post_init is None and chain.closed:
        record["post_init"], record["initial"] = init_rules(chain)
    for key in _SUB_CONFIG_KEYS:
        sub = chain.sub_config(key)
        if sub is None or not sub.complete:
            continue
        sub_model = sub.classes[0]
        sub_id = _class_id(root, sub_model.scope.path, sub_model.node.name)
        record["sub_configs"][key] = sub_id
        _add_class(classes, sub_id, sub, root)
        flat, dtype = chain.builds_from_flat_keys(key)
        if flat:
            record["flat"][key] = {"dtype": dtype, "extra": sorted(chain.flat_extra_keys(key))}
    for name in ("defaults", "model_defaults", "initial", "sub_configs", "flat"):
        if not record[name]:
            del record[name]
    for name in ("unknown", "model_unknown", "post_init", "fields"):
        if not record[name]:
            del record[name]


def post_init_rules(method: ast.FunctionDef, keys: set[str]) -> list[dict]:
    """What ``__post_init__`` assigns to ``keys``, statement by statement, as rules; a key it
    assigns in a form not read, or from an attribute such a statement changed, is unknown."""
    rules: list[dict] = []
    changed: set[str] = set()  # attributes a statement not read may have changed
    for stmt in method.body:
        rule = _rule(stmt)
        if rule is not None and rule["key"] in keys and not (_reads(rule["value"]) & changed):
            rules.append(rule)
            continue
        assigned = _assigned_attributes(stmt)
        changed |= assigned
        rules.extend({"key": key, "when": "unknown"} for key in sorted(assigned & keys))
    return rules


def init_rules(chain: Any) -> tuple[list[dict], dict]:
    """transformers 4 computes some attributes in the model class's ``__init__`` from its
    parameters (``self.head_dim = head_dim if head_dim is not None else self.hidden_size //
    self.num_attention_heads``): (the rules of the attributes only that method assigns, in the
    forms ``_rule`` reads, each marked ``init``; the initial values of their parameters). A
    parameter stored as it is given stands for its attribute. Attributes it assigns otherwise
    keep config.json's value when it has one, as before."""
    model = chain.classes[0]
    method = next((stmt for stmt in model.node.body if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__"),
                  None)
    if method is None:
        return [], {}
    others = set().union(*(keys for name, keys in model.assigned_by.items() if name != "__init__"),
                         *(cls.computed for cls in chain.classes[1:]))
    keys = (model.assigned_by.get("__init__", set()) & model.computed) - others
    stored = {name for name in model.defaults if name in {a.arg for a in method.args.args}}
    parameters = {a.arg: d for a, d in zip(method.args.args[::-1], method.args.defaults[::-1])}
    writes: dict[str, int] = {}
    for stmt in method.body:
        for key in _assigned_attributes(stmt):
            writes[key] = writes.get(key, 0) + 1
    rules, initial = [], {}
    for stmt in method.body:
        rule = _rule(stmt, stored)
        # one statement alone decides it, from attributes stored as given
        if rule is None or rule["key"] not in keys or writes.get(rule["key"]) != 1 or "*" in writes \
                or not _reads(rule["value"]) <= stored - model.computed:
            continue
        rules.append({**rule, "init": True})
        default = parameters.get(rule["key"])
        value = _constant_or_unknown(default)
        if rule["when"] != "always" and is_known(value):
            initial[rule["key"]] = value
    return rules, initial


def _constant_or_unknown(node: ast.expr | None) -> Any:
    try:
        value = ast.literal_eval(node) if node is not None else UNKNOWN
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN
    return value if isinstance(value, (bool, int, float, str, type(None))) else UNKNOWN


def _rule(stmt: ast.stmt, names: set[str] = frozenset()) -> dict | None:
    """``self.k = e``, ``if self.k is None: self.k = e``, ``self.k = self.k if self.k is not
    None else e`` and ``self.k = self.k or e``."""
    if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Assign):
        key = _is_none_test(stmt.test)
        target = _self_target(stmt.body[0])
        value = _expression(stmt.body[0].value, names)
        if key is not None and key == target and value is not None:
            return {"key": key, "when": "none", "value": value}
        return None
    if not isinstance(stmt, ast.Assign):
        return None
    key = _self_target(stmt)
    if key is None:
        return None
    node = stmt.value
    if isinstance(node, ast.IfExp) and _attr_or_name(node.body, {key}) == key \
            and _is_not_none_test(node.test, {key}) == key:
        value = _expression(node.orelse, names)
        return {"key": key, "when": "none", "value": value} if value is not None else None
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2 \
            and _attr_or_name(node.values[0], {key}) == key:
        value = _expression(node.values[1], names)
        return {"key": key, "when": "falsy", "value": value} if value is not None else None
    value = _expression(node, names)
    return {"key": key, "when": "always", "value": value} if value is not None else None


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _self_target(stmt: ast.Assign) -> str | None:
    return _self_attr(stmt.targets[0]) if len(stmt.targets) == 1 else None


def _attr_or_name(node: ast.expr, names: set[str]) -> str | None:
    """``self.x``, or a plain name among ``names`` (a parameter that stands for its attribute)."""
    if isinstance(node, ast.Name):
        return node.id if node.id in names else None
    return _self_attr(node)


def _is_none_test(test: ast.expr, names: set[str] = frozenset(), operator: type = ast.Is) -> str | None:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], operator) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return _attr_or_name(test.left, names)
    return None


def _is_not_none_test(test: ast.expr, names: set[str] = frozenset()) -> str | None:
    return _is_none_test(test, names, ast.IsNot)


def _expression(node: ast.expr, names: set[str] = frozenset()) -> list | None:
    name = _attr_or_name(node, names)
    if name is not None:
        return ["attr", name]
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str, type(None))):
        return ["const", node.value]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _expression(node.left, names), _expression(node.right, names)
        if left is not None and right is not None:
            return [_OPERATORS[type(node.op)], left, right]
    return None


def _reads(expr: list) -> set[str]:
    if expr[0] == "attr":
        return {expr[1]}
    if expr[0] == "const":
        return set()
    return _reads(expr[1]) | _reads(expr[2])


def _assigned_attributes(stmt: ast.stmt) -> set[str]:
    found = set()
    for node in ast.walk(stmt):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        found.update(name for name in map(_self_attr, targets) if name)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            found.add("*")  # any attribute
    return found


def merge_facts(readings: list[dict]) -> dict:
    """The facts of several transformers versions: a model type all of them register to the
    same class, a value all of them agree on; where they differ, the key is unknown."""
    first, *others = readings
    merged: dict = {"model_types": {}, "classes": {}}
    for model_type, class_id in first["model_types"].items():
        if all(other["model_types"].get(model_type) == class_id for other in others):
            merged["model_types"][model_type] = class_id
    for class_id, record in first["classes"].items():
        versions = [other["classes"].get(class_id) for other in others]
        if any(version is None for version in versions):
            continue
        merged["classes"][class_id] = _merge_class(record, versions)
    return merged


def _merge_class(record: dict, others: list[dict]) -> dict:
    if all(other == record for other in others):
        return record
    result = dict(record)
    for name, unknown in (("defaults", "unknown"), ("model_defaults", "model_unknown")):
        values = dict(record.get(name, {}))
        lost = set(record.get(unknown, ()))
        for other in others:
            lost |= set(other.get(unknown, ())) | (set(other.get(name, {})) ^ set(values))
            lost |= {key for key, value in values.items() if key in other.get(name, {}) and other[name][key] != value}
        result[name] = {key: value for key, value in values.items() if key not in lost}
        result[unknown] = sorted(lost)
    for flag in ("closed", "complete"):
        result[flag] = all(r.get(flag) for r in (record, *others))
    for name in ("fields", "post_init", "initial", "sub_configs", "flat"):
        if any(other.get(name) != record.get(name) for other in others):
            result.pop(name, None)
            if name in ("post_init", "initial"):
                # the post-init keys of any version are unknown
                keys = {rule["key"] for r in (record, *others) for rule in r.get("post_init", ())}
                result["post_init"] = [{"key": key, "when": "unknown"} for key in sorted(keys)]
                result.pop("initial", None)
    return {key: value for key, value in result.items() if value not in ({}, [])}


def dump_facts(facts: dict, versions: list[str]) -> bytes:
    body = {"format": FORMAT, "transformers": versions, **facts}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- at lint time


@lru_cache(maxsize=1)
def _index() -> dict:
    try:
        return json.loads(read_regular(DATA_DIR / INDEX_FILE, MAX_DATA_BYTES)).get("releases", {})
    except (OSError, ValueError):
        return {}


@lru_cache(maxsize=4)
def _load(name: str) -> dict:
    packed = read_regular(DATA_DIR / name, MAX_DATA_BYTES)
    return json.loads(gzip.decompress(packed))


def facts_for(release: str) -> dict | None:
    """The transformers facts of the bundled Megatron-Bridge ``release``, None without."""
    name = _index().get(release)
    return _load(name) if name else None


def bundled_chain(release: str, model_type: Any) -> "BundledConfigClass | None":
    """The configuration class registered for ``model_type`` in the transformers that
    ``release`` pins, None where the facts do not have it."""
    facts = facts_for(release)
    if facts is None or not isinstance(model_type, str):
        return None
    class_id = facts["model_types"].get(model_type)
    return BundledConfigClass(facts, class_id) if class_id in facts["classes"] else None


class BundledConfigClass:
    """A configuration class as the bundled facts describe it; answers what
    ``hf_transformers.ConfigClassChain`` answers from the source."""

    bundled = True

    def __init__(self, facts: dict, class_id: str) -> None:
        self.facts = facts
        self.class_id = class_id
        self.record = facts["classes"][class_id]
        self.complete = self.record.get("complete", False)
        self.closed = self.record.get("closed", False)
        self.versions = facts.get("transformers", [])

    def default(self, key: str) -> tuple[Any, None]:
        from mblint.extract.hf_transformers import ABSENT_ATTRIBUTE

        defaults = self.record.get("defaults", {})
        if key in defaults:
            return defaults[key], None
        if key in self.record.get("unknown", ()) or not self.closed:
            return UNKNOWN, None
        return ABSENT_ATTRIBUTE, None

    def model_default(self, key: str) -> Any:
        from mblint.extract.hf_transformers import ABSENT_ATTRIBUTE

        if key in self.record.get("model_defaults", {}):
            return self.record["model_defaults"][key]
        return UNKNOWN if key in self.record.get("model_unknown", ()) else ABSENT_ATTRIBUTE

    def declared(self) -> set[str]:
        return {*self.record.get("defaults", {}), *self.record.get("unknown", ())}

    def field_names(self) -> set[str]:
        return set(self.record.get("fields", ()))

    def declared_default(self, key: str) -> Any:
        return self.record.get("initial", {}).get(key, UNKNOWN)

    def post_init_keys(self) -> set[str]:
        return {rule["key"] for rule in self.record.get("post_init", ())}

    def post_init_values(self, current: dict[str, Any], given: Any = ()) -> dict[str, Any]:
        """The post-init keys' values after ``__post_init__``, from ``current`` (the
        attributes before it: config.json's values, else the declared defaults). ``given``:
        the keys config.json holds; transformers 4's base ``__init__`` sets them after the
        model class's own (an ``init`` rule assigning one unconditionally does not count)."""
        values = dict(current)
        for rule in self.record.get("post_init", ()):
            key, when = rule["key"], rule["when"]
            now = values.get(key, UNKNOWN)
            if rule.get("init") and when == "always" and key in given:
                continue
            if when == "unknown" or (when != "always" and not is_known(now)):
                values[key] = UNKNOWN
            elif when == "always" or (when == "none" and now is None) or (when == "falsy" and not now):
                values[key] = _evaluate(rule["value"], values)
        return {key: values.get(key, UNKNOWN) for key in self.post_init_keys()}

    def sub_config(self, key: str) -> "BundledConfigClass | None":
        class_id = self.record.get("sub_configs", {}).get(key)
        return BundledConfigClass(self.facts, class_id) if class_id in self.facts["classes"] else None

    def builds_from_flat_keys(self, key: str) -> tuple[bool, bool]:
        flat = self.record.get("flat", {}).get(key)
        return (flat is not None, bool(flat and flat["dtype"]))

    def flat_extra_keys(self, key: str) -> set[str]:
        return set(self.record.get("flat", {}).get(key, {}).get("extra", ()))


def _evaluate(expr: list, values: dict[str, Any]) -> Any:
    kind = expr[0]
    if kind == "const":
        return expr[1]
    if kind == "attr":
        return values.get(expr[1], UNKNOWN)
    left, right = _evaluate(expr[1], values), _evaluate(expr[2], values)
    if not all(type(v) in (int, float) for v in (left, right)):
        return UNKNOWN
    try:
        return {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
                "//": lambda: left // right, "/": lambda: left / right, "%": lambda: left % right}[kind]()
    except (ZeroDivisionError, OverflowError, KeyError):
        return UNKNOWN
