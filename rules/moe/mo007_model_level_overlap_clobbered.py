from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    comm_overlap_present,
    ep_overlap_problems,
    hf_model,
    known,
    parallel,
    value,
)

BASE = "cfg = _pretrain_common()\n" + hf_model()
CO = 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\n'
EP_READY = ('cfg.model.expert_model_parallel_size = 8\ncfg.model.num_moe_experts = 64\n'
            'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = False\n'
            'cfg.model.mtp_num_layers = None\ncfg.model.recompute_granularity = None\ncfg.model.recompute_modules = None\n')
FLAGS = ("overlap_moe_expert_parallel_comm", "delay_wgrad_compute", "tp_comm_overlap",
         "defer_embedding_wgrad_compute")


class ModelLevelOverlapClobbered(Rule):
    id = "MO007"
    name = "model-level-overlap-clobbered"
    severity = Severity.WARNING
    summary = "Overlap flags set on the model are overwritten by comm_overlap.setup()."
    fixable = True
    tags = ("moe", "overlap")
    doc = """## What it does
Flags `model.overlap_moe_expert_parallel_comm`, `model.delay_wgrad_compute`,
`model.tp_comm_overlap` or `model.defer_embedding_wgrad_compute` set to True while `cfg.comm_overlap`
is a `CommOverlapConfig` whose field of the same name is not True.

## Why it matters
`runtime_config_update` calls `comm_overlap.setup()`, which starts from False for these fields,
overrides them with the comm_overlap values that are not None, and copies every field onto the
model: the model-level True is silently replaced by False and the optimisation never runs.

## Example
```python
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)
cfg.model.overlap_moe_expert_parallel_comm = True
```

## Fix
Move the flag to `cfg.comm_overlap.<field>`. That turns on what runs off today, so it is safe only
when what the overlap needs is known to hold: for `overlap_moe_expert_parallel_comm` the
prerequisites MO005 checks (and, for `delay_wgrad_compute`, that overlap on `cfg.comm_overlap`),
for `tp_comm_overlap` tensor parallelism of 2 or more with sequence parallelism (MO008);
otherwise unsafe (a failing prerequisite is then reported by MO005, MO006 or MO008).

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/comm_overlap.py:430-439 (defaults False), 588-618 (`_apply_cfgs`,
`_override_user_cfgs`, `setup`); 0.6.2 megatron/bridge/training/config.py:1882-1885.
Oracle (0.6.2): qwen3_30b_a3b_pretrain_config (which sets a CommOverlapConfig) with
model.overlap_moe_expert_parallel_comm=True and expert_model_parallel_size=1 passes validation,
because the flag was reset to False before the prerequisite checks.
"""
    valid = [
        BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True)\n'
        'cfg.model.overlap_moe_expert_parallel_comm = True',
        BASE + 'cfg.comm_overlap = None\ncfg.model.overlap_moe_expert_parallel_comm = True',
        BASE + CO + 'for flag in [True]:\n    cfg.comm_overlap.delay_wgrad_compute = flag\n'
        'cfg.model.delay_wgrad_compute = True',
    ]
    invalid = [
        # expert parallelism is 1: moving the flag turns on an overlap setup() rejects (unsafe)
        Example(BASE + CO + 'cfg.model.overlap_moe_expert_parallel_comm = True  # error',
                message="model.overlap_moe_expert_parallel_comm is True, but cfg.comm_overlap is a CommOverlapConfig "
                        "with overlap_moe_expert_parallel_comm=None; comm_overlap.setup() overwrites the model field "
                        "with False",
                fixed=BASE + CO + 'cfg.comm_overlap.overlap_moe_expert_parallel_comm = True\n'
                      'cfg.model.overlap_moe_expert_parallel_comm = True  # error',
                unsafe=True),
        # the overlap's prerequisites are known to hold: the move is safe
        Example(BASE + EP_READY + CO + 'cfg.model.overlap_moe_expert_parallel_comm = True  # error',
                fixed=BASE + EP_READY + CO + 'cfg.comm_overlap.overlap_moe_expert_parallel_comm = True\n'
                      'cfg.model.overlap_moe_expert_parallel_comm = True  # error',
                unsafe=False),
        # CO wrote tp_comm_overlap=False: replacing it is unsafe
        Example(BASE + CO + 'cfg.model.tp_comm_overlap = True  # error',
                fixed=BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)\n'
                      'cfg.model.tp_comm_overlap = True  # error',
                unsafe=True),
        Example(BASE + CO + 'cfg.model.delay_wgrad_compute = True  # error', version="0.3"),
    ]

    def check(self, cfg, ctx):
        if comm_overlap_present(cfg) is not True:
            return
        for name in FLAGS:
            model_flag = value(cfg, f"model.{name}", False)
            if not known(model_flag) or model_flag is not True:
                continue
            origins = cfg.origins(f"model.{name}")
            if not origins or origins[-1].kind == "default":
                continue
            co_flag = value(cfg, f"comm_overlap.{name}", None)
            if not known(co_flag) and co_flag is not None or co_flag is True:
                continue
            yield ctx.report(
                cfg,
                f"model.{name} is True, but cfg.comm_overlap is a CommOverlapConfig with {name}={co_flag!r}; "
                f"comm_overlap.setup() overwrites the model field with False",
                [f"model.{name}", f"comm_overlap.{name}"],
                primary=f"model.{name}",
                fixes=[FixIntent("set", f"comm_overlap.{name}", True, safe=_prerequisites_hold(cfg, name),
                                 description=f"set comm_overlap.{name} = True instead")],
            )


def _prerequisites_hold(cfg, name: str) -> bool:
    """Whether turning ``name`` on in cfg.comm_overlap is known to start (the checks of
    CommOverlapConfig.setup() that other rules report)."""
    if name in ("overlap_moe_expert_parallel_comm", "delay_wgrad_compute"):
        problems, all_known = ep_overlap_problems(cfg)
        if problems or not all_known:
            return False
        return name == "overlap_moe_expert_parallel_comm" or value(cfg, "comm_overlap.overlap_moe_expert_parallel_comm", None) is True
    if name == "tp_comm_overlap":
        par = parallel(cfg)
        return known(par.tp, par.sp) and par.tp >= 2 and par.sp is True
    return True
