"""Mixed-precision factories in a module mblint cannot read (Megatron-Bridge not installed where
mblint runs, as under pre-commit): a registered factory's result is a MixedPrecisionConfig whose
fields are unknown until the recipe sets them, never a value that makes a rule fire by itself."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mblint.cli import main
from mblint.model import UNKNOWN, is_known
from mblint.resolve import Project

IMPORTS = ("from megatron.bridge.training.config import ConfigContainer, DistributedDataParallelConfig\n"
           "from megatron.bridge.training.mixed_precision import bf16_mixed, get_mixed_precision_config\n"
           "from other.library import fp16_mixed\n\n\n")


def write_recipes(tmp_path: Path, body: str) -> Path:
    team = tmp_path / "team"
    team.mkdir()
    (team / "__init__.py").write_text("")
    recipes = team / "recipes.py"
    recipes.write_text(IMPORTS + body)
    return recipes


def resolve(tmp_path: Path, body: str, function: str = "perf_config"):
    recipes = write_recipes(tmp_path, body)
    return Project([], "0.6", tmp_path).resolve_function(recipes, function)


def test_a_factory_gives_a_mixed_precision_config_with_unknown_fields(tmp_path):
    cfg = resolve(tmp_path,
                  "def perf_config():\n"
                  "    cfg = ConfigContainer()\n"
                  "    cfg.mixed_precision = bf16_mixed()\n"
                  "    if not isinstance(cfg.mixed_precision, str):\n"
                  "        cfg.mixed_precision.grad_reduce_in_fp32 = False\n"
                  "    return cfg\n")
    assert cfg.type_of("mixed_precision") == "MixedPrecisionConfig"
    # the isinstance test is known, so the branch ran alone: no merge with an untaken path
    assert cfg.value("mixed_precision.grad_reduce_in_fp32") is False
    assert cfg.last_origin("mixed_precision.grad_reduce_in_fp32").line == IMPORTS.count("\n") + 5
    assert not is_known(cfg.value("mixed_precision.bf16"))
    assert not is_known(cfg.value("mixed_precision.fp8"))


def test_the_lookup_function_with_a_registered_name_gives_one_too(tmp_path):
    cfg = resolve(tmp_path,
                  "def perf_config():\n"
                  "    cfg = ConfigContainer()\n"
                  "    cfg.mixed_precision = get_mixed_precision_config('bf16-mixed')\n"
                  "    return cfg\n")
    assert cfg.type_of("mixed_precision") == "MixedPrecisionConfig"
    assert not is_known(cfg.value("mixed_precision.grad_reduce_in_fp32"))


def test_other_calls_stay_unknown(tmp_path):
    body = ("def name_config():\n"
            "    cfg = ConfigContainer()\n"
            "    cfg.mixed_precision = get_mixed_precision_config('my_mixed')\n"
            "    return cfg\n\n\n"
            "def argument_config():\n"
            "    cfg = ConfigContainer()\n"
            "    cfg.mixed_precision = bf16_mixed(True)\n"
            "    return cfg\n\n\n"
            "def unknown_name_config(name):\n"
            "    cfg = ConfigContainer()\n"
            "    cfg.mixed_precision = get_mixed_precision_config(name)\n"
            "    return cfg\n\n\n"
            "def other_module_config():\n"
            "    cfg = ConfigContainer()\n"
            "    cfg.mixed_precision = fp16_mixed()\n"
            "    return cfg\n")
    recipes = write_recipes(tmp_path, body)
    project = Project([], "0.6", tmp_path)
    for function in ("name_config", "argument_config", "unknown_name_config", "other_module_config"):
        cfg = project.resolve_function(recipes, function)
        assert cfg.type_of("mixed_precision") is None, function
        assert cfg.value("mixed_precision") is UNKNOWN, function


def test_a_field_set_on_it_is_compared_with_the_ddp_field_it_overwrites(tmp_path):
    """The pattern of 0.6.2's flux and wan recipes: PR002 reports the DDP field, as it does
    when the factory is read."""
    recipes = write_recipes(tmp_path,
                            "def perf_config():\n"
                            "    precision = get_mixed_precision_config('bf16_mixed')\n"
                            "    precision.grad_reduce_in_fp32 = False\n"
                            "    return ConfigContainer(\n"
                            "        ddp=DistributedDataParallelConfig(grad_reduce_in_fp32=True),\n"
                            "        mixed_precision=precision,\n"
                            "    )\n")
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--select", "PR002", "--format", "json",
                                       str(recipes)])
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["location"]["line"]) for f in findings] == [("PR002", IMPORTS.count("\n") + 5)]
    assert "overwritten with False from mixed_precision.grad_reduce_in_fp32" in findings[0]["message"]


def test_no_field_of_it_is_reported_while_unknown(tmp_path):
    """bf16_mixed() sets bf16 = True; the class default is False. Reading the unknown field as
    its default would report this (correct) optimizer setting as overwritten."""
    recipes = write_recipes(tmp_path,
                            "from megatron.core.optimizer import OptimizerConfig\n\n\n"
                            "def perf_config():\n"
                            "    return ConfigContainer(\n"
                            "        optimizer=OptimizerConfig(bf16=True),\n"
                            "        mixed_precision=bf16_mixed(),\n"
                            "    )\n")
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--select", "PR", "--format", "json",
                                       str(recipes)])
    assert json.loads(result.stdout)["findings"] == []
