"""The rule kit: everything a rule pack needs to write rules, in one public module. The
built-in pack imports nothing else from mblint; third-party packs should do the same.

A rule is a ``Rule`` subclass (id, name, severity, summary, documentation, ``valid`` and
``invalid`` examples) whose ``check(cfg, ctx)`` reads a resolved configuration
(``EffectiveConfig``: ``cfg.value(path)``, ``cfg.origins(path)``) and yields
``ctx.report(...)`` findings, with ``FixIntent`` fixes. A pack registers its rules through
the ``mblint`` entry-point group with a ``@hookimpl`` of ``mblint_rules``:

    from mblint.rulekit import Rule, Severity, hookimpl, known, value

    class SmallGlobalBatch(Rule):
        id = "EX001"
        ...
        def check(self, cfg, ctx):
            gbs = value(cfg, "train.global_batch_size")
            if known(gbs) and gbs < 16:
                yield ctx.report(cfg, f"train.global_batch_size is {gbs}", ["train.global_batch_size"])

    @hookimpl
    def mblint_rules():
        return [SmallGlobalBatch]

What is here:

- values and known-ness: ``value``, ``known``, ``int_values``, ``ABSENT``, ``UNKNOWN``,
  ``format_value``. ``known(*values)`` is the one test of known-ness a rule needs: True when
  every value is a plain value the rule can compute with; False for ``UNKNOWN`` (mblint could
  not tell the value), ``ABSENT`` (the field does not exist there: its parent is None, a dict
  lacks the key) and a config object. A rule whose inputs are not known says nothing;
- Megatron-Bridge quantities derived from a configuration (each ``UNKNOWN`` when an input
  is): ``parallel`` (TP, PP, CP, EP... sizes), ``cuda_graphs``, ``offline_packing``,
  ``dispatcher``, ``mixed_precision_kind``, ``data_parallel_size``... Field paths differ
  between Megatron-Bridge lines; each helper names the one it read;
- ``precondition`` and the ``*_known_on`` tests: what must hold for a rule to have anything
  to say, which the engine checks once per configuration for all rules that share it;
- ``per_config``: compute a derived quantity once per configuration;
- problems more than one rule may report (``NAME_GPUS_BELOW_LAYOUT``...), for
  ``ctx.report(..., problem=...)`` and ``Rule.supersedes`` (mblint/arbitration.py);
- ``Rule``, ``RuleContext``, ``Severity``, ``FixIntent``, ``Related``, ``Finding``, ``Origin``,
  ``EffectiveConfig``, ``hookimpl``; for the examples, ``Example`` (Fixit's ``Valid``/``Invalid``
  cases: a recipe body, with its world size, version, overrides, expected message and fixed
  text) and ``hf_model(name)``, the one way an example writes an AutoBridge model.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from typing import Any

from mblint.coverage import (
    COVERAGE_TAG,
    MODEL_CONFIG_INCOMPLETE,
    MODEL_CONFIG_MISSING,
    UNFOLLOWED_CALL,
    UNFOLLOWED_STATEMENT,
    WORLD_SIZE_UNKNOWN,
    Gap,
)
from mblint.coverage import reached_from as coverage_reached_from
from mblint.extract.megatron import HF_PROVIDER_LABEL  # the type name of an AutoBridge model whose class is not known
from mblint.findings import Finding, FixIntent, Related, Severity
from mblint.model import ABSENT, NOT_PLAIN_TYPES, UNKNOWN, EffectiveConfig, Origin, Unknown, is_known, is_node
from mblint.plugins import hookimpl
from mblint.rule import Rule, RuleContext, format_value, known
from mblint.schema import load_schema
from mblint.suggestions import suggest
from mblint.testing import Example, hf_model

__all__ = [
    "COVERAGE_TAG", "MODEL_CONFIG_INCOMPLETE", "MODEL_CONFIG_MISSING", "UNFOLLOWED_CALL", "UNFOLLOWED_STATEMENT",
    "WORLD_SIZE_UNKNOWN", "Gap", "gaps", "report_gap", "world_size_gap",
    "ABSENT", "BRIDGE_GPT_DATASET", "COLLATE_DATASET_TYPES_06", "GRAPH_MODULE_NAMES", "HF_PROVIDER_LABEL",
    "MAX_STEPS_NOT_POSITIVE", "NAME_GPUS_BELOW_LAYOUT", "PARALLEL_SIZE_PATHS", "SEQ_LENGTHS_DIFFER", "SFT_DATASET_TYPES_06", "SPECS_06",
    "UNKNOWN", "UNPADDED_PACKS_UNDER_GRAPHS", "WORLD_NOT_DIVISIBLE_BY_DENSE_GRID", "EffectiveConfig", "Example",
    "Finding", "FixIntent", "Origin", "Related", "Rule", "RuleContext", "Severity", "Unknown", "allowed_values",
    "assigned", "canonical_seq_datasets", "class_fields", "comm_overlap_present", "constructor_site_field",
    "context_parallel_known_above_1", "cp_sp_alignment_all", "cpu_offloading_known_on", "cuda_graphs",
    "cuda_graphs_known_on", "data_parallel_size", "dataset_is", "dispatcher", "dist_train",
    "effective_overlap_flag", "energon_packing", "env_var", "env_var_origin", "ep_overlap_problems", "eval_context_parallel_size",
    "fine_grained_offloading_known_on", "finetuning_dataset", "flex_backend", "format_value", "from_dotlist",
    "full_cudagraph", "graph_fields", "graph_module_names", "has_check", "has_overrides", "hf_model", "hookimpl",
    "hybridep", "hybridep_known_on", "in_batch_packing", "in_batch_packing_known_on", "in_batch_packing_path",
    "int_values", "is_hybrid_stack", "is_number", "is_model_class", "is_node", "is_round", "job_gpu", "known", "knows_field", "last_set_of",
    "layout_stages", "megatron_fsdp", "min_gpus", "mixed_precision_kind", "model_family_hints",
    "non_dividing_factor", "offline_packing", "offline_packing_known_on", "pad_to_max_length", "parallel",
    "per_config", "per_schema", "precision_value", "precondition", "recompute_module_list",
    "recompute_modules_allowed", "release_fact", "schema_of", "selective_recompute_modules", "selective_recompute_modules_known",
    "seq_length_disagrees", "some_packing_known_on", "specs_path", "specs_present", "str_list", "suggest", "value",
]

# --- memoised answers, field values, packing switches, parallel sizes ---

SPECS_06 = "dataset.offline_packing_specs"
SPECS_03 = "dataset.packed_sequence_specs"


def per_config(helper):
    """Compute ``helper(cfg)`` once per configuration: many rules ask for the same derived
    quantity of the same recipe. The result must be immutable (rules share it)."""
    name = helper.__qualname__

    @functools.wraps(helper)
    def once(cfg: EffectiveConfig) -> Any:
        memo = cfg.derived
        found = memo.get(name, _NOT_YET)
        if found is _NOT_YET:
            found = memo[name] = helper(cfg)
        return found

    return once


_NOT_YET = object()  # per_config: no answer kept yet


def per_schema(schema) -> dict:
    """A memo for answers that depend only on the schema (class hierarchy, field names):
    asked by many rules on every configuration, the same few questions each time."""
    entry = _SCHEMA_MEMOS.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _SCHEMA_MEMOS[id(schema)] = (schema, {})
    return entry[1]


_SCHEMA_MEMOS: dict[int, tuple[Any, dict]] = {}


def value(cfg: EffectiveConfig, path: str, absent: Any = ABSENT) -> Any:
    """The field's value; ``absent`` when it does not exist (parent None, key missing)."""
    result = cfg.value(path)
    return absent if result is ABSENT else result


