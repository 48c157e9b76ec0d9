from __future__ import annotations

from mblint.rulekit import Rule, Severity


class InvalidSuppressionRule(Rule):
    id = "SY004"
    name = "invalid-suppression"
    severity = Severity.WARNING
    checks_configurations = False
    summary = ("A `# mblint:` comment cannot be understood (misspelt directive, missing or unknown rule ids), or a "
               "`# noqa` names an mblint rule.")
    tags = ("suppression",)
    doc = """## What it does
Reports a `# mblint:` comment that is not one of `ignore[ID, ...]`, `ignore-file`,
`ignore-file[ID, ...]`, `world-size=N` or `recipe=PATH::FUNCTION`, or that names a rule
id no loaded rule has; and a `# noqa: ID` (ruff's and flake8's form) naming an mblint rule,
with the `# mblint: ignore[ID]` to write instead. A noqa naming only other tools' codes
(`# noqa: E501`) is theirs and is not reported.

## Why it matters
A malformed suppression suppresses nothing, silently. mblint does not honour noqa: a bare
`# noqa` or one written for ruff would then hide mblint's findings on that line as well, and
ruff itself reports rule codes it does not know in a noqa (RUF100).

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
    valid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1  # mblint: ignore[SY004] reason",
             "cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1  # noqa: E501"]
    invalid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = 2  # mblint: ignroe[PK001] # error",
               "cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1  # noqa: SY004 # error"]
