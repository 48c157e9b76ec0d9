from __future__ import annotations

from mblint.rulekit import Rule, Severity


class InvalidSuppressionRule(Rule):
    id = "SY004"
    name = "invalid-suppression"
    severity = Severity.WARNING
    checks_configurations = False
    summary = "A `# mblint:` comment cannot be understood (misspelt directive, missing or unknown rule ids)."
    tags = ("suppression",)
    doc = """## What it does
Reports a `# mblint:` comment that is not one of `ignore[ID, ...]`, `ignore-file`,
`ignore-file[ID, ...]`, `world-size=N` or `recipe=PATH::FUNCTION`, or that names a rule
id no loaded rule has.

## Why it matters
A malformed suppression suppresses nothing, silently.

## Example
```python
cfg.train.micro_batch_size = 2  # mblint: ignroe[PK001]
```

## Fix
Correct the comment: `# mblint: ignore[PK001] reason`.

## Versions
All.

## Sources
mblint's suppression syntax.
"""
    valid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1  # mblint: ignore[SY004] reason"]
    invalid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = 2  # mblint: ignroe[PK001] # error"]
