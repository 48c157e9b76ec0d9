#!/usr/bin/env python
"""Dev only (never run by the test suite): execute the resolver fixture recipes with REAL
Megatron-Bridge and print every hand-computed expectation next to the real value.

    /tmp/mb-oracle/bin/python scripts/crosscheck_fixtures_with_mb.py [CASE_ID ...]

Needs the oracle virtualenv of ../shared/oracle (megatron-bridge 0.6.2, offline HF config
cache). mblint itself never executes linted code; this script only confirms that the expected
values in tests/resolve_expectations.py are what Megatron-Bridge really produces.

- Known expectations are compared (floats with a relative tolerance); a mismatch is ``DIFF``.
- UNKNOWN expectations print the real value for information (``info``).
- ABSENT expectations check that the attribute / dict key does not exist.
- YAML and dotlist cases go through Megatron-Bridge's own ``process_config_with_overrides``
  (what scripts/training/run_recipe.py uses).
- ``mystery_tuning`` (the module the resolver cannot find) is stubbed with concrete functions.
- The 0.3 case is skipped (the oracle has 0.6.2 only).
Exit code 1 when any known expectation differs.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import os
import sys
import types
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "fixtures" / "resolve"))

os.environ.setdefault("HF_HOME", os.environ.get("ORACLE_HF_HOME") or os.path.join(sys.prefix, "hf_home"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RANK", "0")
os.environ.setdefault("LOCAL_RANK", "0")
os.environ.setdefault("WORLD_SIZE", "8")

from tests.resolve_expectations import ABSENT, CASES, FIXTURE_ROOT, UNKNOWN, Approx  # noqa: E402

_MISSING = object()


def _stub_mystery_tuning() -> None:
    module = types.ModuleType("mystery_tuning")
    module.DEFAULT_GBS = 512

    def pick_tensor_parallel(n):
        return n // 4

    def tune_training(train):
        train.global_batch_size = 1024
        train.train_iters = 12345

    def tune_everything(cfg):
        cfg.train.global_batch_size = 2048
        cfg.dataset.seq_length = 2048
        cfg.model.tensor_model_parallel_size = 2

    module.pick_tensor_parallel = pick_tensor_parallel
    module.tune_training = tune_training
    module.tune_everything = tune_everything
    sys.modules["mystery_tuning"] = module


def _module_name(path: Path) -> str:
    rel = path.relative_to(FIXTURE_ROOT).with_suffix("")
    return ".".join(rel.parts)


def _lookup(obj, dotted: str):
    if dotted == "":
        return obj
    for part in dotted.split("."):
        if isinstance(obj, dict):
            obj = obj.get(part, _MISSING)
        elif obj is None:
            return _MISSING
        else:
            obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def _normalise(value):
    try:
        import torch

        if isinstance(value, torch.dtype):
            return str(value)
    except ImportError:  # pragma: no cover
        pass
    if hasattr(value, "_content") or type(value).__name__ in ("ListConfig", "DictConfig"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value)
    return value


def _same(expected, real) -> bool:
    if isinstance(expected, Approx):
        return isinstance(real, (int, float)) and not isinstance(real, bool) and math.isclose(real, expected.value, rel_tol=1e-9)
    if isinstance(expected, bool) or isinstance(real, bool):
        return type(expected) is type(real) and expected == real
    if isinstance(expected, float) or isinstance(real, float):
        return isinstance(real, (int, float)) and math.isclose(real, expected, rel_tol=1e-12)
    if isinstance(expected, list) and isinstance(real, tuple):
        real = list(real)
    return type(expected) is type(real) and expected == real


def _shim_get_model_config() -> None:
    """``AutoBridge.get_model_config()`` is used by Megatron-Bridge main (domain notes (b).1,
    llama3.py:1560 at HEAD) but does not exist in 0.6.2; stand in with the 0.6.2 spelling,
    ``to_megatron_provider(load_weights=False)``. Both yield the HF-derived model whose
    parallelism fields start at the TransformerConfig defaults."""
    from megatron.bridge import AutoBridge

    if not hasattr(AutoBridge, "get_model_config"):
        AutoBridge.get_model_config = lambda self: self.to_megatron_provider(load_weights=False)
        print("# note: AutoBridge.get_model_config is absent in this Megatron-Bridge; shimmed")


def _build(case):
    _stub_mystery_tuning()
    module = importlib.import_module(_module_name(case.path))
    cfg = getattr(module, case.function)(**case.call_kwargs)
    if case.override_files or case.dotlist:
        from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides

        config_file = str(case.override_files[0]) if case.override_files else None
        assert len(case.override_files) <= 1
        process_config_with_overrides(cfg, config_filepath=config_file, cli_overrides=list(case.dotlist) or None)
    return cfg


def main(argv: list[str]) -> int:
    wanted = set(argv)
    sink = io.StringIO()
    with contextlib.redirect_stderr(sink), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import logging

        logging.disable(logging.WARNING)
        import megatron.bridge  # noqa: F401
    _shim_get_model_config()

    diffs = 0
    for case in CASES:
        if wanted and case.id not in wanted:
            continue
        if not case.crosscheck:
            print(f"== {case.id}: skipped (schema line {case.version}; oracle is 0.6.2)")
            continue
        print(f"== {case.id}: {case.path.name}::{case.function} overrides={list(map(str, case.override_files))} dotlist={list(case.dotlist)}")
        try:
            with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = _build(case)
        except Exception as error:  # noqa: BLE001
            print(f"   ERROR building: {type(error).__name__}: {error}")
            diffs += 1
            continue
        for path, expected in case.types.items():
            real = type(_lookup(cfg, path)).__name__
            status = "ok  " if real == expected else "DIFF"
            diffs += status == "DIFF"
            print(f"   {status} type({path or '<root>'}) expected {expected} real {real}")
        for path, expected in case.expected.items():
            real = _lookup(cfg, path)
            if expected is UNKNOWN:
                shown = "<missing>" if real is _MISSING else repr(_normalise(real))
                print(f"   info {path} expected UNKNOWN, real {shown}")
                continue
            if expected is ABSENT:
                status = "ok  " if real is _MISSING else "DIFF"
                diffs += status == "DIFF"
                shown = "<missing>" if real is _MISSING else repr(_normalise(real))
                print(f"   {status} {path} expected ABSENT real {shown}")
                continue
            if real is _MISSING:
                print(f"   DIFF {path} expected {expected!r} real <missing>")
                diffs += 1
                continue
            real = _normalise(real)
            status = "ok  " if _same(expected, real) else "DIFF"
            diffs += status == "DIFF"
            print(f"   {status} {path} expected {expected!r} real {real!r}")
    print(f"\n{diffs} difference(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
