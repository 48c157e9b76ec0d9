from __future__ import annotations

from mblint.rulekit import COVERAGE_TAG, Rule, Severity


class NotAnalysedRule(Rule):
    id = "SY005"
    name = "not-analysed"
    severity = Severity.WARNING
    tags = (COVERAGE_TAG,)
    checks_configurations = False
    summary = "A configuration mblint was given could not be analysed (an unpaired override file, a recipe it cannot read)."
    doc = """## What it does
Reports a configuration that mblint was asked to lint but could not analyse, and says how to
make it analysable:

- a YAML file that looks like a Megatron-Bridge override file (its top-level keys are sections
  of `ConfigContainer`: `train`, `model`, ...) but is paired with no recipe;
- a recipe whose configuration comes from an import mblint could not read (Megatron-Bridge
  not on the path of the interpreter running mblint, as under pre-commit);
- a builder called only from an `if __name__ == "__main__":` block, which mblint never runs.

## Why it matters
A file nobody checked must not pass as checked: without this finding, a pre-commit hook that
resolves nothing would report success.

## Example
`conf/finetune.yaml` holding `train: {micro_batch_size: 2}` with no pairing.

## Fix
Pair the override file (`# mblint: recipe=recipes/llama.py::llama3_8b_sft_config`, `pairing`
in settings, or `--recipe`); install Megatron-Bridge where mblint runs, or give the folder
holding its `megatron/` with `--search-path` (the settings' `search-paths` take only folders
inside the project, so they suit a team package, not a Megatron-Bridge checkout elsewhere).
No automatic fix. Ignore the rule (`ignore = ["SY005"]`) to
accept that these files are not checked.

## Versions
All.

## Sources
mblint's pairing and import resolution.
"""
    valid = ["cfg = _pretrain_common()"]
    invalid = ["cfg = torch.load('config.pt')  # a ConfigContainer from a pickle mblint does not read"]
