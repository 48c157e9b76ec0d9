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


def hf_model(name: str = "x") -> str:
    """The example line that sets ``cfg.model`` to an AutoBridge model built from the Hugging
    Face config ``name``, as real recipes write it. Without that config.json at hand (the tests
    run with an empty Hugging Face cache) the provider's class and architecture are unknown:
    ``"x"`` when only that matters, a real name where a rule reads it (a model family)."""
    return f"cfg.model = AutoBridge.from_hf_pretrained('{name}').to_megatron_provider(load_weights=False)\n"


@dataclass(frozen=True)
class Example:
    """``code``: the function body. ``dotlist`` overrides and a ``yaml`` override file are
    applied after it; a ``# error`` marker in the code or the YAML is where the finding lands.
    An invalid example may state the ``message`` it expects (a part of the finding's message)
    and, for a rule with a fix, the body ``fixed`` that ``--fix --unsafe-fixes`` leaves (as
    Fixit's ``expected_replacement``; the body unchanged when the only fix is an alternative,
    which is never applied) and, for a ``yaml`` example, the override file ``fixed_yaml`` it
    leaves. ``unsafe`` states which of the two flags that takes: True, the fix is unsafe
    (``--fix`` alone leaves both texts unchanged); False, ``--fix`` alone does it; None, not
    stated. The test suite checks what is stated.

    A ``launch`` example is a launch script (its lines, shell syntax) that is linted instead of
    the recipe; its recipes are those Megatron-Bridge's runner finds on the search path, and a
    ``# error`` marker is a shell comment on the launch line.

    ``alongside``: ids of rules of the installed packs that run beside the rule (selected too;
    only the rule's own findings count): a coverage rule that reports what other rules could
    not check needs them."""

    code: str
    version: str = "0.6"
    world_size: int | None = None
    dotlist: tuple[str, ...] = ()
    yaml: str | None = None
    function: str = "example_config"
    message: str | None = None
    fixed: str | None = None
    fixed_yaml: str | None = None
    unsafe: bool | None = None
    launch: str | None = None
    alongside: tuple[str, ...] = ()

    @property
    def states_outcome(self) -> bool:
        return any(item is not None for item in (self.message, self.fixed, self.fixed_yaml, self.unsafe))

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


def fix_example(rule_class, example: Example, workdir: Path, search_paths: Sequence[Path],
                *, unsafe: bool = True) -> str:
    """The example's body after ``rule_class``'s fixes (unsafe ones included unless ``unsafe``
    is False) are applied to it."""
    return fixed_texts(rule_class, example, workdir, search_paths, unsafe=unsafe)[0]


def fixed_texts(rule_class, example: Example, workdir: Path, search_paths: Sequence[Path],
                *, unsafe: bool = True) -> tuple[str, str | None]:
    """The example's body and its override file (None without ``yaml``) after
    ``rule_class``'s fixes are applied, as ``--fix`` (``--unsafe-fixes`` when ``unsafe``)
    leaves them."""
    import textwrap

    from mblint.engine import CheckOptions, Engine
    from mblint.fix import run_fixes
    from mblint.plugins import LoadedPlugins

    recipe_file, yaml_file = _write_example(example, workdir)

    def make_engine():
        options = CheckOptions(select=(rule_class.id, *example.alongside), world_size=example.world_size,
                               version=example.version, search_paths=tuple(search_paths), dotlist=example.dotlist)
        engine = Engine(options, LoadedPlugins(rules=_with_alongside(rule_class, example)))
        engine.display_root = workdir
        return engine

    linted = yaml_file or recipe_file
    run = run_fixes(make_engine, [str(linted)], unsafe=unsafe)
    text = run.texts.get(recipe_file, recipe_file.read_text(encoding="utf-8"))
    fixed_body = text.split(f"def {example.function}():\n", 1)[1]
    if fixed_body.endswith("    return cfg\n"):
        fixed_body = fixed_body[:-len("    return cfg\n")]
    fixed_yaml = None
    if example.yaml is not None:
        fixed_yaml = run.texts.get(yaml_file, yaml_file.read_text(encoding="utf-8")).split("\n", 1)[1]
    return textwrap.dedent(fixed_body).strip("\n"), fixed_yaml


def _write_example(example: Example, workdir: Path) -> tuple[Path, Path | None]:
    """The example's recipe file and, with ``yaml``, its override file (whose first line names
    the recipe) or, with ``launch``, its launch script, written to ``workdir``."""
    import textwrap

    workdir.mkdir(parents=True, exist_ok=True)
    recipe_file = workdir / "example_recipe.py"
    recipe_file.write_text(example_source(example), encoding="utf-8")
    if example.launch is not None:
        launch_file = workdir / "example_launch.sh"
        launch_file.write_text(textwrap.dedent(example.launch).lstrip("\n"), encoding="utf-8")
        return recipe_file, launch_file
    if example.yaml is None:
        return recipe_file, None
    yaml_file = workdir / "example_override.yaml"
    yaml_text = f"# mblint: recipe={recipe_file.name}::{example.function}\n" + textwrap.dedent(example.yaml).lstrip("\n")
    yaml_file.write_text(yaml_text, encoding="utf-8")
    return recipe_file, yaml_file


