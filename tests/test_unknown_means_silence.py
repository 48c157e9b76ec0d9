"""Unknown values mean silence, for every rule: each invalid example written in Python is run
again with the value of each line its ``# error`` marker names made unknown (the result of a
function imported from a module mblint cannot read). The rule then must report nothing at that
line: what it found there depended on a value it no longer knows. A rule whose finding there
does not depend on the assigned value is listed below with the reason."""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap

import pytest

from mblint.plugins import load_plugins
from mblint.testing import MARKER, Example, run_example

UNKNOWN_IMPORT = "from mycompany.tweaks import unknown_value\n"

# Rules whose finding at the marked line is about the line itself, whatever value it assigns.
VALUE_INDEPENDENT = {
    "OT001": "the field name is unknown to the schema; the assignment has no effect whatever its value",
    "PK016": "the key is present in dataset_kwargs; GPTSFTDatasetConfig rejects or ignores the key itself",
    "PR003": "an attribute set on a precision given as a string raises AttributeError whatever the value",
    "SY006": "the statement never runs (it follows a return or raise)",
    "CV005": "what the statement assigns to cannot be followed, whatever it assigns",
}


def _cases():
    for rule in load_plugins().rules:
        if rule.id in VALUE_INDEPENDENT:
            continue
        for index, item in enumerate(rule.invalid):
            example = Example.of(item)
            if example.yaml is not None or example.launch is not None or example.dotlist:
                continue  # the marked value is not Python
            code = textwrap.dedent(example.code).strip("\n")
            for number, target in _marked_assignments(code):
                lines = code.splitlines()
                marker = re.search(MARKER, lines[number - 1])[0]
                lines[number - 1] = f"{target} = unknown_value()  {marker}"
                variant = dataclasses.replace(example, code=UNKNOWN_IMPORT + "\n".join(lines), message=None, fixed=None,
                                              fixed_yaml=None, unsafe=None)
                yield pytest.param(rule, variant, id=f"{rule.id}-invalid-{index}-line-{number}")


def _marked_assignments(code: str):
    """(line, target) of each one-line assignment of one target, not ``cfg`` itself, whose line
    has a marker."""
    marked = {number for number, line in enumerate(code.splitlines(), start=1) if re.search(MARKER, line)}
    try:
        tree = ast.parse(code)
    except SyntaxError:  # an example of a syntax error: no value in it
        return
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and node.lineno == node.end_lineno
                and node.lineno in marked and ast.unparse(node.targets[0]) != "cfg"):
            yield node.lineno, ast.get_source_segment(code, node.targets[0])


CASES = list(_cases())


def test_the_examples_give_enough_cases():
    """Most rules' invalid examples mark an assignment: a change to the examples' form that
    left this test with nothing to check would fail here."""
    assert len({case.values[0].id for case in CASES}) > 80, len(CASES)


@pytest.mark.parametrize("rule,example", CASES)
def test_an_unknown_value_silences_the_finding_it_gave(rule, example, mb_roots, tmp_path):
    run = run_example(rule, example, tmp_path, [mb_roots[example.version]])
    text = run.recipe_file.read_text(encoding="utf-8").splitlines()
    (line,) = [number for number, text_line in enumerate(text, start=1) if "= unknown_value()" in text_line]
    at_line = [f"{f.location.line}: {f.message}" for f in run.findings
               if f.location.path == run.recipe_file.name and f.location.line == line]
    assert not at_line, f"{rule.id} reports on a value it cannot know: {at_line}"
