"""Quantities derived from a resolved configuration that several rules share. Every helper
returns ``UNKNOWN`` when an input is unknown, so rules stay silent on what mblint cannot know.
Field paths differ between Megatron-Bridge lines; each helper names the one it read."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mblint.model import ABSENT, UNKNOWN, EffectiveConfig, is_known, is_node
from mblint.rule import known

SPECS_06 = "dataset.offline_packing_specs"
SPECS_03 = "dataset.packed_sequence_specs"


def value(cfg: EffectiveConfig, path: str, absent: Any = ABSENT) -> Any:
    """The field's value; ``absent`` when it does not exist (parent None, key missing)."""
    result = cfg.value(path)
    return absent if result is ABSENT else result


def specs_path(cfg: EffectiveConfig) -> str:
    return SPECS_03 if cfg.schema_version == "0.3" else SPECS_06


def specs_present(cfg: EffectiveConfig) -> Any:
    """True when the packing specs object exists, False when it is None or absent."""
    path = specs_path(cfg)
    if cfg.type_of(path) is not None:
        return True
    current = cfg.value(path)
    if current is ABSENT or current is None:
        return False
    return UNKNOWN


def offline_packing(cfg: EffectiveConfig) -> Any:
    """Whether offline (pre-packed dataset) packing is on."""
    if cfg.schema_version == "0.3":
        present = specs_present(cfg)
        if present is not True:
            return present
        size = cfg.value(f"{SPECS_03}.packed_sequence_size")
        return size > 0 if known(size) and isinstance(size, (int, float)) else UNKNOWN
    flag = value(cfg, "dataset.enable_offline_packing", False)
    return flag if is_known(flag) else UNKNOWN


def in_batch_packing(cfg: EffectiveConfig) -> Any:
    path = "dataset.pack_sequences_in_batch" if cfg.schema_version == "0.3" else "dataset.enable_in_batch_packing"
    flag = value(cfg, path, False)
    return flag if is_known(flag) else UNKNOWN


def in_batch_packing_path(cfg: EffectiveConfig) -> str:
    return "dataset.pack_sequences_in_batch" if cfg.schema_version == "0.3" else "dataset.enable_in_batch_packing"


def pad_to_max_length(cfg: EffectiveConfig) -> tuple[Any, str]:
    """(value, the field that decides it): a top-level dataset field, or dataset_kwargs."""
    top = cfg.value("dataset.pad_to_max_length")
    kwargs = cfg.value("dataset.dataset_kwargs.pad_to_max_length")
    if top is True:
        return True, "dataset.pad_to_max_length"
    if kwargs is True:
        return True, "dataset.dataset_kwargs.pad_to_max_length"
    if not is_known(top) or not is_known(kwargs):
        return UNKNOWN, "dataset.dataset_kwargs.pad_to_max_length"
    field = "dataset.pad_to_max_length" if top is not ABSENT else "dataset.dataset_kwargs.pad_to_max_length"
    return False, field


@dataclass(frozen=True)
class Parallel:
    tp: Any
    pp: Any
    cp: Any
    ep: Any
    etp: Any
    vpp: Any
    sp: Any


def parallel(cfg: EffectiveConfig) -> Parallel:
    def size(name: str, default: Any = 1) -> Any:
        result = value(cfg, f"model.{name}", default)
        return result if not is_node(result) else UNKNOWN

    ep = size("expert_model_parallel_size")
    etp = size("expert_tensor_parallel_size", None)
    if etp is None and known(ep):
        etp = 1 if ep > 1 else size("tensor_model_parallel_size")
    return Parallel(
        tp=size("tensor_model_parallel_size"),
        pp=size("pipeline_model_parallel_size"),
        cp=size("context_parallel_size"),
        ep=ep,
        etp=etp,
        vpp=size("virtual_pipeline_model_parallel_size", None),
        sp=size("sequence_parallel", False),
    )


def cp_sp_alignment(cp: Any, tp: Any, sp: Any) -> tuple[Any, str]:
    """lcm(2*CP if CP>1 else 1, CP*TP if SP and TP>1 else 1), and how it was worked out."""
    if not known(cp, tp, sp):
        return UNKNOWN, ""
    cp_mult = 2 * cp if cp > 1 else 1
    sp_mult = cp * tp if sp and tp > 1 else 1
    required = math.lcm(cp_mult, sp_mult)
    parts = []
    if cp > 1:
        parts.append(f"CP={cp} needs a multiple of 2*CP = {cp_mult}")
    if sp and tp > 1:
        parts.append(f"TP={tp} with sequence parallelism needs a multiple of CP*TP = {sp_mult}")
    if len(parts) == 2:
        return required, f"{parts[0]} and {parts[1]}, so lcm({cp_mult}, {sp_mult}) = {required}"
    return required, parts[0] if parts else "no alignment is needed"


# ----- general helpers (rules-general: OT, PR, RC, OF) ------------------------------------

SET_KINDS = ("set", "override")


def last_origin(cfg: EffectiveConfig, path: str):
    origins = cfg.origins(path)
    return origins[-1] if origins else None


def assigned(cfg: EffectiveConfig, path: str) -> bool:
    """True when ``path`` was written by a recipe line or an override (not left at a
    dataclass default, and not only set by something mblint cannot follow)."""
    origin = last_origin(cfg, path)
    return origin is not None and origin.kind in SET_KINDS


def from_dotlist(cfg: EffectiveConfig, path: str) -> bool:
    """True when the last write of ``path`` is a command-line ``key=value`` override."""
    origin = last_origin(cfg, path)
    return origin is not None and origin.kind == "override" and origin.path == "--set"


def has_overrides(cfg: EffectiveConfig) -> bool:
    """True when an override file or a dotlist was applied: the configuration is then the one
    being launched, not a recipe the launcher still completes."""
    return any(origin.kind == "override" for resolved in cfg.fields.values() for origin in resolved.origins)


def schema_of(cfg: EffectiveConfig):
    from mblint.schema import load_schema

    return load_schema(cfg.schema_version or "0.6")


def class_fields(cfg: EffectiveConfig, node: str) -> set[str] | None:
    """Field names of the config class at object node ``node`` ("model", "ddp", ...), or None
    when the node is no object, a dict, or a class the schema does not know."""
    type_name = cfg.type_of(node)
    if type_name is None or type_name == "dict":
        return None
    spec = schema_of(cfg).find_class(type_name)
    return set(spec.fields) if spec is not None else None
