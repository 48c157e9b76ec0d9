from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, Unknown

MANDATORY = "mandatory value (???)"


class YamlMissingValue(Rule):
    id = "OT009"
    name = "yaml-missing-value"
    severity = Severity.WARNING
    summary = "An override file leaves an OmegaConf mandatory value (???) that nothing fills in."
    tags = ("general", "overrides")
    doc = """## What it does
Flags a YAML override value `???` (OmegaConf's "mandatory, not yet given") that no later
override (another file or a command-line `key=value`) replaces.

## Why it matters
Megatron-Bridge merges the YAML file into an OmegaConf config and then calls
`OmegaConf.to_container(resolve=True)` without `throw_on_missing`, so a `???` that is still
there is not rejected: the field receives the literal string `"???"` (checkpoints saved to a
directory named `???`, or a type error much later for a numeric field). Megatron-Bridge 0.6.2's
start-up validation accepts it (checked for `checkpoint.save` and `train.train_iters`), hence
WARNING rather than ERROR. Example files ship such placeholders (`checkpoint.save: ???`) for
the user to fill in.

## Example
```yaml
checkpoint:
  save: ???
```

## Fix
Give the value in the file or on the command line (`checkpoint.save=/results/run1`). No
automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/utils/omegaconf_utils.py:105-160 (`process_config_with_overrides`:
YAML merge, Hydra overrides, `OmegaConf.to_container(omega_conf, resolve=True)` at :157); Megatron-Bridge
examples/models/nemotron/nemotron_vl/conf/nemotron_nano_v2_vl_override_example.yaml
(`checkpoint.save: ???`).
"""
    valid = [
        Example("cfg = _pretrain_common()", yaml="checkpoint:\n  save: /results/run1\n"),
        Example("cfg = _pretrain_common()", yaml="checkpoint:\n  save: ???\n", dotlist=("checkpoint.save=/r",)),
        "cfg = _pretrain_common()\nfor p in ['a', 'b']:\n    cfg.checkpoint.save = p",
    ]
    invalid = [
        Example("cfg = _pretrain_common()", yaml="checkpoint:\n  save: ???  # error\n"),
        Example("cfg = _pretrain_common()", version="0.3", yaml="train:\n  train_iters: ???  # error\n"),
    ]

    def check(self, cfg, ctx):
        if not cfg.overrides_applied:
            return  # '???' values only come from override files
        for path, resolved in sorted(cfg.fields.items()):
            value = resolved.value
            if not isinstance(value, Unknown) or not value.reason.startswith(MANDATORY):
                continue
            origin = cfg.last_origin(path)
            if origin is None or origin.kind != "override":
                continue
            yield ctx.report(cfg, f"{path} is '???' (OmegaConf mandatory value) and no later override gives it a "
                                  f"value; Megatron-Bridge passes the literal string '???' on to the config", [path], primary=path)