def specs_path(cfg: EffectiveConfig) -> str:
    return SPECS_06 if knows_field(cfg, "offline_packing_specs") else SPECS_03


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
    """Whether offline (pre-packed dataset) packing is on: ``dataset.enable_offline_packing``
    where the release has it (0.6.x), else packing specs with a positive packed size."""
    if not knows_field(cfg, "enable_offline_packing"):
        present = specs_present(cfg)
        if present is not True:
            return present
        size = cfg.value(f"{SPECS_03}.packed_sequence_size")
        return size > 0 if known(size) and isinstance(size, (int, float)) else UNKNOWN
    flag = value(cfg, "dataset.enable_offline_packing", False)
    return flag if is_known(flag) else UNKNOWN


def in_batch_packing(cfg: EffectiveConfig) -> Any:
    path = in_batch_packing_path(cfg)
    flag = value(cfg, path, False)
    return flag if is_known(flag) else UNKNOWN


def in_batch_packing_path(cfg: EffectiveConfig) -> str:
    return "dataset.enable_in_batch_packing" if knows_field(cfg, "enable_in_batch_packing") \
        else "dataset.pack_sequences_in_batch"


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


@dataclass(slots=True)
class Parallel:
    """The effective parallel sizes of a configuration (``parallel``)."""

    tp: Any
    pp: Any
    cp: Any
    ep: Any
    etp: Any
    vpp: Any
    sp: Any


@per_config
def parallel(cfg: EffectiveConfig) -> Parallel:
    def size(name: str, default: Any = 1) -> Any:
        """A parallel size: a positive int, None where the field allows it, else unknown (a
        null or a string from an override is not a size rules can reason about)."""
        result = value(cfg, _MODEL_PATHS[name], default)
        if is_node(result) or not is_known(result) or (result is None and default is None):
            return UNKNOWN if is_node(result) else result
        return result if _positive_ints(result) else UNKNOWN

    def flag(name: str) -> Any:
        result = value(cfg, _MODEL_PATHS[name], False)
        return result if isinstance(result, bool) or not is_known(result) else UNKNOWN

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
        sp=flag("sequence_parallel"),
    )


# The paths parallel() reads, made once (an f-string makes a new string, hashed anew, per call).
_MODEL_PATHS = {name: f"model.{name}" for name in (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
    "expert_model_parallel_size", "expert_tensor_parallel_size", "virtual_pipeline_model_parallel_size",
    "sequence_parallel")}
# The fields ``parallel`` reads as sizes: a value below 1 is no size (``parallel`` gives unknown).
PARALLEL_SIZE_PATHS = tuple(path for name, path in _MODEL_PATHS.items() if name.endswith("_size"))


def _positive_ints(*values: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values)


# --- CUDA graphs, MoE dispatch and communication overlap ---

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


