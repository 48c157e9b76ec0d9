from __future__ import annotations

from mblint.rulekit import Rule, Severity


class SyntaxErrorRule(Rule):
    id = "SY001"
    name = "syntax-error"
    severity = Severity.ERROR
    checks_configurations = False
    summary = "A file mblint must read cannot be parsed (Python, YAML, encoding or binary content)."
    doc = """## What it does
Reports a Python or YAML file that cannot be read or parsed, at the position of the problem.

## Why it matters
Nothing in the file can be checked, and Megatron-Bridge would fail on it too.

## Example
`cfg.train.micro_batch_size = = 1`

## Fix
Correct the syntax. No automatic fix.

## Versions
All.

## Sources
Python's parser; ruamel.yaml.
"""
    valid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = 1"]
    invalid = ["cfg = _pretrain_common()\ncfg.train.micro_batch_size = = 1  # error"]
