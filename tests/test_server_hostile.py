"""The language server on hostile input: it reads only what ``check`` would (a document outside
the workspace folders is not checked, even through a symbolic link), a buffer past the size
limit is refused with a diagnostic, control characters do not shift lines, and a rule that
crashes is reported to the client without stopping the server."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from server_support import REPO, Documents, code_actions, codes, start

from mblint.extract.modules import MAX_SOURCE_BYTES

pytestmark = pytest.mark.asyncio


CRASHING = [sys.executable, str(REPO / "tests" / "server_patched_rule.py"), "crash", "--debounce", "0.05"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=CRASHING))
async def crashing(lsp_client: LanguageClient, root):
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


async def test_a_document_outside_the_workspace_is_not_checked(client: LanguageClient, root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    bad = (root / "recipes" / "sft.py").read_text().replace("from recipes.base import", "from base import")
    (outside / "bad.py").write_text(bad)
    (outside / "base.py").write_text((root / "recipes" / "base.py").read_text())
    (root / "recipes" / "link.py").symlink_to(outside / "bad.py")
    docs = Documents(client, root)
    far = docs.open((outside / "bad.py").as_uri(), bad)
    linked = docs.open("recipes/link.py", bad)
    inside = docs.open("recipes/sft.py")  # published after the others would have been
    assert codes(await docs.diagnostics(inside)) == [("PK001", 8)]
    await asyncio.sleep(0.3)
    assert far not in client.diagnostics and linked not in client.diagnostics
    logged = [m.message for m in client.log_messages]
    assert f"mblint: {far} is outside the workspace folders: not checked" in logged
    for uri in (far, linked):
        assert await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=7, character=10))) is None
        assert await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(
                start=types.Position(line=7, character=4), end=types.Position(line=7, character=10)),
            context=types.CodeActionContext(diagnostics=[]))) is None


async def test_a_uri_no_file_can_have_is_not_checked_and_breaks_nothing(client: LanguageClient, root):
    docs = Documents(client, root)
    nul = docs.uri("recipes/a") + "%00b.py"  # a NUL byte: os.path.realpath raises on it
    docs.open(nul, "x = 1\n")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=nul, type=types.FileChangeType.Changed)]))
    sft = docs.open("recipes/sft.py")  # handled after those
    assert codes(await docs.diagnostics(sft)) == [("PK001", 8)]
    assert f"mblint: {nul} is outside the workspace folders: not checked" in [m.message for m in client.log_messages]
    assert [m.message for m in client.messages] == []  # no "Error in server: ValueError: embedded null byte"


async def test_a_buffer_past_the_size_limit_is_refused_with_a_diagnostic(client: LanguageClient, root):
    docs = Documents(client, root)
    huge = "x = 1\n" + "#" * MAX_SOURCE_BYTES + "\n"
    uri = docs.open("recipes/huge.py", huge)
    [refused] = await docs.diagnostics(uri)  # SY002, as `mblint check` reports the file on disk
    assert (refused.code, refused.range.start.line, refused.severity) == ("SY002", 0, types.DiagnosticSeverity.Information)
    assert refused.message == (f"file size limit ({MAX_SOURCE_BYTES:,} bytes) exceeded: the text has "
                               f"{MAX_SOURCE_BYTES + 7:,} bytes and is not read")


async def test_an_unsaved_buffer_gets_the_size_limit_of_its_kind_as_check_gives_it(client: LanguageClient, root):
    # An override file is read up to 500,000 bytes (mblint.overrides.MAX_YAML_BYTES): a buffer
    # past it is not read, SY002, as `mblint check` reports the same file on disk.
    docs = Documents(client, root)
    text = (root / "conf" / "sft.yaml").read_text()
    padded = text + "# padding\n" * 60_000
    (root / "conf" / "big.yaml").write_text(padded)
    on_disk = subprocess.run([sys.executable, "-m", "mblint", "check", "conf/big.yaml", "--no-cache",
                              "--format", "concise"], cwd=root, capture_output=True, text=True).stdout
    assert on_disk.startswith("conf/big.yaml:1:1: SY002 [info] file size limit (500,000 bytes) exceeded")
    uri = docs.open("conf/sft.yaml", padded, language="yaml")
    [limit] = await docs.diagnostics(uri)
    assert (limit.code, limit.range.start.line) == ("SY002", 0)
    # 78 bytes of the file and 60,000 lines of 10
    assert limit.message == "file size limit (500,000 bytes) exceeded: the text has 600,078 bytes and is not read"


async def test_control_characters_do_not_shift_lines_or_reach_the_client(client: LanguageClient, root):
    # The client sends whole texts: pygls patches an incremental edit into lines split by
    # str.splitlines, which breaks at a form feed or U+2028 where the client does not.
    assert client.initialize_result.capabilities.text_document_sync.change == types.TextDocumentSyncKind.Full
    docs = Documents(client, root)
    text = (root / "recipes" / "sft.py").read_text()
    # A form feed, U+2028 and \x1c end no line for Python, the YAML reader or LSP (str.splitlines
    # would break at them); a NUL in a comment makes no file binary here (the buffer is text).
    hostile = "# a\x0cb \u2028 c\x1c d \x1b[31m\n" + text.replace("= 2", "= 2  # \x1b]0;title\x07")
    uri = docs.open("recipes/sft.py", hostile)
    [pk001] = await docs.diagnostics(uri)
    assert codes([pk001]) == [("PK001", 9)]
    assert pk001.range.start.character == 4
    # an edit after those characters (whole-document sync) lands where the client put it
    docs.change(uri, hostile.replace("\n\n\ndef", "\n\n\n\n\ndef"))
    assert codes(await docs.diagnostics(uri)) == [("PK001", 11)]


async def test_control_characters_of_the_file_reach_the_client_escaped(client: LanguageClient, root):
    docs = Documents(client, root)
    # a YAML double-quoted key may hold any character: \e and \a are ESC and BEL
    text = (root / "conf" / "sft.yaml").read_text() + '  "micro_batch_sise\\e]0;owned\\a": 1\n'
    uri = docs.open("conf/sft.yaml", text, language="yaml")
    [ot001] = [d for d in await docs.diagnostics(uri) if d.code == "OT001"]
    assert ot001.message.startswith("train.micro_batch_sise\\x1b]0;owned\\x07: TrainingConfig has no field")
    actions = await code_actions(client, uri, ot001)
    assert actions[0].title == ("Fix OT001: rename train.micro_batch_sise\\x1b]0;owned\\x07 to "
                                "train.micro_batch_size (unsafe fix)")


async def test_a_rule_that_crashes_is_reported_and_the_server_goes_on(crashing: LanguageClient, root):
    docs = Documents(crashing, root)
    uri = docs.open("recipes/graphs.py")
    [error] = await docs.diagnostics(uri)
    assert error.severity == types.DiagnosticSeverity.Error
    assert ("internal error in rule CG003 on recipes/graphs.py::graphs_config: ZeroDivisionError: a rule's bug"
            in error.message)
    shown = [m for m in crashing.messages if m.type == types.MessageType.Error]
    assert shown and "internal error in rule CG003" in shown[0].message
    sft = docs.open("recipes/sft.py")  # the server still checks, and the other rules still run
    assert codes(await docs.diagnostics(sft)) == [("PK001", 8)]


async def test_an_error_is_shown_once_while_it_lasts_and_again_after_its_document_was_closed(
        crashing: LanguageClient, root):
    """The errors shown are those of the open documents' last results: a re-check with the same
    error does not show it again; closing the document forgets it, and opening it again shows it."""
    docs = Documents(crashing, root)

    def shown() -> int:
        return sum("internal error in rule CG003" in m.message for m in crashing.messages
                   if m.type == types.MessageType.Error)

    uri = docs.open("recipes/graphs.py")
    await docs.diagnostics(uri)
    assert shown() == 1
    docs.change(uri, (root / "recipes" / "graphs.py").read_text() + "\n")
    await docs.diagnostics(uri)
    assert shown() == 1
    crashing.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert await docs.diagnostics(uri) == []  # the close clears its diagnostics
    docs.open("recipes/graphs.py")
    await docs.diagnostics(uri)
    assert shown() == 2


async def test_a_failure_after_the_lint_is_reported_and_the_queue_and_the_collector_go_on(monkeypatch):
    """A check that fails outside the lint thread (publishing, queueing re-checks) is reported;
    the documents queued after it are still checked, and the garbage collector, paused while
    checks are queued, still runs once the queue is empty."""
    import mblint.server as server_module

    server = server_module.build_server(lambda: None)
    checked, failures, collections = [], [], []

    async def check(loop, uri, due):
        checked.append(uri)
        if uri == "file:///ws/a.py":
            raise RuntimeError("publishing failed")

    monkeypatch.setattr(server, "check", check)
    monkeypatch.setattr(server, "report_failure", lambda what, error: failures.append(str(error)))
    monkeypatch.setattr(server_module, "collect_garbage", lambda: collections.append(len(checked)))
    server.edits = {"file:///ws/b.py": 0.0, "file:///ws/a.py": 1.0}  # the newest, a.py, first
    server.wake = asyncio.Event()
    server.wake.set()
    worker = asyncio.create_task(server.work())
    await asyncio.sleep(0.1)
    assert not worker.done()
    worker.cancel()
    assert checked == ["file:///ws/a.py", "file:///ws/b.py"]
    assert failures == ["publishing failed"] and collections == [2]