class CudaGraphs:
    """The effective CUDA graph setup of the model, per Megatron-Bridge line.

    0.6.x: ``model.cuda_graph_impl`` in none/local/transformer_engine/full_iteration, per-layer
    modules in ``model.cuda_graph_modules`` (and the deprecated ``model.cuda_graph_scope``);
    full-iteration capture is ``impl == "full_iteration"`` or ``local`` with "full_iteration" in
    the modules (utils/cuda_graph.py ``is_full_iteration_cuda_graph``).
    0.3.x: ``model.cuda_graph_impl`` in none/local/transformer_engine and ``model.cuda_graph_scope``;
    full-iteration capture is ``local`` with "full_iteration" in the scope."""

    __slots__ = ("impl", "raw_names", "impl_path", "modules_paths")

    def __init__(self, impl: Any, raw_names: Any, impl_path: str, modules_paths: tuple[str, ...]) -> None:
        self.impl = impl
        self.raw_names = raw_names  # every name in modules and scope, including full_iteration
        self.impl_path = impl_path
        self.modules_paths = modules_paths

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


@per_config
def cuda_graphs(cfg: EffectiveConfig) -> CudaGraphs:
    impl = value(cfg, "model.cuda_graph_impl", "none")
    if not knows_field(cfg, "cuda_graph_modules"):
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
    if names is not UNKNOWN:
        names = tuple(names)  # shared by every rule that asks (per_config)
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


def job_gpu(cfg: EffectiveConfig) -> Any:
    """The GPU the job runs on (``mblint.gpus.Gpu``: ``key``, ``major``, ``name_prefix``), where
    its recipe's name says it; else None."""
    return cfg.gpu


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
    name = cfg.type_of("model")
    if name is None:
        return UNKNOWN
    schema = schema_of(cfg)
    memo = per_schema(schema)
    key = ("is_model_class", name, base)
    if key not in memo:
        spec = schema.find_class(name)
        memo[key] = UNKNOWN if spec is None else schema.is_subclass(spec.qualname, base)
    return memo[key]


HYBRID_STACK_BASES = ("MambaModelProvider", "HybridModelProvider")  # the base's name differs by release


def is_hybrid_stack(cfg: EffectiveConfig) -> Any:
    """Whether the model is a hybrid (Mamba) stack, which splits its layers by its own pattern:
    its provider class derives from a Mamba/hybrid provider (UNKNOWN when the class is not known)."""
    answers = [is_model_class(cfg, base) for base in HYBRID_STACK_BASES]
    if True in answers:
        return True
    return UNKNOWN if any(answer is UNKNOWN for answer in answers) else False


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


def ep_overlap_problems(cfg: EffectiveConfig) -> tuple[list[tuple[str, str]], bool]:
    """The prerequisites of expert-parallel A2A overlap (``overlap_moe_expert_parallel_comm``)
    known to fail, as (field, why) pairs, and whether every prerequisite is known: what
    ``CommOverlapConfig.setup()`` asserts of the model (0.6.2 training/comm_overlap.py:478-517),
    bf16/fp16 aside (the mixed-precision recipe sets it at job start)."""
    par = parallel(cfg)
    experts = value(cfg, "model.num_moe_experts", None)
    kind = dispatcher(cfg)
    granularity = value(cfg, "model.recompute_granularity", None)
    method = value(cfg, "model.recompute_method", None)
    num_layers = value(cfg, "model.recompute_num_layers", None)
    modules = value(cfg, "model.recompute_modules", None)
    shared = value(cfg, "model.moe_shared_expert_overlap", False)
    mtp = value(cfg, "model.mtp_num_layers", None)
    problems: list[tuple[str, str]] = []
    if known(par.ep) and par.ep <= 1:
        problems.append(("model.expert_model_parallel_size", f"expert_model_parallel_size is {par.ep} (needs > 1)"))
    if known(experts) and not (isinstance(experts, int) and experts > 1) or experts is None:
        problems.append(("model.num_moe_experts", f"num_moe_experts is {experts} (needs > 1)"))
    if known(kind) and kind not in ("alltoall", "flex"):
        problems.append(("model.moe_token_dispatcher_type",
                         f"moe_token_dispatcher_type is {kind!r} (needs 'alltoall' or 'flex')"))
    if known(par.pp, par.vpp) and par.pp > 1 and par.vpp is None:
        problems.append(("model.pipeline_model_parallel_size",
                         f"pipeline_model_parallel_size is {par.pp} without virtual_pipeline_model_parallel_size"))
    if known(granularity) and granularity == "full":
        problems.append(("model.recompute_granularity", "recompute_granularity is 'full'"))
    for name, current in (("recompute_method", method), ("recompute_num_layers", num_layers)):
        if known(current) and current is not None:
            problems.append((f"model.{name}", f"{name} is {current!r} (needs None)"))
    if known(modules) and isinstance(modules, (list, tuple)) and "moe" in modules:
        problems.append(("model.recompute_modules", f"recompute_modules {list(modules)} contains 'moe'"))
    if known(shared) and shared:
        problems.append(("model.moe_shared_expert_overlap", "moe_shared_expert_overlap is True"))
    allowed = (None, 0, 1) if has_check(cfg, "ep_overlap_allows_mtp_zero") else (None, 1)
    if known(mtp) and mtp not in allowed:
        problems.append(("model.mtp_num_layers", f"mtp_num_layers is {mtp} (at most 1)"))
    all_known = known(par.ep, experts, kind, par.pp, granularity, method, num_layers, modules, shared, mtp) \
        and (par.pp == 1 or known(par.vpp))
    return problems, all_known


# --- datasets, CP/SP collate padding, data parallelism, model family, constructor sites ---

SFT_DATASET_TYPES_06 = ("GPTSFTDatasetConfig", "FinetuningDatasetConfig", "DirectHFSFTDatasetConfig",
                        "EnergonDatasetConfig", "MockVLMSFTDatasetConfig")
COLLATE_DATASET_TYPES_06 = ("DirectHFSFTDatasetConfig", "EnergonDatasetConfig", "MockVLMSFTDatasetConfig")


