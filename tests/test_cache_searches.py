"""What a search found, or did not find, keys the caches: a result that depends on which
files exist where mblint looked (the training scripts beside an override file, an entry
script or an override file a launch line names, an imported module, a recipe named by a
pairing comment or a launch line) is served from a cache only while the places looked at are
as they were. Each change below alters what `mblint check --no-cache` prints; a
cached run (the per-file entries, and the run-level result) prints the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cache import RECIPE
from tests.test_run_results import engine_runs, mblint, project, settle  # noqa: F401 - fixtures

YAML = "train:\n  micro_batch_size: 2\n  global_batch_size: 64\n"
# A training script in the style of the tutorials: llama32_1b_peft_config packed offline
# (0.6.2), the YAML loaded with process_config_with_overrides: MBS 2 in the YAML -> PK001.
SCRIPT = ("import argparse\n"
          "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
          "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n"
          "DEFAULT = 'conf/distill.yaml'\n\n"
          "def main():\n"
          "    parser = argparse.ArgumentParser()\n"
          "    parser.add_argument('--config-file', default=DEFAULT)\n"
          "    args, rest = parser.parse_known_args()\n"
          "    cfg = llama32_1b_peft_config()\n"
          "    cfg.dataset.enable_offline_packing = True\n"
          "    cfg = process_config_with_overrides(config=cfg, config_filepath=args.config_file)\n")


LAUNCH = "torchrun --nproc-per-node=8 distill.py --config-file conf/distill.yaml\n"


def beside_the_override_file(root: Path) -> list[str]:
    (root / "conf").mkdir()
    (root / "conf" / "distill.yaml").write_text(YAML)
    return ["conf"]


def add_the_training_script(root: Path) -> None:
    (root / "distill.py").write_text(SCRIPT)


def a_script_naming_it_without_loading_it(root: Path) -> list[str]:
    (root / "distill.py").write_text(SCRIPT.replace("config_filepath=args.config_file", "config_filepath=None"))
    return beside_the_override_file(root)


def launched_from_a_folder_of_its_own(root: Path) -> list[str]:
    beside_the_override_file(root)
    (root / "launch").mkdir()
    (root / "launch" / "run.sh").write_text(LAUNCH)
    return ["launch"]


def add_the_launched_script(root: Path) -> None:
    (root / "launch" / "distill.py").write_text(SCRIPT.replace("'conf/distill.yaml'", "None"))


def launched_script_in_place(root: Path) -> list[str]:
    paths = launched_from_a_folder_of_its_own(root)
    add_the_launched_script(root)
    return paths


def add_the_named_override_file_nearer(root: Path) -> None:
    (root / "launch" / "conf").mkdir()  # found first: looked for from the script's folder up
    (root / "launch" / "conf" / "distill.yaml").write_text(YAML.replace("micro_batch_size: 2", "micro_batch_size: 1"))


def importing_from_a_search_path(root: Path) -> list[str]:
    common = root / "proj" / "common.py"
    common.write_text(common.read_text().replace("MBS = 2", "from shared import MBS"))
    (root / "lib").mkdir()
    (root / "lib" / "shared.py").write_text("MBS = 1\n")
    return ["proj/recipe.py", "--search-path", "lib"]


def add_the_module_on_an_earlier_import_root(root: Path) -> None:
    (root / "shared.py").write_text("MBS = 2\n")  # the project's top comes before the search paths


def paired_by_a_comment(root: Path) -> list[str]:
    beside_the_override_file(root)
    (root / "conf" / "distill.yaml").write_text("# mblint: recipe=mine.py::tiny_sft_config\n" + YAML)
    (root / "conf" / "mine.py").write_text(RECIPE.replace("from proj.common", "from proj.common_one"))
    common = (root / "proj" / "common.py").read_text()
    (root / "proj" / "common_one.py").write_text(common.replace("enable_offline_packing=True",
                                                                "enable_offline_packing=False"))
    return ["conf"]


def add_the_recipe_where_it_is_looked_for_first(root: Path) -> None:
    (root / "mine.py").write_text(RECIPE)  # relative to the working folder, before the file's own folder


def a_vendored_megatron_bridge(root: Path) -> list[str]:
    bridge = root / "vendor" / "megatron" / "bridge"
    (bridge / "recipes" / "fam" / "h100").mkdir(parents=True)
    for folder in (bridge.parent, bridge, bridge / "recipes", bridge / "recipes" / "fam"):
        (folder / "__init__.py").write_text("")
    (bridge / "package_info.py").write_text("MAJOR = 0\nMINOR = 6\nPATCH = 2\n")
    (bridge / "recipes" / "fam" / "h100" / "mine.py").write_text(RECIPE)
    (root / "launch").mkdir()
    (root / "launch" / "run.sh").write_text("torchrun --nproc-per-node=8 run_recipe.py --recipe tiny_sft_config\n")
    return ["launch", "--search-path", "vendor"]


def export_the_recipe_from_a_family(root: Path) -> None:
    h100 = root / "vendor" / "megatron" / "bridge" / "recipes" / "fam" / "h100"
    (h100 / "__init__.py").write_text("from .mine import tiny_sft_config\n")


CHANGES = {
    "a training script added beside the override file": (beside_the_override_file, add_the_training_script),
    "a script naming the override file edited to load it": (a_script_naming_it_without_loading_it,
                                                            add_the_training_script),
    "the entry script a launch line runs added": (launched_from_a_folder_of_its_own, add_the_launched_script),
    "the override file a launch line names added nearer": (launched_script_in_place,
                                                           add_the_named_override_file_nearer),
    "an imported module added where it is looked for first": (importing_from_a_search_path,
                                                              add_the_module_on_an_earlier_import_root),
    "the recipe a comment names added where it is looked for first": (paired_by_a_comment,
                                                                      add_the_recipe_where_it_is_looked_for_first),
    "the recipe a launch line names exported": (a_vendored_megatron_bridge, export_the_recipe_from_a_family),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_cached_run_prints_what_a_run_without_cache_prints(project, engine_runs, monkeypatch, mb06, name):  # noqa: F811
    make, change = CHANGES[name]
    args = [*make(project), "--search-path", str(mb06), "--output-format", "concise"]
    settle(monkeypatch)
    before = mblint(*args)
    assert mblint(*args) == before == mblint(*args, "--no-cache")
    change(project)
    settle(monkeypatch)
    after = mblint(*args, "--no-cache")
    assert after != before
    runs = len(engine_runs)
    # The run-level result is not served (the engine runs), and the per-file entries it then
    # reads are not either: the output is the one without cache.
    assert mblint(*args) == after and len(engine_runs) == runs + 1
