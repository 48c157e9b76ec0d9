"""The docs give commands that work (issue 21, section 5): mblint is installed from its
repository (it is not on the package index), a pre-commit pin names a commit or a tag that
exists, and a figure in the docs comes with the command that reproduces it."""

from __future__ import annotations

import re
import subprocess

from integration_support import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_no_doc_installs_mblint_from_the_package_index() -> None:
    bare = re.compile(r"pip install\s+(-U\s+)?[\"']?mblint(?![\w@ ]*@)[\"']?(\s|$)")
    offenders = [f"{doc.name}: {line.strip()}" for doc in DOCS for line in doc.read_text().splitlines()
                 if bare.search(line)]
    assert not offenders, offenders


def test_pre_commit_pins_name_a_commit_or_an_existing_tag() -> None:
    tags = set(subprocess.run(["git", "tag", "--list"], cwd=REPO, capture_output=True, text=True).stdout.split())
    revs = [(doc.name, match.group(1)) for doc in DOCS
            for match in re.finditer(r"^\s*rev:\s*(\S+)", doc.read_text(), re.M)]
    assert revs, "the pre-commit example is gone"
    for name, rev in revs:
        assert re.fullmatch(r"[0-9a-f]{40}", rev) or rev.startswith("<") or rev in tags, (name, rev)


def test_the_findings_figure_of_the_integrations_doc_comes_with_its_command() -> None:
    text = (REPO / "docs" / "integrations.md").read_text()
    paragraph = text[text.index("On the 0.6.2 recipes"):text.index("To give pre-commit the sources")]
    figures = re.findall(r"\b(\d{3,}) (?:recipes are SY005|findings)", paragraph)
    assert figures, paragraph
    assert "mblint check --no-cache --statistics" in paragraph
