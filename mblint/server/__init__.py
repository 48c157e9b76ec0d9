"""``mblint server``: the Language Server Protocol over stdio (pygls).

Each open document is checked as ``mblint check - --stdin-filename PATH`` checks an editor's
unsaved text (``mblint.server.lint``), on open, on change (debounced) and on save; a change to
a file that another open document's result read (a shared base builder) checks that document
again. One lint runs at a time, in a thread of its own, so the server keeps reading messages.
No work waits behind a newer edit: the documents whose own text is due are checked first, the
newest first, before the re-checks of the documents that read a changed one; a newer edit
replaces the pending lint of its document and drops the re-checks its older text caused (its
own check queues those again, for the readers of a text other than its new one); the result
of a lint whose document changed meanwhile is dropped, never published.

What may be read is what ``check`` reads from the workspace folder: a document outside the
workspace folders is not checked (a go-to-definition into an installed Megatron-Bridge opens
one), and every file the engine reads goes through ``mblint.paths``' confinement."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from mblint import __version__
from mblint.server.actions import FIX_ALL, compute_fix, fix_title, ignore_edit, text_edits
from mblint.extract.modules import source_lines
from mblint.server.convert import Places, diagnostic, error_diagnostic
from mblint.server.hover import hits_at, render
from mblint.server.lint import DocumentLint, lint_document

DEFAULT_DEBOUNCE = 0.25  # seconds after the last edit before the buffer is checked
WATCHED = ("**/*.py", "**/*.{yaml,yml}", "**/*.sh", "**/{mblint.toml,pyproject.toml}")


class MblintServer(LanguageServer):
    def __init__(self, make_engine: Callable, debounce: float = DEFAULT_DEBOUNCE) -> None:
        # Full document sync: pygls splits the text it patches with str.splitlines, which also
        # breaks at a form feed or U+2028; the client does not, and an incremental edit after
        # such a character would land on the wrong line. The client sends the whole text.
        super().__init__("mblint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.make_engine = make_engine
        self.debounce = debounce
        self.roots: list[str] = []  # the workspace folders (real paths): documents elsewhere are not checked
        self.results: dict[str, DocumentLint] = {}
        self.timers: dict[str, asyncio.TimerHandle] = {}
        # The lint thread's work: documents whose own text is due (-> when their debounce ended),
        # served newest first, then open documents to check again because a file they read
        # changed (-> the documents' URIs or the paths on disk that changed), oldest first.
        self.edits: dict[str, float] = {}
        self.rechecks: dict[str, set[str]] = {}
        self.wake: asyncio.Event | None = None
        self.worker: asyncio.Task | None = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mblint-lint")
        self.shown_errors: dict[str, set[str]] = {}  # the errors shown for each open document's last result

    # ----- which documents ------------------------------------------------------------------

    def path_of(self, uri: str) -> Path | None:
        """The file of ``uri`` when it is a file in a workspace folder (its real path too)."""
        path = _local_path(uri)
        if path is None:
            return None
        full, real = os.path.normpath(path), os.path.realpath(path)
        if any(_inside(full, root) and _inside(real, root) for root in self.roots):
            return Path(full)
        return None

    def open_texts(self) -> dict[Path, str]:
        texts = {}
        for uri, document in self.workspace.text_documents.items():
            path = self.path_of(uri)
            if path is not None:
                texts[path] = document.source
        return texts

    # ----- scheduling -----------------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        """Check ``uri`` ``delay`` seconds from now, replacing what was pending for it."""
        self.unschedule(uri)
        loop = asyncio.get_running_loop()
        self.timers[uri] = loop.call_later(delay, self.enqueue, uri)
        if self.worker is None:
            self.wake = asyncio.Event()
            self.worker = loop.create_task(self.work())

    def unschedule(self, uri: str) -> None:
        timer = self.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self.edits.pop(uri, None)
        self.rechecks.pop(uri, None)

    def enqueue(self, uri: str) -> None:
        self.timers.pop(uri, None)
        self.rechecks.pop(uri, None)  # its own check reads every open text as it is now
        self.edits[uri] = time.perf_counter()
        self.wake.set()

    def drop_rechecks_caused_by(self, uri: str) -> None:
        """A newer text of ``uri`` outdates the re-checks its older text caused; its own check
        queues them again for the documents that read a text other than its new one."""
        for other, causes in list(self.rechecks.items()):
            causes.discard(uri)
            if not causes:
                del self.rechecks[other]

    def pending(self, uri: str) -> bool:
        return uri in self.timers or uri in self.edits or uri in self.rechecks

    def superseded(self, uri: str, version) -> bool:
        document = self.workspace.text_documents.get(uri)
        return document is None or document.version != version or self.pending(uri)

    def next_check(self) -> tuple[str, float | None]:
        if self.edits:
            uri = next(reversed(self.edits))
            return uri, self.edits.pop(uri)
        uri = next(iter(self.rechecks))
        del self.rechecks[uri]
        return uri, None

    async def work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.edits or self.rechecks:
                uri, due = self.next_check()
                try:
                    await self.check(loop, uri, due)
                except Exception as error:  # noqa: BLE001 - reported; the other documents are still checked
                    self.report_failure(f"mblint failed while publishing the check of {uri}", error)
            collect_garbage()

    async def check(self, loop, uri: str, due: float | None) -> None:
        document = self.workspace.text_documents.get(uri)
        path = self.path_of(uri)
        if document is None or path is None:
            return
        version, text = document.version, document.source
        texts = self.open_texts()
        started = time.perf_counter()
        try:
            result = await loop.run_in_executor(self.executor, lint_document, self.make_engine, path, text, version,
                                                texts)
        except Exception as error:  # noqa: BLE001 - a failure of mblint is reported, and the server goes on
            self.report_failure(f"mblint failed while checking {path}", error)
            return
        result.read = {os.path.realpath(other): hash(other_text) for other, other_text in texts.items()}
        for closed in self.closed_since(result):
            self.queue_recheck(uri, closed)
        if self.superseded(uri, version):
            return  # a newer text is pending, or a text it read was thrown away: the next lint publishes
        checked = time.perf_counter()
        self.publish_result(uri, result, document.position_codec)
        published = time.perf_counter()
        self.log(f"mblint: checked {result.display} (version {version}) in {(checked - started) * 1000:.0f} ms, "
                 f"published {(published - (due or started)) * 1000:.0f} ms after the debounce")
        previous = self.results.get(uri)
        self.results[uri] = result
        self.recheck_readers_of_document(uri, path, previous)

    def recheck_readers_of_document(self, uri: str, path: Path, previous: DocumentLint | None) -> None:
        """The other open documents whose last result read ``path`` (a base builder they import)
        in a text other than the one just checked."""
        real, text = os.path.realpath(path), self.results[uri].text
        for other, result in self.results.items():
            if other == uri or real not in result.dependencies:
                continue
            read = result.read.get(real)
            if read is None:  # read on disk: whether it changed is whether this document did
                changed = previous is not None and previous.text != text
            else:
                changed = read != hash(text)
            if changed:
                self.queue_recheck(other, uri)

    def closed_since(self, result: DocumentLint) -> set[str]:
        """The documents whose open text ``result`` read and that were closed since: the file on
        disk stands for them now (``did_close`` re-checks the readers of the last results only)."""
        open_now = {os.path.realpath(path) for path in self.open_texts()}
        return (result.read.keys() & result.dependencies) - open_now

    def recheck_readers_of(self, changed: set[str]) -> None:
        """Check again the open documents whose last result read one of the ``changed`` files."""
        for other, result in self.results.items():
            for path in changed & result.dependencies:
                self.queue_recheck(other, path)

    def recheck_readers_of_text(self, real: str) -> None:
        """Check again the open documents whose last result read the text of the document at
        ``real`` that was just closed: the file on disk stands for it now."""
        for other, result in self.results.items():
            if real in result.read and real in result.dependencies:
                self.queue_recheck(other, real)

    def queue_recheck(self, uri: str, cause: str) -> None:
        if uri in self.timers or uri in self.edits:
            return  # its own check comes
        self.rechecks.setdefault(uri, set()).add(cause)
        if self.wake is not None:
            self.wake.set()

    def jobs_reaching(self, result: DocumentLint) -> list:
        """The jobs of the document's last check, then those of the other open documents' (an
        override file's job reaches its recipe's lines, a recipe its base builder's)."""
        from mblint.server.hover import job_name

        jobs = {job_name(job): job for job in result.jobs}
        for uri, other in self.results.items():
            if other is not result and self.current_result(uri) is not None:
                for job in other.jobs:
                    jobs.setdefault(job_name(job), job)
        return list(jobs.values())

    # ----- code actions ---------------------------------------------------------------------

    def current_result(self, uri: str):
        """(document, result) when the last result is of the document's current text."""
        document = self.workspace.text_documents.get(uri)
        result = self.results.get(uri)
        if document is None or result is None or self.path_of(uri) is None or document.version != result.version:
            return None
        return document, result

    def resolves_edits(self) -> bool:
        """Whether the client asks for a code action's edit when it is chosen (codeAction/resolve)."""
        try:
            support = self.client_capabilities.text_document.code_action.resolve_support
        except AttributeError:
            return False
        return support is not None and "edit" in support.properties

    async def resolve_action(self, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else None
        if action.edit is not None or data is None:
            return action
        uri = data.get("uri")
        current = self.current_result(uri) if isinstance(uri, str) else None
        if current is None or current[1].version != data.get("version"):
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Warning, message="mblint: the document changed; ask for the fix again"))
            return action
        document, result = current
        identity = tuple(data["identity"]) if data.get("identity") is not None else None
        loop = asyncio.get_running_loop()
        try:
            outcome = await loop.run_in_executor(self.executor, compute_fix, self.make_engine, result.path,
                                                 result.text, identity, bool(data.get("unsafe")))
        except Exception as error:  # noqa: BLE001 - reported; the server goes on
            self.report_failure(f"mblint failed while fixing {result.path}", error)
            return action
        if outcome.text is None:
            from mblint.report import printable

            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Warning, message=printable(f"mblint: not fixed: {outcome.reason}")))
            return action
        action.edit = types.WorkspaceEdit(changes={uri: text_edits(result.text, outcome.text)})
        return action

    # ----- publishing -----------------------------------------------------------------------

    def publish_result(self, uri: str, result: DocumentLint, codec) -> None:
        places = Places(result.text, codec, Path.cwd())
        diagnostics = [diagnostic(f, places, result.display, result.help_uris.get(f.rule_id))
                       for f in result.findings]
        errors = set()
        for error in result.errors:
            if error.path != result.display:
                error = type(error)(error.path, error.message)  # not a place in this document
            diagnostics.append(error_diagnostic(error, places))
            errors.add(str(error))
        self.show_new_errors(uri, errors)
        self.publish(uri, result.version, diagnostics)

    def publish(self, uri: str, version, diagnostics: list) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics))

    def show_new_errors(self, uri: str, messages: set[str]) -> None:
        """Show the errors of ``uri``'s result that no open document's last result had."""
        from mblint.report import printable

        shown = set().union(*self.shown_errors.values())
        for message in sorted(messages - shown):
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                             message=printable(f"mblint: error: {message}")))
        if messages:
            self.shown_errors[uri] = messages
        else:
            self.shown_errors.pop(uri, None)

    def report_failure(self, what: str, error: BaseException) -> None:
        from mblint.report import printable

        self.window_log_message(types.LogMessageParams(
            type=types.MessageType.Error, message=printable(f"{what}:\n{traceback.format_exc()}")))
        self.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Error, message=printable(f"{what}: {type(error).__name__}: {error}")))

    def log(self, message: str) -> None:
        from mblint.report import printable

        self.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=printable(message)))


