from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, class_fields, format_value

P = "cfg = _pretrain_common()\n"


def _existed_before(cfg, path: str, origin) -> bool | None:
    """Whether ``path`` was in the configuration before the override at ``origin``: every
    dataclass field is (the OmegaConf view holds all of them, None included); a dict key is
    when something wrote it earlier. None when mblint cannot tell."""
    owner, _, leaf = path.rpartition(".")
    names = class_fields(cfg, owner) if owner else class_fields(cfg, "")
    if names is not None:
        return leaf in names
    if cfg.type_of(owner) == "dict" and owner not in cfg.open_dicts:
        return any(o.seq < origin.seq and o.kind != "unknown" for o in cfg.origins(path) if o != origin)
    return None


class HydraPlusSemantics(Rule):
    id = "OT010"
    name = "hydra-plus-semantics"
    severity = Severity.ERROR
    summary = "A command-line '+key=value' override for a key that already exists: Hydra refuses to append."
    fixable = True
    tags = ("general", "overrides")
    doc = """## What it does
Flags a command-line override `+key=value` whose key already exists in the recipe's
configuration: every field of a config dataclass (even one whose value is None, such as
`checkpoint.load`), or a dict entry the recipe already set (such as a recipe's
`env_vars["NCCL_GRAPH_REGISTER"]`). (A plain `key=value` for a key that does not exist is
OT001's case.)

## Why it matters
Megatron-Bridge parses command-line overrides with Hydra, where `+` means "append a new key".
For an existing key Hydra fails with "Could not append to config. An item is already at
'train.train_iters'." before anything runs (confirmed with Megatron-Bridge 0.6.2's
`parse_hydra_overrides`).

## Example
```
python pretrain.py +train.train_iters=5000
```

## Fix
Drop the `+` (`train.train_iters=5000`) or use `++` (set or add). Safe: the value is the same.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/utils/omegaconf_utils.py:163-193 (`parse_hydra_overrides`,
Hydra `OverridesParser` / `ConfigLoaderImpl._apply_overrides_to_config`);
0.3.1 megatron/bridge/training/utils/omegaconf_utils.py (same function).
"""
    valid = [
        Example(P, dotlist=("train.train_iters=5000",)),
        Example(P, dotlist=("++train.train_iters=5000",)),
        Example(P, dotlist=("+env_vars.MY_FLAG=1",)),
        # env_vars built from something mblint cannot see: the key may or may not exist
        Example(P + "for k in ['A', 'B']:\n    cfg.env_vars[k] = 1", dotlist=("+env_vars.A=1",)),
        Example(P, dotlist=("train.train_iters=5000",), version="0.3"),
    ]
    invalid = [
        # a command-line override is not fixed: no file to edit
        Example(P, dotlist=("+train.train_iters=5000",),
                message="'+train.train_iters=5000' appends a key that already exists",
                fixed=P),
        Example(P, dotlist=("+checkpoint.load=/ckpt",)),
        Example(P + "cfg.env_vars['NCCL_ALGO'] = 'Ring'", dotlist=("+env_vars.NCCL_ALGO=Tree",)),
        Example(P, dotlist=("+train.micro_batch_size=2",), version="0.3"),
    ]

    def check(self, cfg, ctx):
        for path, origin, action, new_value in cfg.applied_overrides:
            if action != "add" or origin.kind != "override" or not cfg.from_command_line(origin):
                continue
            if _existed_before(cfg, path, origin) is not True:
                continue
            text = f"+{path}={format_value(new_value) if not isinstance(new_value, str) else new_value}"
            yield ctx.report(cfg, f"'{text}' appends a key that already exists; Hydra fails with \"Could not append to "
                                  f"config. An item is already at '{path}'.\" Drop the '+' (or use '++')",
                             [path], primary=path,
                             fixes=[FixIntent("set", path, new_value, safe=True,
                                              description=f"write {path}=... without the '+' prefix")])
