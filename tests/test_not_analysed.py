"""Never "All checks passed" for something mblint did not check: unknown rule selectors, errors,
unpaired or broken YAML, unreadable imports, ``__main__``-only builders (issue 21, section 2)."""

from __future__ import annotations

import json
from pathlib import Path

from integration_support import BAD_RECIPE, GOOD_RECIPE, run

PASSED = "All checks passed"


def findings(result) -> list[tuple[str, str, int]]:
    return [(f["rule"], f["location"]["path"], f["location"]["line"])
            for f in json.loads(result.stdout)["findings"]]


# ----- unknown rule selectors --------------------------------------------------------------


def test_an_unknown_selected_rule_exits_2_with_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    result = run(["check", "--no-cache", "--select", "PK0011", "r.py"], tmp_path)
    assert result.exit_code == 2
    assert "--select: 'PK0011' selects no rule (did you mean 'PK001' or 'PB001'?)" in result.stderr
    assert PASSED not in result.stdout
    far = run(["check", "--no-cache", "--select", "ZZ999", "r.py"], tmp_path)
    assert far.exit_code == 2 and "'ZZ999' selects no rule (rule ids begin with CG, " in far.stderr
    ignored = run(["check", "--no-cache", "--ignore", "offline-packing-requires-mbs", "r.py"], tmp_path)
    assert ignored.exit_code == 2 and "did you mean 'offline-packing-requires-mbs1'" in ignored.stderr
    # prefixes, names and ALL select rules
    fine = run(["check", "--no-cache", "--select", "PK,SY,ALL", "--ignore", "offline-packing-requires-mbs1", "r.py"],
               tmp_path)
    assert fine.exit_code == 0, fine.stderr