def eval_context_parallel_size(cfg: EffectiveConfig) -> Any:
    """``dist.eval_context_parallel_size`` (None when unset or when the release has no such field)."""
    if not knows_field(cfg, "eval_context_parallel_size"):
        return None
    result = value(cfg, "dist.eval_context_parallel_size", None)
    return result if not is_node(result) else UNKNOWN


class Alignment:
    """lcm of the CP and SP multiples over the training and eval CP sizes (0.6.2
    ``ConfigContainer.validate``). ``cp_required`` is the lcm of the CP parts alone; ``text``
    e.g. "CP=2 and TP=8 with sequence parallelism need a multiple of lcm(4, 16) = 16"."""

    __slots__ = ("required", "cp_required", "text", "fields")

    def __init__(self, required: int, cp_required: int, text: str, fields: tuple[str, ...]) -> None:
        self.required = required
        self.cp_required = cp_required
        self.text = text
        self.fields = fields


def cp_sp_alignment_all(cfg: EffectiveConfig) -> Any:
    """The CP/SP alignment over {CP, eval CP}; ``UNKNOWN`` if a size is unknown. With
    sequence parallelism unknown (an AutoBridge model of unknown class may turn it on), only
    the CP part, which holds either way: the SP part only adds to it."""
    par = parallel(cfg)
    eval_cp = eval_context_parallel_size(cfg)
    if not known(par.cp, par.tp) or not is_known(eval_cp):
        return UNKNOWN
    sp = known(par.sp) and bool(par.sp)
    if not _positive_ints(par.cp, par.tp) or (eval_cp is not None and not _positive_ints(eval_cp)):
        return UNKNOWN  # a size of 0 or a non-number is reported by other rules, not aligned here
    sizes = [("CP", par.cp)]
    fields = ["model.context_parallel_size", "model.tensor_model_parallel_size", "model.sequence_parallel"]
    if eval_cp is not None and eval_cp != par.cp:
        sizes.append(("eval CP", eval_cp))
        fields.append("dist.eval_context_parallel_size")
    parts, mults, cp_mults = [], [], []
    for label, size in sizes:
        if size > 1:
            parts.append(f"{label}={size}")
            mults.append(2 * size)
            cp_mults.append(2 * size)
    if sp and par.tp > 1:
        for label, size in sizes:
            prefix = f"{label}={size} with " if size > 1 and len(sizes) > 1 else ""
            parts.append(f"{prefix}TP={par.tp} with sequence parallelism")
            mults.append(size * par.tp)
    required = math.lcm(*mults) if mults else 1
    cp_required = math.lcm(*cp_mults) if cp_mults else 1
    if not parts:
        return Alignment(1, 1, "no alignment is needed", tuple(fields))
    subject = " and ".join(parts)
    verb = "needs" if len(parts) == 1 else "need"
    if len(mults) == 1:
        text = f"{subject} {verb} a multiple of {required}"
    else:
        text = f"{subject} {verb} a multiple of lcm({', '.join(str(m) for m in mults)}) = {required}"
    return Alignment(required, cp_required, text, tuple(fields))


def data_parallel_size(cfg: EffectiveConfig, world_size: Any) -> Any:
    """world / (TP*PP*CP), or ``UNKNOWN`` (also when the world size is not divisible)."""
    par = parallel(cfg)
    if world_size is None or not known(par.tp, par.pp, par.cp):
        return UNKNOWN
    if not all(isinstance(v, int) and v > 0 for v in (par.tp, par.pp, par.cp)):
        return UNKNOWN
    model_parallel = par.tp * par.pp * par.cp
    if world_size % model_parallel:
        return UNKNOWN
    return world_size // model_parallel


def model_family_hints(cfg: EffectiveConfig) -> list[tuple[str, str]]:
    """Strings that name the model (lower-cased) with where each came from: the HF model id
    when known, the tokenizer model (recipes set it to the HF id), and the recipe function's
    module and name."""
    hints = []
    for path in ("model.hf_model_id", "tokenizer.tokenizer_model"):
        current = cfg.value(path)
        if known(current) and isinstance(current, str) and current:
            hints.append((current.lower(), path))
    hints.append((f"{cfg.recipe.path.replace(chr(92), '/').rsplit('/', 1)[-1]}::{cfg.recipe.function}".lower(), "recipe"))
    return hints


def constructor_site_field(cfg: EffectiveConfig, path: str) -> str | None:
    """When ``path`` holds a dataclass default from a constructor call in the recipe (e.g.
    ``PackedSequenceSpecs(pad_seq_to_mult=4)`` without a size), a sibling field that the same
    call set explicitly, so a finding can land on that call; None otherwise."""
    origins = cfg.origins(path)
    if not origins or origins[-1].kind != "default":
        return None
    site = origins[-1]
    parent = path.rsplit(".", 1)[0]
    for sibling in cfg.children(parent):
        last = sibling.last_origin
        if last is not None and last.kind != "default" and (last.path, last.line) == (site.path, site.line):
            return sibling.path
    return None


BRIDGE_GPT_DATASET = "megatron.bridge.training.config.GPTDatasetConfig"


