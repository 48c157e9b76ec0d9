"""The resolver's specification, as tests: every recipe pattern of issue 2 / domain notes (b),
plus YAML and dotlist overrides (c), on the fixture project in ``fixtures/resolve``.

Expected values live in ``tests/resolve_expectations.py``; each was worked out by hand from the
fixture files (arithmetic in comments there and in the fixtures) and dataclass defaults read in
the Megatron-Bridge sources (cited file:line). ``scripts/crosscheck_fixtures_with_mb.py``
confirmed every known 0.6 expectation against real Megatron-Bridge 0.6.2.

Origins: lines are looked up through unique ``# @marker`` comments in the fixtures, so editing
a fixture does not silently break a hard-coded line number.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from mblint.api import resolve_recipe
from mblint.model import ABSENT as MODEL_ABSENT
from mblint.model import EffectiveConfig, is_known

from tests.resolve_expectations import (
    ABSENT,
    CASES,
    CASES_BY_ID,
    COMMON,
    FIXTURE_ROOT,
    H100,
    LEGACY03,
    PERF,
    SFT_YAML,
    UNKNOWN,
    UNKNOWNS,
    Approx,
    marker_line,
)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def resolved(case_id: str) -> EffectiveConfig:
    case = CASES_BY_ID[case_id]
    return resolve_recipe(
        case.path,
        case.function,
        search_paths=[FIXTURE_ROOT],
        version=case.version,
        override_files=case.override_files,
        dotlist=case.dotlist,
    )


def assert_value(cfg: EffectiveConfig, path: str, expected) -> None:
    value = cfg.value(path)
    if expected is UNKNOWN:
        assert not is_known(value), f"{path}: expected unknown, resolved to {value!r}"
        return
    if expected is ABSENT:
        assert value is MODEL_ABSENT, f"{path}: expected absent, got {value!r}"
        return
    assert is_known(value), f"{path}: expected {expected!r}, got unknown {value!r}"
    if isinstance(expected, Approx):
        assert isinstance(value, float) and value == pytest.approx(expected.value, rel=1e-9), (path, value)
    elif isinstance(expected, list):
        assert isinstance(value, (list, tuple)) and list(value) == expected, (path, value)
    else:
        # type check too: True == 1 and 1 == 1.0 must not pass for each other
        assert value == expected and type(value) is type(expected), f"{path}: expected {expected!r}, got {value!r}"


def last_origin(cfg: EffectiveConfig, path: str):
    field = cfg.get(path)
    assert field is not None, f"{path} not resolved"
    assert field.origins, f"{path} has no origin"
    return field.origins[-1]


def assert_set_at(cfg: EffectiveConfig, path: str, file: Path, marker: str) -> None:
    """The value of ``path`` took effect at the line of ``# @marker`` in ``file``."""
    origin = last_origin(cfg, path)
    assert Path(origin.path).name == file.name, f"{path}: last origin in {origin.path}, expected {file.name}"
    assert origin.line == marker_line(file, marker), f"{path}: last origin line {origin.line}, expected @{marker}"


def origin_lines(cfg: EffectiveConfig, path: str, file: Path) -> list[int]:
    field = cfg.get(path)
    return [o.line for o in (field.origins if field else ()) if Path(o.path).name == file.name]


# ---------------------------------------------------------------------------------------------
# 1. every hand-computed value, one test per (case, field)
# ---------------------------------------------------------------------------------------------

VALUE_PARAMS = [
    pytest.param(case.id, path, expected, id=f"{case.id}:{path}")
    for case in CASES
    for path, expected in case.expected.items()
]
TYPE_PARAMS = [
    pytest.param(case.id, path, expected, id=f"{case.id}:type({path or 'root'})")
    for case in CASES
    for path, expected in case.types.items()
]


@pytest.mark.parametrize(("case_id", "path", "expected"), VALUE_PARAMS)
def test_expected_value(case_id, path, expected):
    assert_value(resolved(case_id), path, expected)


