#!/usr/bin/env python
"""Dev only (never run by the test suite): how many of the fields Megatron-Bridge 0.6.2 really
builds does mblint know, and is any known value wrong?

Two steps, two interpreters:

    # 1. the oracle venv builds every recipe exported by megatron.bridge.recipes (offline HF
    #    cache of ../shared/oracle/make_hf_cache.py) and dumps its fields
    /tmp/mb-oracle/bin/python scripts/hf_field_coverage.py dump /tmp/hfcov.json
    # 2. mblint resolves the same recipe functions from the unzipped wheel and compares
    HF_HOME=/tmp/mb-oracle/hf_home python scripts/hf_field_coverage.py compare /tmp/hfcov.json \
        --source /work/mb/0.6.2 [--search-path DIR_WITH_TRANSFORMERS] [--show-wrong] [--show-unknown N]

A field counts as known when mblint's value is known; it is wrong when known and different
from the built one (floats with a relative tolerance; dtypes, enums and functions compared by
name). Values the dump cannot write as plain data (objects, tensors) are left out of both sides.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys
from pathlib import Path

_SKIP = object()


def _plain(value, depth=0):
    """A JSON-able stand-in for a built value, or _SKIP."""
    import enum

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return {"enum": value.name, "value": _plain(value.value, depth + 1)}
    mod = type(value).__module__
    if mod == "torch" and type(value).__name__ == "dtype":
        return {"dtype": str(value).replace("torch.", "")}
    if callable(value) and hasattr(value, "__name__") and not isinstance(value, type):
        return {"function": value.__name__}
    if isinstance(value, (list, tuple)) and depth < 3:
        items = [_plain(v, depth + 1) for v in value]
        return _SKIP if any(i is _SKIP for i in items) else items
    return _SKIP


def _walk(obj, prefix, out, seen):
    import dataclasses

    if id(obj) in seen:
        return
    seen.add(id(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        items = [(f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj)]
    elif isinstance(obj, dict):
        items = [(str(k), v) for k, v in obj.items()]
    else:
        return
    for name, value in items:
        path = f"{prefix}.{name}" if prefix else name
        if (dataclasses.is_dataclass(value) and not isinstance(value, type)) or isinstance(value, dict):
            _walk(value, path, out, seen)
            continue
        plain = _plain(value)
        if plain is not _SKIP:
            out[path] = plain


def _only_cached_models() -> None:
    """A model whose config.json is not in the offline cache fails at once (the hub client
    would retry for seconds)."""
    from huggingface_hub import try_to_load_from_cache
    from megatron.bridge.models.conversion.auto_bridge import AutoBridge

    original = AutoBridge.from_hf_pretrained.__func__

    def from_hf_pretrained(cls, path, *args, **kwargs):
        if not os.path.isdir(str(path)):
            found = try_to_load_from_cache(str(path), "config.json", revision=kwargs.get("revision"))
            if not isinstance(found, str):
                raise LookupError(f"{path}: config.json not in the offline cache")
        return original(cls, path, *args, **kwargs)

    AutoBridge.from_hf_pretrained = classmethod(from_hf_pretrained)


def dump(out_path: str) -> None:
    os.environ.setdefault("HF_HOME", os.environ.get("ORACLE_HF_HOME") or os.path.join(sys.prefix, "hf_home"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "8")):
        os.environ.setdefault(key, value)
    import contextlib
    import inspect
    import io
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    with contextlib.redirect_stderr(io.StringIO()):
        import megatron.bridge.recipes as recipes
    _only_cached_models()
    names = sorted(getattr(recipes, "__all__", [n for n in dir(recipes) if n.endswith("_config")]))
    result, failed = {}, {}
    for name in names:
        fn = getattr(recipes, name, None)
        if not callable(fn) or not name.endswith("_config"):
            continue
        print(name, file=sys.__stderr__, flush=True)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                cfg = fn()
        except Exception as error:  # noqa: BLE001 - a recipe that does not build is left out
            failed[name] = f"{type(error).__name__}: {str(error)[:200]}"
            continue
        fields: dict = {}
        _walk(cfg, "", fields, set())
        source = inspect.getsourcefile(inspect.unwrap(fn))
        module = source.split("site-packages/", 1)[-1]
        result[name] = {"file": module, "function": inspect.unwrap(fn).__name__, "fields": fields}
    with open(out_path, "w") as handle:
        json.dump({"recipes": result, "failed": failed}, handle)
    print(f"built {len(result)} recipes, {len(failed)} did not build", file=sys.stderr)


def _same(mine, real) -> bool:
    if isinstance(real, str) and isinstance(mine, float) and not math.isfinite(mine):
        return repr(mine) == real  # the dump writes a non-finite float as its repr ("inf")
    if isinstance(real, dict):
        kind, name = next(iter(real.items()))
        if kind == "enum" and "value" in real and not isinstance(mine, str) and mine == real["value"]:
            return True
        text = str(getattr(mine, "qualname", None) or (getattr(mine, "value", mine) if kind == "enum" else mine))
        return text.rsplit(".", 1)[-1] == name or str(getattr(mine, "name", "")) == name
    if isinstance(real, float) and isinstance(mine, (int, float)) and not isinstance(mine, bool):
        return math.isclose(mine, real, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(real, list) and isinstance(mine, (list, tuple)):
        return len(real) == len(mine) and all(_same(m, r) for m, r in zip(mine, real))
    return type(mine) is type(real) and mine == real


def compare(dump_path: str, source: str, show_wrong: bool, show_unknown: int, only: str | None,
            extra: list[str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from mblint.model import Unknown
    from mblint.resolve import Project

    project = Project([Path(source), *map(Path, extra)])  # one run: modules parsed once

    data = json.load(open(dump_path))
    total = known = wrong = 0
    unknown_by_field: collections.Counter = collections.Counter()
    wrong_rows = []
    per_recipe = []
    for name, rec in sorted(data["recipes"].items()):
        if only and only not in name:
            continue
        path = Path(source) / rec["file"]
        try:
            cfg = project.resolve_function(path, rec["function"])
        except Exception as error:  # noqa: BLE001
            print(f"{name}: mblint failed: {error}", file=sys.stderr)
            cfg = None
        r_total = r_known = 0
        for field, real in rec["fields"].items():
            r_total += 1
            mine = cfg.value(field) if cfg is not None else None
            if field == "mixed_precision" and cfg is not None and cfg.mixed_precision_name is not None:
                # the recipe's name; mblint expands it into the config, as runtime_config_update() does
                r_known += 1
                if cfg.mixed_precision_name != real:
                    wrong += 1
                    wrong_rows.append((name, field, cfg.mixed_precision_name, real))
                continue
            if cfg is None or isinstance(mine, Unknown) or not cfg.get(field) or not cfg.get(field).known:
                unknown_by_field[field.rsplit(".", 1)[-1] if field.startswith("model.") else field] += 1
                continue
            r_known += 1
            if not _same(mine, real):
                wrong += 1
                wrong_rows.append((name, field, mine, real))
        total += r_total
        known += r_known
        per_recipe.append((name, r_known, r_total))
    print(f"recipes {len(per_recipe)}  fields {total}  known {known} ({100 * known / max(total, 1):.2f} %)  wrong {wrong}")
    if show_wrong:
        for row in wrong_rows:
            print("WRONG", *row)
    for field, count in unknown_by_field.most_common(show_unknown):
        print(f"unknown {count:5d} {field}")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    c = sub.add_parser("compare")
    c.add_argument("dump")
    c.add_argument("--source", default="/work/mb/0.6.2")
    c.add_argument("--show-wrong", action="store_true")
    c.add_argument("--show-unknown", type=int, default=0)
    c.add_argument("--only")
    c.add_argument("--search-path", action="append", default=[],
                   help="more import roots, e.g. a folder holding only the transformers package")
    args = parser.parse_args()
    if args.cmd == "dump":
        dump(args.out)
    else:
        compare(args.dump, args.source, args.show_wrong, args.show_unknown, args.only, args.search_path)


if __name__ == "__main__":
    main()
