"""The resolved configuration that rules read: values, unknowns and provenance.

Nothing here knows about Python syntax, YAML or Megatron-Bridge. A field path is the dotted
path below ``ConfigContainer`` (``dataset.offline_packing_specs.pad_seq_to_mult``); keys of
dict-valued fields (``dataset.dataset_kwargs``, ``env_vars``) continue the path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass(slots=True, unsafe_hash=True)
class Origin:
    """A place in a file that set a value. Lines are 1-based; columns are 1-based characters,
    and ``end_column`` is exclusive (SARIF's convention). Equal and hashed by its place; never
    changed once made. Not ``frozen``: a frozen dataclass's ``__init__`` costs three times as
    much, and the interpreter makes one per assignment it reads (4 % of a cold run)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    kind: str = field(default="set", compare=False)  # set | default | override | unknown | recipe
    seq: int = field(default=0, compare=False)  # program order across files: later sets are larger
    # The calls (outermost first) through which the interpreter reached this place, each with
    # an ``origin()``: where a value set inside a library helper shows in the recipe.
    via: tuple = field(default=(), compare=False, repr=False)
    # Where the local variable whose value was stored here got it (``n = 8192`` before
    # ``cfg.model.seq_length = n``), or None: a related location of findings on the field.
    through: "Origin | None" = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column)


class Unknown:
    """A value mblint could not know. Rules stay silent on it."""

    __slots__ = ("reason",)

    def __init__(self, reason: str = "") -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<unknown{': ' + self.reason if self.reason else ''}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unknown)

    def __hash__(self) -> int:
        return hash(Unknown)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        NOT_PLAIN_TYPES.add(cls)


class _Absent:
    """The field does not exist here (its parent is None, or a dict lacks the key)."""

    _instance: "_Absent | None" = None

    def __new__(cls) -> "_Absent":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<absent>"

    def __bool__(self) -> bool:
        return False


UNKNOWN = Unknown()
ABSENT = _Absent()


def is_known(value: Any) -> bool:
    """Not ``UNKNOWN`` (``ABSENT`` and object nodes count as known): what the resolver asks.
    Rules ask ``mblint.rule.known``, which also refuses those."""
    return not isinstance(value, Unknown)


class ResolvedField:
    __slots__ = ("path", "value", "origins")

    def __init__(self, path: str, value: Any, origins: tuple = ()) -> None:
        self.path = path
        self.value = value
        self.origins = origins

    def __repr__(self) -> str:
        return f"ResolvedField({self.path!r}, {self.value!r})"

    @property
    def known(self) -> bool:
        return is_known(self.value)

    @property
    def last_origin(self) -> Origin | None:
        return self.origins[-1] if self.origins else None


@dataclass(frozen=True)
class LaunchEnvironment:
    """The environment variables a job's launch sets, which the training processes inherit
    (Megatron-Bridge reads them with ``os.getenv``; ``cfg.env_vars`` only fills those not set):
    each name with its value (a string, or ``UNKNOWN``) and where it was set. ``open_at``: where
    the launch may set variables mblint cannot read (a sourced file, an ``eval``), so that a
    variable not listed is unknown; None: a variable not listed is not set by the launch."""

    variables: tuple[tuple[str, Any, Origin], ...] = ()
    open_at: Origin | None = None
    # (name, where, opened) of each read that found a variable unknown, in order: ``opened``
    # when the variable is not listed (``open_at`` makes it unknown); the rule run clears it
    unknown_reads: list = field(default_factory=list, compare=False, repr=False)

    def get(self, name: str) -> tuple[Any, Origin] | None:
        """(value, where) of variable ``name``; None when the launch does not set it. A read
        that finds it unknown is recorded in ``unknown_reads``."""
        for variable, value, origin in reversed(self.variables):
            if variable == name:
                if not is_known(value):
                    self.unknown_reads.append((name, origin, False))
                return value, origin
        if self.open_at is None:
            return None
        self.unknown_reads.append((name, self.open_at, True))
        return UNKNOWN, self.open_at

    @property
    def hides_variables(self) -> bool:
        """Whether a variable may be unknown: the launch may set variables mblint cannot read,
        or sets one to a value mblint cannot know."""
        return self.open_at is not None or any(not is_known(value) for _, value, _ in self.variables)


