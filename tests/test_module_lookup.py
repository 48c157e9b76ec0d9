"""Module look-ups answered from folder listings give the files that ``stat`` calls give."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mblint.extract.modules import FolderEntries, ModuleFinder, module_file

NAMES = [["pkg"], ["pkg", "mod"], ["pkg", "sub", "deep"], ["pkg", "sub"], ["top"], ["missing"], ["pkg", "missing"],
         ["notpkg", "mod"], ["fake"], ["linked", "mod"], ["dangling"], ["pkg", "fake"], ["plain_dir"], ["file_dir", "x"],
         [""], ["pkg", ""], ["a-b"], ["pkg", "mod", "more"], ["both"], ["pkg", "both"]]


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "deep.py").write_text("")
    (tmp_path / "top.py").write_text("")
    (tmp_path / "notpkg").write_text("a file where a folder is expected")
    (tmp_path / "fake.py").mkdir()  # a folder named like a module file
    (tmp_path / "pkg" / "fake").mkdir()  # a folder without __init__.py
    (tmp_path / "plain_dir").mkdir()
    (tmp_path / "file_dir.py").write_text("")
    (tmp_path / "a-b.py").write_text("")
    (tmp_path / "linked").symlink_to(tmp_path / "pkg")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    for folder in (tmp_path, tmp_path / "pkg"):  # a package and a module of one name
        (folder / "both").mkdir()
        (folder / "both" / "__init__.py").write_text("")
        (folder / "both.py").write_text("")
    return tmp_path


@pytest.mark.parametrize("parts", NAMES, ids=[".".join(p) or "empty" for p in NAMES])
def test_listings_answer_as_stat_does(tree: Path, parts: list[str]) -> None:
    for root in (tree, tree / "pkg", tree / "nowhere", tree / "top.py"):
        assert module_file(root, parts, FolderEntries()) == module_file(root, parts)


def test_a_finder_answers_the_same_when_asked_again(tree: Path) -> None:
    finder = ModuleFinder([tree, tree / "pkg"], tree)
    names = ("pkg.mod", "missing", "pkg.sub.deep", "other", "more.names")
    first = [finder.find(name) for name in names]
    assert [finder.find(name) for name in names] == first
    assert finder.find("pkg.sub.deep") == tree / "pkg" / "sub" / "deep.py" and finder.find("missing") is None


def test_an_unlistable_folder_is_asked_by_stat(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refusing_scandir(folder):
        raise PermissionError(13, "Permission denied", folder)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    assert module_file(tree, ["pkg", "mod"], FolderEntries()) == tree / "pkg" / "mod.py"
    assert module_file(tree, ["pkg", "sub"], FolderEntries()) == tree / "pkg" / "sub" / "__init__.py"


def test_a_package_comes_before_a_module_of_the_same_name(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As CPython's FileFinder.find_spec looks (Lib/importlib/_bootstrap_external.py: "Check if
    the module is the name of a directory (and thus a package)" before "Check for a file w/ a
    proper suffix"): `import both` beside both/__init__.py and both.py loads the package."""
    package = tree / "both" / "__init__.py"
    assert module_file(tree, ["both"], FolderEntries()) == package == module_file(tree, ["both"])
    assert ModuleFinder([tree], tree).find("pkg.both") == tree / "pkg" / "both" / "__init__.py"
    monkeypatch.setattr(os, "scandir", lambda folder: (_ for _ in ()).throw(PermissionError(13, "denied", folder)))
    assert module_file(tree, ["both"], FolderEntries()) == package


def test_a_recipe_reads_the_package_python_would_import(tmp_path: Path) -> None:
    from tests.test_cache import COMMON, make_project, run

    recipe = make_project(tmp_path, mbs=1)  # proj/common.py: micro-batch size 1, no finding
    (tmp_path / "proj" / "common").mkdir()
    (tmp_path / "proj" / "common" / "__init__.py").write_text(COMMON.format(mbs=2))
    report = run(tmp_path, recipe, use_cache=False)
    [finding] = report.findings
    assert finding.rule_id == "PK001"
    assert "proj/common/__init__.py" in {related.origin.path for related in finding.related}
