"""Launch forms beyond torchrun and srun (issue 31): each is read as a job, or said not to be.

Every launch below runs llama32_1b_pretrain_config (TP 1, PP 1, CP 1 in the 0.6.2 recipe) on 8
processes with model.tensor_model_parallel_size=3; Megatron-Core's initialize_model_parallel
requires world_size % (TP * PP * CP) == 0, and 8 % 3 = 2: PB001, an error, on the TP=3 token.
How each launcher gives 8 processes, from its own sources:

- accelerate launch: --num_processes is the total over all machines
  (accelerate/commands/launch.py; per machine it is num_processes // num_machines);
- deepspeed: --num_nodes x --num_gpus (deepspeed/launcher/runner.py); --no_local_rank, since
  its launch.py otherwise appends --local_rank=N to the script's arguments;
- python -m torch.distributed.launch: torch.distributed.run's options; --use-env, since without
  it the launcher appends --local-rank=N (torch/distributed/launch.py), which run_recipe.py's
  _collect_overrides rejects as "Unknown option";
- eval of a variable, a function forwarding "$@", a heredoc read by `srun bash`: the shell runs
  the torchrun line they hold.

The recipe's own PR010 (cross_entropy_fusion_impl 'te', recipes/llama/h100/llama3.py) is
reported on each launch line too (a job's verdict is the whole job); these tests look at what
the launches cause (``caused``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mblint.engine import CheckOptions, Engine
from mblint.extract.launch import find_launches
from mblint.extract.shell import parse_script

RUNNER = "scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config"
TP3 = "model.tensor_model_parallel_size=3"
TORCHRUN = f"torchrun --nproc_per_node=8 {RUNNER}"

FORMS = {
    "accelerate.sh": f"accelerate launch --multi_gpu --num_processes 8 {RUNNER} {TP3}\n",
    "deepspeed.sh": f"deepspeed --num_nodes 1 --num_gpus 8 --no_local_rank {RUNNER} {TP3}\n",
    "distributed_launch.sh": f"python -m torch.distributed.launch --use-env --nproc_per_node 8 {RUNNER} {TP3}\n",
    "eval.sh": f'CMD="{TORCHRUN} {TP3}"\neval $CMD\n',
    "function.sh": f'run() {{\n  {TORCHRUN} "$@"\n}}\nrun {TP3}\n',
    "heredoc.sh": f"#SBATCH --nodes=1\nsrun bash <<EOF\n{TORCHRUN} {TP3}\nEOF\n",
    "quoted_heredoc.sh": f"bash <<'EOF'\n{TORCHRUN} {TP3}\nEOF\n",
}


def lint(paths: list[Path], mb06: Path, root: Path):
    engine = Engine(CheckOptions(search_paths=(mb06,), use_cache=False))
    engine.display_root = root
    report = engine.check_paths([str(p) for p in paths])
    report.findings = caused(report.findings)
    return report


def caused(findings: list) -> list:
    """The findings the launches cause, not those their recipe has on its own."""
    return [f for f in findings if not any(r.message == "the recipe's own problem is here" for r in f.related)]


@pytest.fixture(scope="module")
def forms_report(tmp_path_factory, mb06):
    root = tmp_path_factory.mktemp("forms")
    for name, text in FORMS.items():
        (root / name).write_text(text)
    return root, lint([root / name for name in FORMS], mb06, root)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_launch_form_is_checked_with_its_world_size(forms_report, name):
    root, report = forms_report
    found = [f for f in report.findings if f.location.path == name]
    assert [f.rule_id for f in found] == ["PB001"]
    [finding] = found
    assert "world size 8" in finding.message
    line = (root / name).read_text().splitlines()[finding.location.line - 1]
    assert line[finding.location.column - 1:finding.location.end_column - 1] == TP3


def world(text: str):
    script = parse_script(text)
    [launch] = find_launches(script.commands, script.directives)
    return launch


def test_launchers_that_pass_a_local_rank_to_run_recipe_are_rejected():
    for text in (f"python -m torch.distributed.launch --nproc_per_node 8 {RUNNER}\n",
                 f"deepspeed --num_nodes 1 --num_gpus 8 {RUNNER}\n"):
        launch = world(text)
        assert [m.split(" (")[0] for _, m in launch.problems] in (["run_recipe.py: Unknown option: --local-rank=0"],
                                                                    ["run_recipe.py: Unknown option: --local_rank=0"])


@pytest.mark.parametrize("text", [
    f"accelerate launch {RUNNER}\n",  # the count is in accelerate's config file
    f"deepspeed --num_gpus 8 --no_local_rank {RUNNER}\n",  # the nodes are the hostfile's
    f"torchrun --nnodes=$NNODES --nproc_per_node=8 {RUNNER}\n",
    f"torchrun --nnodes=1 $TORCH_ARGS {RUNNER}\n",
    f"torchrun --nnodes={'9' * 5000} --nproc_per_node=8 {RUNNER}\n",
])
def test_a_process_count_that_is_not_known_leaves_the_world_size_unknown(text):
    launch = world(text)
    assert launch.recipe == "llama32_1b_pretrain_config"
    assert launch.world_size is None and launch.world_unknown is not None


def test_an_unknown_launcher_option_keeps_the_job(tmp_path, mb06):
    """The issue's line: --nnodes from the environment and a variable from $(...) before it.
    The job is checked (the misspelt key written after them is OT001); only what needs the
    world size is not, and that is said (LA002, info); checkpoint.save alone is unknown."""
    script = tmp_path / "go.sh"
    script.write_text('MODEL_NAME=$(basename "$HF_MODEL_ID")\n'
                      f"torchrun --nnodes=$NNODES --nproc_per_node=8 {RUNNER} {TP3} "
                      "checkpoint.save=/ckpt/$MODEL_NAME train.micro_batchsize=2\n")
    report = lint([script], mb06, tmp_path)
    assert report.resolved == 1
    line = script.read_text().splitlines()[1]
    found = sorted((f.rule_id, f.severity.name.lower(), f.location.column) for f in report.findings)
    # CV004: checkpoint.save's value is unknown, and that is said at it
    assert found == [("CV004", "warning", line.index("checkpoint.save") + 1),
                     ("LA002", "info", line.index("--nnodes") + 1), ("OT001", "error", line.index("train.") + 1)]
    [gap] = [f for f in report.findings if f.rule_id == "LA002"]
    assert "world size is unknown" in gap.message and "PB001" in gap.message


@pytest.mark.parametrize("ignore,reporter", [((), "LA002"), (("LA002",), "CV003")])
def test_the_unknown_world_size_of_a_launch_is_one_finding_whichever_rule_is_selected(tmp_path, mb06, ignore, reporter):
    """The gap is one problem of the job, decided with its other findings (arbitration): LA002
    says it at the launcher option, and CV003 gives way to it; with LA002 not selected, CV003
    says it there. (It was said by the reader alone, so --ignore LA002 lost it.)"""
    script = tmp_path / "go.sh"
    line = f"torchrun --nnodes=$NNODES --nproc_per_node=8 {RUNNER} {TP3}\n"
    script.write_text(line)
    engine = Engine(CheckOptions(search_paths=(mb06,), use_cache=False, ignore=ignore))
    engine.display_root = tmp_path
    report = engine.check_paths([str(script)])
    gaps = [(f.rule_id, f.location.path, f.location.column) for f in report.findings if f.rule_id in ("LA002", "CV003")]
    assert gaps == [(reporter, "go.sh", line.index("--nnodes") + 1)]
    [gap] = [f for f in report.findings if f.rule_id == reporter]
    assert "world size is unknown" in gap.message and "PB001" in gap.message


def test_one_unknown_override_value_leaves_the_others_known():
    launch = world(f"{TORCHRUN} model.tensor_model_parallel_size=$TP train.micro_batch_size=2\n")
    assert [(s.item, s.unknown) for s in launch.settings] == [("model.tensor_model_parallel_size=", True),
                                                              ("train.micro_batch_size=2", False)]
    assert launch.unknown_overrides == []  # not "any overrides": only that field is unknown


def test_a_launch_line_mblint_cannot_read_is_la002(tmp_path, mb06):
    script = tmp_path / "go.sh"
    script.write_text(f"$LAUNCHER_ARRAY_ELEMENT {RUNNER}\n"
                      f'echo "would run {RUNNER}"\n'  # echo runs nothing
                      f'CMD="torchrun --nproc_per_node=8 $(cat entry.txt) --recipe llama32_1b_pretrain_config"\n'
                      'bash -c "$CMD"\n')
    report = lint([script], mb06, tmp_path)
    found = sorted((f.rule_id, f.severity.name.lower(), f.location.line) for f in report.findings)
    assert found == [("LA002", "info", 1), ("LA002", "warning", 3)]
    messages = {f.location.line: f.message for f in report.findings}
    assert "launch not checked" in messages[3]


def test_a_launch_line_past_the_word_limit_is_a_finding(tmp_path, mb06):
    script = tmp_path / "go.sh"
    script.write_text("echo " + "w " * 20_001 + f"\n{TORCHRUN} {TP3}\n")
    report = lint([script], mb06, tmp_path)
    assert [(f.rule_id, f.location.line) for f in report.findings] == [("SY002", 1)]
    assert "word limit (20,000 words per script) reached" in report.findings[0].message


def test_function_arguments_and_positional_parameters():
    script = parse_script('f() { echo "$1" "$#" "$@" $* "x$@y"; }\nf "a b" c\n')
    assert [[w.text for w in c.words] for c in script.commands] == [
        ["echo", "a b", "2", "a b", "c", "a", "b", "c", "xa b", "cy"]]
    script = parse_script('f() { torchrun "$@"; }\n')  # never called: read with unknown arguments
    assert [[w.text for w in c.words] for c in script.commands] == [["torchrun", None]]
    script = parse_script('f() { f "$@"; }\nf 1\n')  # recursion is not followed
    assert script.commands == [] and not script.limits
    script = parse_script('f() { local X=2; echo $X; }\nX=1\nf\necho $X\n')  # X is the function's own
    assert [[w.text for w in c.words] for c in script.commands] == [["echo", "2"], ["echo", "1"]]
    assert script.commands[0].called_at.line == 3 and script.commands[1].called_at is None


def test_show_a_launch_run_by_a_function_at_its_call(forms_report, mb06):
    from integration_support import run

    root, _ = forms_report
    result = run(["show", "function.sh:4", "--search-path", str(mb06), "--format", "json"], root)
    assert result.exit_code == 0, result.stderr
    fields = __import__("json").loads(result.stdout)["fields"]
    assert fields["model.tensor_model_parallel_size"]["value"] == 3


def test_literal_arrays_are_expanded_as_bash_expands_them(tmp_path, mb06):
    """The array of the test above, written literally: its overrides apply (recompute_method
    and recompute_num_layers are set, so RC001 is silent) and the findings on what it does not
    set stand: 12 % (MBS 1 x DP 8) = 4, PB003 (Megatron-LM's global batch check)."""
    script = tmp_path / "go.sh"
    script.write_text('EXTRA=(model.recompute_method=uniform model.recompute_num_layers=1)\n'
                      'torchrun --nproc_per_node=8 run_recipe.py --recipe llama32_1b_pretrain_config \\\n'
                      '    model.recompute_granularity=full "${EXTRA[@]}" train.micro_batchsize=1 '
                      'train.global_batch_size=12\n')
    report = lint([script], mb06, tmp_path)
    assert sorted((f.rule_id, f.location.line) for f in report.findings) == [("OT001", 3), ("PB003", 3)]
    script = parse_script('A=(a "b c")\nA+=(d)\necho "${A[@]}" ${A[*]} ${#A[@]} $A "${A[1]}" "x${A[@]}y"\n'
                          'unset "A[0]"\necho "${A[@]}" "${FROM_ENV[@]}"\nmapfile -t B < f\necho "${B[@]}"\n')
    assert [[w.text for w in c.words] for c in script.commands] == [
        ["echo", "a", "b c", "d", "a", "b", "c", "d", "3", "a", "b c", "xa", "b c", "dy"],
        ["echo", None, None], ["mapfile", "-t", "B"], ["echo", None]]