def dataset_is(cfg: EffectiveConfig, *bases: str) -> Any:
    """Whether ``dataset``'s class is (a subclass of) one of ``bases`` (qualified or short
    names), read from the schema; ``UNKNOWN`` when the dataset's class is not known."""
    type_name = cfg.type_of("dataset")
    if type_name is None:
        current = cfg.value("dataset")
        return False if current is None or current is ABSENT else UNKNOWN
    schema = schema_of(cfg)
    memo = per_schema(schema)
    key = ("dataset_is", type_name, bases)
    if key not in memo:
        spec = schema.find_class(type_name)
        memo[key] = type_name in bases if spec is None else \
            any(schema.is_subclass(spec.qualname, base) for base in bases)
    return memo[key]


def canonical_seq_datasets(cfg: EffectiveConfig) -> tuple[str, ...]:
    """The dataset classes whose seq_length ``ConfigContainer.validate`` compares with the model's."""
    if not sft_dataset_family(cfg):
        return (BRIDGE_GPT_DATASET, "FinetuningDatasetConfig")
    return (BRIDGE_GPT_DATASET, "GPTSFTDatasetConfig", *COLLATE_DATASET_TYPES_06)


# --- problems more than one rule reports ---
# A finding that may repeat another rule's names its fault with ``ctx.report(..., problem=...)``;
# of two findings of one problem on a job the engine keeps the one of the rule that
# ``supersedes`` the other (mblint/arbitration.py). The names are the faults, not rule ids.

NAME_GPUS_BELOW_LAYOUT = "the GPU count in the recipe name is below the layout's minimum GPU count"
WORLD_NOT_DIVISIBLE_BY_DENSE_GRID = "the world size is not divisible by TP*PP*CP"
SEQ_LENGTHS_DIFFER = "model.seq_length and the dataset's seq_length differ"
MAX_STEPS_NOT_POSITIVE = "scheduler.max_steps is 0 or less"
UNPADDED_PACKS_UNDER_GRAPHS = "offline packing under CUDA graphs without pad_to_max_length"


# --- dataset families, Megatron-FSDP, the minimum GPU count, whole numbers ---

# Dataset classes ConfigContainer.validate() treats as fine-tuning data for the CP>1 checks
# (0.6.2 megatron/bridge/training/config.py:1440-1446 plus the deprecated alias
# FinetuningDatasetConfig(GPTSFTDatasetConfig), data/builders/gpt_sft.py:240;
# 0.3.1 training/config.py:1549 FinetuningDatasetConfig and its subclass HFDatasetConfig,
# data/builders/hf_dataset.py:55).
SFT_DATASETS_06 = frozenset({"GPTSFTDatasetConfig", "FinetuningDatasetConfig", "DirectHFSFTDatasetConfig",
                             "EnergonDatasetConfig", "MockVLMSFTDatasetConfig"})
SFT_DATASETS_03 = frozenset({"FinetuningDatasetConfig", "HFDatasetConfig"})


def sft_dataset_family(cfg: EffectiveConfig) -> bool:
    """Whether the release's fine-tuning datasets are the GPTSFTDatasetConfig family (0.6.x:
    FinetuningDatasetConfig became its deprecated alias) rather than FinetuningDatasetConfig's."""
    return knows_class(cfg, "GPTSFTDatasetConfig")


def seq_length_disagrees(cfg: EffectiveConfig) -> bool:
    """True when model.seq_length and the dataset's seq_length, which validate() asserts equal,
    are both known and differ: advice computed from either rests on an error
    (``SEQ_LENGTHS_DIFFER``)."""
    if dataset_is(cfg, *canonical_seq_datasets(cfg)) is not True:
        return False
    model_seq, data_seq = value(cfg, "model.seq_length"), value(cfg, "dataset.seq_length")
    return int_values(model_seq, data_seq) and model_seq != data_seq


def finetuning_dataset(cfg: EffectiveConfig) -> Any:
    """True when validate() treats the dataset as fine-tuning data, False when it does not,
    UNKNOWN when the dataset's class is unknown."""
    name = cfg.type_of("dataset")
    if not name:
        return UNKNOWN
    names = SFT_DATASETS_06 if sft_dataset_family(cfg) else SFT_DATASETS_03
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


WORLD_SIZE_TAG = "world-size"  # the tag of the rules that check the layout against the world size


def world_size_gap(cfg: EffectiveConfig, ctx: RuleContext) -> list[str] | None:
    """The ids of the job's rules that need the world size (tag ``world-size``) when the world
    size is unknown where the parallel layout (TP, PP, CP) is known, which is the problem
    ``WORLD_SIZE_UNKNOWN``; None when there is no such gap (the checks that need the world
    size need these too)."""
    if ctx.world_size is not None:
        return None
    par = parallel(cfg)
    if not int_values(par.tp, par.pp, par.cp):
        return None
    return sorted(rule.id for rule in ctx.planned_rules if WORLD_SIZE_TAG in (rule.tags or ()))


def is_number(value: Any) -> bool:
    """Known, present, and a plain int or float (bool excluded): a value a range check can
    compare."""
    return type(value) not in NOT_PLAIN_TYPES and isinstance(value, (int, float)) and not isinstance(value, bool)


def int_values(*values: Any) -> bool:
    """Known, present, and plain ints (bool excluded)."""
    for v in values:
        if type(v) in NOT_PLAIN_TYPES or not isinstance(v, int) or isinstance(v, bool):
            return False
    return True


# --- who set a field, and what the release's schema has ---

SET_KINDS = ("set", "override")


def assigned(cfg: EffectiveConfig, path: str) -> bool:
    """True when ``path`` was written by a recipe line or an override (not left at a
    dataclass default, and not only set by something mblint cannot follow)."""
    return cfg.last_kind(path) in SET_KINDS


