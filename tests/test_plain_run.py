"""A training script linted on its own is the job its plain run makes (`python train.py`, no
argument): it was "All checks passed (1 file, 0 configurations resolved)", with nothing checked,
whatever the script set. Modelled on Megatron-Bridge's tutorials/recipes/llama quickstarts
(`config = llama32_1b_..._config(); config.train.x = ...; finetune(config=config, ...)` in
`main()`), against the 0.6.2 wheel, whose `llama32_1b_peft_config` packs offline
(recipes/common.py `_peft_common`: `enable_offline_packing = True`, micro-batch 1)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from integration_support import run

RUN_MAIN = "\n\nif __name__ == \"__main__\":\n    main()\n"  # what makes the file a script

QUICKSTART = '''"""Finetune Llama 3.2 1B with LoRA, quickly."""

from megatron.bridge.recipes.llama import llama32_1b_peft_config
from megatron.bridge.training.finetune import finetune
from megatron.bridge.training.gpt_step import forward_step


def main() -> None:
    config = llama32_1b_peft_config(peft_scheme="lora")
    config.checkpoint.pretrained_checkpoint = "/checkpoints/llama32_1b"
    config.train.train_iters = 10
    config.scheduler.lr_warmup_iters = 2
{edit}    finetune(config=config, forward_step_func=forward_step)


if __name__ == "__main__":
    main()
'''
MBS_2 = "    config.train.micro_batch_size = 2\n"


def lint(tmp_path: Path, mb06: Path, *paths: str, options: tuple = ("--no-cache",)) -> dict:
    result = run(["check", *options, "--format", "json", "--search-path", str(mb06), *paths], tmp_path)
    assert result.exit_code in (0, 1), result.stdout + result.stderr
    return json.loads(result.stdout)


def places(document: dict, rule: str | None = None) -> list[tuple]:
    return [(f["rule"], f["location"]["path"], f["location"]["line"], f["location"]["column"])
            for f in document["findings"] if rule is None or f["rule"] == rule]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_the_tutorial_shape_is_checked_as_its_plain_run(project: Path, mb06: Path) -> None:
    """`config.train.micro_batch_size = 2` on the packed PEFT recipe: PK001 at that line, the
    job named; without the edit the job is checked (one configuration resolved) and PK001 is
    gone."""
    (project / "train.py").write_text(QUICKSTART.format(edit=MBS_2))
    document = lint(project, mb06, "train.py")
    assert places(document, "PK001") == [("PK001", "train.py", 13, 5)]
    assert document["summary"]["resolved"] == 1
    (project / "train.py").write_text(QUICKSTART.format(edit=""))
    document = lint(project, mb06, "train.py")
    assert places(document, "PK001") == [] and document["summary"]["resolved"] == 1
    assert not document["summary"]["not_analysed"]
    # the recipe's own findings are in the job too: outside the project, on the trainer call
    assert {(path, line) for _, path, line, _ in places(document)} <= {("train.py", 13)}  # the finetune call


def test_the_plain_run_takes_the_argparse_defaults_and_the_default_override_file(project: Path, mb06: Path) -> None:
    """`args = parser.parse_args()` (or a function of the script returning it) gives the
    options' defaults; an `or` decided by its first operand is decided (Megatron-Bridge's
    finetune_nemotron_3_super.py: `args.peft is None or (isinstance(args.peft, str) and ...)`);
    a required option is unknown, not None (no OT003 "PEFT requires a pretrained checkpoint"
    for `--checkpoint` that every run must give); the default `--config-file` is loaded."""
    (project / "conf").mkdir()
    (project / "conf" / "o.yaml").write_text("train:\n  eval_iters: 10\n")
    (project / "train.py").write_text(
        "import argparse\n"
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config, llama32_1b_sft_config\n"
        "from megatron.bridge.training.finetune import finetune\n"
        "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n\n\n"
        "def parse_args():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--checkpoint', required=True)\n"
        "    parser.add_argument('--peft', default=None)\n"
        "    parser.add_argument('--mbs', type=int, default=2)\n"
        "    parser.add_argument('--config-file', default='conf/o.yaml')\n"
        "    return parser.parse_args()\n\n\n"
        "def main():\n"
        "    args = parse_args()\n"
        "    if args.peft is None or args.peft.lower() == 'none':\n"
        "        cfg = llama32_1b_peft_config(peft_scheme='lora')\n"
        "    else:\n"
        "        cfg = llama32_1b_sft_config()\n"
        "    cfg.checkpoint.pretrained_checkpoint = args.checkpoint\n"
        "    cfg.train.micro_batch_size = args.mbs\n"
        "    cfg = process_config_with_overrides(cfg, config_filepath=args.config_file)\n"
        "    finetune(cfg, None)\n" + RUN_MAIN)
    document = lint(project, mb06, "train.py", options=("--no-cache", "--select", "PK001,OT003,OT008,SY005,LA002"))
    assert places(document) == [("OT008", "conf/o.yaml", 2, 3), ("PK001", "train.py", 23, 5)], document["findings"]


@pytest.mark.parametrize("body, says", [
    ("    cfg = my_config()\n", "train.py calls finetune() on a configuration that comes from no recipe mblint knows"),
    ("    cfg = llama32_1b_peft_config()\n    tune(cfg)\n",
     "train.py passes the recipe's configuration to tune(), which mblint does not follow"),
    ("    cfg = llama32_1b_peft_config()\n"
     "    cfg = process_config_with_overrides(cfg, config_filepath=os.environ['CONF'])\n",
     "train.py reads an override file whose path mblint does not know"),
    ("    cfg = llama32_1b_peft_config()\n    cfg = process_config_with_overrides(cfg, config_filepath='gone.yaml')\n",
     "override file gone.yaml not found"),
])
def test_a_plain_run_mblint_cannot_analyse_is_not_analysed(project: Path, mb06: Path, body: str, says: str) -> None:
    """SY005 at the trainer call with the reason the launch path gives (LA002 there), and the
    summary does not say "All checks passed"."""
    (project / "train.py").write_text(
        "import os\n"
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
        "from megatron.bridge.training.finetune import finetune\n"
        "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n"
        "from mycompany.configs import my_config, tune\n\n\n"
        f"def main():\n{body}    finetune(config=cfg, forward_step_func=None)\n" + RUN_MAIN)
    line = 9 + body.count("\n")
    document = lint(project, mb06, "train.py")
    assert places(document) == [("SY005", "train.py", line, 5)], document["findings"]
    assert document["findings"][0]["message"] == f"the job `python train.py` runs was not analysed: {says}"
    assert document["summary"]["not_analysed"]
    text = run(["check", "--no-cache", "--search-path", str(mb06), "train.py"], project)
    assert text.exit_code == 1 and "All checks passed" not in text.stdout


def test_a_finding_of_the_plain_run_and_of_a_launch_of_the_script_is_reported_once(project: Path, mb06: Path) -> None:
    """`torchrun --nproc_per_node=8 train.py` and the script linted in one run: the script's own
    problem is one finding, at the script's line (the launch line related when only the launch
    is linted); so are the recipe's own findings the two jobs share."""
    (project / "train.py").write_text(QUICKSTART.format(edit=MBS_2))
    (project / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n")
    both = lint(project, mb06, "train.py", "go.sh")
    assert places(both, "PK001") == [("PK001", "train.py", 13, 5)]
    said = [(f["rule"], f["location"]["path"], f["location"]["line"], f["message"]) for f in both["findings"]]
    assert len(said) == len(set(said)), said
    alone = lint(project, mb06, "go.sh")
    [pk001] = [f for f in alone["findings"] if f["rule"] == "PK001"]
    assert (pk001["location"]["path"], pk001["location"]["line"]) == ("train.py", 13)
    assert any(r["location"]["path"] == "go.sh" and "in the job launched at go.sh:2" in r["message"]
               for r in pk001["related"])


def test_the_override_file_the_plain_run_loads_is_not_reported_twice(project: Path, mb06: Path) -> None:
    """The script's default `--config-file` is also an override file the script pairs: its
    micro-batch of 2 is one PK001, at the YAML line, when both are linted."""
    (project / "conf").mkdir()
    (project / "conf" / "o.yaml").write_text("train:\n  micro_batch_size: 2\n")
    (project / "train.py").write_text(
        "import argparse\n"
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
        "from megatron.bridge.training.finetune import finetune\n"
        "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n\n\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--config-file', default='conf/o.yaml')\n"
        "    args, rest = parser.parse_known_args()\n"
        "    cfg = llama32_1b_peft_config()\n"
        "    cfg.checkpoint.pretrained_checkpoint = '/ckpt'\n"
        "    cfg = process_config_with_overrides(cfg, config_filepath=args.config_file, cli_overrides=rest)\n"
        "    finetune(cfg, None)\n" + RUN_MAIN)
    assert places(lint(project, mb06, "train.py"), "PK001") == [("PK001", "conf/o.yaml", 2, 3)]
    assert places(lint(project, mb06, "train.py", "conf/o.yaml"), "PK001") == [("PK001", "conf/o.yaml", 2, 3)]


def test_the_main_block_of_a_training_script_is_its_plain_run_not_a_second_gap(project: Path, mb06: Path) -> None:
    """`if __name__ == "__main__": main(sys.argv)` with `main` building the configuration was
    SY005 (a builder only the `__main__` block calls); it is the plain run, now checked."""
    (project / "train.py").write_text(
        "import sys\n"
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
        "from megatron.bridge.training.finetune import finetune\n\n\n"
        "def main(argv):\n"
        "    cfg = llama32_1b_peft_config()\n"
        "    cfg.checkpoint.pretrained_checkpoint = '/ckpt'\n"
        "    cfg.train.micro_batch_size = 2\n"
        "    finetune(cfg, None)\n\n\n"
        "if __name__ == '__main__':\n"
        "    main(sys.argv)\n")
    document = lint(project, mb06, "train.py", options=("--no-cache", "--select", "PK001,SY005"))
    assert places(document) == [("PK001", "train.py", 9, 5)], document["findings"]


def test_the_plain_run_s_result_depends_on_the_files_its_job_reads(project: Path, mb06: Path) -> None:
    """The per-file cache and the run's recorded output are keyed on the recipe module and the
    override file the plain run reads, not on the script alone."""
    (project / "recipes").mkdir()
    recipe = project / "recipes" / "mine.py"
    recipe.write_text("from megatron.bridge.recipes.llama import llama32_1b_peft_config\n\n\n"
                      "def mine_config():\n    cfg = llama32_1b_peft_config()\n"
                      "    cfg.checkpoint.pretrained_checkpoint = '/ckpt'\n    return cfg\n")
    (project / "conf").mkdir()
    override = project / "conf" / "o.yaml"
    override.write_text("train:\n  micro_batch_size: 1\n")
    (project / "train.py").write_text(
        "from recipes.mine import mine_config\n"
        "from megatron.bridge.training.finetune import finetune\n"
        "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n\n\n"
        "def main():\n"
        "    cfg = mine_config()\n"
        "    cfg = process_config_with_overrides(cfg, config_filepath='conf/o.yaml')\n"
        "    finetune(cfg, None)\n" + RUN_MAIN)
    options = ("--cache-dir", str(project / "cache"), "--select", "PK001,SY005")
    assert places(lint(project, mb06, "train.py", options=options)) == []
    time.sleep(3.2)  # a run right after an edit is not recorded (its timestamps cannot tell)
    override.write_text("train:\n  micro_batch_size: 2\n")
    assert places(lint(project, mb06, "train.py", options=options)) == [("PK001", "conf/o.yaml", 2, 3)]
    override.write_text("logger:\n  log_interval: 5\n")
    recipe.write_text(recipe.read_text().replace("    return cfg", "    cfg.train.micro_batch_size = 2\n    return cfg"))
    assert places(lint(project, mb06, "train.py", options=options)) == [("PK001", "recipes/mine.py", 7, 5)]


def test_a_hostile_training_script_stays_bounded(project: Path, mb06: Path) -> None:
    """Thousands of trainer calls and assignments, ifs nested deep, a long chain of `or`: the
    plain run is read within the entry reader's statement limit, in a few seconds."""
    nested = "".join("    " * (depth + 1) + f"if args.x{depth} or args.y:\n" for depth in range(40))
    inner = "    " * 41
    lines = [f"{inner}config.train.train_iters = {i}\n{inner}finetune(config, None)\n" for i in range(3000)]
    chain = " or ".join(f"args.z{i}" for i in range(2000))
    (project / "train.py").write_text(
        "import argparse\n"
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
        "from megatron.bridge.training.finetune import finetune\n\n\n"
        "def main():\n"
        "    args = argparse.ArgumentParser().parse_args()\n"
        f"    flag = {chain}\n"
        "    config = llama32_1b_peft_config()\n"
        "    config.train.micro_batch_size = 2\n"
        + nested + "".join(lines) + RUN_MAIN)
    start = time.perf_counter()
    document = lint(project, mb06, "train.py", options=("--no-cache", "--select", "PK001,SY005,SY002"))
    assert time.perf_counter() - start < 20
    assert ("PK001", "train.py", 10, 5) in places(document), document["findings"]


def test_a_launch_of_the_script_with_no_argument_reports_the_plain_run_s_problem_where_it_does(
        project: Path, mb06: Path) -> None:
    """`torchrun --nproc_per_node=8 train.py` runs the plain run's job: the PEFT recipe without a
    pretrained checkpoint (OT003, through values set in the recipe, not on a line of the
    script) was reported twice, on the trainer call and on the launch line. It is one finding,
    on the trainer call, the launch related; a launch passing arguments keeps it on its line."""
    (project / "train.py").write_text(QUICKSTART.format(edit="").replace(
        '    config.checkpoint.pretrained_checkpoint = "/checkpoints/llama32_1b"\n', ""))
    (project / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n")
    options = ("--no-cache", "--select", "OT003")
    assert places(lint(project, mb06, "train.py", "go.sh", options=options)) == [("OT003", "train.py", 12, 5)]
    [alone] = lint(project, mb06, "go.sh", options=options)["findings"]
    assert (alone["location"]["path"], alone["location"]["line"]) == ("train.py", 12)
    assert any(r["location"]["path"] == "go.sh" for r in alone["related"])
    (project / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py --debug\n")
    assert places(lint(project, mb06, "train.py", "go.sh", options=options)) == [
        ("OT003", "go.sh", 2, 29), ("OT003", "train.py", 12, 5)]


OWN_RECIPE = '''from megatron.bridge.recipes.llama import llama32_1b_pretrain_config
from megatron.bridge.training.gpt_step import forward_step
from megatron.bridge.training.pretrain import pretrain


def my_config():
    cfg = llama32_1b_pretrain_config()
    cfg.model.tensor_model_parallel_size = 3
    return cfg


def main() -> None:
    cfg = my_config()
    cfg.train.train_iters = 10
    pretrain(cfg, forward_step)


if __name__ == "__main__":
    main()
'''


def test_a_recipe_the_script_defines_on_a_library_recipe_is_the_one_it_runs(project: Path, mb06: Path) -> None:
    """`my_config()` wraps llama32_1b_pretrain_config (TP 3 on 8 processes: PB001) and `main`
    trains what it returns: one recipe, not "one of several recipes" (the library call inside
    my_config was counted as a second one, LA002/SY005, and PB001 was lost)."""
    (project / "train.py").write_text(OWN_RECIPE)
    (project / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n")
    options = ("--no-cache", "--select", "PB001,LA002,SY005")
    assert places(lint(project, mb06, "go.sh", options=options)) == [("PB001", "train.py", 8, 5)]
    assert places(lint(project, mb06, "train.py", options=options)) == []  # its plain run's world size is unknown


def test_an_option_s_value_is_what_its_argparse_type_makes_it(project: Path, mb06: Path) -> None:
    """`--micro-batch-size 2` with `type=int` is the int 2 (PK001 on the packed PEFT recipe),
    not the text '2' (OT013 'str from an override, but the field is int' was a false error);
    a type mblint does not know leaves the value unknown."""
    script = QUICKSTART.format(edit="    config.train.micro_batch_size = args.micro_batch_size\n").replace(
        "def main() -> None:\n",
        "def main() -> None:\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--micro-batch-size', type=TYPE, default='1')\n"
        "    args = parser.parse_args()\n").replace('"""\n\n', '"""\n\nimport argparse\n', 1)
    options = ("--no-cache", "--select", "OT013,PK001")
    for given, expected in (("int", [("PK001", "train.py", 17, 5)]), ("lambda text: text", [])):
        (project / "train.py").write_text(script.replace("TYPE", given))
        (project / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py --micro-batch-size 2\n")
        assert places(lint(project, mb06, "go.sh", options=options)) == expected, given
        (project / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n")  # default '1': 1
        assert places(lint(project, mb06, "go.sh", options=options)) == [], given


@pytest.mark.parametrize("calls, runs", [
    ("", False),  # a module of helpers: other scripts call train(); running it runs nothing
    ("if __name__ == '__main__':\n    train()\n", True),
    ("if __name__ == '__main__':\n    import fire\n    fire.Fire(train)\n", True),  # named, not called, still run
    ("train()\n", True),
])
def test_only_a_trainer_call_that_running_the_module_reaches_makes_a_plain_run(
        project: Path, mb06: Path, calls: str, runs: bool) -> None:
    """A module whose function calls a trainer for the scripts that import it is no job of its
    own: no "the job `python trainlib.py` runs" finding, checked or not analysed."""
    (project / "trainlib.py").write_text(
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
        "from megatron.bridge.training.finetune import finetune\n\n\n"
        "def _run(cfg):\n"
        "    finetune(config=cfg, forward_step_func=None)\n\n\n"
        "def train():\n"
        "    cfg = llama32_1b_peft_config()\n"
        "    cfg.train.micro_batch_size = 2\n"
        "    _run(cfg)\n\n\n" + calls)
    document = lint(project, mb06, "trainlib.py", options=("--no-cache", "--select", "PK001,SY005,LA002"))
    assert places(document) == ([("SY005", "trainlib.py", 6, 5)] if runs else []), document["findings"]


def test_a_decorated_function_counts_as_run(project: Path, mb06: Path) -> None:
    """`@app.command()` registers the function with a command-line framework that runs it."""
    (project / "train.py").write_text(
        "import typer\n"
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
        "from megatron.bridge.training.finetune import finetune\n\n"
        "app = typer.Typer()\n\n\n"
        "@app.command()\n"
        "def train():\n"
        "    cfg = llama32_1b_peft_config()\n"
        "    cfg.train.micro_batch_size = 2\n"
        "    finetune(config=cfg, forward_step_func=None)\n\n\n"
        "app()\n")
    document = lint(project, mb06, "train.py", options=("--no-cache", "--select", "PK001,SY005,LA002"))
    assert places(document) != [], "the job the command runs is checked or said not analysed"
