"""The transformers configuration-class facts mblint bundles: what the generator reads from a
configuration module (a small package in the shape of transformers 5's, tests/data/transformers)
and what the facts answer at lint time, without the transformers source."""

from __future__ import annotations

from pathlib import Path

import pytest

from mblint.extract.hf_transformers import ABSENT_ATTRIBUTE
from mblint.model import is_known
from mblint.schema.transformers import BundledConfigClass, bundled_chain, merge_facts, read_config_facts

PACKAGE = Path(__file__).parent / "data" / "transformers"
TOY = "transformers.models.toy.configuration_toy.ToyConfig"
TOY4 = "transformers.models.toy4.configuration_toy4.Toy4Config"


@pytest.fixture(scope="module")
def facts() -> dict:
    return read_config_facts(PACKAGE)


def test_model_types_are_the_classes_autoconfig_builds(facts):
    assert facts["model_types"] == {"toy": TOY, "toy_vl": "transformers.models.toy_vl.configuration_toy_vl.ToyVLConfig",
                                    "toy4": TOY4}


def test_declared_defaults_and_absent_keys(facts):
    toy = BundledConfigClass(facts, TOY)
    assert toy.default("mlp_bias") == (False, None)
    assert toy.default("tie_word_embeddings") == (True, None)  # the base class's
    assert toy.default("initializer_range") == (0.02, None)  # field(default=...)
    assert toy.default("num_local_experts") == (ABSENT_ATTRIBUTE, None)  # no class declares it
    assert not is_known(toy.default("num_experts")[0])  # an attribute_map alias
    assert not is_known(toy.default("head_dim")[0])  # __post_init__ computes it
    assert toy.model_default("rope_parameters") is None
    assert toy.model_default("tie_word_embeddings") is ABSENT_ATTRIBUTE  # the model class's own only


def test_post_init_rules(facts):
    toy = BundledConfigClass(facts, TOY)
    assert toy.post_init_keys() == {"head_dim", "num_key_value_heads", "sliding_window"}
    values = toy.post_init_values({"hidden_size": 2048, "num_attention_heads": 16, "head_dim": None,
                                   "num_key_value_heads": None, "sliding_window": 4096})
    assert values["head_dim"] == 128  # 2048 // 16
    assert values["num_key_value_heads"] == 1  # `x if x is not None else 1`
    assert not is_known(values["sliding_window"])  # a form the facts do not read
    kept = toy.post_init_values({"hidden_size": 2048, "num_attention_heads": 16, "head_dim": 96,
                                 "num_key_value_heads": 4, "sliding_window": None})
    assert (kept["head_dim"], kept["num_key_value_heads"]) == (96, 4)
    unknown_input = toy.post_init_values({"hidden_size": 2048, "head_dim": None})
    assert not is_known(unknown_input["head_dim"])


def test_attributes_a_transformers_4_init_computes(facts):
    """transformers 4: parameters stored as given are defaults; head_dim's conditional default
    is a rule; a parameter rebound before it is stored (num_key_value_heads) is unknown."""
    toy4 = BundledConfigClass(facts, TOY4)
    assert toy4.default("hidden_size") == (4096, None)
    assert not is_known(toy4.default("num_key_value_heads")[0])
    assert toy4.post_init_keys() == {"head_dim", "rope_dim"}
    current = {"hidden_size": 2048, "num_attention_heads": 16, "qk_rope_head_dim": 32, "head_dim": None}
    values = toy4.post_init_values(current, given={"hidden_size", "num_attention_heads", "qk_rope_head_dim"})
    assert values == {"head_dim": 128, "rope_dim": 32}
    # config.json's own rope_dim is set after __init__ by the base class: it wins
    values = toy4.post_init_values({**current, "rope_dim": 8}, given={"rope_dim"})
    assert values["rope_dim"] == 8


def test_text_config_built_from_flat_keys(facts):
    composite = bundled_chain_from(facts, "toy_vl")
    text = composite.sub_config("text_config")
    assert text.class_id.endswith("ToyVLTextConfig") and text.complete
    assert text.default("mlp_bias") == (False, None)  # inherited from ToyConfig
    assert composite.builds_from_flat_keys("text_config") == (True, True)
    assert composite.flat_extra_keys("text_config") == {"rope_theta"}


def bundled_chain_from(facts: dict, model_type: str) -> BundledConfigClass:
    return BundledConfigClass(facts, facts["model_types"][model_type])


def test_versions_that_disagree_leave_the_key_unknown(facts):
    other = read_config_facts(PACKAGE)
    other["classes"][TOY]["defaults"]["mlp_bias"] = True
    merged = merge_facts([facts, other])
    toy = BundledConfigClass(merged, TOY)
    assert not is_known(toy.default("mlp_bias")[0])
    assert toy.default("tie_word_embeddings") == (True, None)


def test_the_bundled_facts_of_megatron_bridge_06():
    """Generated from transformers 5.8.0 and 5.12.1 (0.6.2's pin): LlamaConfig declares
    mlp_bias = False and no expert count; head_dim = hidden_size // num_attention_heads."""
    llama = bundled_chain("0.6.2", "llama")
    assert llama.default("mlp_bias") == (False, None)
    assert llama.default("num_experts")[0] is ABSENT_ATTRIBUTE
    assert llama.post_init_values({"hidden_size": 2048, "num_attention_heads": 32, "head_dim": None})["head_dim"] == 64
    assert bundled_chain("0.6.2", "no-such-model-type") is None