def from_dotlist(cfg: EffectiveConfig, path: str) -> bool:
    """True when the last write of ``path`` is a command-line ``key=value`` override."""
    origin = cfg.last_origin(path)
    return origin is not None and origin.kind == "override" and cfg.from_command_line(origin)


def has_overrides(cfg: EffectiveConfig) -> bool:
    """True when an override file or a dotlist was applied: the configuration is then the one
    being launched, not a recipe the launcher still completes."""
    return cfg.overrides_applied


def schema_of(cfg: EffectiveConfig):
    schema = cfg.schema
    return schema if schema is not None else load_schema(cfg.schema_version)


def knows_field(cfg: EffectiveConfig, name: str) -> bool:
    """Whether some config class of the release being linted has a field ``name``: rules ask
    what the release has, not which release it is."""
    memo = per_schema(schema_of(cfg))
    names = memo.get("field names")
    if names is None:
        names = memo["field names"] = frozenset(schema_of(cfg).field_names())
    return name in names


def knows_class(cfg: EffectiveConfig, name: str) -> bool:
    memo = per_schema(schema_of(cfg))
    key = ("knows class", name)
    if key not in memo:
        memo[key] = schema_of(cfg).find_class(name) is not None
    return memo[key]


def has_check(cfg: EffectiveConfig, name: str) -> bool:
    """Whether the release's code runs the check ``name`` (``mblint.schema.facts.SOURCE_CHECKS``)."""
    return schema_of(cfg).has_check(name)


def release_fact(cfg: EffectiveConfig, name: str) -> Any:
    """A fact the schema records of the release being linted, read from its source
    (``mblint.schema.runtime_facts``: "flex_backend_gpus", "collate_pad_multiple"); None when
    the release's code does not say it in a form mblint reads."""
    return schema_of(cfg).facts.get(name)


