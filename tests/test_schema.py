"""The generated schema data against facts read by hand in the released wheels, and the
generator's pure extraction on a tiny synthetic package (no network).

Citations are paths inside the wheels: megatron-bridge 0.3.1 / 0.6.2, megatron-core 0.16.1 / 0.19.2.
"""

from __future__ import annotations

import gzip
import json
import sys
import textwrap
from pathlib import Path

import pytest

from mblint.schema import DATA_DIR, bundled_releases, load_schema, schema_from_json

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

from mblint.schema.extract import SourceIndex, extract_classes, extract_enums  # noqa: E402

PSS_03 = "megatron.bridge.data.datasets.packed_sequence.PackedSequenceSpecs"
PSS_06 = "megatron.bridge.data.packing.config.PackedSequenceSpecs"
NOT_HF = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
          "expert_model_parallel_size", "sequence_parallel", "calculate_per_token_loss",
          "cuda_graph_impl", "recompute_granularity", "recompute_modules")


@pytest.fixture(scope="module", params=["0.3", "0.6"])
def schema(request):
    return load_schema(request.param)


def field(schema, cls, name):
    spec = schema.find_class(cls)
    assert spec is not None, cls
    return spec.fields[name]


def test_versions():
    assert load_schema("0.3").megatron_bridge_version == "0.3.1"
    assert load_schema("0.6.2").megatron_bridge_version == "0.6.2"


@pytest.mark.parametrize("release", list(bundled_releases()))
def test_field_names_are_every_class_field_without_building_the_field_tables(release):
    with gzip.open(DATA_DIR / bundled_releases()[release]["file"], "rt", encoding="utf-8") as handle:
        schema = schema_from_json(json.load(handle))  # a fresh copy: no table built yet
    names = schema.field_names()
    own = {qualname: set(spec.field_names()) for qualname, spec in schema.classes.items()}
    assert all(spec._fields is None for spec in schema.classes.values())
    assert names == {name for spec in schema.classes.values() for name in spec.fields}
    assert own == {qualname: set(spec.fields) for qualname, spec in schema.classes.items()}


def test_offline_packing_fields_06():
    s = load_schema("0.6")
    cls = s.find_class("GPTSFTDatasetConfig")
    # megatron/bridge/data/builders/gpt_sft.py:127-128 (0.6.2)
    assert cls.fields["enable_offline_packing"].default_value() is False
    spec = cls.fields["offline_packing_specs"]
    assert spec.default_kind == "value" and spec.default is None
    assert PSS_06 in spec.classes
    assert "packed_sequence_specs" not in cls.fields
    # FinetuningDatasetConfig is a deprecated subclass alias, gpt_sft.py:240
    assert s.is_subclass(s.find_class("FinetuningDatasetConfig").qualname, cls.qualname)


def test_packed_sequence_specs_03():
    s = load_schema("0.3")
    assert s.find_class("GPTSFTDatasetConfig") is None
    cls = s.find_class("FinetuningDatasetConfig")
    # megatron/bridge/training/config.py:541 (0.3.1)
    assert cls.fields["packed_sequence_specs"].classes == (PSS_03,)
    assert "offline_packing_specs" not in cls.fields
    assert cls.fields["seq_length"].default_kind == "required"  # config.py:537


@pytest.mark.parametrize("line,qualname", [("0.3", PSS_03), ("0.6", PSS_06)])
def test_packed_sequence_specs_defaults(line, qualname):
    # 0.3.1 data/datasets/packed_sequence.py:209,242; 0.6.2 data/packing/config.py:30,39
    cls = load_schema(line).classes[qualname]
    assert cls.fields["packed_sequence_size"].default_value() == -1
    assert cls.fields["pad_seq_to_mult"].default_value() == 1


def test_training_and_model_defaults(schema):
    # 0.3.1 training/config.py:652; 0.6.2 inherits MCore megatron/training/config/training_config.py:11
    assert field(schema, "TrainingConfig", "micro_batch_size").default_kind == "value"
    assert field(schema, "TrainingConfig", "micro_batch_size").default is None
    # models/gpt_provider.py: seq_length 0.3.1:144 / 0.6.2:159; use_te_rng_tracker 0.3.1:178 / 0.6.2:197
    assert field(schema, "GPTModelProvider", "seq_length").default_value() == 1024
    assert field(schema, "GPTModelProvider", "use_te_rng_tracker").default_value() is False
    # MCore transformer_config.py: cuda_graph_impl 0.16.1:776 / 0.19.2:1032;
    # calculate_per_token_loss 0.16.1:233 / 0.19.2:277
    assert field(schema, "TransformerConfig", "cuda_graph_impl").default_value() == "none"
    assert field(schema, "GPTModelProvider", "cuda_graph_impl").default_value() == "none"
    assert field(schema, "GPTModelProvider", "calculate_per_token_loss").default_value() is False
    assert field(schema, "GPTModelProvider", "params_dtype").default_value() == "torch.float32"
    assert field(schema, "GPTModelProvider", "tensor_model_parallel_size").default_value() == 1


