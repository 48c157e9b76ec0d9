"""A pass means checked (issue 31, item 3): every place where the analysis of a job stopped is a
finding of a coverage rule, in every format, and "All checks passed" is said only without one."""

from __future__ import annotations

import json
from pathlib import Path

from integration_support import BAD_RECIPE, IMPORTS, run

PASSED = "All checks passed"
TWEAKS = "from mycompany.tweaks import apply_cluster_tweaks\n"


def with_tweaks(recipe: str) -> str:
    """``recipe`` handing cfg to a helper of a module mblint cannot read, before returning it."""
    return recipe.replace(IMPORTS, IMPORTS + TWEAKS).replace("    return cfg\n", "    apply_cluster_tweaks(cfg)\n"
                                                              "    return cfg\n")


def test_cfg_handed_to_an_unreadable_helper_is_not_a_pass(tmp_path: Path) -> None:
    (tmp_path / "alone.py").write_text(BAD_RECIPE)
    alone = json.loads(run(["check", "--no-cache", "--format", "json", "alone.py"], tmp_path).stdout)
    assert [f["rule"] for f in alone["findings"]] == ["PK001"]
    (tmp_path / "r.py").write_text(with_tweaks(BAD_RECIPE))
    text = run(["check", "--no-cache", "r.py"], tmp_path)
    assert PASSED not in text.stdout and text.exit_code == 1
    assert "1 job not fully checked (CV001 config-handed-to-unfollowed-call: 1)" in text.stdout
    document = json.loads(run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path).stdout)
    (gap,) = document["findings"]  # PK001 is unknown after the call: not reported, and said so
    assert gap["rule"] == "CV001" and gap["severity"] == "warning"
    assert (gap["location"]["line"], gap["location"]["column"]) == (16, 5)
    assert gap["message"].startswith("apply_cluster_tweaks() receives cfg and mblint cannot follow it (imported on "
                                     "line 4 from mycompany.tweaks, a module mblint does not read)")
    assert "unknown after this call" in gap["message"]
    assert document["summary"]["not_fully_checked"] == {"jobs": 1, "by_rule": {"CV001": 1}}
    sarif = json.loads(run(["check", "--no-cache", "--format", "sarif", "r.py"], tmp_path).stdout)
    (notification,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notification["associatedRule"]["id"] == "CV001" and notification["level"] == "warning"
    assert notification["locations"][0]["physicalLocation"]["region"]["startLine"] == 16
    github = run(["check", "--no-cache", "--format", "github", "r.py"], tmp_path).stdout
    assert "::warning file=r.py,line=16,col=5" in github and "title=mblint CV001" in github
    ignored = run(["check", "--no-cache", "--ignore", "CV001", "r.py"], tmp_path)
    assert ignored.exit_code == 0 and PASSED in ignored.stdout


def test_a_helper_that_receives_no_part_of_the_configuration_is_no_gap(tmp_path: Path) -> None:
    recipe = BAD_RECIPE.replace("micro_batch_size=2", "micro_batch_size=1").replace(
        IMPORTS, IMPORTS + "from mycompany.names import run_name\n").replace(
        "    return cfg\n", "    cfg.logger.wandb_exp_name = run_name()\n    return cfg\n")
    (tmp_path / "r.py").write_text(recipe)
    result = run(["check", "--no-cache", "r.py"], tmp_path)
    assert result.exit_code == 0 and PASSED in result.stdout, result.stdout


def test_an_imported_module_that_does_not_parse_is_reported(tmp_path: Path) -> None:
    """Its constants are unknown to the recipe (PK001 cannot be checked): SY001 for that module."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sizes.py").write_text("MICRO_BATCH = = 2\n")
    (tmp_path / "r.py").write_text(BAD_RECIPE.replace(IMPORTS, IMPORTS + "from pkg.sizes import MICRO_BATCH\n")
                                   .replace("micro_batch_size=2", "micro_batch_size=MICRO_BATCH"))
    result = run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path)
    reported = [(f["rule"], f["location"]["path"], f["location"]["line"]) for f in json.loads(result.stdout)["findings"]]
    assert reported == [("SY001", "pkg/sizes.py", 1)]
    assert result.exit_code == 1


BUILDER = """from base import sft_config


def build():
    cfg = sft_config()
    cfg.train.micro_batch_size = 2
    return cfg
"""


def test_a_function_that_builds_a_configuration_is_analysed_whatever_its_name(tmp_path: Path) -> None:
    (tmp_path / "base.py").write_text(BAD_RECIPE.replace("micro_batch_size=2", "micro_batch_size=1"))
    (tmp_path / "b.py").write_text(BUILDER)
    result = run(["check", "--no-cache", "--format", "json", "b.py"], tmp_path)
    document = json.loads(result.stdout)
    assert [(f["rule"], f["location"]["line"], f["recipe"]) for f in document["findings"]] == [("PK001", 6, "b.py::build")]
    assert (document["summary"]["recipes"], document["summary"]["resolved"]) == (1, 1)
    # a function that returns no configuration is not counted as a recipe
    (tmp_path / "c.py").write_text(BUILDER.replace("return cfg", "return cfg.train.micro_batch_size"))
    assert "0 configurations resolved" in run(["check", "--no-cache", "c.py"], tmp_path).stdout


MODEL_RECIPE = """from megatron.bridge.models import GPTModelProvider
from megatron.bridge.training.config import ConfigContainer, TrainingConfig
{comment}

def tiny_config() -> ConfigContainer:
    cfg = ConfigContainer(
        model=GPTModelProvider(num_layers=2, hidden_size=64, num_attention_heads=4, tensor_model_parallel_size=2,
                               sequence_parallel=True),
        train=TrainingConfig(micro_batch_size=1, global_batch_size=8),
    )
    return cfg
"""


def test_an_unknown_world_size_is_said_where_the_recipe_s_name_gives_nodes(tmp_path: Path) -> None:
    """A recipe alone has no world size by nature (its launch gives it): no CV003. A name that
    gives the scale in nodes (0.3.1's deepseek_v3_pretrain_config_32nodes) says which size the
    recipe is for, but not in GPUs: CV003 there, once, on the def line."""
    (tmp_path / "r.py").write_text(MODEL_RECIPE.format(comment=""))
    assert PASSED in run(["check", "--no-cache", "r.py"], tmp_path).stdout
    (tmp_path / "r.py").write_text(MODEL_RECIPE.format(comment="").replace("tiny_config", "tiny_pretrain_config_4nodes"))
    result = run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path)
    (finding,) = json.loads(result.stdout)["findings"]
    assert (finding["rule"], finding["severity"], finding["location"]["line"]) == ("CV003", "info", 5)
    assert finding["message"].startswith("tiny_pretrain_config_4nodes: the name gives 4 nodes but not how many GPUs")
    assert "PB001" in finding["message"] and "PB003" in finding["message"] and "--world-size" in finding["message"]
    assert result.exit_code == 0  # info: a pre-commit hook passes, and shows it
    assert PASSED in run(["check", "--no-cache", "--world-size", "8", "r.py"], tmp_path).stdout
    (tmp_path / "r.py").write_text(MODEL_RECIPE.format(comment="# mblint: world-size=8").replace(
        "tiny_config", "tiny_pretrain_config_4nodes"))
    assert PASSED in run(["check", "--no-cache", "r.py"], tmp_path).stdout


def test_an_override_whose_value_is_unknown_is_said(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE.replace("micro_batch_size=2", "micro_batch_size=1"))
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::sft_config\ntrain:\n  micro_batch_size: ${oc.env:MBS}\n")
    result = run(["check", "--no-cache", "--format", "json", "o.yaml"], tmp_path)
    reported = [(f["rule"], f["location"]["path"], f["location"]["line"]) for f in json.loads(result.stdout)["findings"]]
    assert reported == [("CV004", "o.yaml", 3)]
    on_command_line = run(["check", "--no-cache", "--format", "json", "--set", "train.global_batch_size=${oc.env:GBS}",
                           "--set", "train.micro_batch_size=2", "r.py"], tmp_path)
    reported = [(f["rule"], f["location"]["path"], f["location"]["line"])
                for f in json.loads(on_command_line.stdout)["findings"]]
    assert ("CV004", "--set", 1) in reported and "PK001" in [rule for rule, _, _ in reported]  # the other one is known


def test_a_gap_in_a_file_not_linted_lands_on_the_recipe_line_that_reaches_it(tmp_path: Path) -> None:
    """Code scanning annotates only files of the repository: a gap inside an installed module
    is reported at the linted recipe's call, the place itself related."""
    installed = tmp_path / "site"
    installed.mkdir()
    (installed / "vendor_recipes.py").write_text(with_tweaks(BAD_RECIPE))
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "r.py").write_text("from vendor_recipes import sft_config\n\n\n"
                                               "def my_config():\n    return sft_config()\n")
    sarif = json.loads(run(["check", "--no-cache", "--format", "sarif", "--search-path", str(installed), "r.py"],
                           tmp_path / "project").stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "CV001"
    place = result["locations"][0]["physicalLocation"]
    assert place["artifactLocation"]["uri"] == "r.py" and place["region"]["startLine"] == 5
    related = result["relatedLocations"][0]["physicalLocation"]
    assert related["artifactLocation"]["uri"].endswith("vendor_recipes.py") and related["region"]["startLine"] == 16