@pytest.mark.parametrize(("case_id", "path", "expected"), TYPE_PARAMS)
def test_expected_type(case_id, path, expected):
    assert resolved(case_id).type_of(path) == expected


# ---------------------------------------------------------------------------------------------
# 2. seed builder + attribute assignment (3-level paths), cross-module seed, provenance
# ---------------------------------------------------------------------------------------------


def test_seed_then_assignment_origins():
    cfg = resolved("sft")
    assert_set_at(cfg, "model.tensor_model_parallel_size", H100, "sft-tp")
    assert_set_at(cfg, "dataset.offline_packing_specs.packed_sequence_size", H100, "sft-pss")  # 3-level path
    assert_set_at(cfg, "dataset.seq_length", H100, "sft-ds-seq")
    assert_set_at(cfg, "model.seq_length", H100, "sft-model-seq")
    assert_set_at(cfg, "train.global_batch_size", H100, "sft-gbs")
    assert_set_at(cfg, "scheduler.lr_warmup_iters", H100, "sft-warmup")
    # values that only the seed builder (another module) set point into common.py
    assert_set_at(cfg, "train.micro_batch_size", COMMON, "seed-train")
    assert_set_at(cfg, "dataset.offline_packing_specs.pad_seq_to_mult", COMMON, "seed-pad")
    assert_set_at(cfg, "dataset.dataset_kwargs.pad_to_max_length", COMMON, "seed-kwargs")


def test_seed_value_then_overwritten_keeps_ordered_chain():
    """packed_sequence_size: set in the seed (common.py), then in the recipe (h100.py): both
    places in order, last one took effect."""
    cfg = resolved("sft")
    field = cfg.get("dataset.offline_packing_specs.packed_sequence_size")
    files = [Path(o.path).name for o in field.origins]
    assert "common.py" in files and files[-1] == "h100.py"
    assert files.index("common.py") < len(files) - 1


def test_origins_are_well_formed():
    cfg = resolved("sft")
    for path, field in cfg.fields.items():
        for origin in field.origins:
            assert origin.line >= 1 and origin.column >= 1, (path, origin)
            assert (origin.end_line, origin.end_column) >= (origin.line, origin.column), (path, origin)


# ---------------------------------------------------------------------------------------------
# 3. order-sensitive reads: `if cfg.model.context_parallel_size > 1` before CP is set
# ---------------------------------------------------------------------------------------------


def test_read_before_later_assignment_uses_value_at_that_point():
    cfg = resolved("sft")
    # CP was 1 (provider default) at the `if`, so pad_seq_to_mult keeps the seed's 1, not 2*2=4
    assert cfg.value("dataset.offline_packing_specs.pad_seq_to_mult") == 1
    assert cfg.value("dataset.offline_packing_specs.pad_seq_to_mult") != 4
    assert marker_line(H100, "sft-untaken") not in origin_lines(cfg, "dataset.offline_packing_specs.pad_seq_to_mult", H100)
    # ...and CP itself ends at 2, set after the `if`
    assert cfg.value("model.context_parallel_size") == 2
    assert_set_at(cfg, "model.context_parallel_size", H100, "sft-cp")


def test_read_before_later_assignment_legacy_03():
    cfg = resolved("v03")
    assert cfg.value("dataset.packed_sequence_specs.pad_seq_to_mult") == 1  # not 2 * 2
    assert_set_at(cfg, "model.context_parallel_size", LEGACY03, "v03-cp")
    assert_set_at(cfg, "dataset.packed_sequence_specs.packed_sequence_size", LEGACY03, "v03-pss")


def test_comparison_of_cfg_fields_read_back():
    cfg = resolved("sft")
    # cfg.model.sequence_parallel = cfg.model.tensor_model_parallel_size > 1, TP already 2
    assert cfg.value("model.sequence_parallel") is True
    assert_set_at(cfg, "model.sequence_parallel", H100, "sft-sp")


