"""Python entry scripts that a launch line runs (not Megatron-Bridge's runner): the recipe the
script builds and the override file it reads, found by reading the script, never running it."""

from __future__ import annotations


def entry_recipe(engine, script, launch):
    """(recipe file, function, override files) of the launch's entry script; a string saying
    why not; None when the script is not one mblint reads as a training entry point."""
    return None
