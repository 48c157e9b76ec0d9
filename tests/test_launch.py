"""Launch scripts: the shell reader, the launchers, Megatron-Bridge's runner and the findings on
the team's fixtures (fixtures/launch/), each worked out by hand against the 0.6.2 sources:

- slurm_peft_packed.sbatch: llama32_1b_peft_config is llama32_1b_peft_1gpu_h100_bf16_config
  (recipes/llama/llama3.py alias), built on _peft_common(), whose SQuAD dataset packs offline
  (recipes/utils/dataset_utils.py default_squad_config(..., enable_offline_packing=True));
  `-mb $MBS` with MBS=2 -> PK001 on the 2 of `MBS=2` (config.py: offline packing needs MBS 1).
  World 2 nodes (#SBATCH --nodes=2 -> $SLURM_NNODES) x 8 ($SLURM_GPUS_PER_NODE) = 16; GBS 64 is a
  multiple of 2*16, so nothing else.
- torchrun_cp3.sh: llama3_8b_pretrain_config (seq_length 8192, TP=PP=1) with
  model.context_parallel_size=3: 8192 % (2*3) = 2 -> CP001; world 2 x 8 = 16 not divisible by
  TP*PP*CP = 3 -> PB001 (an error: the world size is a fact of the launch line).
- uv_run_typo.sh: train.micro_batchsize=1 is no TrainingConfig field; Hydra's struct mode
  rejects it on the command line -> OT001 as an error.
- world_gbs.sh: world 2 ($NODES) x 8 = 16, -tp 2 -> DP 8; -gb 100: 100 % (MBS 1 * 8) = 4 -> PB003
  error on `-gb 100`, the world size's origin related.
- train_sh_model_mode.sh: train.sh --nodes 1 --gpus-per-node 8 --model llama32_1b --mode sft
  -cp 2 -sl 4096 (from $((CP * 2048))): the runner sets calculate_per_token_loss and clears
  average_in_collective (sync_finetuning_cp_invariants), pads packed sequences to lcm(1, 2*2)=4
  and packs to 4096 (sync_offline_packing_alignment): clean. The second line names its recipe
  with "$1": LA002.

A job's verdict is the whole job: the findings its recipe has on its own are reported too (the
0.6.2 recipes' own warnings, pinned on the recipes in tests/test_corpus_findings.py: PR010
cross_entropy_fusion_impl 'te' in the llama3 pretrain recipes, h100/llama3.py; OT001
scheduler.max_lr, OT002 and PR002 in the llama3 SFT/PEFT recipes). Those recipes are outside
the project (the wheel on the search path), so each lands on its launch line, the recipe's
place related.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integration_support import REPO, check_sarif, run
from mblint.engine import CheckOptions, Engine
from mblint.extract.launch import find_launches
from mblint.extract.shell import parse_script

FIXTURES = REPO / "fixtures" / "launch"

EXPECTED = {
    "slurm_peft_packed.sbatch": [("PK001", "error", 12, 5), ("OT001", "warning", 16, 5), ("PR002", "warning", 16, 5)],
    "torchrun_cp3.sh": [("CP001", "error", 9, 5), ("PB001", "error", 9, 5), ("PR010", "warning", 6, 40)],
    "uv_run_typo.sh": [("OT001", "error", 5, 5), ("PR010", "warning", 4, 5)],
    "world_gbs.sh": [("PB003", "error", 5, 78), ("PR010", "warning", 5, 5)],
    "train_sh_model_mode.sh": [("LA002", "warning", 12, 1), ("OT001", "warning", 7, 1), ("OT002", "warning", 7, 1),
                               ("PR002", "warning", 7, 1)],
    # Launch commands kept in YAML, as in the model verification cards: train.sh on 2 x 8 GPUs
    # running llama32_1b_sft_config (packed offline) with -mb 2 -> PK001 on `-mb 2`; a misspelt
    # train.global_batchsize on the command line -> OT001 as an error; `echo` is no launch.
    "card.yaml": [("PK001", "error", 9, 7), ("OT001", "error", 16, 7), ("OT001", "warning", 7, 7),
                  ("OT002", "warning", 7, 7), ("PR002", "warning", 7, 7), ("PR010", "warning", 14, 7)],
    # A training script of the team's in the style of the tutorials: finetune_with_yaml.py
    # builds llama32_1b_peft_config (its --scheme default "lora") and loads --config-file with
    # process_config_with_overrides. conf/finetune.yaml carries no pairing comment: the script,
    # which names it, pairs it; micro_batch_size 2 on a packed PEFT recipe -> PK001 on the YAML.
    "tutorial/conf/finetune.yaml": [("PK001", "error", 7, 3), ("OT001", "warning", 1, 1), ("PR002", "warning", 1, 1)],
    # Linted on its own, the script is the job of its plain run (`python finetune_with_yaml.py`):
    # LoRA with no override file (--config-file defaults to None), so no pretrained checkpoint ->
    # OT003; the 0.6.2 recipe's own OT001 and PR002 (outside the project) on the finetune call.
    "tutorial/finetune_with_yaml.py": [("OT001", "warning", 30, 5), ("OT003", "error", 30, 5),
                                       ("PR002", "warning", 30, 5)],
    # --scheme none -> llama32_1b_sft_config; the command line's MBS 1 wins over the YAML's 2;
    # CP=3 on 8 processes: 4096 % 6 -> CP001, 8 % 3 -> PB001, and since this script is not the
    # runner nothing sets per-token loss (CP002) or pads packed sequences to 6 (PK007).
    "tutorial/run_finetune.sh": [("CP001", "error", 5, 30), ("CP002", "error", 5, 30), ("PB001", "error", 5, 30),
                                 ("PK007", "error", 5, 30), ("OT001", "warning", 4, 29), ("OT002", "warning", 4, 29),
                                 ("PR002", "warning", 4, 29)],
}


def lint(paths: list[Path], mb06: Path, **options):
    engine = Engine(CheckOptions(search_paths=(mb06,), **options))
    engine.display_root = REPO
    return engine.check_paths([str(p) for p in paths])


@pytest.fixture(scope="module")
def fixture_report(mb06):
    return lint([FIXTURES], mb06)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_findings(fixture_report, name):
    display = f"fixtures/launch/{name}"
    # The jobs' coverage gaps (their recipes' AutoBridge models have no config.json in the tests'
    # empty cache: CV002) are pinned in test_coverage.py and test_job_verdict.py, not here.
    found = sorted((f.rule_id, f.severity.name.lower(), f.location.line, f.location.column)
                   for f in fixture_report.findings if f.location.path == display and not f.rule_id.startswith("CV"))
    assert found == sorted(EXPECTED[name])


def test_every_fixture_is_expected():
    files = [p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.is_file()]
    assert sorted(files) == sorted(EXPECTED)


def top_level(report) -> list:
    """Findings the launch scripts at the top of fixtures/launch cause (not their recipes' own)."""
    return [f for f in report.findings if "/tutorial/" not in f.location.path and not f.location.path.endswith(".yaml")
            and not recipe_own(f)]


def recipe_own(finding) -> bool:
    return any(related.message == "the recipe's own problem is here" for related in finding.related)


def test_finding_texts_and_related_places(fixture_report):
    by_rule = {f.rule_id: f for f in top_level(fixture_report)}
    pk001 = by_rule["PK001"]
    assert "micro_batch_size is 2" in pk001.message
    assert any("enable_offline_packing" in r.message for r in pk001.related)
    pb003 = by_rule["PB003"]
    assert "100 % 8 = 4" in pb003.message
    world = [r for r in pb003.related if "world size 16" in r.message]
    assert world and (world[0].origin.path, world[0].origin.line) == ("fixtures/launch/world_gbs.sh", 3)
    assert by_rule["OT001"].severity.name == "ERROR" and "micro_batch_size" in by_rule["OT001"].message
    pb001 = by_rule["PB001"]
    assert "world size 16" in pb001.message and "from the recipe name" not in pb001.message


def test_located_text_is_the_token_that_set_the_value(fixture_report):
    expected = {"PK001": "2", "CP001": "model.context_parallel_size=3", "OT001": "train.micro_batchsize=1",
                "PB003": "-gb 100"}
    for finding in top_level(fixture_report):
        if finding.rule_id in expected:
            location = finding.location
            line = (REPO / location.path).read_text().splitlines()[location.line - 1]
            assert line[location.column - 1:location.end_column - 1] == expected[finding.rule_id]
    in_card = {f.rule_id: f.location for f in fixture_report.findings if f.location.path.endswith("card.yaml")
               and not recipe_own(f)}
    lines = (FIXTURES / "card.yaml").read_text().splitlines()
    for rule, text in (("PK001", "-mb 2"), ("OT001", "train.global_batchsize=64")):
        location = in_card[rule]
        assert lines[location.line - 1][location.column - 1:location.end_column - 1] == text


def test_runner_syncs_are_what_keeps_the_train_sh_launch_clean(mb06, monkeypatch):
    """Without the runner's own fixes, SFT with CP=2 misses per-token loss (CP002) and the
    packed sequences are padded to 1, not to 2*CP = 4 (PK007): the fixture is clean only
    because run_recipe.py repairs both (sync_finetuning_cp_invariants,
    sync_offline_packing_alignment)."""
    import mblint.readers.launch

    monkeypatch.setattr(mblint.readers.launch, "runner_syncs", lambda *args: None)
    report = lint([FIXTURES / "train_sh_model_mode.sh"], mb06)
    assert {"CP002", "PK007"} <= {f.rule_id for f in report.findings}


def test_world_size_option_wins_over_the_launch(mb06):
    report = lint([FIXTURES / "world_gbs.sh"], mb06, world_size=8)
    assert "PB003" not in {f.rule_id for f in report.findings}  # DP 4: 100 % 4 == 0


def test_json_and_sarif_locations_on_script_lines(mb06, monkeypatch):
    monkeypatch.chdir(REPO)
    result = run(["check", "--format", "sarif", "--search-path", str(mb06), "--no-cache", "fixtures/launch"], REPO)
    assert result.exit_code == 1, result.stderr
    document = json.loads(result.stdout)
    check_sarif(document)
    regions = []
    for item in document["runs"][0]["results"]:
        for location in item["locations"] + item.get("relatedLocations", []):
            physical = location["physicalLocation"]
            regions.append((physical["artifactLocation"]["uri"], physical["region"]))
    scripts = [(uri, region) for uri, region in regions if uri.startswith("fixtures/launch/")]
    assert len(scripts) >= 6
    for uri, region in scripts:
        lines = (REPO / uri).read_text().splitlines()
        assert 1 <= region["startLine"] <= len(lines)
        line = lines[region["startLine"] - 1]
        assert 1 <= region["startColumn"] < region.get("endColumn", region["startColumn"] + 1) <= len(line) + 1
    result = run(["check", "--format", "json", "--search-path", str(mb06), "--no-cache", "fixtures/launch"], REPO)
    findings = json.loads(result.stdout)["findings"]
    located = {(f["rule"], f["location"]["path"], f["location"]["line"], f["location"]["column"],
                f["location"]["end_column"]) for f in findings}
    assert ("PB003", "fixtures/launch/world_gbs.sh", 5, 78, 85) in located


# ----- the shell reader -------------------------------------------------------------------


def words(text: str, script_dir: str | None = None) -> list[list]:
    return [[w.text for w in c.words] for c in parse_script(text, script_dir).commands]


def test_literal_variables_defaults_and_arithmetic():
    text = 'CP=${CP:-2}\nTP=4\nOV="a.b=$((CP * TP)) c=${TP}x"\necho $OV "$OV" ${UNSET:-d} $((7 / 2))\n'
    assert words(text) == [["echo", "a.b=8", "c=4x", "a.b=8 c=4x", "d", "3"]]


def test_unknowns_stay_unknown():
    text = 'A=$(date)\nfor i in 1 2; do B=$i; done\necho $1 "$A" $B $HOME ${X[0]}\n'
    assert words(text) == [["date"], ["echo", None, None, None, None, None]]  # `date` runs in $(...)


def test_if_on_known_values_takes_one_branch():
    text = 'C=""\nX=1\nif [ -n "$C" ]; then X=2; fi\nif [[ "$X" == 1 ]]; then Y=a; else Y=b; fi\necho $X $Y\n'
    assert words(text) == [["echo", "1", "a"]]
    text = 'X=1\nif [ -f /etc/passwd ]; then X=2; fi\necho $X\n'
    assert words(text) == [["echo", None]]


def test_bash_c_command_strings_and_script_dir():
    text = ('DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\nCMD="torchrun --nproc_per_node=8"\n'
            'CMD="$CMD $DIR/train.py --node_rank=\\$SLURM_PROCID"\nbash -c "$CMD"\n')
    assert words(text, "/w") == [["torchrun", "--nproc_per_node=8", "/w/train.py", None]]
    text = '#SBATCH --nodes=2\nCMD="torchrun --nnodes=2 --nproc_per_node=4 run_recipe.py --recipe r_sft_config"\n' \
           'srun --container-image=x bash -c "$CMD"\n'
    assert world(text) == (8, "r_sft_config")


def test_sbatch_header_and_slurm_variables():
    script = parse_script("#!/bin/bash\n#SBATCH -N 4\n#SBATCH --gpus-per-node=h100:8\necho $SLURM_NNODES\n"
                          "#SBATCH --nodes=9\n")
    assert [(d.name, d.value) for d in script.directives] == [("-N", "4"), ("--gpus-per-node", "h100:8")]
    assert [w.text for w in script.commands[0].words] == ["echo", "4"]


def world(text: str) -> tuple:
    script = parse_script(text)
    [launch] = find_launches(script.commands, script.directives)
    return launch.world_size, launch.recipe


@pytest.mark.parametrize("text, expected", [
    ("torchrun --nproc-per-node 4 run_recipe.py --recipe r_pretrain_config", (4, "r_pretrain_config")),
    ("torchrun --nnodes=1:4 --nproc_per_node=8 run_recipe.py --recipe r_sft_config", (None, "r_sft_config")),
    ("uv run python -m torch.distributed.launch --nproc_per_node=2 x/run_recipe.py --model m --mode lora",
     (2, "m_peft_config")),
    ("#SBATCH --nodes=3\n#SBATCH --ntasks-per-node=8\nsrun python run_recipe.py --recipe r_pretrain_config",
     (24, "r_pretrain_config")),
    ("srun -n 5 python run_recipe.py --recipe r_pretrain_config", (5, "r_pretrain_config")),
    ("./train.sh --nodes 2 --gpus-per-node 4 --recipe r_sft_config", (8, "r_sft_config")),
    ("python run_recipe.py --recipe r_sft_config", (None, "r_sft_config")),
])
def test_world_size_from_the_launchers(text, expected):
    assert world(text) == expected


def test_runner_rejections_are_la001():
    """An unknown option's value is part of the same mistake (run_recipe.py's parse_known_args
    leaves both to _collect_overrides, which stops at the option): one problem, not two."""
    script = parse_script("torchrun run_recipe.py --recipe r_sft_config --micro-batch-size 2 a=1 notanoverride\n")
    [launch] = find_launches(script.commands, script.directives)
    assert [m for _, m in launch.problems] == ["run_recipe.py: Unknown option: --micro-batch-size",
                                              "run_recipe.py: Expected override in KEY=VALUE form, got "
                                              "'notanoverride'"]


def test_an_unknown_option_and_its_value_from_variables_are_one_finding(tmp_path, mb06):
    """Megatron-Bridge main's scripts/training/launch_with_sbatch.sh:62,130 passes
    `--step $STEP_TYPE` (STEP_TYPE="gpt"); run_recipe.py (allow_abbrev=False) knows only
    --step-func: one LA001, at --step."""
    script = tmp_path / "launch.sh"
    script.write_text('STEP_TYPE="gpt"\nCMD="torchrun run_recipe.py --recipe r_sft_config"\n'
                      'CMD="$CMD --step $STEP_TYPE"\nbash -c "$CMD"\n')
    report = Engine(CheckOptions(search_paths=(mb06,), use_cache=False)).check_paths([str(script)])
    rejected = [(f.location.line, f.message) for f in report.findings if f.rule_id == "LA001"]
    assert rejected == [(3, "run_recipe.py: Unknown option: --step")], rejected


def test_unknown_recipe_name_is_an_error(tmp_path, mb06):
    script = tmp_path / "go.sh"
    script.write_text("torchrun --nproc_per_node=8 run_recipe.py --recipe llama3_8bb_pretrain_config\n")
    report = lint([script], mb06)
    [finding] = report.findings
    assert finding.rule_id == "LA001" and "not found in megatron.bridge.recipes" in finding.message


def test_shebang_files_without_suffix_are_discovered(tmp_path):
    from mblint.discover import discover

    (tmp_path / "launch").write_text("#!/usr/bin/env bash\ntorchrun x.py\n")
    (tmp_path / "notes").write_text("plain text\n")
    found = discover([str(tmp_path)])
    assert [p.name for p in found.scripts] == ["launch"]


def test_show_a_launch_line(mb06, monkeypatch):
    monkeypatch.chdir(REPO)
    result = run(["show", "fixtures/launch/world_gbs.sh:5", "--search-path", str(mb06)], REPO)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "world size 16 (2 nodes x 8 processes per node)" in lines[0]
    assert "train.global_batch_size = 100  # fixtures/launch/world_gbs.sh:5" in lines
    assert "model.tensor_model_parallel_size = 2  # fixtures/launch/world_gbs.sh:5" in lines
    result = run(["show", "fixtures/launch/card.yaml:9", "--search-path", str(mb06), "--format", "json"], REPO)
    document = json.loads(result.stdout)
    assert document["world_size"] == 16
    assert document["fields"]["train.micro_batch_size"]["value"] == 2
    # the runner packs to the dataset's sequence length (sync_offline_packing_alignment)
    assert document["fields"]["dataset.offline_packing_specs.packed_sequence_size"]["origins"][-1]["line"] == 7
    result = run(["show", "fixtures/launch/world_gbs.sh:1", "--search-path", str(mb06)], REPO)
    assert result.exit_code == 2 and "no launch line" in result.stderr


def test_a_script_that_only_names_a_yaml_does_not_pair_it(tmp_path, mb06):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "over.yaml").write_text("train:\n  micro_batch_size: 2\n")
    (tmp_path / "notes.py").write_text("from megatron.bridge.recipes.llama import llama32_1b_peft_config\n"
                                       "HELP = 'see conf/over.yaml'\n\ndef main():\n    cfg = llama32_1b_peft_config()\n")
    report = lint([tmp_path / "conf" / "over.yaml"], mb06)
    assert [f.rule_id for f in report.findings] == ["SY005"] and report.resolved == 0  # unpaired, and said so


