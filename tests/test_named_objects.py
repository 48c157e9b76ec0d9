"""Functions as known values (``NamedObject``): a dataclass default or a recipe assignment that
names a function (``F.silu``, a layer-spec function defined at a module's top level) is known by
its qualified name; what could be anything else (a constant imported from a module mblint does
not read, a function made by each call) stays unknown. Also the defaults the schema reads that
are no literal: an infinite float and a signal whose number POSIX fixes."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from mblint.api import resolve_recipe
from mblint.cli import main
from mblint.model import NamedObject, is_known, json_value
from mblint.rule import format_value, known
from mblint.schema.extract import FieldExtractor, SourceIndex

CONFIG_MODULE = """
import math
import signal
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import torch.nn.functional as F

from megatron.fake.specs import shared_spec

HAVE_X = False
if HAVE_X:
    def maybe_spec(config):
        return None


def local_spec(config):
    return None


@dataclass
class FakeConfig:
    act: Callable = F.silu
    spec: Callable = local_spec
    imported_spec: Callable = shared_spec
    conditional_spec: Callable = maybe_spec
    partial_spec: Callable = partial(local_spec)
    threshold: float = float("inf")
    low: float = -math.inf
    finite: float = float("1.5")
    stop: signal.Signals = signal.SIGTERM
    user_signal: signal.Signals = signal.SIGUSR1
