"""Megatron-Bridge knowledge, per release line: config classes, fields, defaults and the facts
rules need. The data files in ``data/`` are generated from the real sources by
``scripts/generate_schema.py``; nothing here is written by hand except ``overlay`` entries
that the generator cannot read from code (they say where they come from).

Data format (``data/megatron-bridge-<line>.json``)::

    {"format": 1, "line": "0.6", "megatron_bridge_version": "0.6.2", "megatron_core_version": ...,
     "root": "<qualname of ConfigContainer>",
     "classes": {"<module>.<Class>": {"name", "module", "bases": [qualname...],
                 "fields": {"<field>": {"annotation": str, "classes": [qualname...],
                                         "default_kind": "value|required|factory|unknown",
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

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from mblint.model import UNKNOWN

DATA_DIR = Path(__file__).parent / "data"
DEFAULT_LINE = "0.6"


class FieldSpec:
    """One field of a config class, as the schema records it."""

    __slots__ = ("name", "annotation", "classes", "default_kind", "default", "factory_class", "init")

    def __init__(self, name: str, annotation: str, classes: tuple[str, ...], default_kind: str, default: Any,
                 factory_class: str | None = None, init: bool = True) -> None:
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
        return UNKNOWN


class ClassSpec:
    """A config class. Its field table is built on first use: a run touches few classes."""

    __slots__ = ("qualname", "name", "module", "bases", "_fields", "_load")

    def __init__(self, qualname: str, name: str, module: str, bases: tuple[str, ...],
                 fields: dict[str, FieldSpec] | None = None, load=None) -> None:
        self.qualname = qualname
        self.name = name
        self.module = module
        self.bases = bases
        self._fields = fields
        self._load = load

    @property
    def fields(self) -> dict[str, FieldSpec]:
        if self._fields is None:
            self._fields = self._load()
        return self._fields

    def __repr__(self) -> str:
        return f"ClassSpec({self.qualname})"


class Schema:
    """The config classes, enums and field facts of one Megatron-Bridge line."""

    __slots__ = ("line", "megatron_bridge_version", "classes", "root_qualname", "enums", "hf_derived_fields",
                 "hf_provider", "deprecated_fields", "mixed_precision_recipes", "mixed_precision_lookup", "overlay",
                 "by_name")

    def __init__(self, line: str, megatron_bridge_version: str, classes: dict[str, ClassSpec], root_qualname: str,
                 enums: dict[str, dict[str, Any]] | None = None, hf_derived_fields: frozenset[str] = frozenset(),
                 hf_provider: str | None = None, deprecated_fields: dict[str, dict] | None = None,
                 mixed_precision_recipes: tuple[str, ...] = (), mixed_precision_lookup: dict | None = None,
                 overlay: dict | None = None, by_name: dict[str, list[str]] | None = None) -> None:
        self.line = line
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
        return {name for spec in self.classes.values() for name in spec.fields}


def _field_from_json(name: str, data: dict) -> FieldSpec:
    return FieldSpec(
        name=name,
        annotation=data.get("annotation", ""),
        classes=tuple(data.get("classes", ())),
        default_kind=data.get("default_kind", "unknown"),
        default=data.get("default"),
        factory_class=data.get("factory_class"),
        init=data.get("init", True),
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


def schema_from_json(data: dict) -> Schema:
    raw = data["classes"]
    expanded: dict[str, dict] = {}
    def loader(qualname: str):
        return lambda: {name: _field_from_json(name, f) for name, f in _expanded_fields(qualname, raw, expanded).items()}

    classes = {
        qualname: ClassSpec(qualname, cls["name"], cls["module"], tuple(cls.get("bases", ())), load=loader(qualname))
        for qualname, cls in raw.items()
    }
    by_name: dict[str, list[str]] = {}
    for qualname, spec in classes.items():
        by_name.setdefault(spec.name, []).append(qualname)
    for names in by_name.values():
        names.sort(key=lambda q: (not q.startswith("megatron.bridge"), q))
    return Schema(
        line=data["line"],
        megatron_bridge_version=data.get("megatron_bridge_version", ""),
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
    )


def available_lines() -> list[str]:
    return sorted(p.stem.rsplit("-", 1)[-1] for p in DATA_DIR.glob("megatron-bridge-*.json"))


def normalise_line(version: str) -> str:
    """``0.6.2`` -> ``0.6``; ``0.3`` stays; anything newer than the newest line maps to it."""
    parts = version.strip().lstrip("v").split(".")
    line = ".".join(parts[:2]) if len(parts) >= 2 else version
    lines = available_lines()
    if line in lines:
        return line
    if not lines:
        raise LookupError("no schema data is installed")

    def key(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".") if p.isdigit())

    older = [candidate for candidate in lines if key(candidate) <= key(line)]
    return max(older, key=key) if older else min(lines, key=key)


@lru_cache(maxsize=None)
def load_schema(version: str = DEFAULT_LINE) -> Schema:
    line = normalise_line(version)
    with open(DATA_DIR / f"megatron-bridge-{line}.json", encoding="utf-8") as handle:
        return schema_from_json(json.load(handle))
