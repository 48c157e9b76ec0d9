"""Megatron-Bridge knowledge, per release line: config classes, fields, defaults and the facts
rules need. The data files in ``data/`` are generated from the real sources by
``scripts/generate_schema.py``; nothing here is written by hand except ``overlay`` entries
that the generator cannot read from code (they say where they come from).

Data format (``data/megatron-bridge-<line>.json``)::

    {"format": 1, "line": "0.6", "megatron_bridge_version": "0.6.2", "megatron_core_version": ...,
     "root": "<qualname of ConfigContainer>",
     "classes": {"<module>.<Class>": {"name", "module", "bases": [qualname...],
                 "fields": {"<field>": {"annotation": str, "classes": [qualname...],
                                         "default_kind": "value|function|required|factory|unknown",
                                         "default": json, "factory_class": qualname|null}}}},
     "enums": {"<qualname>": {"<member>": value}},
     ...}

A class may carry ``"fields_from": "<base qualname>"``: its fields are then the base's fields
(in order) updated with its own ``fields`` entries (new or re-declared ones). The generator uses
this only where it reproduces the dataclass field order exactly; it keeps the files small.
Optional per-field keys: ``"enums"`` (enum qualnames the annotation mentions), ``"init": false``,
``"default_source"`` (source text of an unknown default). Other top-level keys::

     "hf_derived_fields": [field...], "hf_derived_constant_only": [field...],
     "hf_derived_source": str, "hf_provider": qualname,
     "deprecated_fields": {"<path>": {"replacement": path|null, "source": str}},
     "mixed_precision_recipes": [name...],
     "mixed_precision_lookup": {"module": dotted name, "function": name} | null,
     "overlay": {...}

``hf_derived_constant_only`` lists the HF-derived fields that bridges set only to constants
(per model family) rather than from values read off the HF config.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from mblint.model import UNKNOWN, NamedObject

DATA_DIR = Path(__file__).parent / "data"
DEFAULT_LINE = "0.6"


class FieldSpec:
    """One field of a config class, as the schema records it."""

    __slots__ = ("name", "annotation", "classes", "default_kind", "default", "factory_class", "init", "enums")

    def __init__(self, name: str, annotation: str, classes: tuple[str, ...], default_kind: str, default: Any,
                 factory_class: str | None = None, init: bool = True, enums: tuple[str, ...] = ()) -> None:
        self.enums = enums
        self.name = name
        self.annotation = annotation
        self.classes = classes
        self.default_kind = default_kind
        self.default = default
        self.factory_class = factory_class
        self.init = init

    def default_value(self) -> Any:
        if self.default_kind == "value":
            return self.default
        if self.default_kind == "function":  # ``default`` is the function's qualified name
            return NamedObject(self.default)
        return UNKNOWN


class ClassSpec:
    """A config class. Its field table is built on first use: a run touches few classes."""

    __slots__ = ("qualname", "name", "module", "bases", "_fields", "_load", "_records")

    def __init__(self, qualname: str, name: str, module: str, bases: tuple[str, ...],
                 fields: dict[str, FieldSpec] | None = None, load=None, records=None) -> None:
        self.qualname = qualname
        self.name = name
        self.module = module
        self.bases = bases
        self._fields = fields
        self._load = load
        self._records = records  # the schema data's field records without the table, when it has them

    @property
    def fields(self) -> dict[str, FieldSpec]:
        if self._fields is None:
            self._fields = self._load()
        return self._fields

    def field_names(self) -> Iterable[str]:
        """The names of ``fields``, without building the table when it is not built yet."""
        if self._fields is None and self._records is not None:
            return self._records().keys()
        return self.fields.keys()

    def default_records(self) -> dict[str, Any]:
        """Each field's record in the schema data, without building the field table (a field
        inherited unchanged has its base's record, the same object); else its field spec.
        ``default_record`` reads either."""
        if self._records is not None:
            return self._records()
        return self.fields

    def __repr__(self) -> str:
        return f"ClassSpec({self.qualname})"


class Schema:
    """The config classes, enums and field facts of one Megatron-Bridge line."""

    __slots__ = ("line", "megatron_bridge_version", "classes", "root_qualname", "enums", "hf_derived_fields",
                 "hf_provider", "deprecated_fields", "mixed_precision_recipes", "mixed_precision_lookup", "overlay",
                 "by_name", "key", "source", "megatron_core_version", "facts", "removed_fields", "source_files",
                 "_field_names", "__weakref__")

    def __init__(self, line: str, megatron_bridge_version: str, classes: dict[str, ClassSpec], root_qualname: str,
                 enums: dict[str, dict[str, Any]] | None = None, hf_derived_fields: frozenset[str] = frozenset(),
                 hf_provider: str | None = None, deprecated_fields: dict[str, dict] | None = None,
                 mixed_precision_recipes: tuple[str, ...] = (), mixed_precision_lookup: dict | None = None,
                 overlay: dict | None = None, by_name: dict[str, list[str]] | None = None, key: str = "",
                 source: str = "bundled", megatron_core_version: str = "", facts: dict | None = None,
                 removed_fields: dict[str, str] | None = None, field_names: Callable[[], set[str]] | None = None) -> None:
        self.line = line
        self._field_names = field_names
        self.key = key or megatron_bridge_version or line  # what EffectiveConfig.schema_version holds
        self.source = source  # "bundled", or "derived from <folder>"
        self.megatron_core_version = megatron_core_version
        self.facts = {} if facts is None else facts
        self.removed_fields = {} if removed_fields is None else removed_fields  # path -> last release with it
        self.source_files: tuple[str, ...] = ()  # derived schemas: the files it was read from (cache dependencies)
        self.megatron_bridge_version = megatron_bridge_version
        self.classes = classes
        self.root_qualname = root_qualname
        self.enums = {} if enums is None else enums
        self.hf_derived_fields = hf_derived_fields
        self.hf_provider = hf_provider
        self.deprecated_fields = {} if deprecated_fields is None else deprecated_fields
        self.mixed_precision_recipes = mixed_precision_recipes
        self.mixed_precision_lookup = mixed_precision_lookup  # where a recipe name is turned into a config
        self.overlay = {} if overlay is None else overlay
        self.by_name = {} if by_name is None else by_name

    @property
    def root(self) -> ClassSpec:
        return self.classes[self.root_qualname]

    def find_class(self, name: str, module: str | None = None) -> ClassSpec | None:
        """A class by module and name; by name alone when the module re-exports it or is
        unknown. Megatron-Bridge classes win over Megatron-Core ones of the same name."""
        if module:
            spec = self.classes.get(f"{module}.{name}")
            if spec is not None:
                return spec
        candidates = self.by_name.get(name)
        if not candidates:
            return None
        return self.classes[candidates[0]]

    def find_enum(self, name: str) -> dict[str, Any] | None:
        for qualname, members in self.enums.items():
            if qualname.rsplit(".", 1)[-1] == name:
                return members
        return None

    def is_subclass(self, qualname: str, base: str) -> bool:
        seen: set[str] = set()
        stack = [qualname]
        while stack:
            current = stack.pop()
            if current == base or current.rsplit(".", 1)[-1] == base:
                return True
            if current in seen or current not in self.classes:
                continue
            seen.add(current)
            stack.extend(self.classes[current].bases)
        return False

    def field_names(self) -> set[str]:
        """Every field name of every class: from the schema data's own tables when it was loaded
        from them (building every class's field table would cost a quarter of a one-file run)."""
        if self._field_names is not None:
            return self._field_names()
        return {name for spec in self.classes.values() for name in spec.fields}

    def has_field(self, class_name: str, field: str) -> bool:
        """Whether the config class (short or qualified name) has the field."""
        spec = self.classes.get(class_name) or self.find_class(class_name.rsplit(".", 1)[-1])
        return spec is not None and field in spec.fields

    def allowed_values(self, field: str) -> tuple[str, ...] | None:
        """What Megatron-Core's TransformerConfig accepts for ``field`` (and the names the
        release's own recipes use beyond that), or None when the schema does not know."""
        facts = self.facts.get("allowed_values", {}).get(field)
        if facts is None:
            return None
        extra = self.facts.get("allowed_values_from_bridge", {}).get(field, ())
        return tuple(facts["values"]) + tuple(name for name in extra if name not in facts["values"])

    def has_check(self, name: str) -> bool:
        """Whether the release's code runs the check ``name`` (mblint.schema.facts.SOURCE_CHECKS)."""
        return name in self.facts.get("checks", {})

    def enum_members(self, class_name: str, field: str) -> tuple[str, ...] | None:
        """Member names of the enum the field's annotation names, or None."""
        spec = self.classes.get(class_name) or self.find_class(class_name.rsplit(".", 1)[-1])
        field_spec = spec.fields.get(field) if spec is not None else None
        for qualname in getattr(field_spec, "enums", ()) or ():
            members = self.enums.get(qualname)
            if members is not None:
                return tuple(members)
        return None

    @property
    def description(self) -> str:
        """"Megatron-Bridge 0.6.2 (bundled schema)" and the like, for reports."""
        return f"Megatron-Bridge {self.megatron_bridge_version or self.line} ({self.source} schema)"


def default_record(record: dict | FieldSpec) -> tuple:
    """What decides a field's default (kind, value as text, factory class), from its record in
    the schema data (``ClassSpec.default_records``) or its field spec."""
    if isinstance(record, FieldSpec):
        return record.default_kind, repr(record.default), record.factory_class
    return record.get("default_kind", "unknown"), repr(record.get("default")), record.get("factory_class")


def _field_from_json(name: str, data: dict) -> FieldSpec:
    return FieldSpec(
        name=name,
        annotation=data.get("annotation", ""),
        classes=tuple(data.get("classes", ())),
        default_kind=data.get("default_kind", "unknown"),
        default=data.get("default"),
        factory_class=data.get("factory_class"),
        init=data.get("init", True),
        enums=tuple(data.get("enums", ())),
    )


def _expanded_fields(qualname: str, raw: dict, cache: dict[str, dict]) -> dict:
    """A class's full field records, following ``fields_from`` links."""
    if qualname in cache:
        return cache[qualname]
    cls = raw[qualname]
    base = cls.get("fields_from")
    merged = dict(_expanded_fields(base, raw, cache)) if base in raw and base != qualname else {}
    merged.update(cls["fields"])
    cache[qualname] = merged
    return merged


def schema_from_json(data: dict, key: str = "", source: str = "bundled") -> Schema:
    raw = data["classes"]
    expanded: dict[str, dict] = {}
    def loader(qualname: str):
        return lambda: {name: _field_from_json(name, f) for name, f in _expanded_fields(qualname, raw, expanded).items()}

    def records(qualname: str):
        return lambda: _expanded_fields(qualname, raw, expanded)

    classes = {
        qualname: ClassSpec(qualname, cls["name"], cls["module"], tuple(cls.get("bases", ())), load=loader(qualname),
                            records=records(qualname))
        for qualname, cls in raw.items()
    }
    by_name: dict[str, list[str]] = {}
    for qualname, spec in classes.items():
        by_name.setdefault(spec.name, []).append(qualname)
    for names in by_name.values():
        names.sort(key=lambda q: (not q.startswith("megatron.bridge"), q))
    version = data.get("megatron_bridge_version", "")
    return Schema(
        line=data.get("line") or ".".join(version.split(".")[:2]),
        megatron_bridge_version=version,
        key=key,
        source=source,
        megatron_core_version=data.get("megatron_core_version", ""),
        facts=data.get("facts", {}),
        removed_fields=data.get("removed_fields", {}),
        classes=classes,
        root_qualname=data["root"],
        enums=data.get("enums", {}),
        hf_derived_fields=frozenset(data.get("hf_derived_fields", ())),
        hf_provider=data.get("hf_provider"),
        deprecated_fields=data.get("deprecated_fields", {}),
        mixed_precision_recipes=tuple(data.get("mixed_precision_recipes", ())),
        mixed_precision_lookup=data.get("mixed_precision_lookup"),
        overlay=data.get("overlay", {}),
        by_name=by_name,
        field_names=lambda: {name for cls in raw.values() for name in cls["fields"]},
    )


def _version_key(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.strip().lstrip("v").split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits[:6]))
    return tuple(parts)