def _local_path(uri: str) -> str | None:
    """The absolute path of a ``file:`` URI on this machine; None for any other URI, and for
    one no file can have (a NUL byte, a malformed host)."""
    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    path = unquote(parsed.path)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost") or "\x00" in path:
        return None
    return path if os.path.isabs(path) else None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def build_server(make_engine: Callable, debounce: float = DEFAULT_DEBOUNCE) -> MblintServer:
    server = MblintServer(make_engine, debounce)

    @server.feature(types.INITIALIZE)
    def initialize(ls: MblintServer, params: types.InitializeParams) -> None:
        folders = [folder.uri for folder in params.workspace_folders or ()]
        if not folders and params.root_uri:
            folders = [params.root_uri]
        roots = []
        for uri in folders:
            parsed = urlparse(uri)
            if parsed.scheme == "file" and os.path.isdir(unquote(parsed.path)):
                roots.append(os.path.realpath(unquote(parsed.path)))
        ls.roots = roots or [os.path.realpath(os.getcwd())]
        # As `mblint check` run from the workspace folder: paths shown relative to it, its project.
        os.chdir(ls.roots[0])

    @server.feature(types.INITIALIZED)
    async def initialized(ls: MblintServer, params: types.InitializedParams) -> None:
        """Ask the client to report changes on disk to the files a check may read (a base builder
        changed by `git checkout` or another editor, a settings file), when it can be asked."""
        try:
            dynamic = ls.client_capabilities.workspace.did_change_watched_files.dynamic_registration
        except AttributeError:
            dynamic = False
        if not dynamic:
            return
        watchers = [types.FileSystemWatcher(glob_pattern=pattern) for pattern in WATCHED]
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="mblint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
        except Exception as error:  # noqa: BLE001 - without it, only edits in the editor re-check
            ls.log(f"mblint: the client did not register file watching: {error}")

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files_changed(ls: MblintServer, params: types.DidChangeWatchedFilesParams) -> None:
        changed = set()
        for change in params.changes:
            path = _local_path(change.uri)
            if path is not None:
                changed.add(os.path.realpath(path))
        ls.recheck_readers_of(changed)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: MblintServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.path_of(uri) is None:
            ls.log(f"mblint: {uri} is outside the workspace folders: not checked")
            return
        ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: MblintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.path_of(uri) is not None:
            ls.schedule(uri, ls.debounce)
            ls.drop_rechecks_caused_by(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: MblintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.path_of(uri) is not None:
            ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: MblintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.unschedule(uri)
        ls.results.pop(uri, None)
        ls.shown_errors.pop(uri, None)
        ls.publish(uri, None, [])
        path = ls.path_of(uri)
        if path is not None:
            ls.recheck_readers_of_text(os.path.realpath(path))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True))
    async def code_action(ls: MblintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        current = ls.current_result(uri)
        if current is None:
            return None
        document, result = current
        actions = []
        for diag in params.context.diagnostics:
            finding = result.finding_for(diag)
            if finding is None:
                continue
            if finding.applicable_fixes:
                safe = all(intent.safe for intent in finding.applicable_fixes)
                actions.append(types.CodeAction(
                    title=fix_title(finding), kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                    is_preferred=safe or None,
                    data={"uri": uri, "version": result.version, "identity": list(finding.identity()),
                          "unsafe": not safe}))
            edit = ignore_edit(result.text, finding.location.line, finding.rule_id, document.position_codec)
            if edit is not None:
                actions.append(types.CodeAction(
                    title=f"Ignore {finding.rule_id} on this line", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag], edit=types.WorkspaceEdit(changes={uri: [edit]})))
        only = params.context.only
        wants_fix_all = not only or any(FIX_ALL.startswith(kind) for kind in only)
        if wants_fix_all and any(f.applicable_fixes and all(i.safe for i in f.applicable_fixes)
                                 for f in result.findings):
            actions.append(types.CodeAction(title="mblint: fix all safely fixable findings", kind=FIX_ALL,
                                            data={"uri": uri, "version": result.version, "identity": None,
                                                  "unsafe": False}))
        if not ls.resolves_edits():
            actions = [await ls.resolve_action(action) for action in actions]
        return actions or None

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: MblintServer, action: types.CodeAction) -> types.CodeAction:
        return await ls.resolve_action(action)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: MblintServer, params: types.HoverParams) -> types.Hover | None:
        current = ls.current_result(params.text_document.uri)
        if current is None:
            return None
        document, result = current
        lines = [line + "\n" for line in source_lines(result.text)] or [""]
        position = document.position_codec.position_from_client_units(lines, params.position)
        hits = hits_at(ls.jobs_reaching(result), result.display, position.line + 1, position.character + 1)
        if not hits:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=render(hits)))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: MblintServer, params) -> None:
        for timer in ls.timers.values():
            timer.cancel()
        ls.timers.clear()
        ls.edits.clear()
        ls.rechecks.clear()
        ls.executor.shutdown(wait=False, cancel_futures=True)

    return server


def collect_garbage() -> None:
    """The cyclic garbage collector, run when no check is queued. It is paused otherwise: a
    lint leaves thousands of objects in cycles (interpreter frames), and a collection set off by
    the next allocations would run between an edit's debounce and its diagnostics. What the
    first check left (the schema, the rules, the imported modules' syntax trees: most of the
    heap) is frozen: never scanned again, so a collection costs what later checks left."""
    from mblint.resolve import forget_configurations

    forget_configurations()
    gc.collect()
    if not gc.get_freeze_count():
        gc.freeze()


def serve(make_engine: Callable, debounce: float = DEFAULT_DEBOUNCE) -> None:
    gc.disable()  # as the mblint command pauses it for a run (mblint.cli.run); collect_garbage runs it
    logging.basicConfig(level=logging.WARNING)
    from mblint.extract import modules

    modules.PARSE_MEMO = modules.ParseMemo()  # the modules a document imports are parsed once, not per edit
    build_server(make_engine, debounce).start_io()