@dataclass(frozen=True)
class RecipeRef:
    """The recipe function (or override pairing) a configuration came from; ``last_line``:
    the function's last line."""

    path: str
    function: str
    line: int = 1
    column: int = 1
    end_line: int = 1
    end_column: int = 1
    overrides: tuple[str, ...] = ()
    last_line: int = 0

    def contains(self, origin: Origin) -> bool:
        return origin.path == self.path and self.line <= origin.line <= max(self.last_line, self.line)

    @property
    def label(self) -> str:
        return f"{self.path}::{self.function}"

    def origin(self) -> Origin:
        return Origin(self.path, self.line, self.column, self.end_line, self.end_column, "recipe")


class EffectiveConfig:
    """A resolved ``ConfigContainer``: each leaf field path with its value and origins, and the
    class of every object node (``""`` is the container, ``"dataset"`` the dataset config...).
    Dict-valued nodes have the type ``"dict"``; ``open_dicts`` are nodes with unknown extra keys.

    Built either from flat tables, or from a ``graph`` (anything with ``lookup(path)``,
    ``slot(path)`` and ``flatten()``) that is only flattened when a caller needs every field.
    """

    def __init__(
        self,
        recipe: RecipeRef,
        schema_version: str = "",
        *,
        fields: dict[str, ResolvedField] | None = None,
        types: dict[str, str] | None = None,
        open_dicts: frozenset[str] = frozenset(),
        notes: list[str] | None = None,
        graph: Any = None,
        schema: Any = None,
    ) -> None:
        self.recipe = recipe
        self.schema_version = schema_version
        # The schema whose key is ``schema_version``, when the resolver that built this
        # configuration had it at hand (rules ask for it tens of times per configuration).
        self.schema = schema
        self.notes = notes or []
        self.ignored_overrides: list = []  # (field path, origin, action, value) MB skips or rejects
        self.applied_overrides: list = []  # (field path, origin, action, value) of every override, in order
        self.overrides_applied = False  # an override file or dotlist was applied
        # Origins of the overrides a launch command line applies (Hydra struct mode, as --set)
        self.command_line_origins: frozenset = frozenset()
        # Attribute stores on a string or None in the recipe (AttributeError at run time):
        # (origin, target source text, owner value, attribute name)
        self.attribute_errors: list = []
        # Where the analysis of this configuration stopped (mblint.coverage.Gap), in order
        self.gaps: list = []
        # The recipe name that cfg.mixed_precision held before the resolver expanded it into
        # the MixedPrecisionConfig its factory builds (None: no name was expanded).
        self.mixed_precision_name: str | None = None
        # The GPU the job runs on (mblint.gpus.Gpu), where its recipe's name says it
        self.gpu: Any = None
        # The environment variables the job's launch sets (LaunchEnvironment); None: a recipe
        # alone or with override files, which no launch script starts
        self.environment: LaunchEnvironment | None = None
        self._graph = graph
        self._fields = fields
        self._types = types
        self._open_dicts = open_dicts
        # Quantities derived from the fields that several rules share (see
        # mblint.rulekit.per_config); rules only read a built configuration.
        self.derived: dict[str, Any] = {}

    def _flatten(self) -> None:
        if self._fields is None:
            self._fields, self._types, self._open_dicts = self._graph.flatten()

    @property
    def fields(self) -> dict[str, ResolvedField]:
        self._flatten()
        return self._fields

    @property
    def types(self) -> dict[str, str]:
        self._flatten()
        return self._types

    @property
    def open_dicts(self) -> frozenset[str]:
        self._flatten()
        return self._open_dicts

    def get(self, path: str) -> ResolvedField | None:
        if self._graph is not None and self._fields is None:
            return self._graph.field(path)
        return self.fields.get(path)

    def value(self, path: str) -> Any:
        """The field's value, ``UNKNOWN`` if it cannot be known, ``ABSENT`` if it does not exist."""
        if self._graph is not None and self._fields is None:
            return self._graph.value_answers[path]
        resolved = self.fields.get(path)
        if resolved is not None:
            return resolved.value
        if path in self.types:
            return _NodeMarker(self.types[path])
        return self._absent_or_unknown(path)

    def _absent_or_unknown(self, path: str) -> Any:
        parts = path.split(".")
        for cut in range(len(parts) - 1, -1, -1):
            prefix = ".".join(parts[:cut])
            leaf = self.fields.get(prefix) if prefix else None
            if leaf is not None:
                return UNKNOWN if not leaf.known else ABSENT
            if prefix in self.types:
                return UNKNOWN if prefix in self.open_dicts else ABSENT
        return ABSENT

    def type_of(self, path: str) -> str | None:
        """Class name of an object node, or None when the node is not an object (or unknown)."""
        if self._graph is not None and self._fields is None:
            return self._graph.type_answers[path]
        return self.types.get(path)

    def child_types(self, path: str) -> dict[str, str]:
        """``type_of`` each object node directly below ``path``, by key in ``keys(path)`` order:
        one look at the node instead of a question per key."""
        if self._graph is not None and self._fields is None:
            return self._graph.child_types(path)
        start = path + "." if path else ""
        return {key: self.types[start + key] for key in self.keys(path) if start + key in self.types}

    def from_command_line(self, origin: Origin) -> bool:
        """An override given on a command line: ``--set``, or a launch script's argument."""
        return origin.path == "--set" or origin in self.command_line_origins

    def origins(self, path: str) -> tuple[Origin, ...]:
        """Where the field (or, for an object node, the object) was set, in program order."""
        if self._graph is not None:
            return self._graph.origin_answers[path]
        resolved = self.get(path)
        return resolved.origins if resolved else ()

    def last_kind(self, path: str) -> str | None:
        """The kind of the last origin at ``path`` ("set", "default", "override", ...), None
        when it has none: ``origins(path)[-1].kind`` without working out where it is."""
        if self._graph is not None:
            return self._graph.last_kind(path)
        origins = self.origins(path)
        return origins[-1].kind if origins else None

    def last_origin(self, path: str) -> Origin | None:
        """``origins(path)[-1]``, None when there is none."""
        if self._graph is not None:
            return self._graph.last_origin(path)
        origins = self.origins(path)
        return origins[-1] if origins else None

    def keys(self, path: str) -> list[str]:
        """The keys directly below an object or dict node (empty for a leaf)."""
        if self._graph is not None:
            return self._graph.keys(path)
        start = path + "." if path else ""
        return sorted({p[len(start):].split(".")[0] for p in list(self.fields) + list(self.types)
                       if p.startswith(start) and p != path})

    def keys_outside(self, path: str, names: frozenset[str]) -> list[str]:
        """``keys(path)`` that are not in ``names``, in the same order: a few keys among a
        table's hundreds are found without listing the others."""
        if self._graph is not None:
            return self._graph.keys_outside(path, names)
        return [key for key in self.keys(path) if key not in names]

    def extra_fields(self) -> list[str]:
        """Paths set on config objects whose class has no such field (Python accepts them
        silently). Needs the object graph; an EffectiveConfig built from tables has none."""
        return self._graph.extra_fields() if self._graph is not None else []

    def children(self, prefix: str) -> Iterator[ResolvedField]:
        start = prefix + "." if prefix else ""
        for path, resolved in self.fields.items():
            if path.startswith(start) and "." not in path[len(start):]:
                yield resolved

    def to_json(self) -> dict:
        return {
            "recipe": self.recipe.label,
            "schema": self.schema_version,
            "types": dict(sorted(self.types.items())),
            "fields": {
                path: {
                    "value": json_value(resolved.value),
                    "known": resolved.known,
                    "origins": [origin.to_json() for origin in resolved.origins],
                }
                for path, resolved in sorted(self.fields.items())
            },
        }


