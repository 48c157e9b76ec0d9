"""Drive ``mblint server`` over stdio as an editor would, record the session as Markdown and
measure how soon diagnostics follow an edit.

    python scripts/lsp_session.py FILE --root DIR [--server-arg=--search-path=...] \\
        [--edit LINE:OLD:NEW] [--hover LINE:COLUMN ...] [--edits 10] [--out session.md]

Opens FILE (in the workspace folder DIR), waits for its diagnostics, then makes ``--edits``
edits one after another (``--edit``'s replacement on LINE, and back), each as an unsaved change,
``--pause`` seconds after the previous one's diagnostics, and times each from the didChange to
the diagnostics of that version; the time beyond the debounce is the server's (its own log
gives the time from the end of the debounce to the publication). Then a burst of five changes
10 ms apart, the last one with the edit (only it may be published), hovers at each ``--hover``
place (1-based line and column), asks for the code actions of a fixable diagnostic (one the
edit brought, if any) and the edit of the first, saves, and shuts the server down. The
Markdown holds each request and what came back."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient


SERVER_TIMING = re.compile(r"published (\d+) ms after the debounce")


class Session:
    def __init__(self, out: list[str]) -> None:
        self.out = out
        self.client = LanguageClient("mblint-session", "1")
        self.published: list[tuple[float, types.PublishDiagnosticsParams]] = []
        self.messages: list[str] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.append((time.perf_counter(), params))

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def shown(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            self.messages.append(params.message)

    def say(self, text: str = "") -> None:
        self.out.append(text)

    async def diagnostics_of(self, uri: str, version: int, since: int, timeout: float = 60.0):
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for when, params in self.published[since:]:
                if params.uri == uri and params.version == version:
                    return when, params.diagnostics
            await asyncio.sleep(0.002)
        raise TimeoutError(f"no diagnostics for version {version} of {uri}")


def describe(diagnostic: types.Diagnostic) -> str:
    where = f"{diagnostic.range.start.line + 1}:{diagnostic.range.start.character + 1}"
    severity = diagnostic.severity.name.lower() if diagnostic.severity else "?"
    text = f"- {where} {diagnostic.code} [{severity}] {diagnostic.message}"
    for related in diagnostic.related_information or ():
        text += (f"\n  - related: {related.location.uri.rsplit('/', 1)[-1]}:{related.location.range.start.line + 1}: "
                 f"{related.message}")
    return text


async def run(args, out: list[str]) -> dict:
    session = Session(out)
    client = session.client
    root = Path(args.root).resolve()
    path = Path(args.file).resolve()
    uri = path.as_uri()
    command = [sys.executable, "-m", "mblint", "server", "--debounce", str(args.debounce), *args.server_arg]
    say = session.say
    say(f"Server: `{' '.join(command)}` (working folder {root})")
    say()
    await client.start_io(*command, cwd=str(root))
    started = time.perf_counter()
    result = await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri(), process_id=None,
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)]))
    client.initialized(types.InitializedParams())
    say(f"## initialize → {result.server_info.name} {result.server_info.version} "
        f"({time.perf_counter() - started:.2f} s)")
    say()
    text = path.read_text()
    version = 1
    since = len(session.published)
    sent = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    when, diagnostics = await session.diagnostics_of(uri, version, since)
    say(f"## textDocument/didOpen {path.relative_to(root)} (version 1, {len(text.splitlines())} lines) → "
        f"{len(diagnostics)} diagnostics in {when - sent:.2f} s (the first check loads the schema)")
    say()
    say("\n".join(describe(d) for d in diagnostics))
    say()
    await asyncio.sleep(args.pause)

    line, old, new = args.edit.split(":", 2)
    lines = text.splitlines(keepends=True)
    index = int(line) - 1
    assert old in lines[index], f"{old!r} is not on line {line}"
    edited = "".join(lines[:index] + [lines[index].replace(old, new, 1)] + lines[index + 1:])
    latencies = []
    introduced: set = set()
    say(f"## {args.edits} edits, one after another: line {line} `{old}` → `{new}` and back (unsaved)")
    say()
    for number in range(args.edits):
        version += 1
        body = edited if number % 2 == 0 else text
        since = len(session.published)
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=body)]))
        when, diagnostics = await session.diagnostics_of(uri, version, since)
        latencies.append(when - sent - args.debounce)
        await asyncio.sleep(args.pause)
        if number < 2:
            say(f"### didChange version {version} → {len(diagnostics)} diagnostics, "
                f"{(when - sent - args.debounce) * 1000:.0f} ms after the debounce")
            say()
            if number == 0:
                before = {(d.code, d.range.start.line) for d in session_first(session, uri)}
                new_ones = [d for d in diagnostics if (d.code, d.range.start.line) not in before]
                introduced = {(d.code, d.range.start.line) for d in new_ones}
                say("New diagnostics after the edit:" if new_ones else "No new diagnostics after the edit.")
                say("\n".join(describe(d) for d in new_ones))
                say()
    say(f"Time from didChange to diagnostics, less the {args.debounce * 1000:.0f} ms debounce, over "
        f"{len(latencies)} edits: median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms ({', '.join(f'{x * 1000:.0f}' for x in latencies)}).")
    await asyncio.sleep(0.1)
    reported = [int(m.group(1)) for m in map(SERVER_TIMING.search, session.messages) if m][-len(latencies):]
    say(f"The server's own log (window/logMessage), from the end of the debounce to the publication: "
        f"median {statistics.median(reported):.0f} ms, max {max(reported)} ms "
        f"({', '.join(str(x) for x in reported)}).")
    say()

    since = len(session.published)
    first_of_burst = version + 1
    for number in range(5):
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text if number % 2 else edited)]))
        await asyncio.sleep(0.01)
    await session.diagnostics_of(uri, version, since)
    await asyncio.sleep(args.debounce + 0.5)
    burst = [params.version for _, params in session.published[since:] if params.uri == uri]
    say(f"## A burst of 5 didChange 10 ms apart (versions {first_of_burst}-{version}, the last one with the "
        f"edit) → diagnostics published for versions {burst} (superseded edits are not checked)")
    say()

    for place in args.hover:
        hover_line, column = (int(part) for part in place.split(":"))
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=hover_line - 1, character=column - 1)))
        say(f"## textDocument/hover {hover_line}:{column} `{edited.splitlines()[hover_line - 1].strip()}`")
        say()
        say(hover.contents.value if hover else "(no hover)")
        say()

    diagnostics = session_last(session, uri)
    fixable = [d for d in diagnostics if isinstance(d.data, dict) and d.data.get("fixable")]
    fixable.sort(key=lambda d: (d.code, d.range.start.line) not in introduced)  # the edit's own first
    if fixable:
        target = fixable[0]
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=target.range,
            context=types.CodeActionContext(diagnostics=[target])))
        say(f"## textDocument/codeAction at {target.range.start.line + 1}:{target.range.start.character + 1} "
            f"({target.code})")
        say()
        say("\n".join(f"- {action.title} ({action.kind})" for action in actions or ()))
        say()
        if actions:
            resolved = await client.code_action_resolve_async(actions[0])
            edits = (resolved.edit.changes or {}).get(uri, []) if resolved.edit else []
            say(f"### codeAction/resolve `{actions[0].title}` →")
            say()
            say("\n".join(f"- replace lines {e.range.start.line + 1}-{e.range.end.line} with "
                          f"`{json.dumps(e.new_text)}`" for e in edits) or "no edit: " + "; ".join(session.messages[-1:]))
            say()
    since = len(session.published)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    _, diagnostics = await session.diagnostics_of(uri, version, since)
    say(f"## textDocument/didSave → {len(diagnostics)} diagnostics")
    say()
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    say("## shutdown, exit")
    return {"latencies_ms": [round(x * 1000, 1) for x in latencies], "server_ms": reported, "burst_published": burst}


def session_first(session: Session, uri: str):
    return next(params.diagnostics for _, params in session.published if params.uri == uri)


def session_last(session: Session, uri: str):
    return [params.diagnostics for _, params in session.published if params.uri == uri][-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--root", default=".")
    parser.add_argument("--server-arg", action="append", default=[], help="an option of mblint server (repeat)")
    parser.add_argument("--debounce", type=float, default=0.25)
    parser.add_argument("--edit", required=True, help="LINE:OLD:NEW, a replacement on LINE (1-based)")
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.0,
                        help="seconds between an edit's diagnostics and the next edit (a user reading them)")
    parser.add_argument("--hover", action="append", default=[], help="LINE:COLUMN (1-based)")
    parser.add_argument("--out", default=None, help="write the Markdown here (default: stdout)")
    args = parser.parse_args()
    out: list[str] = []
    numbers = asyncio.run(run(args, out))
    text = "\n".join(out) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    print(json.dumps(numbers), file=sys.stderr)


if __name__ == "__main__":
    main()
