"""The record types made without ``@dataclass`` (``mblint.model.Record``/``FrozenRecord``)
behave as the dataclasses they replaced: constructor defaults, equality, hash, repr,
frozenness and pickling."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pytest

from mblint.findings import Finding, Related, Severity
from mblint.model import Origin, RecipeRef
from mblint.settings import Settings
from mblint.testing import Example

ORIGIN = Origin("r.py", 1, 2, 1, 3)

# (class, its former dataclass definition as (name, default or REQUIRED) pairs, frozen, arguments)
REQUIRED = object()
CASES = [
    (RecipeRef, [("path", REQUIRED), ("function", REQUIRED), ("line", 1), ("column", 1), ("end_line", 1),
                 ("end_column", 1), ("overrides", ()), ("last_line", 0)], True, ("r.py", "f")),
    (Related, [("origin", REQUIRED), ("message", REQUIRED)], True, (ORIGIN, "here")),
    (Finding, [("rule_id", REQUIRED), ("rule_name", REQUIRED), ("severity", REQUIRED), ("message", REQUIRED),
               ("location", REQUIRED), ("related", ()), ("fields", ()), ("recipe", ""), ("fixes", ()),
               ("suppressed", False), ("extra", dict)], False, ("OT001", "x", Severity.ERROR, "m", ORIGIN)),
    (Example, [("code", REQUIRED), ("version", "0.6"), ("world_size", None), ("dotlist", ()), ("yaml", None),
               ("function", "example_config")], True, ("cfg = 1",)),
    (Settings, [("source", None), ("root", Path.cwd), ("select", None), ("extend_select", ()), ("ignore", ()),
                ("per_file_ignores", ()), ("exclude", ()), ("fail_on", None), ("version", None),
                ("world_size", None), ("search_paths", ()), ("pairing", ()), ("hf_config_paths", ())], True, ()),
]


def _dataclass_like(cls: type, fields: list[tuple[str, Any]], frozen: bool) -> type:
    spec = []
    for name, default in fields:
        if default is REQUIRED:
            spec.append((name, Any))
        elif callable(default):
            spec.append((name, Any, dataclasses.field(default_factory=default)))
        else:
            spec.append((name, Any, dataclasses.field(default=default)))
    made = dataclasses.make_dataclass(cls.__name__, spec, frozen=frozen)
    made.__qualname__ = cls.__qualname__
    return made


@pytest.mark.parametrize("cls, fields, frozen, arguments", CASES, ids=[case[0].__name__ for case in CASES])
def test_a_record_behaves_as_its_former_dataclass(cls, fields, frozen, arguments):
    former = _dataclass_like(cls, fields, frozen)
    record, dataclass_record = cls(*arguments), former(*arguments)
    assert cls._fields == tuple(name for name, _ in fields)
    assert repr(record) == repr(dataclass_record)
    assert record == cls(*arguments) and not (record != cls(*arguments))
    assert record != former(*arguments) and record != object()
    changed = cls(*arguments[:-1], "other") if arguments else cls(select=("OT",))
    assert record != changed
    if frozen:
        assert hash(record) == hash(cls(*arguments)) == hash(dataclass_record)
        for action in (lambda: setattr(record, fields[0][0], 1), lambda: delattr(record, fields[0][0])):
            with pytest.raises(dataclasses.FrozenInstanceError):
                action()
    else:
        with pytest.raises(TypeError):
            hash(record)
    copy = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(copy) is cls and copy == record


def test_mutable_defaults_are_made_per_instance():
    first, second = (Finding("OT001", "x", Severity.ERROR, "m", ORIGIN) for _ in range(2))
    first.extra["k"] = 1
    assert second.extra == {}
