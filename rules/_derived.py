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


# --- CUDA graphs and MoE dispatch (CG/MO rules) -------------------------------------------

_GRAPH_SPECIAL = ("full_iteration", "full_iteration_inference", "full")


def _graph_names(raw: Any) -> Any:
    """Member names of a CUDA graph scope/modules value, Megatron-Bridge's ``_member_name_list``
    (utils/cuda_graph.py): None and "full" are empty, strings split on commas, enum members
    (resolved as "CudaGraphModule.attn" or "attn") keep their member name. UNKNOWN otherwise."""
    if raw is ABSENT or raw is None:
        return []
    if not is_known(raw) or is_node(raw):
        return UNKNOWN
    if isinstance(raw, str):
        return [] if raw in ("", "full") else [part.rsplit(".", 1)[-1] for part in raw.split(",")]
    if isinstance(raw, (list, tuple)):
        names = []
        for item in raw:
            if not isinstance(item, str):
                return UNKNOWN  # an unresolved enum member or an unknown element
            names.append(item.rsplit(".", 1)[-1])
        return names
    return UNKNOWN


@dataclass(frozen=True)
class CudaGraphs:
    """The effective CUDA graph setup of the model, per Megatron-Bridge line.

    0.6.x: ``model.cuda_graph_impl`` in none/local/transformer_engine/full_iteration, per-layer
    modules in ``model.cuda_graph_modules`` (and the deprecated ``model.cuda_graph_scope``);
    full-iteration capture is ``impl == "full_iteration"`` or ``local`` with "full_iteration" in
    the modules (utils/cuda_graph.py ``is_full_iteration_cuda_graph``).
    0.3.x: ``model.cuda_graph_impl`` in none/local/transformer_engine and ``model.cuda_graph_scope``;
    full-iteration capture is ``local`` with "full_iteration" in the scope."""

    impl: Any
    raw_names: Any  # every name in modules and scope, including full_iteration
    impl_path: str
    modules_paths: tuple[str, ...]

    @property
    def on(self) -> Any:
        if not known(self.impl):
            return UNKNOWN
        return self.impl not in (None, "none")

    @property
    def te(self) -> Any:
        return self.impl == "transformer_engine" if known(self.impl) else UNKNOWN

    @property
    def full_iteration(self) -> Any:
        if not known(self.impl):
            return UNKNOWN
        if self.impl == "full_iteration":
            return True
        if self.impl != "local":
            return False
        if self.raw_names is UNKNOWN:
            return UNKNOWN
        return "full_iteration" in self.raw_names

    @property
    def modules(self) -> Any:
        """Per-layer module names (full_iteration and full removed), or UNKNOWN."""
        if self.raw_names is UNKNOWN:
            return UNKNOWN
        return [name for name in dict.fromkeys(self.raw_names) if name not in _GRAPH_SPECIAL]

    @property
    def modules_path(self) -> str:
        return self.modules_paths[0]


def cuda_graphs(cfg: EffectiveConfig) -> CudaGraphs:
    impl = value(cfg, "model.cuda_graph_impl", "none")
    if cfg.schema_version == "0.3":
        paths: tuple[str, ...] = ("model.cuda_graph_scope",)
    else:
        paths = ("model.cuda_graph_modules", "model.cuda_graph_scope")
    names: Any = []
    for path in paths:
        part = _graph_names(cfg.value(path))
        if part is UNKNOWN:
            names = UNKNOWN
            break
        names = names + part
    if known(impl) and impl in (None, "none"):
        # the deprecated switches still turn graphs on (MCore TransformerConfig.__post_init__)
        enable = value(cfg, "model.enable_cuda_graph", False)
        external = value(cfg, "model.external_cuda_graph", False)
        if not known(enable, external):
            impl = UNKNOWN
        elif enable is True:
            impl = "local"
        elif external is True:
            impl = "transformer_engine"
    if is_node(impl):
        impl = UNKNOWN
    return CudaGraphs(impl=impl, raw_names=names, impl_path="model.cuda_graph_impl", modules_paths=paths)


def graph_fields(graphs: CudaGraphs, cfg: EffectiveConfig) -> list[str]:
    """The fields that decide the graph setup, for locations: impl plus any module field that
    holds module names (a "full"/None/empty value is left out, so a recipe's idle
    ``cuda_graph_scope = "full"`` line never becomes the primary location)."""
    fields = [graphs.impl_path]
    for path in graphs.modules_paths:
        names = _graph_names(cfg.value(path))
        if names is UNKNOWN or names:
            fields.append(path)
    return fields


def dispatcher(cfg: EffectiveConfig) -> Any:
    result = value(cfg, "model.moe_token_dispatcher_type", "allgather")
    return result if known(result) else UNKNOWN


def flex_backend(cfg: EffectiveConfig) -> Any:
    result = value(cfg, "model.moe_flex_dispatcher_backend", None)
    return result if is_known(result) and not is_node(result) else UNKNOWN


def hybridep(cfg: EffectiveConfig) -> Any:
    """True when the flex dispatcher with the HybridEP backend is on (both known)."""
    kind, backend = dispatcher(cfg), flex_backend(cfg)
    if known(kind) and kind != "flex":
        return False
    if is_known(backend) and backend != "hybridep":
        return False
    if not known(kind, backend):
        return UNKNOWN
    return True


def energon_packing(cfg: EffectiveConfig) -> Any:
    """0.6.x: an EnergonDatasetConfig with ``packing_buffer_size`` set (config.py validate)."""
    if cfg.type_of("dataset") != "EnergonDatasetConfig":
        return False if cfg.type_of("dataset") is not None else UNKNOWN
    size = cfg.value("dataset.packing_buffer_size")
    if size is ABSENT:
        return False
    return size is not None if is_known(size) else UNKNOWN


def is_model_class(cfg: EffectiveConfig, base: str) -> Any:
    """Whether the model provider's class is ``base`` or a subclass of it (UNKNOWN when the
    class is not known)."""
    from mblint.schema import load_schema

    name = cfg.type_of("model")
    if name is None:
        return UNKNOWN
    schema = load_schema(cfg.schema_version)
    spec = schema.find_class(name)
    if spec is None:
        return UNKNOWN
    return schema.is_subclass(spec.qualname, base)


def comm_overlap_present(cfg: EffectiveConfig) -> Any:
    """True when ``cfg.comm_overlap`` is a CommOverlapConfig, False when None, else UNKNOWN."""
    if cfg.type_of("comm_overlap") is not None:
        return True
    current = cfg.value("comm_overlap")
    if current is None or current is ABSENT:
        return False
    return UNKNOWN


def effective_overlap_flag(cfg: EffectiveConfig, name: str) -> tuple[Any, str]:
    """An EP-overlap flag (overlap_moe_expert_parallel_comm, delay_wgrad_compute) as the model
    sees it after ``runtime_config_update``: with a CommOverlapConfig, ``comm_overlap.setup()``
    writes the comm_overlap value (None -> False) onto the model (training/comm_overlap.py
    ``_get_model_comm_overlap_cfgs``/``_apply_cfgs``); without one the model's own field stays.
    Returns (value, the field that decides it)."""
    present = comm_overlap_present(cfg)
    if present is True:
        path = f"comm_overlap.{name}"
        flag = value(cfg, path, None)
        if not is_known(flag) or is_node(flag):
            return UNKNOWN, path
        return flag is True, path
    if present is False:
        path = f"model.{name}"
        flag = value(cfg, path, False)
        return (bool(flag) if known(flag) else UNKNOWN), path
    return UNKNOWN, f"model.{name}"
