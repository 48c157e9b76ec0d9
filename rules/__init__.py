"""The built-in Megatron-Bridge rule pack. Registered through the ``mblint`` entry-point
group like any third-party pack; every module below this package that defines ``Rule``
subclasses contributes them."""

from __future__ import annotations

import importlib
import pkgutil

from mblint.rulekit import Rule, hookimpl


@hookimpl
def mblint_rules() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for module_info in pkgutil.walk_packages(__path__, __name__ + "."):
        module = importlib.import_module(module_info.name)
        found.extend(value for _, value in sorted(vars(module).items())
                     if isinstance(value, type) and issubclass(value, Rule) and value is not Rule
                     and value.__module__ == module.__name__ and value.id)
    return found


@hookimpl
def mblint_default_settings() -> dict:
    return {}
