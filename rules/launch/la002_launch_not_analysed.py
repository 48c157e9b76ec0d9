from __future__ import annotations

from mblint.rulekit import WORLD_SIZE_UNKNOWN, COVERAGE_TAG, Example, Rule, Severity, world_size_gap


class LaunchNotAnalysedRule(Rule):
    id = "LA002"
    name = "launch-not-analysed"
    severity = Severity.WARNING
    tags = (COVERAGE_TAG,)
    other_severities = (Severity.INFO,)
    supersedes = ("CV003",)  # the world size unknown: said at the launcher option that leaves it so
    summary = "A launch line mblint found but could not check (what it could not follow is named)."
    doc = """## What it does
Says that a launcher invocation was found but not checked, and why: the recipe is not named in
the script (a variable from the environment, `$1`), the Megatron-Bridge recipes package could
not be read (pass `--search-path` to a Megatron-Bridge checkout or unzipped wheel), the entry
script does not build a recipe mblint can follow, an option whose effect is not modelled, a
line naming a launcher (`torchrun`, `accelerate`, `deepspeed`, `run_recipe.py`...) in a form
mblint does not read, or an argument whose value is unknown and may override the fields some
findings read (those findings are not reported). A shell syntax error is one too, where it is:
the part of the script it spans is not read, so a launch line in it is not checked (and bash
itself stops a script at its first syntax error: the commands after it never run). So is a
`source FILE` (`. FILE`) whose variables a launch line uses, once, at the `source` line: mblint
reads no sourced file (`~/.bashrc` is outside the project; a cluster's `env.sh` may not be
there), so what the launch takes from it is unknown; a `source` after the launch line, or one
whose variables the launch does not use (or that the script sets again), is not reported. The
same holds, at the `source` line, for a command after it that the script does not define and
that runs with a launch's arguments (`launch_job --recipe X train.micro_batch_size=2`): the
sourced file may define it as the function that launches the job. So is a training launch
run through a command that runs it elsewhere, at that command: in a container (`docker run`,
`podman`, `apptainer`/`singularity exec`, `enroot start`, `kubectl exec`), on another host
(`ssh`), as MPI ranks (`mpirun`), with more arguments (`xargs`), or through a `sudo` option
that changes the folder or re-parses the command (`-i`, `-s`, `-D`): its files, arguments or
environment are not the script's, so mblint does not guess them (`timeout`, `nice`, `stdbuf`,
`taskset`, `setsid`, `ionice`, `flock FILE`, `unbuffer`, `sudo` are read through). These are
warnings.

As info: the world size is unknown because a launcher option's value is (`--nnodes=$NNODES`);
the job is checked, only what the rules check against the world size is not (those rules are
named). A sourced file whose variables only launcher options use is info for the same reason.
The launch reader records where the world size is unknown; this finding is made with the job's
other findings, and replaces CV003's finding of the same gap (with LA002 not selected, CV003
reports it there).

## Why it matters
A pass means checked: a launch line mblint could not read is not a clean one. A job or an
override that was dropped is a warning, so that pre-commit shows it (an info finding does not
fail a run); an unknown world size leaves the rest of the job checked, so it is only info. A
syntax error is a warning too: bash would stop there, so the job most likely never starts, and
where the script is valid bash that tree-sitter misreads, `# mblint: ignore[LA002]` on the
line accepts it.

## Example
`torchrun --nproc_per_node=8 run_recipe.py --recipe "$RECIPE"` with `RECIPE` from the
environment.

## Fix
None needed; write the value into the script, or point mblint at Megatron-Bridge's sources.

## Versions
All.

## Sources
mblint's launch reader.
"""
    valid = [Example("", launch="torchrun --nproc_per_node=1 scripts/training/run_recipe.py "
                                 "--recipe llama32_1b_pretrain_config\n"),
             # read through: the same arguments, files and environment
             Example("", launch="timeout 10h nice -n 5 torchrun --nproc_per_node=1 scripts/training/run_recipe.py "
                                "--recipe llama32_1b_pretrain_config\n"),
             Example("", launch="sudo -E torchrun --nproc_per_node=1 scripts/training/run_recipe.py "
                                "--recipe llama32_1b_pretrain_config\n")]
    invalid = [Example("", launch='torchrun --nproc_per_node=1 scripts/training/run_recipe.py --recipe "$RECIPE"  # error\n'),
               Example("", launch='source ~/.bashrc  # error\ntorchrun --nproc_per_node=1 '
                                  'scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config $EXTRA\n',
                       message="the file this sources (~/.bashrc) is not read"),
               Example("", launch="docker run --gpus all -v $PWD:/workspace nvcr.io/nvidia/nemo:25.09 torchrun "
                                  "--nproc_per_node=8 scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config"
                                  "  # error\n", message="it runs through `docker`, which runs it in a container"),
               Example("", launch="torchrun --nnodes=$NNODES --nproc_per_node=8 scripts/training/run_recipe.py "
                                  "--recipe llama32_1b_pretrain_config  # error\n",
                       message="the world size is unknown (a launcher option here is not known)"),
               Example("", launch='echo ( # error\ntorchrun --nproc_per_node=1 scripts/training/run_recipe.py '
                                  '--recipe llama32_1b_pretrain_config\n', message="missing `)` for what opens here: bash stops")]

    def check(self, cfg, ctx):
        if ctx.world_size_unknown_at is None:
            return  # only a launch line that leaves the world size unknown
        needing = world_size_gap(cfg, ctx)
        if needing is not None:
            what = f"what {', '.join(needing)} check against it was not checked" if needing else "no selected rule needs it"
            yield ctx.report(cfg, f"the world size is unknown (a launcher option here is not known): {what}",
                             severity=Severity.INFO, location=ctx.world_size_unknown_at, problem=WORLD_SIZE_UNKNOWN)
