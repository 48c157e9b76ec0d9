"""``Origin.at`` makes the same frozen ``Origin`` as its constructor, and origins survive the
worker pipes (pickle) with every field."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from mblint.model import Origin


def test_at_makes_a_frozen_origin_equal_to_the_constructors():
    made = Origin.at("recipe.py", 3, 5, 4, 9, "default", 17, ("call",))
    built = Origin("recipe.py", 3, 5, 4, 9, "default", 17, ("call",))
    assert type(made) is Origin
    assert [getattr(made, f.name) for f in dataclasses.fields(Origin)] == \
        [getattr(built, f.name) for f in dataclasses.fields(Origin)]
    assert made == built and hash(made) == hash(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.line = 4  # type: ignore[misc]


def test_at_defaults_as_the_constructor_does():
    assert [getattr(Origin.at("a.py", 1, 2, 1, 3), name) for name in ("kind", "seq", "via")] == ["set", 0, ()]


def test_an_origin_pickles_with_every_field():
    origin = Origin.at("recipe.py", 3, 5, 4, 9, "override", 17, ("call",))
    copy = pickle.loads(pickle.dumps(origin, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(copy) is Origin
    assert (copy.path, copy.line, copy.column, copy.end_line, copy.end_column, copy.kind, copy.seq, copy.via) == \
        ("recipe.py", 3, 5, 4, 9, "override", 17, ("call",))
