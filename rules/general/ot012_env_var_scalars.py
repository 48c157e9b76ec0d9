from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, format_value, is_node, known


class EnvVarScalars(Rule):
    id = "OT012"
    name = "env-var-scalars"
    severity = Severity.ERROR
    summary = "cfg.env_vars values must be scalars (str, int, float, bool) and names non-empty."
    tags = ("general", "environment")
    requires = ("field:env_vars",)
    doc = """## What it does
Flags an entry of `cfg.env_vars` whose value is not a str, int, float or bool (a list, a
dict, None), or whose name is empty.

## Why it matters
`apply_environment_variables()`, the first step of `runtime_config_update()`, raises
"Environment variable 'A' must have a scalar value, got list." (TypeError) or "Environment
variable names must be non-empty strings." (ValueError) at job start (confirmed with
Megatron-Bridge 0.6.2). Values are applied with `os.environ.setdefault`, so a variable already
set in the launcher's environment wins over the recipe.

## Example
```python
cfg.env_vars = {"NCCL_ALGO": ["Ring", "Tree"]}
```

## Fix
Use a scalar (`"Ring,Tree"`), or remove the entry instead of setting it to None. No
automatic fix.

## Versions
0.6.x (`ConfigContainer.env_vars` does not exist in 0.3.x).

## Sources
0.6.2 megatron/bridge/training/config.py:1832-1850 (`apply_environment_variables`), called
by `runtime_config_update` (:1853).
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.env_vars = {'NCCL_ALGO': 'Ring', 'CUDA_DEVICE_MAX_CONNECTIONS': 1, 'X': True}",
        "cfg = _pretrain_common()\nfor v in [1, [2]]:\n    cfg.env_vars = {'A': v}",
        Example("cfg = _pretrain_common()", dotlist=("++env_vars.NCCL_ALGO=Tree",)),
    ]
    invalid = [
        "cfg = _pretrain_common()\ncfg.env_vars = {'NCCL_ALGO': ['Ring', 'Tree']}  # error",
        "cfg = _pretrain_common()\ncfg.env_vars['NVTE_FLASH_ATTN'] = None  # error",
        Example("cfg = _pretrain_common()", yaml="env_vars:\n  A:\n    b: 1  # error\n"),
    ]

    def check(self, cfg, ctx):
        if cfg.type_of("env_vars") != "dict":
            return
        for name in sorted(cfg.keys("env_vars")):
            path = f"env_vars.{name}"
            value = cfg.value(path)
            if is_node(value):  # a mapping (its type_of is not None)
                leaf = next((f"{path}.{key}" for key in cfg.keys(path)), path)
                yield ctx.report(cfg, f"env_vars[{name!r}] is a mapping; environment variable values must be "
                                      f"scalars (str, int, float, bool), apply_environment_variables() raises TypeError",
                                 [leaf], primary=leaf)
                continue
            if not known(value):
                continue
            if name == "":
                yield ctx.report(cfg, "env_vars has an empty variable name; apply_environment_variables() raises "
                                      "ValueError", [path], primary=path)
            elif not isinstance(value, (str, int, float, bool)):
                yield ctx.report(cfg, f"env_vars[{name!r}] = {format_value(value)} is a {type(value).__name__}; "
                                      f"environment variable values must be scalars (str, int, float, bool), "
                                      f"apply_environment_variables() raises TypeError at job start",
                                 [path], primary=path)