"""


@pytest.fixture
def fake_fields(tmp_path) -> dict:
    package = tmp_path / "megatron" / "fake"
    package.mkdir(parents=True)
    (tmp_path / "megatron" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "specs.py").write_text("def shared_spec(config):\n    return None\n")
    (package / "cfg.py").write_text(CONFIG_MODULE)
    index = SourceIndex.from_dirs([tmp_path])
    return FieldExtractor(index).own_fields("megatron.fake.cfg.FakeConfig")


def test_schema_reads_function_defaults(fake_fields):
    assert fake_fields["act"]["default_kind"] == "function"
    assert fake_fields["act"]["default"] == "torch.nn.functional.silu"
    assert fake_fields["spec"]["default"] == "megatron.fake.cfg.local_spec"
    assert fake_fields["imported_spec"]["default"] == "megatron.fake.specs.shared_spec"
    # defined under an `if`, or a partial: not one known function
    assert fake_fields["conditional_spec"]["default_kind"] == "unknown"
    assert fake_fields["partial_spec"]["default_kind"] == "unknown"


def test_schema_reads_infinite_floats_and_posix_signals(fake_fields):
    assert fake_fields["threshold"] == {**fake_fields["threshold"], "default_kind": "value", "default": math.inf}
    assert fake_fields["low"]["default"] == -math.inf
    assert fake_fields["stop"]["default"] == 15  # POSIX: SIGTERM is 15 everywhere
    assert fake_fields["user_signal"]["default_kind"] == "unknown"  # SIGUSR1's number varies
    assert fake_fields["finite"]["default_kind"] == "unknown"  # only infinities are read from float("...")


def test_named_object_equals_only_its_name():
    silu = NamedObject("torch.nn.functional.silu")
    assert silu == NamedObject("torch.nn.functional.silu")
    assert silu != NamedObject("torch.nn.functional.gelu")
    for other in ("torch.nn.functional.silu", "silu", 0, 1, True, False, None, 1.0):
        assert silu != other and other != silu
    with pytest.raises(TypeError):
        silu < 1  # noqa: B015 - no order
    assert known(silu)
    assert json_value(silu) == {"object": "torch.nn.functional.silu"}
    assert "torch.nn.functional.silu" in format_value(silu)


RECIPE = '''
import torch.nn.functional as F
from megatron.bridge.models.gpt_provider import GPTModelProvider
from megatron.bridge.training.config import ConfigContainer, OptimizerConfig, TrainingConfig

from mystery_tuning import BEST_ACTIVATION, DEFAULT_GBS


def my_layer_spec(config):
    return None


def model_config() -> ConfigContainer:
    def inner_spec(config):
        return None

    model = GPTModelProvider(num_layers=4, hidden_size=256, num_attention_heads=4)
    model.activation_func = F.gelu
    cfg = ConfigContainer(model=model, train=TrainingConfig(global_batch_size=8, micro_batch_size=1),
                          optimizer=OptimizerConfig())
    if cfg.model.activation_func is F.gelu:
        cfg.train.micro_batch_size = 2
    if cfg.model.activation_func == F.silu:
        cfg.train.eval_iters = 3
    else:
        cfg.train.eval_iters = 5
    if BEST_ACTIVATION is F.gelu:  # another name may be the same object: unknown
        cfg.train.exit_interval = 7
    return cfg


def layer_spec_config() -> ConfigContainer:
    cfg = model_config()
    cfg.model.transformer_layer_spec = my_layer_spec
    return cfg


def inner_spec_config() -> ConfigContainer:
    cfg = model_config()

    def inner_spec(config):
        return None

    cfg.model.transformer_layer_spec = inner_spec  # a new function each call: unknown
    return cfg


def imported_config() -> ConfigContainer:
    cfg = model_config()
    cfg.model.activation_func = BEST_ACTIVATION  # a Callable field: the object of that name
    cfg.train.global_batch_size = DEFAULT_GBS  # an int field: could be anything, unknown
    return cfg
'''


@pytest.fixture
def recipe(tmp_path) -> Path:
    path = tmp_path / "fn_recipe.py"
    path.write_text(textwrap.dedent(RECIPE))
    return path


def test_recipe_functions_are_known_by_name(recipe):
    cfg = resolve_recipe(recipe, "model_config")
    assert cfg.value("model.activation_func") == NamedObject("torch.nn.functional.gelu")
    # GPTModelProvider's default (a function of the provider's module, read into the schema)
    assert cfg.value("model.transformer_layer_spec") == NamedObject("megatron.bridge.models.gpt_provider.default_layer_spec")
    # `is` and `==` of the same imported name are True; of two different names, False for `==` on
    # F.gelu/F.silu would be a guess (re-exports): unknown, and so is the branch it decides
    assert cfg.value("train.micro_batch_size") == 2
    assert not is_known(cfg.value("train.eval_iters"))
    assert not is_known(cfg.value("train.exit_interval"))
    assert cfg.value("optimizer.grad_norm_skip_threshold") == math.inf
    assert cfg.value("train.exit_signal") == 15


def test_module_function_known_nested_function_unknown(recipe):
    spec = resolve_recipe(recipe, "layer_spec_config").value("model.transformer_layer_spec")
    assert spec == NamedObject("fn_recipe.my_layer_spec")  # the recipe's folder is an import root
    assert not is_known(resolve_recipe(recipe, "inner_spec_config").value("model.transformer_layer_spec"))


def test_imported_name_known_only_in_a_callable_field(recipe):
    cfg = resolve_recipe(recipe, "imported_config")
    assert cfg.value("model.activation_func") == NamedObject("mystery_tuning.BEST_ACTIVATION")
    assert not is_known(cfg.value("train.global_batch_size"))


def test_reports_and_show_stay_plain(recipe):
    runner = CliRunner()
    for output_format in ("json", "sarif", "text"):
        result = runner.invoke(main, ["check", str(recipe), "--no-cache", "--format", output_format])
        assert result.exit_code in (0, 1), result.output
        assert "internal error" not in result.output
        if output_format != "text":
            json.loads(result.stdout)
    shown = runner.invoke(main, ["show", f"{recipe}::layer_spec_config", "--format", "json"])
    assert shown.exit_code == 0, shown.output
    fields = json.loads(shown.stdout)["fields"]  # strict JSON: no Infinity
    assert fields["model.activation_func"]["value"] == {"object": "torch.nn.functional.gelu"}
    assert fields["optimizer.grad_norm_skip_threshold"]["value"] == {"float": "inf"}
    text = runner.invoke(main, ["show", f"{recipe}::model_config", "--all"]).output
    assert "model.activation_func = <torch.nn.functional.gelu>" in text
