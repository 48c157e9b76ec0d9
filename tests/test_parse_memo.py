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


def test_the_texts_kept_are_bounded_in_characters_too(monkeypatch) -> None:
    # each edit of a large document is another text: the memo keeps at most `chars` of them
    monkeypatch.setattr(modules, "PARSE_MEMO", modules.ParseMemo(size=1024, chars=30))
    path = Path("r.py")
    texts = [f"x = {n}\n" + "#" * 10 + "\n" for n in range(5)]  # 17 characters each
    first = modules.parse_source(path, texts[0], "r.py")
    for text in texts[1:]:
        modules.parse_source(path, text, "r.py")
    assert [key[2] for key in modules.PARSE_MEMO.entries] == texts[-1:]  # two would be 34
    assert modules.PARSE_MEMO.held == 17
    assert modules.parse_source(path, texts[0], "r.py") is not first
    modules.parse_source(path, "x = 1\n" * 10, "r.py")  # 60: more than the memo holds, not kept
    assert not modules.PARSE_MEMO.entries and modules.PARSE_MEMO.held == 0


def test_without_a_memo_every_parse_is_new(monkeypatch) -> None:
    monkeypatch.setattr(modules, "PARSE_MEMO", None)
    path = Path("r.py")
    assert modules.parse_source(path, "x = 1\n", "r.py") is not modules.parse_source(path, "x = 1\n", "r.py")
