"""The parse memo of a long-lived process (mblint server): a text parsed before is not parsed
again; another text of the same file is, and the least recently used entries go."""

from pathlib import Path

from mblint.extract import modules


def test_the_same_text_is_parsed_once_and_another_text_again(monkeypatch) -> None:
    monkeypatch.setattr(modules, "PARSE_MEMO", modules.ParseMemo(size=2))
    path = Path("r.py")
    first = modules.parse_source(path, "x = 1\n", "r.py")
    assert modules.parse_source(path, "x = 1\n", "r.py") is first
    edited = modules.parse_source(path, "x = 2\n", "r.py")
    assert edited is not first and edited.tree.body[0].value.value == 2
    assert modules.parse_source(path, "x = 1\n", "other/r.py") is not first  # shown by another name
    assert modules.parse_source(path, "x = 1\n", "r.py") is not first  # pushed out: two entries kept


def test_without_a_memo_every_parse_is_new(monkeypatch) -> None:
    monkeypatch.setattr(modules, "PARSE_MEMO", None)
    path = Path("r.py")
    assert modules.parse_source(path, "x = 1\n", "r.py") is not modules.parse_source(path, "x = 1\n", "r.py")
