"""The packages: mblint, and the built-in rule pack, which lives in the rules/ folder and
installs as ``mblint_rules`` (a top-level ``rules`` package would collide with other
distributions). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

RULE_PACKS = find_packages(include=["rules", "rules.*"])

setup(
    packages=find_packages(include=["mblint", "mblint.*"]) + ["mblint_" + name for name in RULE_PACKS],
    package_dir={"mblint_rules": "rules"},
)