def test_an_unknown_rule_in_the_settings_exits_2(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    (tmp_path / "mblint.toml").write_text('select = ["ZZ9"]\n[per-file-ignores]\n"*.py" = ["PK0O1"]\n')
    result = run(["check", "--no-cache", "r.py"], tmp_path)
    assert result.exit_code == 2
    assert "mblint.toml: 'ZZ9' selects no rule" in result.stderr
    assert "'PK0O1' selects no rule (did you mean 'PK001'?)" in result.stderr
    assert PASSED not in result.stdout and "stopped mblint" in result.stdout


# ----- errors ------------------------------------------------------------------------------


def test_error_paths_never_print_all_checks_passed(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    (tmp_path / "run.yaml").write_text("# mblint: recipe=missing.py::sft_config\ntrain:\n  micro_batch_size: 1\n")
    missing_path = run(["check", "--no-cache", str(tmp_path / "nonexistent" / "foo.py")], tmp_path)
    missing_recipe = run(["check", "--no-cache", "run.yaml"], tmp_path)
    (tmp_path / "mblint.toml").write_text("selekt = ['PK']\n")
    bad_setting = run(["check", "--no-cache", "r.py"], tmp_path)
    for result in (missing_path, missing_recipe, bad_setting):
        assert result.exit_code == 2, result.stdout + result.stderr
        assert PASSED not in result.stdout, result.stdout
        assert "1 error (below) stopped mblint" in result.stdout, result.stdout


# ----- YAML that is not paired -----------------------------------------------------------


def test_broken_yaml_is_sy001_whether_paired_or_not(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("train:\n  micro_batch_size: [1\n")
    result = run(["check", "--no-cache", "--format", "json", "bad.yaml"], tmp_path)
    assert result.exit_code == 1
    assert findings(result) == [("SY001", "bad.yaml", 3)]


def test_an_unpaired_override_file_is_reported_with_how_to_pair_it(tmp_path: Path) -> None:
    (tmp_path / "finetune.yaml").write_text("# tuned for 8 GPUs\ntrain:\n  micro_batch_size: 2\nmodel:\n"
                                            "  tensor_model_parallel_size: 2\n")
    result = run(["check", "--no-cache", "finetune.yaml"], tmp_path)
    assert result.exit_code == 1
    assert result.stdout.startswith("finetune.yaml:2:1: SY005 [warning] not analysed: this looks like a "
                                    "Megatron-Bridge override file (top-level train, model of ConfigContainer)")
    assert "# mblint: recipe=PATH::FUNCTION" in result.stdout and "--recipe" in result.stdout
    assert "1 file not analysed: finetune.yaml" in result.stdout


def test_other_yaml_is_counted_as_not_analysed(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    (tmp_path / "ci.yaml").write_text("name: build\non: [push]\njobs:\n  test: {runs-on: ubuntu}\n")
    result = run(["check", "--no-cache", "."], tmp_path)
    assert result.exit_code == 0
    assert result.stdout.strip() == ("No findings (2 files, 1 configuration resolved; 1 file not analysed: "
                                     "ci.yaml).\nLinted against Megatron-Bridge 0.6.2 (bundled schema; Megatron-Core 0.19.2).")
    as_json = run(["check", "--no-cache", "--format", "json", "."], tmp_path)
    [entry] = json.loads(as_json.stdout)["summary"]["not_analysed"]
    assert entry["path"] == "ci.yaml" and entry["reason"].startswith("not analysed: no Megatron-Bridge override")


def test_pairing_says_paired_or_unpaired(tmp_path: Path) -> None:
    from mblint.overrides import load_yaml
    from mblint.pairing import Paired, Unpaired, pairing

    commented = tmp_path / "a.yaml"
    commented.write_text("# mblint: recipe=r.py::sft_config\ntrain:\n  micro_batch_size: 2\n")
    plain = tmp_path / "b.yaml"
    plain.write_text("optimizer:\n  lr: 0.1\ntrain:\n  train_iters: 5\n")
    assert pairing(commented, load_yaml(commented), None, None) == Paired("r.py::sft_config", "comment")
    assert pairing(plain, load_yaml(plain), "x.py::f", None) == Paired("x.py::f", "option")
    assert pairing(plain, load_yaml(plain), None, None) == Unpaired(("optimizer", "train"), 1)
    assert not pairing(plain, {"name": "x", "train": {"a": 1}, "jobs": {}}, None, None).looks_like_override
    assert not pairing(plain, {"train": 3}, None, None).looks_like_override  # no section mapping
    assert not pairing(plain, ["train"], None, None).looks_like_override


# ----- recipes mblint could not read --------------------------------------------------------

UNREAD = """from megatron.bridge.recipes.llama.llama3 import llama3_8b_pretrain_config
from team.helpers import tweak


def my_config():
    cfg = llama3_8b_pretrain_config()
    cfg.train.micro_batch_size = 2
    return cfg
"""


def test_a_recipe_built_from_an_unreadable_import_names_it_and_how_to_provide_it(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(UNREAD)
    result = run(["check", "--no-cache", "r.py"], tmp_path)
    assert result.exit_code == 1
    assert result.stdout.startswith(
        "r.py:5:1: SY005 [warning] my_config was not analysed: it uses llama3_8b_pretrain_config from "
        "megatron.bridge.recipes.llama.llama3 (imported on line 1), a module mblint could not read; install "
        "Megatron-Bridge where mblint runs, or give the folder holding its megatron/ (a checkout's src/, an unzipped "
        "wheel) with --search-path; `search-paths` in the settings takes only folders inside the project")
    assert PASSED not in result.stdout


def test_the_advice_for_a_team_package_names_both_ways_and_the_settings_limit(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(UNREAD.replace("cfg = llama3_8b_pretrain_config()", "cfg = tweak()"))
    result = run(["check", "--no-cache", "r.py"], tmp_path)
    assert ("it uses tweak from team.helpers (imported on line 2), a module mblint could not read; give the folder "
            "holding it with --search-path (or `search-paths` in the settings, for a folder inside the project), "
            "or install it where mblint runs") in result.stdout


def test_search_paths_outside_the_project_are_refused_as_the_advice_says(tmp_path: Path) -> None:
    """What SY005 says about the settings holds: a `search-paths` folder outside the project is
    not searched (and said so), while --search-path to the same folder is."""
    outside = tmp_path / "outside"
    (outside / "team").mkdir(parents=True)
    (outside / "team" / "__init__.py").write_text("")
    (outside / "team" / "helpers.py").write_text("def tweak():\n    return None\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "mblint.toml").write_text('search-paths = ["../outside"]\n')
    (project / "r.py").write_text("from team.helpers import tweak\n\n\ndef my_config():\n    cfg = tweak()\n"
                                  "    return cfg\n")
    refused = run(["check", "--no-cache", "r.py"], project)
    assert "is outside the project: not searched" in refused.stderr
    given = run(["check", "--no-cache", "--isolated", "--search-path", str(outside), "r.py"], project)
    assert "could not read" not in given.stdout


def _team_package(root: Path) -> None:
    (root / "pyproject.toml").write_text("")
    (root / "team").mkdir()
    (root / "team" / "__init__.py").write_text("")
    (root / "team" / "builders.py").write_text("def _sft_common():\n    return None\n")


def test_a_recipe_importing_a_name_its_module_does_not_define_is_reported(tmp_path: Path) -> None:
    # as a recipe written for a later release calling _sft_common_vlm, which 0.3's common.py lacks
    _team_package(tmp_path)
    (tmp_path / "r.py").write_text("from team.builders import _sft_common_vlm\n\n\n"
                                   "def my_config():\n    cfg = _sft_common_vlm()\n"
                                   "    cfg.train.micro_batch_size = 2\n    return cfg\n")
    result = run(["check", "--no-cache", "r.py"], tmp_path)
    assert result.exit_code == 1
    assert result.stdout.startswith(
        "r.py:4:1: SY005 [warning] my_config was not analysed: it uses _sft_common_vlm from team.builders "
        "(imported on line 1), which that module does not define: the import fails when the recipe runs")
    assert PASSED not in result.stdout


def test_a_submodule_imported_from_its_package_is_defined(tmp_path: Path) -> None:
    _team_package(tmp_path)
    (tmp_path / "r.py").write_text("from team import builders\n\n\n"
                                   "def my_config():\n    cfg = builders._sft_common()\n"
                                   "    cfg.train.micro_batch_size = 2\n    return cfg\n")
    result = run(["check", "--no-cache", "r.py"], tmp_path)
    assert "does not define" not in result.stdout


def test_a_builder_called_only_from_the_main_block_is_reported(tmp_path: Path) -> None:
    builder = GOOD_RECIPE.replace("def sft_config() -> ConfigContainer:", "def build(mbs):")
    builder = builder.replace("micro_batch_size=1", "micro_batch_size=mbs")
    (tmp_path / "r.py").write_text(builder + '\n\nif __name__ == "__main__":\n    cfg = build(2)\n')
    result = run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path)
    assert findings(result) == [("SY005", "r.py", 19)]
    [finding] = json.loads(result.stdout)["findings"]
    assert finding["message"].startswith('build(...) is called only from the `if __name__ == "__main__":` block')
    assert finding["location"]["column"] == 11 and finding["location"]["end_column"] == 19
    # a call without arguments (an entry script's main()) is the launch reader's to analyse
    (tmp_path / "r.py").write_text(builder + '\n\nif __name__ == "__main__":\n    cfg = build()\n')
    assert findings(run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path)) == []
    # a recipe that mblint analysed is not reported when the main block calls it too
    analysed = GOOD_RECIPE + '\n\nif __name__ == "__main__":\n    sft_config()\n'
    (tmp_path / "r.py").write_text(analysed)
    assert findings(run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path)) == []


# ----- --recipe without paths, show with settings --------------------------------------------


def test_recipe_option_without_paths_lints_that_recipe(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "r.py").write_text(GOOD_RECIPE + "\n\n" + GOOD_RECIPE.split("\n\n\n", 1)[1]
                                               .replace("def sft_config", "def other_config"))
    (tmp_path / "elsewhere.py").write_text(BAD_RECIPE)
    result = run(["check", "--no-cache", "--format", "json", "--recipe", "recipes/r.py::sft_config",
                  "--set", "train.micro_batch_size=2"], tmp_path)
    assert result.exit_code == 1, result.stderr
    document = json.loads(result.stdout)
    assert [(f["rule"], f["recipe"]) for f in document["findings"]] == [("PK001", "recipes/r.py::sft_config")]
    assert document["summary"]["recipes"] == 1 and document["summary"]["resolved"] == 1
    missing = run(["check", "--no-cache", "--recipe", "recipes/r.py::nope"], tmp_path)
    assert missing.exit_code == 2 and "'nope' not found" in missing.stderr


def test_show_honours_search_paths_from_the_settings(tmp_path: Path) -> None:
    (tmp_path / "helpers_lib").mkdir()
    (tmp_path / "helpers_lib" / "helpers.py").write_text(GOOD_RECIPE.replace("def sft_config", "def base"))
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "r.py").write_text(
        "from helpers import base\n\n\ndef sft_config():\n    cfg = base()\n    cfg.train.micro_batch_size = 3\n"
        "    return cfg\n")
    (tmp_path / "project" / "mblint.toml").write_text("search-paths = ['../helpers_lib']\n")
    result = run(["show", "r.py::sft_config", "--format", "json"], tmp_path / "project")
    assert result.exit_code == 0, result.stderr
    fields = json.loads(result.stdout)["fields"]
    assert fields["train.micro_batch_size"]["value"] == 3
    assert fields["dataset.enable_offline_packing"]["value"] is True  # read from ../helpers_lib/helpers.py


def test_a_package_tree_linted_from_inside_another_repository_reads_its_own_imports(tmp_path: Path) -> None:
    """README's first command: run from the mblint clone (a git repository) on an unzipped
    wheel elsewhere. The tree's recipes import siblings of the linted folder; those are read
    (the tree has no project marker: its imports resolve above its top-level package)."""
    tree = tmp_path / "unzipped" / "team"
    (tree / "recipes").mkdir(parents=True)
    (tree / "__init__.py").write_text("")
    (tree / "recipes" / "__init__.py").write_text("")
    (tree / "helpers.py").write_text(GOOD_RECIPE.replace("def sft_config", "def base"))
    (tree / "recipes" / "r.py").write_text(
        "from team.helpers import base\n\n\ndef sft_config():\n    cfg = base()\n    cfg.train.micro_batch_size = 2\n"
        "    return cfg\n")
    (tmp_path / "clone" / ".git").mkdir(parents=True)
    result = run(["check", "--no-cache", "--format", "json", str(tree / "recipes")], tmp_path / "clone")
    assert [f["rule"] for f in json.loads(result.stdout)["findings"]] == ["PK001"], result.stdout