def test_subclass_redeclared_default_03():
    # models/llama/llama_provider.py:142,151 (0.3.1): Llama3ModelProvider8B num_layers = 32
    s = load_schema("0.3")
    cls = s.find_class("Llama3ModelProvider8B")
    assert cls.fields["num_layers"].default_value() == 32
    assert cls.fields["seq_length"].default_value() == 8192
    assert "cuda_graph_impl" in cls.fields  # inherited from MCore TransformerConfig


def test_config_container(schema):
    root = schema.root
    assert root.name == "ConfigContainer"
    for name in ("train", "model", "dataset", "ddp", "optimizer", "scheduler", "checkpoint",
                 "logger", "tokenizer", "rng", "mixed_precision", "comm_overlap", "peft"):
        assert name in root.fields
    assert root.fields["ddp"].default_kind == "factory"
    assert root.fields["ddp"].factory_class.endswith(".DistributedDataParallelConfig")
    assert root.fields["train"].default_kind == "required"


def test_validation_config_only_in_06():
    assert "validation" in load_schema("0.6").root.fields
    assert "validation" not in load_schema("0.3").root.fields


def test_init_false_field_06():
    # megatron/bridge/training/config.py:1011 (0.6.2)
    entry = bundled_releases()["0.6.2"]
    data = json.loads(gzip.decompress((DATA_DIR / entry["file"]).read_bytes()))
    spec = data["classes"]["megatron.bridge.training.config.ConfigContainer"]["fields"]
    assert spec["_checkpoint_load_required"]["init"] is False


def test_hf_derived_fields(schema):
    for name in ("num_layers", "hidden_size", "num_attention_heads", "ffn_hidden_size", "vocab_size"):
        assert name in schema.hf_derived_fields
    for name in NOT_HF:
        assert name not in schema.hf_derived_fields
    assert schema.hf_provider == "megatron.bridge.models.gpt_provider.GPTModelProvider"


def test_enums(schema):
    backend = schema.find_enum("AttnBackend")
    # megatron/core/transformer/enums.py (class AttnBackend: flash=1 ... auto=5)
    assert backend["flash"] == 1 and backend["auto"] == 5
    assert field(schema, "TransformerConfig", "attention_backend").default_value() == 5
    assert schema.find_enum("CudaGraphScope") is not None


def test_deprecated_fields_06():
    deprecated = load_schema("0.6").deprecated_fields
    # megatron/bridge/training/config.py:1516-1524 (0.6.2): for f in fields(ValidationConfig)
    for name in ("eval_iters", "eval_interval", "skip_train"):
        assert deprecated[f"train.{name}"]["replacement"] == f"validation.{name}"
        assert deprecated[f"train.{name}"]["source"].startswith("megatron/bridge/training/config.py:")
    # MCore transformer_config.py:2383-2393 (0.19.2)
    assert deprecated["model.cuda_graph_scope"]["replacement"] == "model.cuda_graph_modules"
    assert deprecated["dataset.packed_sequence_specs"]["replacement"] == "dataset.offline_packing_specs"


def test_no_validation_deprecations_03():
    deprecated = load_schema("0.3").deprecated_fields
    assert "train.eval_iters" not in deprecated
    assert "model.cuda_graph_scope" not in deprecated


def test_mixed_precision_recipes(schema):
    # training/mixed_precision.py: @register adds the name and its hyphenated spelling
    assert {"bf16_mixed", "bf16-mixed", "fp16_mixed"} <= set(schema.mixed_precision_recipes)


def test_factories(schema):
    overlay = schema.overlay
    # 0.3.1 and 0.6.2: megatron/bridge/__init__.py imports AutoBridge from models.conversion.auto_bridge
    assert "megatron.bridge.AutoBridge.from_hf_pretrained" in overlay["hf_model_factories"]
    assert ("megatron.bridge.models.conversion.auto_bridge.AutoBridge.from_hf_pretrained"
            in overlay["hf_model_factories"])
    assert overlay["hf_provider_methods"] == ["to_megatron_provider"]