# ---------------------------------------------------------------------------------------------
# 4. HF models: architecture unknown, everything else provider defaults
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", ["sft", "pretrain", "peft", "kwargs_from_none"])
def test_hf_architecture_fields_unknown(case_id):
    cfg = resolved(case_id)
    for path in ("model.num_layers", "model.hidden_size", "model.num_attention_heads", "model.vocab_size"):
        assert not is_known(cfg.value(path)), path
    assert cfg.value("model.calculate_per_token_loss") is False


def test_hf_model_seq_length_unknown_unless_set():
    # AutoBridge maps HF max_position_embeddings -> seq_length (model_bridge.py:446): the real
    # value for Meta-Llama-3-8B is 8192, not GPTModelProvider's 1024 default.
    assert not is_known(resolved("kwargs_from_none").value("model.seq_length"))
    assert resolved("kwargs_from_none").value("model.seq_length") != 1024
    assert resolved("sft").value("model.seq_length") == 8192  # set by the recipe


def test_get_model_config_parallel_defaults():
    # pretrain uses .get_model_config(); TP/PP are assigned, CP and per-token loss are defaults
    cfg = resolved("pretrain")
    assert cfg.value("model.context_parallel_size") == 1
    assert_set_at(cfg, "model.context_parallel_size", H100, "pre-cp")
    assert cfg.value("model.expert_model_parallel_size") == 1


# ---------------------------------------------------------------------------------------------
# 5. locals, constants, arithmetic, builtins, boolean logic
# ---------------------------------------------------------------------------------------------


def test_arithmetic_origins():
    cfg = resolved("pretrain")
    assert_set_at(cfg, "train.global_batch_size", H100, "pre-gbs")
    assert_set_at(cfg, "dataset.seq_length", H100, "pre-seq")
    assert_set_at(cfg, "ddp.overlap_grad_reduce", H100, "pre-ogr")  # seed said True, recipe False


def test_and_or_return_operands_not_bools():
    cfg = resolved("pretrain")
    assert cfg.value("logger.wandb_exp_name") == "llama3-8b-pretrain"  # None or "..."
    assert cfg.value("logger.wandb_project") is None  # None and "...": the first operand
    assert cfg.value("logger.wandb_project") != "never-this"


def test_integer_results_stay_integers():
    cfg = resolved("pretrain")
    for path in ("train.global_batch_size", "dataset.seq_length", "checkpoint.save_interval", "validation.eval_iters"):
        assert type(cfg.value(path)) is int, path


# ---------------------------------------------------------------------------------------------
# 6. helpers mutating cfg, recipes from recipes, wrappers
# ---------------------------------------------------------------------------------------------


def test_mutating_helpers_origins_point_into_helper():
    cfg = resolved("sft_cp4")
    assert_set_at(cfg, "model.context_parallel_size", COMMON, "helper-cp")
    assert_set_at(cfg, "dataset.offline_packing_specs.pad_seq_to_mult", COMMON, "helper-align")
    assert_set_at(cfg, "train.global_batch_size", H100, "cp4-gbs")
    # the chain keeps the base recipe's CP=2 assignment before the helper's
    assert marker_line(H100, "sft-cp") in origin_lines(cfg, "model.context_parallel_size", H100)


def test_helper_keyword_defaults_overwrite():
    cfg = resolved("sft_tp8")
    assert cfg.value("model.context_parallel_size") == 1  # helper's default cp=1, base had 2
    assert cfg.value("model.context_parallel_size") != 2


def test_imported_recipe_with_alias_and_wrapper():
    assert_set_at(resolved("perf_pretrain"), "train.micro_batch_size", PERF, "perf-mbs")
    assert_set_at(resolved("perf_gbs"), "train.global_batch_size", COMMON, "wrapper-gbs")
    assert resolved("perf_gbs").value("train.global_batch_size") != 64  # not the base recipe's
    assert_set_at(resolved("perf_sft"), "dataset.offline_packing_specs.pad_seq_to_mult", PERF, "perf-pad")


def test_project_root_found_without_search_paths():
    """fixtures/resolve is the folder above the top-level package `myrecipes`."""
    cfg = resolve_recipe(PERF, "perf_llama3_8b_gbs_config", version="0.6")
    assert cfg.value("train.global_batch_size") == 768
    assert cfg.value("dataset.seq_length") == 12288  # from the imported recipe in h100.py