def allowed_values(cfg: EffectiveConfig, field: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
    """What Megatron-Core accepts for ``field`` in the release being linted (``fallback`` when
    the schema does not record it)."""
    found = schema_of(cfg).allowed_values(field)
    return fallback if found is None else found


def class_fields(cfg: EffectiveConfig, node: str) -> frozenset[str] | None:
    """Field names of the config class at object node ``node`` ("model", "ddp", ...), or None
    when the node is no object, a dict, or a class the schema does not know. Kept per
    configuration: rules ask it of the same few nodes."""
    memo = cfg.derived
    key = ("class_fields", node)
    found = memo.get(key, _NOT_YET)
    if found is _NOT_YET:
        type_name = cfg.type_of(node)
        found = memo[key] = (None if type_name is None or type_name == "dict"
                             else _declared_fields(schema_of(cfg), type_name))
    return found


def _declared_fields(schema, type_name: str) -> frozenset[str] | None:
    memo = per_schema(schema)
    key = ("fields", type_name)
    if key not in memo:
        spec = schema.find_class(type_name)
        memo[key] = frozenset(spec.fields) if spec is not None else None
    return memo[key]


# --- CUDA graph module names and recompute module lists ---

GRAPH_MODULE_NAMES = ("attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba")


def graph_module_names(raw: Any) -> Any:
    """Names of one CUDA graph scope/modules value as Megatron-Core reads them (``"full"``
    kept, so a mixed ``["full", "attn"]`` can be reported), UNKNOWN when not known."""
    if raw is ABSENT or raw is None:
        return []
    if isinstance(raw, str) and raw == "full":
        return ["full"]
    return _graph_names(raw)


def full_cudagraph(graphs: CudaGraphs) -> Any:
    """Megatron-Core's ``full_cudagraph`` in the recompute checks: full-iteration capture or an
    empty per-layer module list (whole-layer capture)."""
    full = graphs.full_iteration
    modules = graphs.modules
    if full is True:
        return True
    if not known(full) or modules is UNKNOWN:
        return UNKNOWN
    return not modules


def recompute_module_list(cfg: EffectiveConfig) -> Any:
    """``model.recompute_modules`` with Megatron-Core's default (None -> ["core_attn"])."""
    modules = value(cfg, "model.recompute_modules", None)
    if modules is None:
        return ["core_attn"]
    if not known(modules) or not isinstance(modules, (list, tuple)):
        return UNKNOWN
    if not all(isinstance(m, str) for m in modules):
        return UNKNOWN
    return list(modules)


# --- which value a finding points at when several disagree ---

def is_round(n: Any, unit: int = 16) -> bool:
    """A value people actually configure: a power of two or a multiple of ``unit``. When two
    settings disagree and exactly one of them is not round (seq_length 1000 against 8192,
    global_batch_size 100 against DP 16), that one is the likely edit."""
    return isinstance(n, int) and not isinstance(n, bool) and n > 0 and (n & (n - 1) == 0 or n % unit == 0)


def last_set_of(cfg: EffectiveConfig, paths) -> str | None:
    """The path among ``paths`` written last in program order by a recipe line or override."""
    best, best_seq = None, -1
    for path in paths:
        origin = cfg.last_origin(path)
        if origin is not None and origin.kind in SET_KINDS and origin.seq > best_seq:
            best, best_seq = path, origin.seq
    return best


def non_dividing_factor(cfg: EffectiveConfig, world: int, paths_values) -> str | None:
    """For ``world % (a*b*c) != 0``: the factor that on its own does not divide the world size
    (TP=3 on 8 GPUs) is the culprit, rather than whichever factor happens to be set last.
    ``paths_values`` is a list of (path, value); returns the last-set culprit or None."""
    culprits = [path for path, v in paths_values if isinstance(v, int) and v > 0 and world % v != 0]
    return last_set_of(cfg, culprits) if culprits else None


# --- mixed precision, environment variables and selective recompute ---

@per_config
def mixed_precision_kind(cfg: EffectiveConfig) -> Any:
    """"object" when ``cfg.mixed_precision`` is a MixedPrecisionConfig mblint evaluated, "none"
    when it is None (or absent), "name" when it is a recipe name resolved only at job start,
    UNKNOWN otherwise."""
    if cfg.type_of("mixed_precision") is not None:
        return "object"
    current = cfg.value("mixed_precision")
    if current is None or current is ABSENT:
        return "none"
    if known(current) and isinstance(current, str):
        return "name"
    return UNKNOWN


@per_config
def mixed_precision_fields(cfg: EffectiveConfig) -> frozenset[str]:
    return _declared_fields(schema_of(cfg), "MixedPrecisionConfig") or frozenset()


def precision_value(cfg: EffectiveConfig, owner: str, name: str) -> tuple[Any, str]:
    """The value of ``owner.name`` (owner "model", "optimizer" or "ddp") as validate() sees it
    after ``MixedPrecisionConfig.setup()`` copied every mixed-precision field onto the configs
    that have it, and ``finalize()`` filled a None fp8_param/fp4_param from its *_param_gather
    partner. Returns (value, the field that decides it); UNKNOWN when a recipe name (resolved
    only at job start) or an unknown value decides it."""
    kind = mixed_precision_kind(cfg)
    target = f"{owner}.{name}"
    owner_fields = class_fields(cfg, owner)
    if owner_fields is not None and name not in owner_fields:
        return ABSENT, target
    if name in mixed_precision_fields(cfg):
        if kind == "object":
            path = f"mixed_precision.{name}"
            result = cfg.value(path)
            if name in ("fp8_param", "fp4_param") and result is None:
                result = cfg.value(f"{path}_gather")
            return (result if is_known(result) and not is_node(result) else UNKNOWN), path
        if kind != "none":
            return UNKNOWN, "mixed_precision"
    result = cfg.value(target)
    return (result if is_known(result) and not is_node(result) else UNKNOWN), target


def str_list(raw: Any) -> Any:
    """A list of strings (None -> None); UNKNOWN when an element or the value is unknown."""
    if raw is None or raw is ABSENT:
        return None
    if not is_known(raw) or is_node(raw) or not isinstance(raw, (list, tuple)):
        return UNKNOWN
    if not all(isinstance(item, str) for item in raw):
        return UNKNOWN
    return list(raw)


def env_var(cfg: EffectiveConfig, name: str) -> Any:
    """Environment variable ``name`` as Megatron-Bridge's checks read it (``os.getenv``, after
    ``apply_environment_variables`` exported ``cfg.env_vars`` with ``os.environ.setdefault``,
    0.6.x): the job's launch environment's value when its launch script sets it (a value the
    launch sets wins over ``cfg.env_vars``; UNKNOWN when unknown, or after something in the
    script that may set variables mblint cannot read), else ``cfg.env_vars[name]`` as the string
    exported. ABSENT when neither sets it (the user's own shell is not seen) or, without a
    launch that sets it, where the release has no ``env_vars`` field. ``env_var_origin`` says
    where the launch set it."""
    environment = cfg.environment
    launched = environment.get(name) if environment is not None else None
    if launched is not None:
        return launched[0]
    if not knows_field(cfg, "env_vars"):
        return ABSENT
    current = cfg.value(f"env_vars.{name}")
    if current is ABSENT or not is_known(current) or is_node(current):
        return current if current is ABSENT else UNKNOWN
    return str(current)


def env_var_origin(cfg: EffectiveConfig, name: str) -> Origin | None:
    """Where the job's launch script set environment variable ``name`` (an ``export``, an
    assignment in front of the launch command, an ``#SBATCH --export``): the place of a finding
    on the value ``env_var`` gives. None when the launch does not set it (the value, if any, is
    ``cfg.env_vars``')."""
    environment = cfg.environment
    launched = environment.get(name) if environment is not None else None
    return launched[1] if launched is not None else None


# When the schema records no allowed set (a schema written by hand for a test): Megatron-Core
# 0.16's, the smallest.
RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")


def recompute_modules_allowed(cfg: EffectiveConfig) -> tuple[str, ...]:
    """The selective-recompute module names the release accepts: Megatron-Core's
    ``TransformerConfig.__post_init__`` set, plus the names the release's own recipes use
    (0.5.x and 0.6.x DeepSeek-V4 recipes recompute "mhc", from a Megatron-Core newer than the pin)."""
    return allowed_values(cfg, "recompute_modules", RECOMPUTE_MODULES)


def selective_recompute_modules(cfg: EffectiveConfig) -> Any:
    """The module list Megatron-Core validates when ``recompute_granularity == "selective"``
    (None becomes ["core_attn"]); None when recompute is not selective; UNKNOWN otherwise."""
    granularity = value(cfg, "model.recompute_granularity", None)
    if not is_known(granularity) or is_node(granularity):
        return UNKNOWN
    if granularity != "selective":
        return None
    modules = str_list(value(cfg, "model.recompute_modules", None))
    if modules is None:
        return ["core_attn"]
    return modules


# --- preconditions: shared first early returns (Rule.precondition) ---

def precondition(test):
    """A test of the configuration that several rules declare as their ``precondition``: the
    engine skips those rules where it is False. Each rule that declares one returns before
    reporting whenever the test is False (including when the value is unknown). Computed once
    per configuration (``per_config``)."""
    once = per_config(test)
    once.is_precondition = True
    return once


@precondition
def cuda_graphs_known_on(cfg: EffectiveConfig) -> bool:
    """CUDA graphs are known to be on (``cuda_graphs(cfg).on is True``)."""
    return cuda_graphs(cfg).on is True


@precondition
def offline_packing_known_on(cfg: EffectiveConfig) -> bool:
    return offline_packing(cfg) is True


@precondition
def in_batch_packing_known_on(cfg: EffectiveConfig) -> bool:
    return in_batch_packing(cfg) is True


@precondition
def some_packing_known_on(cfg: EffectiveConfig) -> bool:
    """Offline or in-batch packing is known to be on."""
    return offline_packing_known_on(cfg) or in_batch_packing_known_on(cfg)


@precondition
def hybridep_known_on(cfg: EffectiveConfig) -> bool:
    return hybridep(cfg) is True


@precondition
def cpu_offloading_known_on(cfg: EffectiveConfig) -> bool:
    """Layer-wise activation CPU offloading (``model.cpu_offloading``) is known to be True."""
    return value(cfg, "model.cpu_offloading", False) is True


@precondition
def fine_grained_offloading_known_on(cfg: EffectiveConfig) -> bool:
    return value(cfg, "model.fine_grained_activation_offloading", False) is True


@precondition
def context_parallel_known_above_1(cfg: EffectiveConfig) -> bool:
    """``model.context_parallel_size`` is a known size greater than 1 (``parallel(cfg).cp`` is a
    positive int or unknown)."""
    cp = parallel(cfg).cp
    return int_values(cp) and cp > 1


@precondition
def selective_recompute_modules_known(cfg: EffectiveConfig) -> bool:
    """Recompute is selective with a known, non-empty module list."""
    modules = selective_recompute_modules(cfg)
    return known(modules) and bool(modules)


# --- DistTrain and pipeline layouts ---


def dist_train(cfg):
    """Whether the Qwen3-VL DistTrain path (its own language world size) may be on. The flag
    exists only on Qwen3-VL providers and defaults to False (DistTrainConfig); an HF-derived
    provider leaves it unknown, so only an assignment the recipe made counts."""
    path = "model.dist_train.use_dist_train"
    flag = value(cfg, path, False)
    if flag is True:
        return True
    if flag is False:
        return False
    return any(o.kind not in ("default", "unknown") for o in cfg.origins(path))


_LAYOUT_GROUP = re.compile(r"\(([^)]+)\)\*(\d+)")
_LAYOUT_SINGLE = re.compile(r"(.)\*(\d+)")
_LAYER_LETTERS = {"E": "embedding", "L": "loss", "t": "decoder", "m": "mtp"}
MAX_LAYOUT_LAYERS = 100_000  # a longer unrolled layout is not read (bounded work on untrusted input)


def layout_stages(layout: Any) -> list[list[str]] | None:
    """The stages of a ``pipeline_model_parallel_layout``, each a list of layer type names
    ("embedding", "decoder", "mtp", "loss"), split as Megatron-Core's
    ``PipelineParallelLayerLayout`` does: a string's ``|`` separate stages, ``(...)*n`` and
    ``x*n`` repeat, commas are cosmetic, E/L/t/m name the layers; a list has one row per stage.
    None when it cannot be told (unknown, malformed, or too long to unroll)."""
    if isinstance(layout, (list, tuple)):
        if not all(isinstance(row, (list, tuple)) and all(isinstance(x, str) for x in row) for row in layout):
            return None
        return [[x.strip().lower() for x in row] for row in layout]
    if not isinstance(layout, str):
        return None
    text = layout.replace(",", "")
    for pattern in (_LAYOUT_GROUP, _LAYOUT_SINGLE):
        grown = sum(len(m.group(1)) * (int(m.group(2)) - 1) for m in pattern.finditer(text))
        if len(text) + grown > MAX_LAYOUT_LAYERS * 4:
            return None
        text = pattern.sub(lambda m: m.group(1) * int(m.group(2)), text)
    if any(letter not in _LAYER_LETTERS for letter in text.replace("|", "")):
        return None
    return [[_LAYER_LETTERS[letter] for letter in stage] for stage in text.split("|")]


# ----- coverage: where the analysis of a configuration stopped ---------------------------


def gaps(cfg: EffectiveConfig, kind: str) -> list[Gap]:
    """The places of ``kind`` (``UNFOLLOWED_CALL``, ``UNFOLLOWED_STATEMENT``, ``MODEL_CONFIG_MISSING``) where mblint's
    analysis of ``cfg`` stopped, one per place, in program order."""
    seen: set = set()
    found = []
    for gap in cfg.gaps:
        if gap.kind == kind and gap.origin is not None and (gap.origin, gap.subject) not in seen:
            seen.add((gap.origin, gap.subject))
            found.append(gap)
    return found


def report_gap(ctx: RuleContext, cfg: EffectiveConfig, gap: Gap, message: str) -> Finding:
    """A finding where ``gap`` stopped the analysis; when that place is in a file that is not
    linted (an installed Megatron-Bridge, which code scanning cannot annotate), at the recipe's
    call that led there instead, the place itself related."""
    caller = coverage_reached_from(cfg, gap.origin, ctx.editable_paths)
    if caller is None:
        return ctx.report(cfg, message, location=gap.origin)
    finding = ctx.report(cfg, message, location=caller)
    return dataclasses.replace(finding, related=(Related(gap.origin, "the analysis stopped here"), *finding.related))
