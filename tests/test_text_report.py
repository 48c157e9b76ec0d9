"""Text output's source lines and printable test, checked against the plain definitions they
shortcut: the decoded file's lines as Python numbers them (universal newlines: "\n", "\r\n",
lone "\r"; not the form feeds, separators and U+2028 that ``str.splitlines`` also breaks at,
issue #22), ``str.isprintable``."""

from __future__ import annotations

import io

import pytest

from mblint.report import all_printable as _all_printable
from mblint.report.text import _file_lines

FILES = {
    "plain": b"a = 1\nb = 2\n\nc = 3\n",
    "no final newline": b"a = 1\nb = 2",
    "empty": b"",
    "only newlines": b"\n\n\n",
    "crlf": b"a = 1\r\nb = 2\r\n",
    "lone cr": b"a = 1\rb = 2\nc = 3\n",
    "form feed": b"a = 1\n\x0c\nb = 2\nc = 3\n",
    "group separator": b"a\x1db\nc\n",
    "bom": b"\xef\xbb\xbfa = 1\nb = 2\n",
    "two boms": b"\xef\xbb\xbf\xef\xbb\xbfa = 1\nb = 2\n",
    "next line": "a = 'x\x85y'\nb = 2\n".encode(),
    "line separator": "a = 'x\u2028y'\nb = 2\n".encode(),
    "accents": "s = 'café'\nt = '“q”'\n".encode(),
    "bad utf-8 before newline": b"s = '\xe2\x80\nt = 1\n\xc3",
    "bad bytes": b"s = '\xff\xfe'\nt = 2\n",
    "break after the lines wanted": b"a = 1\nb = 2\nc = 3\x0cd = 4\n",
}


@pytest.mark.parametrize("name", FILES)
def test_file_lines_are_the_lines_python_numbers(tmp_path, name):
    path = tmp_path / "f.py"
    path.write_bytes(FILES[name])
    lines = io.StringIO(FILES[name].decode("utf-8-sig", errors="replace"), newline=None).read().split("\n")
    if not lines[-1]:
        lines.pop()
    for numbers in [{n} for n in range(0, len(lines) + 3)] + [set(range(-1, len(lines) + 3)), {1, 3}]:
        expected = {n: lines[n - 1] for n in numbers if 0 < n <= len(lines)}
        assert _file_lines(str(path), numbers) == expected, (name, numbers)


def test_file_lines_of_a_missing_or_binary_file_are_none(tmp_path):
    (tmp_path / "b.py").write_bytes(b"a\x00b\n")
    assert _file_lines(str(tmp_path / "b.py"), {1}) == {}
    assert _file_lines(str(tmp_path / "missing.py"), {1}) == {}


@pytest.mark.parametrize("text", ["", "plain text ~", "tab\there", "escape \x1b[31m", "del \x7f", "nul \x00",
                                  "café", "café\x1b", "line\u2028sep", "\x9b", " "])
def test_all_printable_is_isprintable(text):
    assert _all_printable(text) == text.isprintable()
    assert _all_printable("x" * 5000 + text) == ("x" * 5000 + text).isprintable()
