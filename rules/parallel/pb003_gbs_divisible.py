from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    dist_train,
    has_check,
    hf_model,
    int_values,
    is_round,
    known,
    parallel,
    value,
)

MODEL = hf_model("meta-llama/Llama-3.1-8B")
GRID = ["model.tensor_model_parallel_size", "model.pipeline_model_parallel_size", "model.context_parallel_size"]


class GbsDivisible(Rule):
    id = "PB003"
    name = "gbs-divisible"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "global_batch_size must be a multiple of micro_batch_size * data-parallel size."
    fixable = True
    tags = ("parallelism", "batch", "world-size")
    doc = """## What it does
With a known world size W and `DP = W / (TP*PP*CP)`, flags `train.global_batch_size` not a
multiple of `train.micro_batch_size * DP` (with `train.decrease_batch_size_if_needed`, only a
global batch smaller than `MBS*DP`). In 0.6.x it also checks the evaluation batch
(`validation.eval_global_batch_size`/`eval_micro_batch_size`, defaulting to the training
values, and `dist.eval_context_parallel_size` for the evaluation DP). Silent when a batch
ramp-up is configured. A world size taken from the recipe name only gives a warning (the
benchmark runner weak-scales GBS when run on another size).

## Why it matters
Each step runs `GBS / (MBS*DP)` micro-batches per rank; Megatron-Core's micro-batch
calculator asserts "global batch size (...) is not divisible by micro batch size (...) times
data parallel size (...)" at start-up, and 0.6.x `validate()` asserts the evaluation form
("eval_global_batch_size (...) must be divisible by eval_micro_batch_size *
eval_data_parallel_size") even earlier.

## Example
```python
# mblint: world-size=16         TP=2 -> DP=8
cfg.model.tensor_model_parallel_size = 2
cfg.train.micro_batch_size = 2
cfg.train.global_batch_size = 24          # 24 % 16 = 8
```

## Fix
Unsafe (changes the batch and so the optimisation): round `global_batch_size` to a multiple
of `MBS*DP` (the proposed value is the nearest multiple not below it).

## Versions
0.3.x and 0.6.x (evaluation batch check: 0.6.x).

## Sources
Megatron-Core 0.19.2 megatron/core/num_microbatches_calculator.py:357-391; 0.6.2
megatron/bridge/training/config.py:1293-1339 (`validate`, eval batch); 0.6.2
megatron/bridge/training/initialize.py:115-122; 0.3.1 megatron/bridge/training/config.py:661-672.
"""
    valid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 2\n"
                "cfg.train.micro_batch_size = 2\ncfg.train.global_batch_size = 32", world_size=16),
        # world size unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 2\ncfg.train.global_batch_size = 3",
        # GBS unknown
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 2\n"
                "for gbs in (24, 32):\n    cfg.train.global_batch_size = gbs", world_size=16),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 1\ncfg.train.global_batch_size = 8",
                world_size=8, version="0.3"),
        # decrease_batch_size_if_needed rounds down (0.3.x has no eval check)
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 1\ncfg.train.global_batch_size = 12\n"
                "cfg.train.decrease_batch_size_if_needed = True", world_size=8, version="0.3"),
    ]
    invalid = [
        # DP = 16/2 = 8, MBS*DP = 16: rounded up to 32
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 2\n"
                "cfg.train.micro_batch_size = 2\ncfg.train.global_batch_size = 24  # error", world_size=16,
                message="micro_batch_size*DP = 2*8 = 16 (world size 16 / TP*PP*CP 2 = DP 8) does not divide it",
                unsafe=True,
                fixed="cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 2\n"
                      "cfg.train.micro_batch_size = 2\ncfg.train.global_batch_size = 32  # error"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 1\ncfg.train.global_batch_size = 12  # error",
                world_size=8, version="0.3", unsafe=True,
                fixed="cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 1\n"
                      "cfg.train.global_batch_size = 16  # error"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 1\ncfg.train.global_batch_size = 16\n"
                "cfg.validation.eval_global_batch_size = 12  # error", world_size=8),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 1\ncfg.train.global_batch_size = 12  # error",
                function="llama3_8b_pretrain_8gpu_h100_bf16_config"),
        # 0.6.x: the evaluation batch (defaulting to the training one) is not rounded down
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.train.micro_batch_size = 1\ncfg.train.global_batch_size = 12  # error\n"
                "cfg.train.decrease_batch_size_if_needed = True", world_size=8),
    ]

    def check(self, cfg, ctx):
        world = ctx.world_size
        par = parallel(cfg)
        if world is None or not int_values(par.tp, par.pp, par.cp) or dist_train(cfg):
            return
        dense = par.tp * par.pp * par.cp
        if dense <= 0 or world % dense != 0:
            return  # no whole data-parallel size: get_data_parallel_size() asserts before batch sizes are read
        dp = world // dense
        gbs = cfg.value("train.global_batch_size")
        mbs = cfg.value("train.micro_batch_size")
        rampup = value(cfg, "train.rampup_batch_size", None)
        decrease = value(cfg, "train.decrease_batch_size_if_needed", False)
        severity = Severity.WARNING if ctx.world_size_from_name else None
        source = " (from the recipe name)" if ctx.world_size_from_name else ""
        if has_check(cfg, "eval_batch_divisibility"):
            finding = self._check_eval(cfg, ctx, world, par, dp, gbs, mbs, decrease, severity, source)
            if finding is not None:
                yield finding
                return
        if not int_values(gbs, mbs) or rampup is not None or not known(decrease) or mbs <= 0:
            return
        unit = mbs * dp
        if decrease is True:
            if gbs >= unit:
                return
            message = (f"train.global_batch_size is {gbs}, smaller than micro_batch_size*DP = {mbs}*{dp} = {unit} "
                       f"(world size {world}{source}, TP*PP*CP = {dense}): fewer than one micro-batch per rank")
        elif gbs % unit == 0:
            return
        else:
            message = (f"train.global_batch_size is {gbs}, but micro_batch_size*DP = {mbs}*{dp} = {unit} "
                       f"(world size {world}{source} / TP*PP*CP {dense} = DP {dp}) does not divide it "
                       f"({gbs} % {unit} = {gbs % unit})")
        target = max(unit, -(-gbs // unit) * unit)
        yield ctx.report(cfg, message, ["train.global_batch_size", "train.micro_batch_size", *GRID],
                         primary=_culprit(cfg, world, par, gbs, dp, "train.global_batch_size", "train.micro_batch_size",
                                          GRID),
                         severity=severity,
                         fixes=[FixIntent("set", "train.global_batch_size", target, safe=False,
                                          description=f"set global_batch_size to {target}")])

    def _check_eval(self, cfg, ctx, world, par, dp, gbs, mbs, decrease, severity, source):
        egbs = value(cfg, "validation.eval_global_batch_size", None)
        embs = value(cfg, "validation.eval_micro_batch_size", None)
        ecp = value(cfg, "dist.eval_context_parallel_size", None)
        egbs_path = "validation.eval_global_batch_size" if egbs is not None else "train.global_batch_size"
        embs_path = "validation.eval_micro_batch_size" if embs is not None else "train.micro_batch_size"
        egbs = gbs if egbs is None else egbs
        embs = mbs if embs is None else embs
        if not int_values(egbs, embs) or embs <= 0:
            return None
        edp = dp
        fields = [egbs_path, embs_path, "model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
                  "model.context_parallel_size"]
        if ecp is not None:
            if not int_values(ecp) or ecp <= 0:
                return None
            size = par.tp * par.pp * ecp
            if world % size != 0:
                return None  # no whole evaluation data-parallel size to divide by
            edp = world // size
            fields[-1] = "dist.eval_context_parallel_size"
        unit = embs * edp
        if egbs % unit == 0:
            return None
        same = egbs_path == "train.global_batch_size" and embs_path == "train.micro_batch_size" and ecp is None
        if same and decrease is not True:
            return None  # same numbers as the training check, reported there
        message = (f"{egbs_path} is {egbs}, but {embs_path}*eval DP = {embs}*{edp} = {unit} (world size {world}{source}) "
                   f"does not divide it ({egbs} % {unit} = {egbs % unit}); validate() rejects the evaluation batch")
        return ctx.report(cfg, message, fields, severity=severity,
                          primary=_culprit(cfg, world, par, egbs, edp, egbs_path, embs_path, fields[2:]))


def _culprit(cfg, world, par, gbs, dp, gbs_path, mbs_path, grid_paths):
    """Which of the disagreeing settings to point at. A global batch that DP alone does not
    divide, or that is not a round number (7, 100), is the edit; otherwise the setting written
    last (None: the report's default)."""
    if gbs % dp != 0 or not is_round(gbs, 8):
        return gbs_path
    return None
