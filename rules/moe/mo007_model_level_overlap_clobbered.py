from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, comm_overlap_present, known, value

BASE = ('cfg = _pretrain_common()\n'
        'cfg.model = AutoBridge.from_hf_pretrained("x").to_megatron_provider(load_weights=False)\n')
CO = 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\n'
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
Safe: move the flag to `cfg.comm_overlap.<field>`.

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
        BASE + CO + 'cfg.model.overlap_moe_expert_parallel_comm = True  # error',
        BASE + CO + 'cfg.model.tp_comm_overlap = True  # error',
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
                fixes=[FixIntent("set", f"comm_overlap.{name}", True, safe=True,
                                 description=f"set comm_overlap.{name} = True instead")],
            )
