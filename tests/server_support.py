"""A real LSP client (pytest-lsp) driving ``mblint server`` over stdio, on a copy of
fixtures/server (a project with a shared base builder, recipes and an override file)."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "server"
SERVER = [sys.executable, "-m", "mblint", "server", "--debounce", "0.05"]
TIMEOUT = 30.0  # seconds: a lint of these files takes well under one; the machine may be busy


def workspace_copy(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(FIXTURE, root)
    return root


async def start(client: LanguageClient, root: Path, capabilities: str = "visual-studio-code") -> None:
    client.registrations = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:  # what an editor does: remember it
        client.registrations.extend(params.registrations)

    client.initialize_result = await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(capabilities), root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")]))


class Documents:
    """Open, change and save documents, and wait for the diagnostics the server publishes."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.versions: dict[str, int] = {}

    def uri(self, relative: str) -> str:
        return (self.root / relative).as_uri()

    def open(self, relative: str, text: str | None = None, language: str = "python") -> str:
        uri = self.uri(relative) if not relative.startswith("file:") else relative
        if text is None:
            text = (self.root / relative).read_text()
        self.versions[uri] = 1
        self.client.diagnostics.pop(uri, None)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))
        return uri

    def change(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.client.diagnostics.pop(uri, None)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def save(self, uri: str) -> None:
        self.client.diagnostics.pop(uri, None)
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    async def diagnostics(self, uri: str, timeout: float = TIMEOUT) -> list[types.Diagnostic]:
        """The next diagnostics published for ``uri`` (since it was last opened, changed or saved)."""
        deadline = time.monotonic() + timeout
        while uri not in self.client.diagnostics:
            if time.monotonic() > deadline:
                raise AssertionError(f"no diagnostics for {uri} within {timeout} s")
            await asyncio.sleep(0.02)
        return list(self.client.diagnostics.pop(uri))


def codes(diagnostics) -> list[tuple]:
    """(code, 1-based line) of each diagnostic, in order."""
    return [(d.code, d.range.start.line + 1) for d in diagnostics]


def apply_edits(text: str, edits) -> str:
    """``text`` with LSP text edits applied (positions in UTF-16 units, as the client counts)."""
    lines = text.splitlines(keepends=True)

    def offset(position) -> int:
        before = sum(len(line) for line in lines[:position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units = line.encode("utf-16-le")[: position.character * 2].decode("utf-16-le")
        return before + len(units)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


async def code_actions(client: LanguageClient, uri: str, diagnostic, only=None):
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=only)))
