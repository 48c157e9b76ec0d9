from __future__ import annotations

from mblint.rulekit import Rule, Severity


class UnreachableRecipeCodeRule(Rule):
    id = "SY006"
    name = "unreachable-recipe-code"
    severity = Severity.WARNING
    checks_configurations = False
    summary = "Statements after a return (or raise) in a recipe function never run; their settings have no effect."
    doc = """## What it does
Reports the first statement that follows a `return` or `raise` in the same block of a recipe
function (the function's body, or the body of an `if`/`for`/`with`/`try` inside it).

## Why it matters
Python never runs them, so whatever they set (a mixed-precision recipe, a parallel size) is not
part of the configuration the recipe returns; mblint, like Python, ignores them. A shipped
Megatron-Bridge 0.6.2 recipe sets its mixed precision after `return cfg`.

## Example
```python
def my_recipe_config():
    cfg = _pretrain_common()
    return cfg
    cfg.mixed_precision = "bf16_mixed"   # never runs
```

## Fix
Move the statements above the `return`, or delete them. Not automatic.

## Versions
All.

## Sources
The Python language reference (a `return` leaves the function); 0.6.2
megatron/bridge/recipes/ (a recipe with statements after `return cfg`).
"""
    valid = ["cfg = _pretrain_common()"]
    invalid = ["cfg = _pretrain_common()\nreturn cfg\ncfg.train.micro_batch_size = 2  # error"]
