from __future__ import annotations

from mblint.rulekit import Rule, Severity


class UnusedSuppressionRule(Rule):
    id = "SY003"
    name = "unused-suppression"
    severity = Severity.WARNING
    checks_configurations = False
    summary = "A `# mblint: ignore[...]` comment names a rule that reported nothing there."
    tags = ("suppression",)
    doc = """## What it does
Reports a `# mblint: ignore[ID]` or `# mblint: ignore-file[ID]` comment, or one rule id in it,
that suppressed no finding in this run (like ruff's RUF100 for unused `noqa`). Ids of rules
that are not enabled for the file are not reported.

## Why it matters
Stale suppressions hide the next real problem on that line and mislead readers.

## Example
```python
cfg.train.micro_batch_size = 1  # mblint: ignore[PK001] packed run
```

## Fix
Delete the comment, or the unused id from it.

## Versions
All.

## Sources
ruff's unused-noqa (RUF100).
"""
    valid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1"]
    # the only rule an example selects is this one, so the unused id is its own
    invalid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1  # mblint: ignore[SY003] # error"]
