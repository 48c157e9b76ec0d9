from __future__ import annotations

from mblint.rulekit import (
    ABSENT,
    Example,
    FixIntent,
    Rule,
    Severity,
    env_var,
    env_var_origin,
    has_check,
    hf_model,
    known,
    knows_field,
    value,
)

HF = "cfg = _pretrain_common()\n" + hf_model()
CHOICES = ("Tree", "Ring", "CollnetDirect", "CollnetChain", "^NVLS")
DET = "model.deterministic_mode"
# Megatron-Bridge's runner on a 0.6 recipe in deterministic mode, set on its command line
DET_LAUNCH = ("torchrun --nproc_per_node=8 scripts/training/run_recipe.py --recipe llama32_1b_pretrain_config "
              "model.deterministic_mode=true model.cross_entropy_loss_fusion=false\n")


class DeterministicMode(Rule):
    id = "PR011"
    name = "deterministic-mode"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "Deterministic mode forbids cross-entropy loss fusion (and flash attention on 0.3.x) and needs NCCL_ALGO set to a deterministic algorithm."
    fixable = True
    tags = ("precision", "determinism")
    doc = """## What it does
With `model.deterministic_mode = True`, flags
- `model.cross_entropy_loss_fusion = True` (error);
- on 0.3.x, `model.attention_backend` set to flash (error);
- `NCCL_ALGO` set to something other than `Tree`, `Ring`, `CollnetDirect`, `CollnetChain` or
  `^NVLS` (error) by the job's launch script (an `export` before the launch line, an
  assignment in front of it; reported there) or, where the launch does not set it, by
  `cfg.env_vars["NCCL_ALGO"]`; or not set by either (warning: the user's own shell
  environment, which mblint does not see, must provide it). A release without `cfg.env_vars`
  (before 0.6) has only the launch environment for it, so there a variable the launch script
  does not set is not reported; nor is one the script may set in a `source`d file or an `eval`.

## Why it matters
`ConfigContainer._validate_and_apply_deterministic_mode()` asserts "Cross Entropy Fusion is
currently not deterministic." and "NCCL_ALGO must be one of ('Tree', 'Ring', 'CollnetDirect',
'CollnetChain', '^NVLS')." at job start (both confirmed with Megatron-Bridge 0.6.2). `NCCL_ALGO`
is read from the process environment, into which `cfg.env_vars` is copied with `setdefault`
(a value already in the launch environment wins).

## Example
```python
cfg.model.deterministic_mode = True
cfg.model.cross_entropy_loss_fusion = True
```

## Fix
Set `model.cross_entropy_loss_fusion = False` (safe: same loss, slower kernel) and
`cfg.env_vars["NCCL_ALGO"] = "Ring"` (or export it in the launcher).

## Versions
0.3.x and 0.6.x (`cfg.env_vars` only in 0.6.x; on 0.3.x NCCL_ALGO comes from the launcher).

## Sources
0.6.2 megatron/bridge/training/config.py:1043-1063, :1832-1851 (`apply_environment_variables`);
0.3.1 megatron/bridge/training/config.py:1375-1398, 0.5.1 :1097-1100 (`os.getenv("NCCL_ALGO")`;
no `env_vars` field; 0.5.1 recipes/llama/llama3.py:749-756: "the executor-side env vars set by
PerfEnvPlugin(deterministic=True)").
"""
    valid = [
        HF + "cfg.model.deterministic_mode = True\ncfg.model.cross_entropy_loss_fusion = False\n"
        "cfg.env_vars = {'NCCL_ALGO': 'Ring'}",
        HF + "cfg.model.deterministic_mode = False\ncfg.model.cross_entropy_loss_fusion = True",
        HF + "cfg.model.deterministic_mode = True\ncfg.model.cross_entropy_loss_fusion = False\n"
        "for algo in ['Ring', 'Tree']:\n    cfg.env_vars['NCCL_ALGO'] = algo",
        Example(HF + "cfg.model.deterministic_mode = False", version="0.3"),
        # no cfg.env_vars before 0.6: NCCL_ALGO can only come from the launch environment, which
        # mblint cannot see (0.5.1's llama3_70b_pretrain_deterministic_config, the same fields)
        Example(HF + "cfg.model.deterministic_mode = True\ncfg.model.cross_entropy_loss_fusion = False", version="0.3"),
        # the launch environment sets it (and wins over cfg.env_vars)
        Example("", launch="export NCCL_ALGO=Ring\n" + DET_LAUNCH),
    ]
    invalid = [
        Example(HF + "cfg.model.deterministic_mode = True\ncfg.env_vars = {'NCCL_ALGO': 'Ring'}\n"
                "cfg.model.cross_entropy_loss_fusion = True  # error",
                message="cross-entropy fusion is not deterministic", unsafe=True,
                fixed=HF + "cfg.model.deterministic_mode = True\ncfg.env_vars = {'NCCL_ALGO': 'Ring'}\n"
                      "cfg.model.cross_entropy_loss_fusion = False  # error"),
        Example(HF + "cfg.model.deterministic_mode = True\ncfg.model.cross_entropy_loss_fusion = False\n"
                "cfg.env_vars = {'NCCL_ALGO': 'NVLS'}  # error", message="env_vars['NCCL_ALGO'] is 'NVLS'", unsafe=True,
                fixed=HF + "cfg.model.deterministic_mode = True\ncfg.model.cross_entropy_loss_fusion = False\n"
                      "cfg.env_vars = {'NCCL_ALGO': 'Ring'}  # error"),
        # not set at all (a warning): the entry is added, a safe fix
        Example(HF + "cfg.model.deterministic_mode = True  # error\ncfg.model.cross_entropy_loss_fusion = False",
                message="NCCL_ALGO is not set in cfg.env_vars", unsafe=False,
                fixed="cfg = _pretrain_common()\ncfg.env_vars[\"NCCL_ALGO\"] = 'Ring'\n" + HF.split("\n", 1)[1]
                      + "cfg.model.deterministic_mode = True  # error\ncfg.model.cross_entropy_loss_fusion = False"),
        Example(HF + "cfg.model.cross_entropy_loss_fusion = False\ncfg.env_vars = {'NCCL_ALGO': 'Tree'}",
                dotlist=("model.deterministic_mode=true", "model.cross_entropy_loss_fusion=true")),
        # 0.3.x has no cfg.env_vars: NCCL_ALGO comes from the launch environment (unknown), so only the fusion
        Example(HF + "cfg.model.cross_entropy_loss_fusion = True  # error\ncfg.model.deterministic_mode = True",
                version="0.3"),
        Example("", launch="export NCCL_ALGO=NVLS  # error\n" + DET_LAUNCH,
                message="the launch environment sets NCCL_ALGO to 'NVLS'"),
    ]

    def check(self, cfg, ctx):
        det = value(cfg, DET, False)
        if not known(det) or det is not True:
            return
        fusion = value(cfg, "model.cross_entropy_loss_fusion", False)
        if known(fusion) and fusion is True:
            yield ctx.report(cfg, "model.deterministic_mode is True, but model.cross_entropy_loss_fusion is True; "
                                  "cross-entropy fusion is not deterministic (validate() asserts at job start)",
                             [DET, "model.cross_entropy_loss_fusion"],
                             fixes=[FixIntent("set", "model.cross_entropy_loss_fusion", False, safe=True,
                                              description="disable cross-entropy loss fusion")])
        if has_check(cfg, "deterministic_rejects_flash"):
            backend = value(cfg, "model.attention_backend", None)
            if known(backend) and isinstance(backend, str) and backend.rsplit(".", 1)[-1] == "flash":
                yield ctx.report(cfg, "model.deterministic_mode is True, but model.attention_backend is flash; flash "
                                      "attention cannot be used in deterministic mode (validate() raises at job start)",
                                 [DET, "model.attention_backend"])
        algo = env_var(cfg, "NCCL_ALGO")
        if algo is ABSENT and knows_field(cfg, "env_vars"):
            yield ctx.report(cfg, "model.deterministic_mode is True, but NCCL_ALGO is not set in cfg.env_vars; "
                                  f"validate() asserts it is one of {', '.join(CHOICES)}, so the launch environment "
                                  "must set it", [DET], severity=Severity.WARNING,
                             fixes=[FixIntent("add", "env_vars.NCCL_ALGO", "Ring", safe=True,
                                              description="set NCCL_ALGO = 'Ring' in cfg.env_vars")])
        elif known(algo) and algo not in CHOICES and env_var_origin(cfg, "NCCL_ALGO") is not None:
            # cfg.env_vars cannot change it: the launch environment wins
            yield ctx.report(cfg, f"model.deterministic_mode is True, but the launch environment sets NCCL_ALGO to {algo!r}; "
                                  f"it must be one of {', '.join(CHOICES)} (validate() asserts at job start)", [DET],
                             location=env_var_origin(cfg, "NCCL_ALGO"))
        elif known(algo) and algo not in CHOICES:
            yield ctx.report(cfg, f"model.deterministic_mode is True, but env_vars['NCCL_ALGO'] is {algo!r}; it must "
                                  f"be one of {', '.join(CHOICES)} (validate() asserts at job start unless the launch "
                                  f"environment sets another value)", ["env_vars.NCCL_ALGO", DET],
                             primary="env_vars.NCCL_ALGO",
                             fixes=[FixIntent("set", "env_vars.NCCL_ALGO", "Ring", safe=True,
                                              description="set NCCL_ALGO = 'Ring'")])