def test_settings_pair_a_glob_with_a_recipe_name(tmp_path, mb06):
    (tmp_path / "mblint.toml").write_text('[pairing]\n"conf/*.yaml" = "llama32_1b_peft_config"\n')
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "ft.yaml").write_text("train:\n  micro_batch_size: 2\n")
    from mblint.settings import SettingsResolver

    engine = Engine(CheckOptions(search_paths=(mb06,), settings=SettingsResolver(None)))
    engine.display_root = tmp_path
    report = engine.check_paths([str(tmp_path / "conf" / "ft.yaml")])
    assert [(f.rule_id, f.location.path, f.location.line) for f in report.findings
            if f.rule_id == "PK001"] == [("PK001", "conf/ft.yaml", 2)]


def test_hydra_reads_none_as_a_string_and_null_as_none():
    """Hydra's override grammar (hydra/grammar/OverrideLexer.g4: NULL is [Nn][Uu][Ll][Ll]):
    `model.cuda_graph_impl=none` is the string 'none' (checked with hydra-core's
    OverridesParser: a=none -> 'none', b=null -> None, c=None -> 'None')."""
    from mblint.overrides import parse_value

    assert parse_value("none") == "none" and parse_value("None") == "None"
    assert parse_value("null") is None and parse_value("NULL") is None


