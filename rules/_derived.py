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


# --- context parallelism, parallel grids and world size (rules/cp, rules/parallel) ---

# Dataset classes ConfigContainer.validate() treats as fine-tuning data for the CP>1 checks
# (0.6.2 megatron/bridge/training/config.py:1440-1446 plus the deprecated alias
# FinetuningDatasetConfig(GPTSFTDatasetConfig), data/builders/gpt_sft.py:240;
# 0.3.1 training/config.py:1549 FinetuningDatasetConfig and its subclass HFDatasetConfig,
# data/builders/hf_dataset.py:55).
SFT_DATASETS_06 = frozenset({"GPTSFTDatasetConfig", "FinetuningDatasetConfig", "DirectHFSFTDatasetConfig",
                             "EnergonDatasetConfig", "MockVLMSFTDatasetConfig"})
SFT_DATASETS_03 = frozenset({"FinetuningDatasetConfig", "HFDatasetConfig"})


def finetuning_dataset(cfg: EffectiveConfig) -> Any:
    """True when validate() treats the dataset as fine-tuning data, False when it does not,
    UNKNOWN when the dataset's class is unknown."""
    name = cfg.type_of("dataset")
    if not name:
        return UNKNOWN
    names = SFT_DATASETS_03 if cfg.schema_version == "0.3" else SFT_DATASETS_06
    return name in names


def megatron_fsdp(cfg: EffectiveConfig) -> Any:
    """Whether Megatron-FSDP is on (``dist.use_megatron_fsdp`` or ``ddp.use_megatron_fsdp``)."""
    flags = [value(cfg, "dist.use_megatron_fsdp", False), value(cfg, "ddp.use_megatron_fsdp", False)]
    if any(flag is True for flag in flags):
        return True
    if not all(is_known(flag) for flag in flags):
        return UNKNOWN
    return False


def min_gpus(par: Parallel) -> Any:
    """PP * max(TP*CP, EP*ETP): the smallest world a layout runs on (DP = EDP = 1)."""
    if not known(par.tp, par.pp, par.cp, par.ep, par.etp):
        return UNKNOWN
    return par.pp * max(par.tp * par.cp, par.ep * par.etp)


def int_values(*values: Any) -> bool:
    """Known, present, and plain ints (bool excluded)."""
    return known(*values) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def assigned(cfg: EffectiveConfig, path: str) -> bool:
    """Whether the recipe or an override wrote ``path`` (not just a default or an unknown
    provider attribute). For private/optional attributes that only matter when set, such as
    ``model._pipeline_model_parallel_layout_builder``."""
    return any(origin.kind not in ("default", "unknown") for origin in cfg.origins(path))
