from __future__ import annotations

from mblint.rulekit import (
    ABSENT,
    Example,
    FixIntent,
    Rule,
    Severity,
    env_var,
    env_var_origin,
    fine_grained_offloading_known_on,
    hf_model,
    known,
    knows_field,
    value,
)

HF = "cfg = _pretrain_common()\n" + hf_model()
FG = "cfg.model.fine_grained_activation_offloading = True\ncfg.model.offload_modules = ['core_attn']\n"
FLAG = "model.fine_grained_activation_offloading"


class FineGrainedNeedsTeAndEnv(Rule):
    id = "OF005"
    name = "fine-grained-needs-te-and-env"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "Fine-grained activation offloading needs transformer_impl='transformer_engine' and NVTE_CPU_OFFLOAD_V1=1."
    fixable = True
    tags = ("offload",)
    doc = """## What it does
With `model.fine_grained_activation_offloading = True`, flags
- `model.transformer_impl` other than `"transformer_engine"` (error);
- `NVTE_CPU_OFFLOAD_V1` set to anything but `1` (error) by the job's launch script (an
  `export` before the launch line, an assignment in front of it; reported there) or, where the
  launch does not set it, by `cfg.env_vars["NVTE_CPU_OFFLOAD_V1"]`; or not set by either
  (warning: the user's own shell environment, which mblint does not see, must provide it). A
  release without `cfg.env_vars` (0.3.x to 0.5.x) leaves the variable to the launcher or
  executor, which mblint does not see: there a variable the launch script does not set is
  silence, as in PR011. After a `source`d file or an `eval` mblint cannot read,
  a variable the script does not set afterwards is unknown, and nothing is said.

## Why it matters
`_validate_fine_grained_activation_offloading` raises "Fine-grained activation offloading is only
supported with transformer_engine implementation." and, with Transformer Engine >= 2.10, "For
fine-grained activation offloading with TE >= 2.10.0, NVTE_CPU_OFFLOAD_V1 environment variable
should be set to 1 to avoid offloading weights." at job start (both confirmed with
Megatron-Bridge 0.6.2). `cfg.env_vars` is copied into the process environment with
`setdefault` before validation: a value the launch environment already has wins.

## Example
```python
cfg.model.fine_grained_activation_offloading = True
cfg.model.offload_modules = ["core_attn"]
# no NVTE_CPU_OFFLOAD_V1 in cfg.env_vars
```

## Fix
Set `cfg.env_vars["NVTE_CPU_OFFLOAD_V1"] = "1"` (safe) and keep the Transformer Engine
implementation.

## Versions
0.3.x and 0.6.x. With Transformer Engine older than 2.10 the variable is not needed.

## Sources
0.6.2 megatron/bridge/training/config.py:2026-2059, :1832-1851, :1870; 0.3.1
megatron/bridge/training/config.py:1945-1985.
"""
    valid = [
        HF + FG + "cfg.env_vars = {'NVTE_CPU_OFFLOAD_V1': '1'}",
        HF + FG + "cfg.env_vars['NVTE_CPU_OFFLOAD_V1'] = 1",
        HF + "cfg.model.fine_grained_activation_offloading = False\ncfg.model.transformer_impl = 'local'",
        HF + FG + "for v in ['0', '1']:\n    cfg.env_vars['NVTE_CPU_OFFLOAD_V1'] = v",
        Example(HF + "cfg.model.fine_grained_activation_offloading = False", version="0.3"),
        # no cfg.env_vars before 0.6: the variable can only come from the launcher, which mblint does not see
        Example(HF + FG, version="0.3"),
    ]
    invalid = [
        HF + FG + "cfg.env_vars = {'NVTE_CPU_OFFLOAD_V1': '1'}\ncfg.model.transformer_impl = 'local'  # error",
        Example(HF + FG + "cfg.env_vars['NVTE_CPU_OFFLOAD_V1'] = '0'  # error", message="it must be '1'",
                fixed=HF + FG + "cfg.env_vars['NVTE_CPU_OFFLOAD_V1'] = '1'  # error", unsafe=True),
        # not set at all (a warning): the assignment is added, a safe fix
        Example(HF + "cfg.model.fine_grained_activation_offloading = True  # error\n"
                "cfg.model.offload_modules = ['core_attn']",
                message="NVTE_CPU_OFFLOAD_V1 is not set in cfg.env_vars", unsafe=False,
                fixed="cfg = _pretrain_common()\ncfg.env_vars[\"NVTE_CPU_OFFLOAD_V1\"] = '1'\n"
                      + hf_model() +
                      "cfg.model.fine_grained_activation_offloading = True  # error\n"
                      "cfg.model.offload_modules = ['core_attn']"),
        Example(HF + FG + "cfg.model.transformer_impl = 'local'  # error", version="0.3"),
    ]

    precondition = fine_grained_offloading_known_on

    def check(self, cfg, ctx):
        flag = value(cfg, FLAG, False)
        if not known(flag) or flag is not True:
            return
        impl = value(cfg, "model.transformer_impl", "transformer_engine")
        if known(impl) and impl != "transformer_engine":
            yield ctx.report(cfg, f"{FLAG} is True, but model.transformer_impl is {impl!r}; fine-grained activation "
                                  f"offloading only works with 'transformer_engine' (validate() raises at job start)",
                             [FLAG, "model.transformer_impl"])
            return
        env = env_var(cfg, "NVTE_CPU_OFFLOAD_V1")
        fix = FixIntent("set", "env_vars.NVTE_CPU_OFFLOAD_V1", "1", safe=True,
                        description="set NVTE_CPU_OFFLOAD_V1 = '1' in cfg.env_vars")
        if env is ABSENT and knows_field(cfg, "env_vars"):
            yield ctx.report(cfg, f"{FLAG} is True, but NVTE_CPU_OFFLOAD_V1 is not set in cfg.env_vars; with Transformer "
                                  "Engine >= 2.10 validate() raises unless it is '1', so cfg.env_vars or the launch "
                                  "environment must set it", [FLAG], severity=Severity.WARNING, fixes=[fix])
        elif known(env) and env != "1":
            launched = env_var_origin(cfg, "NVTE_CPU_OFFLOAD_V1")
            if launched is not None:  # cfg.env_vars cannot change it: the launch environment wins
                yield ctx.report(cfg, f"{FLAG} is True, but the launch environment sets NVTE_CPU_OFFLOAD_V1 to {env!r}; "
                                      f"with Transformer Engine >= 2.10 it must be 1 (validate() raises at job start)",
                                 [FLAG], location=launched)
                return
            yield ctx.report(cfg, f"{FLAG} is True, but env_vars['NVTE_CPU_OFFLOAD_V1'] is {env!r}; with Transformer "
                                  f"Engine >= 2.10 it must be '1' (validate() raises at job start)",
                             ["env_vars.NVTE_CPU_OFFLOAD_V1", FLAG], primary="env_vars.NVTE_CPU_OFFLOAD_V1", fixes=[fix])
