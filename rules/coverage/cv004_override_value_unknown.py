from __future__ import annotations

from mblint.rulekit import COVERAGE_TAG, Example, Rule, Severity, Unknown

MANDATORY = "mandatory value (???)"  # OT009's: a value the file leaves for the user to give


class OverrideValueUnknown(Rule):
    id = "CV004"
    name = "override-value-unknown"
    severity = Severity.WARNING
    summary = "An override (override file, --set, launch line) whose value mblint cannot know: its field is unchecked."
    tags = (COVERAGE_TAG,)
    doc = """## What it does
Reports an override that takes effect but whose value mblint cannot know: an OmegaConf
interpolation (`${oc.env:MBS}`, `${train.global_batch_size}`) that is resolved when the job
starts, a value beyond mblint's size limits, a launch-line value built from a variable it
cannot expand. It lands on the override and names the field.

## Why it matters
The field's value is unknown, so every check that reads it says nothing: an override that
makes the job crash would pass. A warning, as for any part of a job dropped from the check:
a pre-commit hook must not call the job checked. (A `???` the file leaves to the user is
OT009's.)

## Example
```yaml
train:
  micro_batch_size: ${oc.env:MBS}
```

## Fix
Write the value in the file or on the command line to have it checked, or ignore the rule for
the line (`# mblint: ignore[CV004]`) to accept it. No automatic fix.

## Versions
All.

## Sources
0.6.2 megatron/bridge/training/utils/omegaconf_utils.py:105-160 (`process_config_with_overrides`:
`OmegaConf.to_container(omega_conf, resolve=True)` resolves interpolations at job start).
"""
    valid = [
        Example("cfg = _pretrain_common()", yaml="train:\n  micro_batch_size: 2\n"),
        Example("cfg = _pretrain_common()", dotlist=("train.micro_batch_size=2",)),
        # replaced by a later override
        Example("cfg = _pretrain_common()", yaml="train:\n  micro_batch_size: ${oc.env:MBS}\n",
                dotlist=("train.micro_batch_size=2",)),
    ]
    invalid = [
        Example("cfg = _pretrain_common()", yaml="train:\n  micro_batch_size: ${oc.env:MBS}  # error\n",
                message="train.micro_batch_size: mblint cannot know the value this override gives (an interpolation"),
        Example("cfg = _pretrain_common()", dotlist=("train.global_batch_size=${oc.env:GBS}",),
                message="train.global_batch_size"),
    ]

    def check(self, cfg, ctx):
        for path, origin, action, value in cfg.applied_overrides:
            if action == "delete" or not isinstance(value, Unknown) or value.reason.startswith(MANDATORY):
                continue
            last = cfg.last_origin(path)
            if last is not None and last != origin:
                continue  # a later value took its place
            why = f" ({value.reason})" if value.reason else ""
            yield ctx.report(cfg, (
                f"{path}: mblint cannot know the value this override gives{why}, so the checks that read {path} "
                "did not run; write the value to have it checked"), [path], location=origin)
