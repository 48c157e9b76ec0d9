"""Reading source files: whole, up to the size limit, whatever size the system reports."""

from __future__ import annotations

import re

import os


def test_a_source_file_is_read_whole(tmp_path):
    from mblint.extract import modules

    file = tmp_path / "r.py"
    for size in (0, 1, 600, 65536, 200_001):
        file.write_bytes(b"x" * size)
        assert modules.read_regular_file(file) == b"x" * size


def test_a_file_larger_than_its_reported_size_is_read_whole_up_to_the_limit(tmp_path, monkeypatch):
    from mblint.extract import modules

    file = tmp_path / "r.py"
    file.write_bytes(b"y" * 50)
    real_fstat = os.fstat

    def no_size(fd):  # as /proc reports its files
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 0, *info[7:]))

    monkeypatch.setattr(modules.os, "fstat", no_size)
    assert modules.read_regular_file(file) == b"y" * 50
    assert modules.read_regular_file(file, limit=50) == b"y" * 50
    try:
        modules.read_regular_file(file, limit=49)
    except modules.SourceLimit:
        pass
    else:
        raise AssertionError("the limit was not enforced")


def _columns_from_text(text: str, line: int, byte_offset: int) -> int:
    """``char_column`` worked out from the whole text, its lines numbered as Python numbers them."""
    lines = re.split(r"\r\n|\r|\n", text)
    if 0 < line <= len(lines) and not lines[line - 1].isascii():
        return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", "replace")) + 1
    return byte_offset + 1


def test_a_parsed_source_keeps_no_text_but_its_character_columns():
    import sys
    from pathlib import Path

    from mblint.extract.modules import parse_source

    # "\x85" ends a line for str.splitlines, not for Python: the lines kept for char_column are
    # numbered as Python numbers them (issue #22).
    text = "a = 'é' ; b = 1\nc = 2  # \x85 ü = 3\nd = 'ü'\ne = 4\n"
    before = sys.getrefcount(text)
    source = parse_source(Path("m.py"), text)
    assert sys.getrefcount(text) == before  # not kept
    assert source.mblint_text == ""
    for line in range(0, 7):
        for offset in range(0, 14):
            assert source.char_column(line, offset) == _columns_from_text(text, line, offset), (line, offset)
    ascii_source = parse_source(Path("n.py"), "x = 1\n")
    assert ascii_source.is_ascii and ascii_source.char_column(1, 4) == 5


def test_a_source_that_mentions_mblint_keeps_its_text_for_comments():
    from pathlib import Path

    from mblint.engine import CheckOptions, Engine
    from mblint.extract.modules import parse_source

    text = "# mblint: world-size=8\nx = 1\n"
    source = parse_source(Path("m.py"), text)
    assert source.mblint_text == text
    assert Engine(CheckOptions(jobs=1)).world_sizes.comment("m.py", source.mblint_text) == 8


def test_a_text_read_for_a_file_the_finder_parsed_by_another_name_is_dropped(tmp_path, monkeypatch):
    from pathlib import Path

    from mblint.extract.modules import ModuleFinder

    (tmp_path / "r.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    texts = {Path("r.py"): "x = 1\n"}  # read by the Project to detect the schema line
    finder = ModuleFinder([tmp_path], texts=texts)
    first = finder.load(tmp_path / "r.py")  # an import reached it first
    assert finder.load(Path("r.py")) is first
    assert texts == {}