def test_words_of_a_bash_c_string_land_where_they_were_written():
    text = ('MBS=4\nOVERRIDES="\\\n    train.micro_batch_size=$MBS \\\n    train.train_iters=5"\n'
            'CMD="python run_recipe.py --recipe r_sft_config \\\n    $OVERRIDES"\nsrun bash -c "$CMD"\n')
    script = parse_script(text)
    [launch] = find_launches(script.commands, script.directives)
    spans = {s.item: (s.span.line, s.span.column, s.span.end_column) for s in launch.settings}
    assert spans == {"train.micro_batch_size=4": (3, 5, 28), "train.train_iters=5": (4, 5, 24)}


def test_a_training_script_with_student_and_teacher_pairs_the_student(tmp_path, mb06):
    """The recipe whose result goes to process_config_with_overrides is the one trained; what
    the script assigns on it before (cfg.model = ...) is unknown or its literal value."""
    (tmp_path / ".git").mkdir()  # the project: mblint reads no file outside it
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "distill.yaml").write_text("train:\n  micro_batch_size: 2\n  global_batch_size: 64\n")
    (tmp_path / "distill.py").write_text(
        "import argparse\n"
        "from megatron.bridge.recipes.llama import llama32_1b_peft_config, llama32_3b_pretrain_config\n"
        "from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides\n"
        "DEFAULT = 'conf/distill.yaml'\n\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--config-file', default=DEFAULT)\n"
        "    args, rest = parser.parse_known_args()\n"
        "    cfg = llama32_1b_peft_config()\n"
        "    teacher = llama32_3b_pretrain_config()\n"
        "    cfg.dataset.enable_offline_packing = make_flag()\n"
        "    cfg = process_config_with_overrides(config=cfg, config_filepath=args.config_file)\n")
    report = lint([tmp_path / "conf" / "distill.yaml"], mb06)
    # paired with the student (a packed PEFT recipe); the script's own unknown assignment to
    # enable_offline_packing makes PK001 silent
    assert report.resolved == 1 and "PK001" not in {f.rule_id for f in report.findings}
    assert any("paired with llama32_1b_peft" in note for note in report.notes)
    (tmp_path / "distill.py").write_text((tmp_path / "distill.py").read_text().replace("make_flag()", "True"))
    report = lint([tmp_path / "conf" / "distill.yaml"], mb06)
    assert [(f.rule_id, f.location.line) for f in report.findings if f.rule_id == "PK001"] == [("PK001", 2)]


