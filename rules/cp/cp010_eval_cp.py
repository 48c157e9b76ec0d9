from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, hf_model, int_values, known, parallel, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class EvalCpRequiresDecentralizedPg(Rule):
    id = "CP010"
    name = "eval-cp-requires-decentralized-pg"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "dist.eval_context_parallel_size needs decentralized process groups and must tile the world size."
    tags = ("context-parallel", "evaluation", "world-size")
    doc = """## What it does
Flags `dist.eval_context_parallel_size` when (a) it differs from `model.context_parallel_size`
while `dist.use_decentralized_pg` is False (warning), or (b) the known world size is not
divisible by `TP * PP * eval_CP` (error; warning when the world size comes from the recipe
name).

## Why it matters
(a) The field's documented contract: an evaluation CP degree different from training
"Requires use_decentralized_pg=True" and a separately wired evaluation process-group
collection; otherwise evaluation runs with the training groups and the setting is dead.
(b) `ConfigContainer.validate()` asserts "world size (...) is not divisible by eval model
parallel size (...)" at job start.

## Example
```python
cfg.model.context_parallel_size = 2
cfg.dist.eval_context_parallel_size = 4      # use_decentralized_pg stays False
```

## Fix
Set `dist.use_decentralized_pg = True` and wire the evaluation groups (see Megatron-Bridge's
decentralized_pg eval example), or drop `eval_context_parallel_size`. Not automatic.

## Versions
0.6.x (the field does not exist in 0.3.x).

## Sources
0.6.2 megatron/bridge/training/config.py:164-169 (field contract), 1316-1333 (`validate`,
eval world-size divisibility); 0.6.2 megatron/bridge/training/state.py:143.
"""
    requires = ("field:eval_context_parallel_size",)
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
        "cfg.dist.eval_context_parallel_size = 4\ncfg.dist.use_decentralized_pg = True",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\ncfg.dist.eval_context_parallel_size = 2",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
                "cfg.dist.eval_context_parallel_size = 4\ncfg.dist.use_decentralized_pg = True", world_size=8),
        # world size unknown: no divisibility check
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 3\n"
        "cfg.dist.eval_context_parallel_size = 1\ncfg.dist.use_decentralized_pg = True",
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.context_parallel_size = 2\n"
        "cfg.dist.eval_context_parallel_size = 4  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 2\n"
                "cfg.dist.use_decentralized_pg = True\ncfg.dist.eval_context_parallel_size = 3  # error", world_size=8),
    ]

    def check(self, cfg, ctx):
        eval_cp = value(cfg, "dist.eval_context_parallel_size", None)
        if eval_cp is None or not int_values(eval_cp):
            return
        par = parallel(cfg)
        decentralized = value(cfg, "dist.use_decentralized_pg", False)
        world = ctx.world_size
        if world is not None and int_values(par.tp, par.pp) and eval_cp > 0:
            size = par.tp * par.pp * eval_cp
            if world % size != 0:
                message = (f"dist.eval_context_parallel_size is {eval_cp}, but the world size {world}"
                           f"{' (from the recipe name)' if ctx.world_size_from_name else ''} is not divisible by "
                           f"TP*PP*eval_CP = {par.tp}*{par.pp}*{eval_cp} = {size}")
                yield ctx.report(cfg, message, ["dist.eval_context_parallel_size", "model.tensor_model_parallel_size",
                                                "model.pipeline_model_parallel_size"],
                                 primary="dist.eval_context_parallel_size",
                                 severity=Severity.WARNING if ctx.world_size_from_name else None)
                return
        if known(par.cp, decentralized) and eval_cp != par.cp and decentralized is not True:
            message = (f"dist.eval_context_parallel_size is {eval_cp} (training CP is {par.cp}), but "
                       f"dist.use_decentralized_pg is False; a different evaluation CP degree needs decentralized "
                       f"process groups, otherwise evaluation runs with the training groups")
            yield ctx.report(cfg, message, ["dist.eval_context_parallel_size", "dist.use_decentralized_pg"],
                             primary="dist.eval_context_parallel_size", severity=Severity.WARNING)