def test_version_detected_for_06_recipe():
    cfg = resolve_recipe(H100, "llama3_8b_sft_config", search_paths=[FIXTURE_ROOT])
    assert cfg.value("dataset.offline_packing_specs.pad_seq_to_mult") == 1
    assert cfg.value("dataset.enable_offline_packing") is True


# ---------------------------------------------------------------------------------------------
# 7. parameters, `if` on known values, elif
# ---------------------------------------------------------------------------------------------


def test_known_condition_takes_one_branch_only():
    cfg = resolved("peft")
    assert cfg.value("model.context_parallel_size") == 1
    assert marker_line(H100, "peft-untaken") not in origin_lines(cfg, "model.context_parallel_size", H100)
    assert cfg.value("dataset.offline_packing_specs.pad_seq_to_mult") != 16
    assert_set_at(cfg, "dataset.offline_packing_specs.pad_seq_to_mult", H100, "peft-pad")
    assert_set_at(cfg, "optimizer.lr", H100, "peft-lr")
    assert cfg.value("optimizer.lr") not in (1e-4, 3e-4)


def test_parameter_without_default_is_unknown():
    cfg = resolved("custom")
    assert not is_known(cfg.value("train.global_batch_size"))
    assert cfg.get("train.global_batch_size") is not None and not cfg.get("train.global_batch_size").known
    assert cfg.value("dataset.seq_length") == 4096  # the other parameter has a default


# ---------------------------------------------------------------------------------------------
# 8. dicts: ** splats, subscript stores; chained assignment
# ---------------------------------------------------------------------------------------------


def test_dict_splat_and_subscript_origins():
    cfg = resolved("dicts")
    assert_set_at(cfg, "env_vars.CUDA_DEVICE_MAX_CONNECTIONS", H100, "env")
    assert_set_at(cfg, "env_vars.NCCL_ALGO", H100, "env")
    assert_set_at(cfg, "env_vars.TORCH_NCCL_AVOID_RECORD_STREAMS", H100, "env-sub")
    assert_set_at(cfg, "dataset.dataset_kwargs.prompt_template", H100, "kwargs-splat")
    assert_set_at(cfg, "dataset.dataset_kwargs.pad_to_max_length", H100, "kwargs-sub")
    assert cfg.value("env_vars.CUDA_DEVICE_MAX_CONNECTIONS") != 1  # the splat's value lost


def test_chained_assignment_sets_both_targets():
    cfg = resolved("dicts")
    assert_set_at(cfg, "rng.te_rng_tracker", H100, "chained")
    assert_set_at(cfg, "model.use_te_rng_tracker", H100, "chained")


# ---------------------------------------------------------------------------------------------
# 9. constructors with class defaults; tuple unpacking
# ---------------------------------------------------------------------------------------------


def test_constructor_replaces_whole_object():
    cfg = resolved("ctor_defaults")
    assert_set_at(cfg, "dataset.offline_packing_specs.packed_sequence_size", H100, "ctor-pss")
    assert_set_at(cfg, "validation.eval_interval", H100, "ctor-val")
    # nothing of the old objects survives: seed's eval_iters 32, rng seed 5678, beta2 0.95
    assert cfg.value("validation.eval_iters") != 32
    assert cfg.value("rng.seed") != 5678
    assert cfg.value("optimizer.adam_beta2") != 0.95


def test_tuple_unpacking_assigns_each_element():
    cfg = resolved("opt_factory")
    assert cfg.type_of("optimizer") == "OptimizerConfig"
    assert cfg.type_of("scheduler") == "SchedulerConfig"
    assert cfg.value("optimizer.lr") != 5e-6  # the seed's optimizer is gone


# ---------------------------------------------------------------------------------------------
# 10. `if` on unknown values, early return
# ---------------------------------------------------------------------------------------------


