"""The parse memo of a long-lived process (mblint server): a text parsed before is not parsed
again; another text of the same file is, and replaces it; the least recently used files go."""

import gc
from pathlib import Path

from server_support import workspace_copy

from mblint.engine import CheckOptions, Engine
from mblint.extract import modules
from mblint.resolve import forget_configurations
from mblint.server.lint import lint_document


def test_the_same_text_is_parsed_once_and_another_text_again(monkeypatch) -> None:
    monkeypatch.setattr(modules, "PARSE_MEMO", modules.ParseMemo(size=2))
    path = Path("r.py")
    first = modules.parse_source(path, "x = 1\n", "r.py")
    assert modules.parse_source(path, "x = 1\n", "r.py") is first
    edited = modules.parse_source(path, "x = 2\n", "r.py")
    assert edited is not first and edited.tree.body[0].value.value == 2
    assert modules.parse_source(path, "x = 2\n", "r.py") is edited
    assert modules.parse_source(path, "x = 1\n", "other/r.py") is not first  # shown by another name
    assert modules.parse_source(path, "x = 1\n", "r.py") is not first  # one text of a file is kept


def test_one_text_is_kept_per_file_and_the_files_kept_are_bounded(monkeypatch) -> None:
    monkeypatch.setattr(modules, "PARSE_MEMO", modules.ParseMemo(size=2, chars=30))
    memo = modules.PARSE_MEMO
    texts = [f"x = {n}\n" + "#" * 10 + "\n" for n in range(5)]  # 17 characters each
    for text in texts:  # the edits of one document
        modules.parse_source(Path("r.py"), text, "r.py")
    assert [text for text, _ in memo.entries.values()] == texts[-1:] and memo.held == 17
    modules.parse_source(Path("s.py"), "y = 1\n", "s.py")
    modules.parse_source(Path("t.py"), "z = 1\n", "t.py")  # three files: the least recently used goes
    assert list(memo.entries) == [(Path("s.py"), "s.py"), (Path("t.py"), "t.py")] and memo.held == 12
    modules.parse_source(Path("r.py"), texts[0], "r.py")  # a third file: the least recently used goes
    assert list(memo.entries) == [(Path("t.py"), "t.py"), (Path("r.py"), "r.py")] and memo.held == 23
    modules.parse_source(Path("v.py"), texts[1], "v.py")  # 17 + 17 is over 30: only the newest stays
    assert list(memo.entries) == [(Path("v.py"), "v.py")] and memo.held == 17
    modules.parse_source(Path("u.py"), "x = 1\n" * 10, "u.py")  # 60: more than the memo holds, not kept
    assert not memo.entries and memo.held == 0


def test_without_a_memo_every_parse_is_new(monkeypatch) -> None:
    monkeypatch.setattr(modules, "PARSE_MEMO", None)
    path = Path("r.py")
    assert modules.parse_source(path, "x = 1\n", "r.py") is not modules.parse_source(path, "x = 1\n", "r.py")


def test_a_server_keeps_one_parse_of_an_edited_document(tmp_path, monkeypatch) -> None:
    """Each edit of a document is a new text, parsed and interpreted: once its check is done,
    the memo and the configurations of earlier checks keep none of the earlier parses alive (the
    language server collects garbage between checks: what stays alive, it scans every time)."""
    root = workspace_copy(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.setattr(modules, "PARSE_MEMO", modules.ParseMemo())
    path = root / "recipes" / "sft.py"
    text = path.read_text().replace("    return cfg", "    cfg.train.micro_batch_sise = 2\n    return cfg")
    for lines in range(4):
        result = lint_document(lambda: Engine(CheckOptions(use_cache=False, jobs=1)), path,
                               text + "\n" * lines, lines, {})
        assert sorted(f.rule_id for f in result.findings) == ["OT001", "PK001"]  # OT001 reads every table
    forget_configurations()
    gc.collect()
    parses = [o for o in gc.get_objects() if isinstance(o, modules.ModuleSource) and o.path == path]
    assert len(parses) == 1