def test_fields_from_expansion():
    data = {"line": "x", "root": "m.A", "classes": {
        "m.A": {"name": "A", "module": "m", "fields": {"a": {"default_kind": "value", "default": 1},
                                                     "b": {"default_kind": "required"}}},
        "m.B": {"name": "B", "module": "m", "bases": ["m.A"], "fields_from": "m.A",
                "fields": {"a": {"default_kind": "value", "default": 2}, "c": {"default_kind": "value"}}},
    }}
    schema = schema_from_json(data)
    assert list(schema.classes["m.B"].fields) == ["a", "b", "c"]
    assert schema.classes["m.B"].fields["a"].default == 2


# --------------------------------------------------------------------------- synthetic package


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture()
def synthetic(tmp_path):
    _write(tmp_path, "megatron/__init__.py", "")
    _write(tmp_path, "megatron/core/__init__.py", "from .base import *\n")
    _write(tmp_path, "megatron/core/base.py", """
        import enum
        import torch
        from dataclasses import dataclass, field

        class Mode(enum.Enum):
            fast = "fast"
            slow = "slow"

        @dataclass
        class Inner:
            size: int = -1

        @dataclass
        class Base:
            layers: int
            dtype: torch.dtype = torch.bfloat16
            mode: Mode = Mode.fast
            shape: tuple = (1, 2)
            items: list = field(default_factory=list)
            inner: Inner = field(default_factory=Inner)
            computed: int = field(init=False, default=0)
            odd: int = some_call()
    """)
    _write(tmp_path, "megatron/bridge/__init__.py", "")
    _write(tmp_path, "megatron/bridge/child.py", """
        from dataclasses import dataclass
        from typing import Optional
        from megatron.core import Base as CoreBase, Inner

        @dataclass
        class Child(CoreBase):
            layers: int = 32
            extra: Optional[Inner] = None

        class Plain(Child):
            ignored: int = 5
    """)
    return SourceIndex.from_dirs([tmp_path])


def test_extraction_on_synthetic_package(synthetic):
    classes = extract_classes(synthetic)
    child = classes["megatron.bridge.child.Child"]
    assert child["bases"] == ["megatron.core.base.Base"]
    fields = child["fields"]
    assert list(fields)[:2] == ["layers", "dtype"]  # MRO order, re-declared field keeps its place
    assert fields["layers"] == {"annotation": "int", "classes": [], "default_kind": "value", "default": 32}
    assert fields["dtype"]["default"] == "torch.bfloat16"
    assert fields["mode"]["default"] == "fast" and fields["mode"]["enums"] == ["megatron.core.base.Mode"]
    assert fields["shape"]["default"] == [1, 2]
    assert fields["items"] == {"annotation": "list", "classes": [], "default_kind": "factory", "default": []}
    assert fields["inner"]["factory_class"] == "megatron.core.base.Inner"
    assert fields["computed"]["init"] is False and fields["computed"]["default"] == 0
    assert fields["odd"]["default_kind"] == "unknown"
    assert fields["extra"]["classes"] == ["megatron.core.base.Inner"]
    assert classes["megatron.core.base.Base"]["fields"]["layers"]["default_kind"] == "required"
    # an undecorated subclass is still a dataclass, but its own annotations are not fields
    plain = classes["megatron.bridge.child.Plain"]["fields"]
    assert "ignored" not in plain and plain["layers"]["default"] == 32
    assert extract_enums(synthetic, classes) == {"megatron.core.base.Mode": {"fast": "fast", "slow": "slow"}}


@pytest.mark.parametrize("release", list(bundled_releases()))
def test_provider_dependent_fields_are_read_without_building_the_field_tables(release):
    """Which HF provider fields differ in default between provider classes: worked out from the
    schema data's records (a run builds few classes' tables), the same answer as the tables give."""
    from mblint.extract.megatron import provider_dependent_fields

    with gzip.open(DATA_DIR / bundled_releases()[release]["file"], "rt", encoding="utf-8") as handle:
        schema = schema_from_json(json.load(handle), key=f"fresh {release}")
    spec = schema.classes[schema.hf_provider]
    found = provider_dependent_fields(schema, spec)
    assert all(cls._fields is None for cls in schema.classes.values())
    others = [schema.classes[q] for q in schema.facts["hf_provider_classes"] if q in schema.classes]

    def default(field):
        return field.default_kind, repr(field.default), field.factory_class

    assert found == {name for name, field in spec.fields.items()
                     if any(name in other.fields and default(other.fields[name]) != default(field) for other in others)}
    assert "deallocate_pipeline_outputs" in found or release.startswith("0.3")