def test_unknown_condition_merges_branches():
    cfg = resolved("branches")
    assert cfg.get("train.micro_batch_size").known
    assert not cfg.get("train.global_batch_size").known
    assert not is_known(cfg.value("model.recompute_granularity"))
    assert_set_at(cfg, "validation.eval_iters", H100, "branches-after")


def test_early_return_stops_evaluation():
    cfg = resolved("early_return")
    assert_set_at(cfg, "train.global_batch_size", H100, "early-gbs")
    assert_set_at(cfg, "train.train_iters", H100, "early-iters")
    assert cfg.value("train.global_batch_size") != 1024
    assert cfg.value("train.train_iters") != 99999


# ---------------------------------------------------------------------------------------------
# 11. loops, unmodelled imports and calls
# ---------------------------------------------------------------------------------------------


def test_unknowns_do_not_leak_past_later_assignments():
    assert_set_at(resolved("loop"), "train.micro_batch_size", UNKNOWNS, "loop-after")
    assert_set_at(resolved("unmodelled_result"), "model.pipeline_model_parallel_size", UNKNOWNS, "unmodelled-pp")
    assert_set_at(resolved("unmodelled_call_on_train"), "train.micro_batch_size", UNKNOWNS, "train-call-mbs")
    assert_set_at(resolved("unmodelled_call_on_cfg"), "model.context_parallel_size", UNKNOWNS, "cfg-call-cp")


def test_unmodelled_call_on_subconfig_only_taints_that_subtree():
    cfg = resolved("unmodelled_call_on_train")
    assert not is_known(cfg.value("train.global_batch_size"))
    assert cfg.value("dataset.seq_length") == 12288
    assert cfg.value("model.tensor_model_parallel_size") == 4


# ---------------------------------------------------------------------------------------------
# 12. YAML override files and dotlist overrides
# ---------------------------------------------------------------------------------------------


def test_yaml_origins_point_to_yaml_lines():
    cfg = resolved("yaml")
    assert_set_at(cfg, "train.micro_batch_size", SFT_YAML, "yaml-mbs")
    assert_set_at(cfg, "dataset.offline_packing_specs.pad_seq_to_mult", SFT_YAML, "yaml-pad")
    assert_set_at(cfg, "checkpoint.save_interval", SFT_YAML, "yaml-null")
    assert_set_at(cfg, "model.recompute_modules", SFT_YAML, "yaml-list")
    assert_set_at(cfg, "dataset.dataset_kwargs.prompt_template", SFT_YAML, "yaml-kwargs")
    # the recipe's chain is kept before the override
    field = cfg.get("dataset.offline_packing_specs.pad_seq_to_mult")
    assert [Path(o.path).name for o in field.origins][0] == "common.py"
    # untouched fields keep their recipe origin
    assert_set_at(cfg, "model.context_parallel_size", H100, "sft-cp")


def test_dotlist_overrides_take_effect_last():
    cfg = resolved("dotlist")
    for path in ("train.global_batch_size", "model.seq_length", "logger.wandb_project"):
        assert Path(last_origin(cfg, path).path).name != "h100.py", path
    assert cfg.value("model.seq_length") != 8192


def test_dotlist_after_yaml():
    cfg = resolved("yaml_then_dotlist")
    assert cfg.value("train.micro_batch_size") == 4
    assert cfg.value("dataset.offline_packing_specs.pad_seq_to_mult") == 1  # not YAML's 8
    # global_batch_size: only the YAML set it after the recipe
    assert Path(last_origin(cfg, "train.global_batch_size").path).name == SFT_YAML.name


def test_an_override_file_is_read_once_when_applied(monkeypatch):
    """Its text serves both the YAML parser and the end columns of the origins."""
    import mblint.overrides as overrides

    reads = []
    real_read = overrides.read_source
    monkeypatch.setattr(overrides, "read_source", lambda path, *a: reads.append(path) or real_read(path, *a))
    found = overrides.yaml_overrides(SFT_YAML, "sft.yaml")
    assert reads == [SFT_YAML]
    assert any(o.path == ("train", "micro_batch_size") for o in found)