def test_an_unknown_argument_may_override_anything(tmp_path, mb06):
    """Modelled on examples/models/nemotron/nemotron_3/ultra/slurm_pretrain.sh, where
    "${OPTIONAL_OVERRIDES[@]}" sets model.recompute_method and recompute_num_layers: a finding
    on fields written before an unknown argument is not reported (LA002 says so); one whose
    fields are all written after it stands."""
    script = tmp_path / "go.sh"
    script.write_text('EXTRA=(model.recompute_method=uniform $(cluster_overrides))\n'
                      'torchrun --nproc_per_node=8 run_recipe.py --recipe llama32_1b_pretrain_config \\\n'
                      '    model.recompute_granularity=full "${EXTRA[@]}" train.micro_batchsize=1 '
                      'train.global_batch_size=12\n')
    report = lint([script], mb06)
    found = sorted((f.rule_id, f.location.line, f.location.column) for f in report.findings)
    # RC001 (full recompute without method), PB003 (12 % 8; DP depends on TP/PP/CP, which the
    # array could set) and the recipe's own PR010 (cross_entropy_fusion_impl 'te',
    # h100/llama3.py) are held back; the misspelt key written after the array stands
    # the job's gap stands whatever the array sets: the recipe's AutoBridge model has no config.json here
    assert found == [("CV002", 2, 29), ("LA002", 3, 38), ("OT001", 3, 52)]
    [note] = [f for f in report.findings if f.rule_id == "LA002"]
    assert note.message.startswith("3 finding(s) on this launch not reported")