@lru_cache(maxsize=1)
def bundled_releases() -> dict[str, dict]:
    """{release: {"file", "megatron_core_version"}} of the bundled data, oldest first."""
    with open(DATA_DIR / "releases.json", encoding="utf-8") as handle:
        releases = json.load(handle)["releases"]
    return dict(sorted(releases.items(), key=lambda item: _version_key(item[0])))


def available_lines() -> list[str]:
    return sorted({".".join(v.split(".")[:2]) for v in bundled_releases()}, key=_version_key)


def nearest_release(version: str) -> str:
    """The bundled release for ``version``: itself; the newest patch of a line ("0.6" ->
    "0.6.2"); else the newest release not newer than it (the oldest for older versions)."""
    releases = list(bundled_releases())
    if version in releases:
        return version
    key = _version_key(version)
    if not key:
        return releases[-1]
    same_line = [r for r in releases if _version_key(r)[:2] == key[:2] and (len(key) < 3 or _version_key(r) <= key)]
    if same_line:
        return same_line[-1]
    older = [r for r in releases if _version_key(r) <= key]
    return older[-1] if older else releases[0]


def normalise_line(version: str) -> str:
    """``0.6.2`` -> ``0.6``: the line of the bundled release ``version`` maps to."""
    return ".".join(nearest_release(version).split(".")[:2])


_DERIVED: dict[str, Schema] = {}


def register_schema(schema: Schema) -> None:
    """Make a schema derived in this process loadable by its key."""
    _DERIVED[schema.key] = schema


@lru_cache(maxsize=None)
def _load_bundled(release: str) -> Schema:
    entry = bundled_releases()[release]
    with gzip.open(DATA_DIR / entry["file"], "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    data["megatron_bridge_version"] = release
    data["megatron_core_version"] = entry["megatron_core_version"]
    return schema_from_json(data, key=release, source="bundled")


def load_schema(version: str = DEFAULT_LINE) -> Schema:
    """A derived schema by its key, else the bundled release nearest ``version``."""
    derived = _DERIVED.get(version)
    if derived is not None:
        return derived
    return _load_bundled(nearest_release(version or DEFAULT_LINE))