def _with_alongside(rule_class, example: Example) -> list:
    """``rule_class`` and the rules of the installed packs its example runs beside."""
    if not example.alongside:
        return [rule_class]
    from mblint.plugins import load_plugins

    others = {rule.id: rule for rule in load_plugins().rules}
    return [rule_class, *(others[rule_id] for rule_id in example.alongside)]


class ExampleNotResolved(AssertionError):
    """The example's recipe gave no configuration (a syntax error, a misspelt builder): its
    rule was never asked, so it proves nothing, valid or invalid."""


def run_example(rule_class, example: Example, workdir: Path, search_paths: Sequence[Path]) -> ExampleRun:
    """Write the example to ``workdir``, lint it with only ``rule_class`` selected, and return
    that rule's findings. Raises ``ExampleNotResolved`` when no configuration was resolved
    (unless a rule that checks no configuration fired: what it reports stopped the reading)."""
    from mblint.engine import CheckOptions, Engine
    from mblint.plugins import LoadedPlugins

    recipe_file, yaml_file = _write_example(example, workdir)
    expected = [(recipe_file.name, line) for line in marked_lines(recipe_file.read_text(encoding="utf-8"))]
    paths = [str(recipe_file)]
    if yaml_file is not None:
        expected += [(yaml_file.name, line) for line in marked_lines(yaml_file.read_text(encoding="utf-8"))]
        paths = [str(yaml_file)]
    options = CheckOptions(
        select=(rule_class.id, *example.alongside), world_size=example.world_size, version=example.version,
        search_paths=tuple(search_paths), dotlist=example.dotlist,
    )
    engine = Engine(options, LoadedPlugins(rules=_with_alongside(rule_class, example)))
    engine.display_root = workdir
    report = engine.check_paths(paths)
    notes = report.notes + [str(e) for e in report.errors]
    findings = [f for f in report.findings if f.rule_id == rule_class.id]
    # A finding of the rule where nothing was resolved is one a reader reports (a syntax error, a
    # rejected launch line): it says why; any other example must resolve.
    if not report.resolved and not findings:
        reasons = notes + [f"{f.rule_id} {f.message}" for f in report.findings if f.rule_id != rule_class.id]
        raise ExampleNotResolved(f"{rule_class.id}'s example resolved no configuration: {reasons}")
    return ExampleRun(findings, recipe_file, yaml_file, expected, notes)


def stated_outcome_problems(rule_class, example: Example, workdir: Path, search_paths: Sequence[Path]) -> list[str]:
    """How ``rule_class`` on the invalid ``example`` differs from the ``message``, ``fixed``,
    ``fixed_yaml`` and ``unsafe`` it states (empty when it does what they say)."""
    import textwrap

    problems = []
    if example.message is not None:
        messages = [finding.message for finding in run_example(rule_class, example, workdir / "lint", search_paths).findings]
        if not any(example.message in message for message in messages):
            problems.append(f"no message contains {example.message!r}: {messages}")
    if example.fixed is None and example.fixed_yaml is None:
        if example.unsafe is not None:
            problems.append("unsafe= says how the stated fix is applied, but none is stated (fixed= or fixed_yaml=)")
        return problems
    if not rule_class.fixable:
        return problems + [f"{rule_class.id} states a fixed text but has no fix"]
    if example.fixed_yaml is not None and example.yaml is None:
        return problems + ["fixed_yaml= without yaml="]

    def stated(body: str, yaml: str | None) -> tuple:
        return (None if example.fixed is None else textwrap.dedent(body).strip("\n"),
                None if example.fixed_yaml is None else textwrap.dedent(yaml).lstrip("\n"))

    def got(unsafe: bool) -> tuple:
        body, yaml = fixed_texts(rule_class, example, workdir / ("unsafe" if unsafe else "safe"), search_paths,
                                 unsafe=unsafe)
        return stated(body, yaml)

    wanted = stated(example.fixed or "", example.fixed_yaml)
    fixed = got(unsafe=True)
    if fixed != wanted:
        problems.append(f"--fix --unsafe-fixes gives {fixed}, stated {wanted}")
    if example.unsafe is not None:
        unchanged = stated(example.code, example.yaml)
        safe_only = got(unsafe=False)
        if example.unsafe and safe_only != unchanged:
            problems.append(f"stated unsafe, but --fix alone changes the example: {safe_only}")
        if not example.unsafe and safe_only != wanted:
            problems.append(f"stated safe, but --fix alone gives {safe_only}")
    return problems
