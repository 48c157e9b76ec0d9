"""The abstract values the recipe interpreter computes with.

Known Python scalars, strings, ``None``, tuples and lists stand for themselves; ``Unknown``
is top. Config objects and dicts are mutable ``Obj`` instances shared by reference, as in
Python; every ``Obj`` is registered so that a branch can be snapshotted and merged.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Any, Iterable

from mblint.model import UNKNOWN, Origin, Unknown
from mblint.schema import ClassSpec

Slot = tuple  # (value, origins: tuple[Origin, ...])
_new_obj = object.__new__
_ids = itertools.count(1)
_versions = itertools.count(1)
# A field assigned again and again keeps its first origin and the latest ones: unbounded
# origin lists made a recipe that sets one field many times quadratic.
MAX_ORIGINS = 64


class Obj:
    """A config object (``cls`` set) or a dict (``cls`` None). ``open`` means keys or fields
    beyond those recorded may exist with unknown values."""

    __slots__ = ("oid", "cls", "fields", "open", "created_at", "label", "shared", "version", "_children",
                 "declared", "rebase", "__weakref__")

    def __init__(self, cls: ClassSpec | None, created_at: Origin | None = None) -> None:
        self.oid = next(_ids)
        self.cls = cls
        self.label: str | None = None  # set when the real class is not known (HF providers)
        self.fields: dict[Any, Slot] = {}
        self.open = False
        self.created_at = created_at
        # Snapshots share ``fields`` until the next write (copy on write); ``version`` changes
        # with every write, so a merge can skip objects neither branch touched.
        self.shared = False
        self.version = next(_versions)
        self._children: tuple | None = None  # (fields, keys of its Obj values) for child_keys()
        # The field table when every key in it is a field its class declares (OT001 then need
        # not compare the table with the class); any other value means "not known".
        self.declared: dict | None = self.fields
        # How the origins in ``fields`` read now (``Rebase``s applied in order): a copy of a
        # reused call result stores the first call's origins as they were.
        self.rebase: tuple = ()

    def child_keys(self) -> tuple:
        """The keys whose values are ``Obj``, in order. Kept with the table it is true of:
        ``set()`` carries it over to the table it writes, ``writable()`` drops it (its
        callers change the table in any way), and a shared table is never changed."""
        fields = self.fields
        cached = self._children
        if cached is not None and cached[0] is fields:
            return cached[1]
        # A comprehension costs a third of chained map()/compress() over long tables.
        keys = tuple([key for key, (value, _) in fields.items() if type(value) is Obj])
        self._children = (fields, keys)
        return keys

    def twin(self) -> "Obj":
        """A new object like this one, sharing its field table until either writes."""
        self.shared = True
        return self.twin_in(self.fields, self.open, self._children, self.declared, self.rebase)

    def twin_in(self, fields: dict, is_open: bool, children: tuple | None, declared: dict | None,
                rebase: tuple) -> "Obj":
        """A new object like this one was in a frozen state: ``fields`` (shared, never
        written), ``is_open``, ``children`` (its ``_children``), ``declared`` and ``rebase``."""
        twin = _new_obj(Obj)
        twin.oid = next(_ids)
        twin.cls = self.cls
        twin.label = self.label
        twin.fields = fields
        twin.open = is_open
        twin.created_at = self.created_at
        twin.shared = True
        twin.version = next(_versions)
        twin._children = children
        twin.declared = declared
        twin.rebase = rebase
        return twin

    def freeze_into(self, states: dict) -> None:
        """Record in ``states`` (by oid, depth first) the field table, openness, ``_children``,
        ``declared`` and ``rebase`` of this object and of every object reachable from it. The
        tables are marked shared, so that later writes copy them first."""
        if self.oid in states:
            return
        fields = self.fields
        children = self._children
        if children is None or children[0] is not fields:
            self.child_keys()
            children = self._children
        self.shared = True
        states[self.oid] = (fields, self.open, children, self.declared, self.rebase)
        for key in children[1]:
            fields[key][0].freeze_into(states)

    def _unshared(self) -> dict:
        """The field table, copied first if another object or a snapshot holds it too."""
        if self.shared:
            self.fields = dict(self.fields)
            self.shared = False
        return self.fields

    def writable(self) -> dict:
        """The field table, ready to be changed."""
        self._unshared()
        self.version = next(_versions)
        self._children = None
        self.declared = None  # the caller may write any key
        return self.fields

    def mark_open(self) -> None:
        self.writable()
        self.open = True

    @property
    def is_dict(self) -> bool:
        return self.cls is None

    @property
    def type_name(self) -> str:
        if self.label:
            return self.label
        return self.cls.name if self.cls else "dict"

    def get(self, key: Any) -> Any:
        slot = self.fields.get(key)
        if slot is not None:
            return slot[0]
        return UNKNOWN if self.open else _MISSING

    def set(self, key: Any, value: Any, origin: Origin | None) -> None:
        fields = self.fields
        previous = fields.get(key)
        origins = previous[1] if previous else ()
        if origin is not None:
            if len(origins) >= MAX_ORIGINS:
                origins = origins[:1] + origins[2 - MAX_ORIGINS:]
            origins = origins + (origin,)
        table = self._unshared()
        self.version = next(_versions)
        table[key] = (value, origins)
        children = self._children
        if children is not None and children[0] is fields:
            if type(value) is not Obj and (previous is None or type(previous[0]) is not Obj):  # no child before or now
                if table is not fields:
                    self._children = (table, children[1])
            else:
                self._children = _children_after_write(children[1], table, key, previous, value)
        if self.declared is fields:
            self.declared = table if previous is not None or self.cls is None or key in self.cls.fields else None

    def __repr__(self) -> str:
        return f"<{self.type_name}#{self.oid}>"


def _children_after_write(keys: tuple, table: dict, key: Any, previous: Slot | None, value: Any) -> tuple | None:
    """``Obj._children`` of ``table`` after ``key`` was set to ``value`` (it held the slot
    ``previous``), from ``keys``, the child keys before; None when it must be worked out."""
    was_child = previous is not None and type(previous[0]) is Obj
    if was_child is (type(value) is Obj):
        return (table, keys)
    if previous is None:  # a new key comes last
        return (table, keys + (key,))
    return None


def children_among(table: dict, keys: Iterable) -> tuple:
    """An ``Obj._children`` for ``table`` when its ``Obj`` values can only be under ``keys``
    (given in the table's order): those keys whose values are ``Obj``."""
    return (table, tuple([key for key in keys if type(table[key][0]) is Obj]))


class Rebase:
    """How the origins of a reused (memoized) call result read in the call that reuses it, as
    if the call had been made there: the origins the first call made (``seq`` in ``(low,
    high]``) come ``shift`` later, and reach their place through the current call chain
    ``prefix`` instead of ``entry``, the one the first call was made through. Origins made
    before the first call (module-level values) are left as they are."""

    __slots__ = ("low", "high", "shift", "entry", "prefix", "_done")

    def __init__(self, low: int, high: int, shift: int, entry: tuple, prefix: tuple) -> None:
        self.low = low
        self.high = high
        self.shift = shift
        self.entry = entry
        self.prefix = prefix
        # id(origins, origin or via) -> (it, rebased): slots share origins, origins share vias
        self._done: dict[int, tuple] = {}

    def origins(self, origins: tuple) -> tuple:
        done = self._done.get(id(origins))
        if done is not None and done[0] is origins:
            return done[1]
        low, high = self.low, self.high
        rebased = origins
        for origin in origins:
            if origin is not None and low < (origin[2] if type(origin) is tuple else origin.seq) <= high:
                rebased = tuple(map(self.origin, origins))
                break
        self._done[id(origins)] = (origins, rebased)
        return rebased

    def origin(self, origin: Origin | tuple | None) -> Origin | tuple | None:
        """One origin, made or reserved (``Interpreter.reserve_origin``'s tuple)."""
        if origin is None or not self.low < (origin[2] if type(origin) is tuple else origin.seq) <= self.high:
            return origin
        done = self._done.get(id(origin))
        if done is not None and done[0] is origin:
            return done[1]
        if type(origin) is tuple:
            node, source, seq, via = origin
            rebased = (node, source, seq + self.shift, self.via(via))
        else:
            rebased = Origin(origin.path, origin.line, origin.column, origin.end_line, origin.end_column,
                                origin.kind, origin.seq + self.shift, self.via(origin.via), origin.through)
        self._done[id(origin)] = (origin, rebased)
        return rebased

    def via(self, via: tuple) -> tuple:
        done = self._done.get(id(via))
        if done is not None and done[0] is via:
            return done[1]
        entry = self.entry
        rebased = self.prefix + via[len(entry):] if via[:len(entry)] == entry else via  # sites compare by identity
        self._done[id(via)] = (via, rebased)
        return rebased


def true_origins(origins: tuple, rebase: tuple) -> tuple:
    """``origins`` as stored in an object whose ``rebase`` is given, as they read now."""
    for step in rebase:
        origins = step.origins(origins)
    return origins


def true_slots(obj: Obj) -> dict:
    """``obj``'s field table with its origins as they read now, for another object to hold."""
    rebase = obj.rebase
    if not rebase:
        return obj.fields
    return {key: (value, true_origins(origins, rebase)) for key, (value, origins) in obj.fields.items()}


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def is_missing(value: Any) -> bool:
    return value is _MISSING


# Compared and hashed by their fields. Each has a docstring: without one, dataclass() works
# one out of inspect.signature at import.
_record = dataclass(frozen=True, slots=True)


@_record
class FuncRef:
    """A function defined in a module mblint read: a call runs ``node``'s body in ``module``."""

    module: Any  # ModuleScope
    node: ast.FunctionDef | ast.AsyncFunctionDef

    @property
    def name(self) -> str:
        return self.node.name


@_record
class ClassRef:
    """A config class of the schema: a call builds a config object of ``spec``."""

    spec: ClassSpec


@_record
class EnumRef:
    """An enum of the schema: its name and its (member, value) pairs."""

    name: str
    members: tuple


@_record
class ModuleRef:
    """An imported module mblint read: ``module.name`` reads a name of its ``scope``."""

    scope: Any  # ModuleScope


@_record
class External:
    """A name from a module mblint could not read (``torch.bfloat16``, ``os.path.join``)."""

    qualname: str


@_record
class BoundMethod:
    """``target.name``, a method looked up on an object: a call runs it on ``target``."""

    target: Any
    name: str


@_record
class HFBridge:
    """What ``AutoBridge.from_hf_pretrained(...)`` returns: a model whose architecture
    comes from a config.json mblint does not read."""

    model_id: Any
    revision: Any = None


@_record
class DeviceProperties:
    """What ``torch.cuda.get_device_properties(i)`` returns on the job's GPU (``mblint.gpus``)."""

    major: int
    name: "DeviceName"


@_record
class DeviceName:
    """A GPU's device name of which only the start is known ("NVIDIA B300" for "NVIDIA B300
    SXM6 AC"): ``startswith`` a string no longer than it is known, and so is comparing it with a
    string that does not start with it (different)."""

    prefix: str

    def startswith(self, prefix: str) -> Any:
        if self.prefix.startswith(prefix):
            return True
        return UNKNOWN if prefix.startswith(self.prefix) else False

    def equals(self, text: Any) -> Any:
        if not isinstance(text, str):
            return UNKNOWN if is_unknown(text) else False
        return UNKNOWN if text.startswith(self.prefix) else False


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


def merge_values(left: Any, right: Any) -> Any:
    if left is right:
        return left
    if is_unknown(left) or is_unknown(right):
        return UNKNOWN
    if type(left) is type(right) and not isinstance(left, Obj):
        try:
            if left == right:
                return left
        except Exception:  # noqa: BLE001 - exotic values compare as different
            return UNKNOWN
    return UNKNOWN
