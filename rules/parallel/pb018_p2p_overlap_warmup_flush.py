from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, comm_overlap_present, hf_model, int_values, known, parallel, value

P = "cfg = _pretrain_common()\n" + hf_model()
FLUSH = "model.overlap_p2p_comm_warmup_flush"
PP = "model.pipeline_model_parallel_size"
VPP = "model.virtual_pipeline_model_parallel_size"


def _p2p_flags(cfg):
    """(overlap_p2p_comm, batch_p2p_comm, the fields that decide them) as the model has them after
    ``runtime_config_update``: a CommOverlapConfig's own values, else what its setup() derives from
    the pipeline sizes; without one, the model's fields. UNKNOWN parts are not known()."""
    present = comm_overlap_present(cfg)
    if present is False:
        paths = ["model.overlap_p2p_comm", "model.batch_p2p_comm"]
        return value(cfg, paths[0], False), value(cfg, paths[1], True), paths
    if present is not True:
        return None, None, []
    par = parallel(cfg)
    vpp = 1 if par.vpp is None else par.vpp
    if not int_values(par.pp, vpp):
        return None, None, []
    if par.pp > 1:
        derived = (True, False) if vpp > 1 else (False, True)
    else:
        derived = (False, False)
    flags, paths = [], [PP, VPP]
    for name, default in zip(("overlap_p2p_comm", "batch_p2p_comm"), derived):
        own = value(cfg, f"comm_overlap.{name}", None)
        flags.append(default if own is None else own)
        if own is not None:
            paths.append(f"comm_overlap.{name}")
    return flags[0], flags[1], paths


class P2pOverlapWarmupFlush(Rule):
    id = "PB018"
    name = "p2p-overlap-warmup-flush"
    severity = Severity.ERROR
    summary = "overlap_p2p_comm_warmup_flush needs overlap_p2p_comm on and batch_p2p_comm off (the interleaved schedule)."
    tags = ("parallelism", "pipeline", "comm-overlap")
    doc = """## What it does
Flags `model.overlap_p2p_comm_warmup_flush = True` when the model's `overlap_p2p_comm` is off or
its `batch_p2p_comm` on, as they are after `runtime_config_update()`: with a `CommOverlapConfig`,
its own `overlap_p2p_comm`/`batch_p2p_comm`, or when left None what its `setup()` derives
(pipeline parallelism with a virtual pipeline size > 1: overlap on, batching off; pipeline
parallelism without: overlap off, batching on; no pipeline parallelism: both off); without one,
the model's fields (Megatron-Core's defaults: overlap off, batching on).

## Why it matters
Megatron-Core's `ModelParallelConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises "Pipeline parallel communication overlapping in warmup and
flush is only compatible with overlap_p2p_comm but not batch_p2p_comm." at job start. The
warm-up/flush overlap is a refinement of the interleaved schedule's P2P overlap; turning it on
for a recipe without virtual pipelining stops the job.

## Example
```python
cfg.model.pipeline_model_parallel_size = 4      # no virtual pipeline size
cfg.model.overlap_p2p_comm_warmup_flush = True
```

## Fix
Use an interleaved schedule (`virtual_pipeline_model_parallel_size` > 1, so the overlap is on)
or leave `overlap_p2p_comm_warmup_flush` False. No automatic fix: the schedule is the
author's choice.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19, and the derivation in `CommOverlapConfig`, are the
same).

## Sources
Megatron-Core 0.19.2 megatron/core/model_parallel_config.py:570-575 (defaults at :385, :390);
0.6.2 megatron/bridge/training/comm_overlap.py:453-463 (setup derives the P2P flags), 594-618;
0.3.1 megatron/bridge/training/comm_overlap.py:450-460. Oracle (0.6.2): `llama3_8b_pretrain_config
model.overlap_p2p_comm_warmup_flush=True` (no CommOverlapConfig) and `llama3_70b_pretrain_config
model.overlap_p2p_comm_warmup_flush=True model.virtual_pipeline_model_parallel_size=None` fail with
that message; with the 70B recipe's virtual pipeline size it is accepted.
"""
    valid = [
        P + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.virtual_pipeline_model_parallel_size = 2\n"
        "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\ncfg.model.overlap_p2p_comm_warmup_flush = True",
        P + "cfg.model.overlap_p2p_comm = True\ncfg.model.batch_p2p_comm = False\n"
        "cfg.model.overlap_p2p_comm_warmup_flush = True",
        P + "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\ncfg.model.overlap_p2p_comm_warmup_flush = True\n"
        "for pp in (1, 4):\n    cfg.model.pipeline_model_parallel_size = pp",
        Example(P + "cfg.model.overlap_p2p_comm = True\ncfg.model.batch_p2p_comm = False\n"
                "cfg.model.overlap_p2p_comm_warmup_flush = True", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.model.overlap_p2p_comm_warmup_flush = True  # error",
                message="overlap_p2p_comm is False and batch_p2p_comm is True"),
        Example(P + "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\n"
                "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.overlap_p2p_comm_warmup_flush = True  # error",
                message="Pipeline parallel communication overlapping in warmup and flush"),
        # modelled on the refinement turned on from the command line for a recipe without virtual pipelining
        Example(P + "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\n"
                "cfg.model.pipeline_model_parallel_size = 4",
                dotlist=("model.overlap_p2p_comm_warmup_flush=true",)),
        Example(P + "cfg.model.overlap_p2p_comm_warmup_flush = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if value(cfg, FLUSH, False) is not True:
            return
        overlap, batch, paths = _p2p_flags(cfg)
        if not known(overlap, batch) or not isinstance(overlap, bool) or not isinstance(batch, bool):
            return
        if overlap and not batch:
            return
        yield ctx.report(
            cfg, f"{FLUSH} is True but the model's overlap_p2p_comm is {overlap} and batch_p2p_comm is {batch}; "
                 "Megatron-Core raises 'Pipeline parallel communication overlapping in warmup and flush is only "
                 "compatible with overlap_p2p_comm but not batch_p2p_comm.' at job start (it needs the interleaved "
                 "schedule's P2P overlap)",
            [FLUSH, *paths], primary=FLUSH)
