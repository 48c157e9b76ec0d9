from __future__ import annotations

import ast
import functools
import math

from mblint.rulekit import PARALLEL_SIZE_PATHS, Example, Rule, Severity, Unknown, format_value, is_number, schema_of

# Counts that Megatron-Core divides by or loops over: a value below 1 is never valid
# (0.6.2 megatron/bridge/training/config.py set_data_parallel_size and validate();
# Megatron-Core model_parallel_config.py and num_microbatches_calculator.py).
POSITIVE_COUNTS = (
    "train.micro_batch_size", "train.global_batch_size", "model.seq_length", "dataset.seq_length",
    *PARALLEL_SIZE_PATHS,
)
SCALARS = {"int", "float", "bool", "str"}


class OverrideValueType(Rule):
    id = "OT013"
    name = "override-value-type"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "An override gives a field a value of the wrong type; a count below 1 wherever it is written."
    tags = ("general", "overrides")
    doc = """## What it does
Flags a YAML or command-line override whose value does not fit the field it sets, by the
field's type in the Megatron-Bridge release being linted: a string, a list or a mapping
where the field holds a number or a flag (`train.micro_batch_size=abc`, `=[1,2]`), `inf` or
`nan` where it holds an integer, and a batch size, parallel size or sequence length below 1
(`train.micro_batch_size=0`, `-1`). A float with an integral value where the field is an
integer (`=2.0`) is a warning. A count below 1 is reported wherever it is written: an
override, or a recipe line (`cfg.train.global_batch_size = 0`).

## Why it matters
Megatron-Bridge turns the configuration into an untyped OmegaConf dictionary, merges the
YAML file and the Hydra overrides into it and sets the results back on the dataclasses as
they are: nothing checks a value against the field's type. `"abc"` reaches the batch
arithmetic as a string and the job fails at start-up on every rank, after the allocation;
a count of 0 divides by zero or builds an empty process group; `inf` iterations never end.
Written in a recipe, the count is just as wrong: Megatron-Bridge 0.6.2 rejects
`train.global_batch_size = 0` (and -8) in `validate()` ("lr_decay_steps must be > 0"), and
`train.micro_batch_size = 0` raises ZeroDivisionError there.

## Example
```sh
python run_recipe.py --recipe llama3_8b_pretrain_config train.micro_batch_size=abc
```

## Fix
Give a value of the field's type (`train.micro_batch_size=1`). No automatic fix: the
intended value cannot be known.

## Versions
Every release: field types come from the schema of the release being linted.

## Sources
0.6.2 megatron/bridge/training/utils/omegaconf_utils.py (`create_omegaconf_dict_config`:
`OmegaConf.create` of a plain dict; `_apply_overrides`: setattr of the merged values);
Hydra's override grammar (`OverrideLexer.g4`) for how `inf`, `nan`, `1_000` and `abc` read.
"""
    valid = [
        Example("cfg = _pretrain_common()", dotlist=("train.micro_batch_size=2",)),
        Example("cfg = _pretrain_common()", dotlist=("optimizer.lr=3",)),
        Example("cfg = _pretrain_common()", dotlist=("train.global_batch_size=null",)),
        Example("cfg = _pretrain_common()", yaml="checkpoint:\n  save: /results/run1\n"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()", dotlist=("train.micro_batch_size=abc",)),
        Example("cfg = _pretrain_common()", dotlist=("train.train_iters=inf",)),
        Example("cfg = _pretrain_common()", yaml="train:\n  micro_batch_size: [1, 2]  # error\n"),
        Example("cfg = _pretrain_common()", yaml="train:\n  global_batch_size: 0  # error\n"),
        Example("cfg = _pretrain_common()", dotlist=("train.micro_batch_size=2.0",)),
        Example("cfg = _pretrain_common()\ncfg.train.global_batch_size = 0  # error",
                message="train.global_batch_size is 0, but it must be a count, at least 1"),
        "cfg = _pretrain_common()\ncfg.train.micro_batch_size = -8  # error",
    ]

    def check(self, cfg, ctx):
        yield from self.written_counts(cfg, ctx)
        if not cfg.overrides_applied:
            return
        schema = schema_of(cfg)
        for path, resolved in sorted(cfg.fields.items()):
            value = resolved.value
            origin = cfg.last_origin(path)
            if isinstance(value, Unknown) or value is None or origin is None or origin.kind != "override":
                continue
            parent, _, leaf = path.rpartition(".")
            spec = schema.find_class(cfg.type_of(parent) or "")
            field = spec.fields.get(leaf) if spec is not None else None
            if field is None:
                continue
            problem = _type_problem(value, accepted_kinds(field.annotation))
            if problem is None and path in POSITIVE_COUNTS and is_number(value) and value < 1:
                problem = ("a count, at least 1", Severity.ERROR)
            if problem is None:
                continue
            expected, severity = problem
            yield ctx.report(cfg, f"{path} = {format_value(value)} ({type(value).__name__}) from an override, but "
                                  f"the field is {expected} ({field.annotation}); Megatron-Bridge sets override "
                                  f"values on the config as they are", [path], primary=path, severity=severity)


    def written_counts(self, cfg, ctx):
        """Counts below 1 that a recipe (not an override, which the type check reports) sets."""
        for path in POSITIVE_COUNTS:
            current = cfg.value(path)
            if not is_number(current) or current >= 1 or cfg.last_kind(path) in (None, "default", "override"):
                continue
            yield ctx.report(cfg, f"{path} is {format_value(current)}, but it must be a count, at least 1; "
                                  "Megatron-Bridge divides by it or fails its batch arithmetic at start-up",
                             [path], primary=path)


def _type_problem(value, kinds: frozenset[str] | None) -> tuple[str, Severity] | None:
    """What the field expects and how bad the mismatch is, or None when ``value`` fits (or
    the annotation says too little to tell)."""
    if kinds is None or not kinds <= SCALARS or "str" in kinds:
        return None  # strings, containers, classes and Any: not judged here
    expected = " or ".join(sorted(kinds))
    if isinstance(value, bool) or (isinstance(value, int) and kinds & {"int", "float", "bool"}):
        return None
    if isinstance(value, float):
        if "float" in kinds:
            return None
        if math.isfinite(value) and value.is_integer():
            return expected, Severity.WARNING
        return expected, Severity.ERROR
    return expected, Severity.ERROR


@functools.lru_cache(maxsize=None)
def accepted_kinds(annotation: str) -> frozenset[str] | None:
    """The kinds of value an annotation admits, None (everything) when it names anything but
    int, float, bool, str, None, Optional, Union and Literal of strings."""
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return None
    kinds = _kinds(node)
    return None if kinds is None else frozenset(kinds - {"None"})


def _kinds(node: ast.expr) -> set[str] | None:
    if isinstance(node, ast.Name) and node.id in SCALARS:
        return {node.id}
    if isinstance(node, ast.Constant) and node.value is None:
        return {"None"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union(_kinds(node.left), _kinds(node.right))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if node.value.id == "Literal":
            return {"str"} if all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items) else None
        if node.value.id in ("Optional", "Union"):
            found: set[str] | None = {"None"}
            for item in items:
                found = _union(found, _kinds(item))
            return found
    return None


def _union(left: set[str] | None, right: set[str] | None) -> set[str] | None:
    return None if left is None or right is None else left | right
