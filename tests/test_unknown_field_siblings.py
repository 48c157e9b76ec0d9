"""OT001's sibling suggestion reads the top-level nodes of a graph-backed configuration
without flattening it (flattening every field costs more than the rest of the rule), and
suggests what the flattened configuration suggests."""

from __future__ import annotations

from mblint.extract.values import Obj
from mblint.model import RecipeRef
from mblint.resolve import flatten
from mblint.schema import load_schema
from mblint_rules.general.ot001_unknown_field import UnknownField


def configuration():
    schema = load_schema("0.6")
    root = Obj(schema.find_class("ConfigContainer"))
    for node, class_name in (("optimizer", "OptimizerConfig"), ("train", "TrainingConfig")):
        root.set(node, Obj(schema.find_class(class_name)), None)
    root.set("env_vars", Obj(None), None)
    root.set("seed", 1, None)
    return schema, flatten(root, RecipeRef("r.py", "f"), schema)


def test_sibling_suggestion_without_flattening():
    schema, cfg = configuration()
    own = sorted(schema.find_class("TrainingConfig").fields)
    suggestion = UnknownField.suggest(cfg, schema, "train", "weight_decay", own)
    assert suggestion == "optimizer.weight_decay"
    assert cfg._fields is None  # not flattened
    cfg.types  # flattened: the same answer
    assert UnknownField.suggest(cfg, schema, "train", "weight_decay", own) == suggestion