class NamedObject:
    """A known value that is a Python object named by where it is defined or imported from: a
    function (``torch.nn.functional.silu``, a layer-spec function of Megatron-Bridge) or a
    class. Equal only to a ``NamedObject`` of the same name, never to a number, string or bool;
    it has no order. Two names of one object (a re-export) compare as different, so a rule
    must not read inequality as "another object"."""

    __slots__ = ("qualname",)

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedObject) and other.qualname == self.qualname

    def __hash__(self) -> int:
        return hash((NamedObject, self.qualname))

    def __repr__(self) -> str:
        return f"<{self.qualname}>"

    def to_json(self) -> dict:
        return {"object": self.qualname}


class _NodeMarker:
    """Returned by ``EffectiveConfig.value`` for an object node: it exists, and is no scalar."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        NOT_PLAIN_TYPES.add(cls)

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


# The types of what rules stay silent on (mblint.rule.known): unknown values, absent fields,
# object nodes; a subclass of Unknown or _NodeMarker joins when it is defined.
NOT_PLAIN_TYPES: set[type] = {Unknown, _Absent, _NodeMarker}


def is_node(value: Any) -> bool:
    return isinstance(value, _NodeMarker)


def json_value(value: Any) -> Any:
    if isinstance(value, Unknown):
        return None
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}  # JSON has no infinity
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, NamedObject):
        return value.to_json()
    return str(value)
