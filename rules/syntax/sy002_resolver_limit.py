from __future__ import annotations

from mblint.rulekit import COVERAGE_TAG, Example, Rule, Severity


class ResolverLimitRule(Rule):
    id = "SY002"
    name = "resolver-limit"
    severity = Severity.INFO
    tags = (COVERAGE_TAG,)
    checks_configurations = False
    summary = "mblint stopped interpreting a recipe (step, depth or recursion limit); its values are unknown."
    doc = """## What it does
Says that a recipe was too large, too deep or recursive to interpret within mblint's bounds.

## Why it matters
The affected values are unknown, so rules say nothing about them.

## Example
A helper that calls itself without end.

## Fix
None needed; simplify the recipe if you want it checked.

## Versions
All.

## Sources
mblint's interpreter limits.
"""
    valid = ["cfg = _pretrain_common()\ncfg.train.train_iters = 2 ** 40"]
    # found on the recipe's def line, which an example does not write: no marker
    invalid = [Example("cfg = _pretrain_common()\ncfg.train.train_iters = 2 ** 5000", message="value size limit")]