def test_options_whose_effect_is_not_modelled_leave_the_launch_unchecked(tmp_path, mb06):
    script = tmp_path / "go.sh"
    script.write_text("torchrun --nproc_per_node=8 run_recipe.py --recipe llama32_1b_peft_config -mb 2 "
                      "--deterministic\n")
    report = lint([script], mb06)
    assert [(f.rule_id, f.message) for f in report.findings] == [
        ("LA002", "launch not checked: --deterministic: the determinism overrides are not modelled")]


def test_show_a_launch_line_prints_no_control_character(tmp_path, mb06):
    """Text from an untrusted launch script reaches the terminal neutralised, as in `check`."""
    script = tmp_path / "launch.sh"
    for recipe in ("llama32_1b_pretrain_config", "no_such\x1b]0;pwned\x07_pretrain_config"):
        script.write_text("#!/bin/bash\npython -m torch.distributed.run --nproc_per_node 8 \\\n"
                          f"    scripts/training/run_recipe.py --recipe '{recipe}' 'logger.wandb_project=a\x1b[2Jb'\n")
        result = run(["show", f"{script}:3", "--search-path", str(mb06), "--all"], tmp_path)
        assert result.exit_code in (0, 2) and ("wandb_project" in result.stdout or "not found" in result.stderr)
        assert "\x1b" not in result.stdout + result.stderr and "\x07" not in result.stdout + result.stderr


