"""Running a rule's own examples. Used by mblint's test suite and usable by third-party rule
packs. An example is the body of a recipe function; ``HEADER`` imports the names real recipes
use, so ``cfg = _sft_common()`` works when Megatron-Bridge's sources are on the search path."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from mblint.findings import Finding

HEADER = """\
import math
import torch
from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _pretrain_common, _sft_common, _peft_common
from megatron.bridge.training.config import ConfigContainer
from megatron.bridge.training.comm_overlap import CommOverlapConfig
from megatron.bridge.training.config import ProfilingConfig
from megatron.bridge.training.config import TrainingConfig
"""
HEADER_06 = HEADER + """\
from megatron.bridge.recipes.common import _sft_common_vlm, _peft_common_vlm
from megatron.bridge.data.packing import PackedSequenceSpecs
from megatron.bridge.data.builders import DirectHFSFTDatasetConfig, HFDatasetSourceConfig
from megatron.bridge.training.flex_dispatcher_backend import apply_flex_dispatcher_backend
from megatron.bridge.utils.cuda_graph import set_cuda_graph_modules
from megatron.bridge.training.mixed_precision import bf16_mixed, get_mixed_precision_config
"""
HEADER_03 = HEADER + """\
from megatron.bridge.data.datasets.packed_sequence import PackedSequenceSpecs
from megatron.bridge.training.mixed_precision import bf16_mixed, get_mixed_precision_config
"""
MARKER = r"#\s*(error|finding)\b"  # compiled by the re module when examples run, not at import


@dataclass(frozen=True)
class Example:
    """``code``: the function body. ``dotlist`` overrides and a ``yaml`` override file are
    applied after it; a ``# error`` marker in the code or the YAML is where the finding lands.
    An invalid example may state the ``message`` it expects (a part of the finding's message)
    and, for a rule with a fix, the body ``fixed`` that ``--fix --unsafe-fixes`` leaves (as
    Fixit's ``expected_replacement``); the test suite checks both."""

    code: str
    version: str = "0.6"
    world_size: int | None = None
    dotlist: tuple[str, ...] = ()
    yaml: str | None = None
    function: str = "example_config"
    message: str | None = None
    fixed: str | None = None

    @classmethod
    def of(cls, item: "Example | str") -> "Example":
        return item if isinstance(item, Example) else Example(item)


def example_source(example: Example) -> str:
    import textwrap  # for the tests and rule packs that run examples, not for a lint run

    header = HEADER_03 if example.version == "0.3" else HEADER_06
    body = textwrap.indent(textwrap.dedent(example.code).strip("\n"), "    ")
    return f"{header}\n\ndef {example.function}():\n{body}\n    return cfg\n"


def marked_lines(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), start=1) if re.search(MARKER, line)]


class ExampleRun:
    """A rule's findings on one example, and the lines its markers expect them on."""

    __slots__ = ("findings", "recipe_file", "yaml_file", "expected_lines", "notes")

    def __init__(self, findings: list[Finding], recipe_file: Path, yaml_file: Path | None,
                 expected_lines: list[tuple[str, int]], notes: list[str]) -> None:
        self.findings = findings
        self.recipe_file = recipe_file
        self.yaml_file = yaml_file
        self.expected_lines = expected_lines
        self.notes = notes


def fix_example(rule_class, example: Example, workdir: Path, search_paths: Sequence[Path]) -> str:
    """The example's body after ``rule_class``'s fixes (unsafe ones included) are applied to it."""
    import textwrap

    from mblint.engine import CheckOptions, Engine
    from mblint.fix import run_fixes
    from mblint.plugins import LoadedPlugins

    workdir.mkdir(parents=True, exist_ok=True)
    recipe_file = workdir / "example_recipe.py"
    header, body = example_source(example).split(f"def {example.function}():\n", 1)
    recipe_file.write_text(f"{header}def {example.function}():\n{body}", encoding="utf-8")

    def make_engine():
        options = CheckOptions(select=(rule_class.id,), world_size=example.world_size, version=example.version,
                               search_paths=tuple(search_paths), dotlist=example.dotlist)
        engine = Engine(options, LoadedPlugins(rules=[rule_class]))
        engine.display_root = workdir
        return engine

    run = run_fixes(make_engine, [str(recipe_file)], unsafe=True)
    text = run.texts.get(recipe_file, recipe_file.read_text(encoding="utf-8"))
    fixed_body = text.split(f"def {example.function}():\n", 1)[1]
    if fixed_body.endswith("    return cfg\n"):
        fixed_body = fixed_body[:-len("    return cfg\n")]
    return textwrap.dedent(fixed_body).strip("\n")


def run_example(rule_class, example: Example, workdir: Path, search_paths: Sequence[Path]) -> ExampleRun:
    """Write the example to ``workdir``, lint it with only ``rule_class`` selected, and return
    that rule's findings."""
    from mblint.engine import CheckOptions, Engine
    from mblint.plugins import LoadedPlugins

    workdir.mkdir(parents=True, exist_ok=True)
    recipe_file = workdir / "example_recipe.py"
    source = example_source(example)
    recipe_file.write_text(source, encoding="utf-8")
    expected = [(recipe_file.name, line) for line in marked_lines(source)]
    paths = [str(recipe_file)]
    yaml_file = None
    if example.yaml is not None:
        import textwrap

        yaml_file = workdir / "example_override.yaml"
        yaml_text = f"# mblint: recipe={recipe_file.name}::{example.function}\n" + textwrap.dedent(example.yaml).lstrip("\n")
        yaml_file.write_text(yaml_text, encoding="utf-8")
        expected += [(yaml_file.name, line) for line in marked_lines(yaml_text)]
        paths = [str(yaml_file)]
    options = CheckOptions(
        select=(rule_class.id,), world_size=example.world_size, version=example.version,
        search_paths=tuple(search_paths), dotlist=example.dotlist,
    )
    engine = Engine(options, LoadedPlugins(rules=[rule_class]))
    engine.display_root = workdir
    report = engine.check_paths(paths)
    findings = [f for f in report.findings if f.rule_id == rule_class.id]
    return ExampleRun(findings, recipe_file, yaml_file, expected, report.notes + [str(e) for e in report.errors])