def test_show_a_launch_line_reads_the_settings_as_check_does(tmp_path):
    """The entry script's recipe comes from a package that only the settings' search-paths
    make readable: check analyses the launch line, and show prints its configuration."""
    from integration_support import GOOD_RECIPE

    (tmp_path / "libs" / "team" / "recipes").mkdir(parents=True)
    (tmp_path / "libs" / "team" / "__init__.py").write_text("")
    (tmp_path / "libs" / "team" / "recipes" / "__init__.py").write_text("")
    (tmp_path / "libs" / "team" / "recipes" / "llm.py").write_text(GOOD_RECIPE)
    (tmp_path / "mblint.toml").write_text('search-paths = ["libs"]\n')
    (tmp_path / "launch").mkdir()
    (tmp_path / "launch" / "train.py").write_text(
        "from megatron.bridge.training.pretrain import pretrain\nfrom team.recipes.llm import sft_config\n\n\n"
        "def main():\n    cfg = sft_config()\n    pretrain(cfg)\n")
    (tmp_path / "launch" / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 launch/train.py\n")
    checked = run(["check", "--no-cache", "--format", "json", "launch/run.sh"], tmp_path)
    assert json.loads(checked.stdout)["summary"]["resolved"] == 1
    shown = run(["show", "launch/run.sh:2"], tmp_path)
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines()[0].startswith("# launch/run.sh:2: libs/team/recipes/llm.py::sft_config")
    assert "train.micro_batch_size = 1  # libs/team/recipes/llm.py:8" in shown.stdout.splitlines()
    (tmp_path / "mblint.toml").write_text('search-paths = ["../elsewhere"]\n')
    refused = run(["show", "launch/run.sh:2"], tmp_path)
    assert refused.exit_code == 2 and "is outside the project: not searched" in refused.stderr
