"""The language server proper (pygls): documents, checks, diagnostics, quick fixes, hover.

One :class:`cute_bind.static.incremental.Document` per open file holds its
parsed blocks and their verdicts, so a change re-checks only what changed.
Checks are throttled: the first change after a quiet period is checked at
once (on the next turn of the event loop), and changes that arrive within
``debounce_ms`` of the last check are checked together when that time is up,
on the latest text. Diagnostics carry the document version they were
computed for.

Positions: the static tools count columns in UTF-8 bytes (as :mod:`ast`);
they are converted to the client's units (UTF-16 unless the client chose
otherwise) on the way out and back on the way in.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.workspace import PositionCodec

from ..settings import DOCS_URL
from ..static.config import ConfigError, Resolver, Settings
from ..static.describe import describe_kernel, describe_parameter
from ..static.fixes import Fix
from ..static.incremental import Document, Finding
from ..static.rules import DECORATOR_CODES, REPORTED_CODES, module_name_for_path, refresh_modules
from ..static.source import split_lines
from . import pages
from .server_core import MARKER as _MARKER
from .server_core import SOURCE, doc_url, findings
from .server_core import file_path as _path
from .server_core import version as _version

__all__ = ["CuteBindServer", "SOURCE", "serve", "doc_url"]


@dataclass
class _Open:
    """One open document: its text (kept here, split into lines by LSP's rules) and its checks."""

    document: Document
    settings: Settings
    path: str | None
    text: str = ""
    version: int | None = None
    handle: asyncio.Handle | None = None
    last_check: float = -1e9
    lines: list[str] = field(default_factory=list)
    published: list[tuple[types.Diagnostic, Finding]] = field(default_factory=list)
    checked_version: int | None = None  # the version the published diagnostics and fixes are for


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, dropping its records of finished notification handlers after every
    notification of any kind (see :meth:`CuteBindServer.forget_finished_handlers`)."""

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[tuple[Callable[..., object], tuple[object, ...], None], object, None]:
        """pygls's own handler, with the changes applied by LSP's line rules (:func:`apply_change`):
        pygls splits the text with ``str.splitlines`` (a form feed, NEL, U+2028... would end a
        line) and clamps the change's range in place to those lines."""
        uri = params.text_document.uri
        if uri in self.workspace.text_documents:
            text = self.workspace.get_text_document(uri).source
            for change in params.content_changes:
                text = apply_change(text, change, self.workspace.position_codec)
            self.workspace.update_text_document(params.text_document, types.TextDocumentContentChangeWholeDocument(text=text))
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    def _handle_notification(self, method_name: str, params: object) -> None:
        try:
            super()._handle_notification(method_name, params)
        finally:
            server = self._server
            if isinstance(server, CuteBindServer):
                server.forget_finished_handlers()


class CuteBindServer(LanguageServer):
    """The cute_bind language server (``cute-bind lsp``)."""

    #: pygls's records of finished notification handlers are dropped past this many
    RECORDS_KEPT = 64

    def __init__(self, debounce_ms: int = 150, docs_url: str | None = None) -> None:
        super().__init__("cute-bind", _version(), text_document_sync_kind=types.TextDocumentSyncKind.Incremental, protocol_cls=_Protocol)
        self.debounce = max(0, debounce_ms) / 1000.0
        self.docs_url = docs_url if docs_url is not None else DOCS_URL.text() or None
        self.open: dict[str, _Open] = {}
        self.resolver = Resolver()
        self._urls: dict[str, str | None] = {}
        self._said_no_pages = False
        self.checks = 0  # checks run (the benchmark reads it through the custom request)

    # ------------------------------------------------------------------ settings
    def settings_for(self, path: str | None) -> Settings:
        try:
            return self.resolver.for_file(path)
        except ConfigError as exc:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"cute-bind: {exc}"))
            return Settings()

    def reload_settings(self) -> None:
        """Forget the settings read so far (a pyproject.toml changed) and check every open file again."""
        self.resolver.clear()
        for uri, state in self.open.items():
            state.settings = self.settings_for(state.path)
            self.check(uri)

    def saved(self, uri: str) -> None:
        """A file was saved (or changed on disk): settings where it is a ``pyproject.toml``; and
        every open file is checked again where a module their structures come from changed."""
        if uri.endswith("/pyproject.toml"):
            self.reload_settings()
        elif refresh_modules():
            for other in list(self.open):
                self.check(other)

    def url(self, code: str) -> str | None:
        if code in self._urls:
            return self._urls[code]
        found = self._urls[code] = doc_url(code, self.docs_url)
        if found is None and not self._said_no_pages:
            self._said_no_pages = True
            _, why = pages.private_folder(*pages.pages_folder(_version()))
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"cute-bind: diagnostics carry no page link: {why or 'the page could not be written'} "
                    "(python -m cute_bind explain CODE prints a code's page; --docs-url links to a documentation site)",
                )
            )
        return found

    # ------------------------------------------------------------------ documents
    def opened(self, uri: str, version: int | None, text: str | None = None) -> None:
        path = _path(uri)
        module = module_name_for_path(path) if path else None
        if text is None:
            text = self.workspace.get_text_document(uri).source
        self.open[uri] = _Open(Document(module), self.settings_for(path), path, text, version)
        self.check(uri)

    def forget_finished_handlers(self) -> None:
        """Drop pygls's record of notification handlers that have finished.

        pygls 2.1 runs its built-in notification handlers (didOpen, didChange, didSave,
        didClose...) as generators and files each step's future in ``_request_futures`` under a
        fresh id that nothing removes for a notification (requests remove theirs when answered):
        about 2 KB a message, 20 MB over 10,000 edits (benchmarks/lsp_latency.py measured it).
        A finished future there is never looked up again, so dropping it is safe. Called after
        every notification, whatever its kind (:class:`_Protocol`).
        """
        futures = getattr(self.protocol, "_request_futures", None)
        if isinstance(futures, dict) and len(futures) > self.RECORDS_KEPT:
            for key in [k for k, f in futures.items() if f.done()]:
                del futures[key]

    def changed(self, uri: str, version: int | None) -> None:
        state = self.open.get(uri)
        if state is None:
            return
        state.text = self.workspace.get_text_document(uri).source  # changed by _Protocol's rules
        state.version = version
        if state.handle is not None:
            return  # a check is due; it reads the text as it is then
        loop = asyncio.get_running_loop()
        delay = max(0.0, state.last_check + self.debounce - loop.time())
        state.handle = loop.call_later(delay, self.check, uri)

    def closed(self, uri: str) -> None:
        state = self.open.pop(uri, None)
        if state is not None and state.handle is not None:
            state.handle.cancel()
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def current(self, uri: str) -> _Open | None:
        """The document's state, checked on its current text: a check still waiting for the
        debounce time runs now, so a response is computed on the version the client has."""
        state = self.open.get(uri)
        if state is not None and (state.handle is not None or state.checked_version != state.version):
            if state.handle is not None:
                state.handle.cancel()
            self.check(uri)
        return state

    # ------------------------------------------------------------------ checking
    def check(self, uri: str) -> None:
        """Check the document's current text and publish its diagnostics."""
        state = self.open.get(uri)
        if state is None:
            return
        state.handle = None
        try:
            loop = asyncio.get_running_loop()
            state.last_check = loop.time()
        except RuntimeError:  # called outside the loop (tests of the class alone)
            pass
        text = state.text
        self.checks += 1
        state.checked_version = state.version
        published: list[tuple[types.Diagnostic, Finding]] = []
        state.lines = split_lines(text)
        if _MARKER in text and not (state.path and state.settings.excludes(state.path)):
            for finding in self._findings(state, text):
                if finding.diagnostic.code in state.settings.ignore:
                    continue
                published.append((self._diagnostic(state, finding), finding))
        state.published = published
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[d for d, _ in published], version=state.version)
        )

    def _findings(self, state: _Open, text: str) -> list[Finding]:
        """The findings of ``text``, or one CB126 for the file where it is too large or too deep to analyse
        (the document then starts afresh: the old version's blocks go)."""
        state.document, found = findings(state.document, state.path, text)
        return found

    # ------------------------------------------------------------------ positions
    def _codec(self) -> PositionCodec:
        return self.workspace.position_codec

    def _position(self, lines: Sequence[str], line: int, column: int) -> types.Position:
        """(1-based line, UTF-8 byte column) -> the client's position."""
        index = line - 1
        if index >= len(lines):
            return types.Position(line=index, character=0)
        text = lines[index]
        if text.isascii():
            char = column
        else:
            char = len(text.encode("utf-8", "surrogatepass")[:column].decode("utf-8", errors="ignore"))
        return self._codec().position_to_client_units(lines, types.Position(line=index, character=char))

    def _byte_column(self, lines: Sequence[str], position: types.Position) -> int:
        server = self._codec().position_from_client_units(lines, position)
        if server.line >= len(lines):
            return 0
        return len(lines[server.line][: server.character].encode("utf-8", "surrogatepass"))

    def _range(self, lines: Sequence[str], line: int, col: int, end_line: int, end_col: int) -> types.Range:
        return types.Range(start=self._position(lines, line, col), end=self._position(lines, end_line, end_col))

    def _diagnostic(self, state: _Open, finding: Finding) -> types.Diagnostic:
        d = finding.diagnostic
        message = d.text
        if state.settings.show_fix:
            message += "\nfix: " + " ".join(d.fix.split())
        href = self.url(d.code)
        return types.Diagnostic(
            range=self._range(state.lines, d.line, d.column, d.end_line, d.end_column),
            message=message,
            severity=types.DiagnosticSeverity.Error,
            code=d.code,
            code_description=types.CodeDescription(href=href) if href else None,
            source=SOURCE,
        )

    # ------------------------------------------------------------------ code actions
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        state = self.current(uri)
        if state is None:
            return []
        wanted = {(d.code, _key(d.range)) for d in params.context.diagnostics if d.source == SOURCE}
        actions: list[types.CodeAction] = []
        for diagnostic, finding in state.published:
            if finding.block < 0:
                continue  # CB126: the file was not analysed, nothing to fix in it
            in_context = (diagnostic.code, _key(diagnostic.range)) in wanted
            if not in_context and not _overlaps(diagnostic.range, params.range):
                continue
            for fix in state.document.fixes(finding):
                actions.append(self._action(state, uri, diagnostic, fix))
        only = params.context.only
        if only:
            wanted_kinds = [_kind_text(k) for k in only]
            actions = [a for a in actions if a.kind is not None and any(_kind_text(a.kind).startswith(k) for k in wanted_kinds)]
        return actions

    def _versioned_edits(self) -> bool:
        """Whether the client takes ``documentChanges`` (edits that name the document's version)."""
        try:
            workspace = self.client_capabilities.workspace
        except AttributeError:  # not initialized (tests of the class alone)
            return False
        edit = workspace.workspace_edit if workspace is not None else None
        return bool(edit is not None and edit.document_changes)

    def _action(self, state: _Open, uri: str, diagnostic: types.Diagnostic, fix: Fix) -> types.CodeAction:
        edit = None
        if fix.edits:
            edits = [
                types.TextEdit(range=self._range(state.lines, e.line, e.column, e.end_line, e.end_column), new_text=e.new_text)
                for e in fix.edits
            ]
            if self._versioned_edits():
                # The client applies these only to the version they were computed for.
                document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=state.checked_version)
                edit = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=list(edits))])
            else:
                edit = types.WorkspaceEdit(changes={uri: edits})
        return types.CodeAction(
            title=fix.title,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=edit,
            is_preferred=True if fix.edits else None,
        )

    # ------------------------------------------------------------------ hover
    def hover(self, params: types.HoverParams) -> types.Hover | None:
        state = self.current(params.text_document.uri)
        if state is None or not state.lines:
            return None
        column = self._byte_column(state.lines, params.position)
        try:
            found = state.document.at(params.position.line + 1, column)
        except (RecursionError, MemoryError):
            return None
        if found is None:
            return None
        analysis, site, offset = found.analysis, found.site, found.line_offset
        if found.param is not None:
            p = found.param
            facts = describe_parameter(p.arg, analysis.slot(site, p))
            rng = self._range(state.lines, p.lineno + offset, p.col_offset, (p.end_lineno or p.lineno) + offset, p.end_col_offset or 0)
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=facts.markdown()), range=rng)
        a = site.node.args
        params_ = a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + ([a.kwarg] if a.kwarg else [])
        text = describe_kernel(found.kernel, [describe_parameter(p.arg, analysis.slot(site, p)) for p in params_])
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


def _offset(codec: PositionCodec, text: str, lines: Sequence[str], starts: Sequence[int], position: types.Position) -> int:
    """The offset in ``text`` of a client position, clamped to its line's end (a line past the
    last one: the end of the text)."""
    if position.line >= len(lines) or position.line < 0:
        return len(text) if position.line >= 0 else 0
    server = codec.position_from_client_units(lines, types.Position(line=position.line, character=position.character))
    line = lines[position.line]
    content = len(line) - (2 if line.endswith("\r\n") else 1 if line.endswith(("\n", "\r")) else 0)
    return starts[position.line] + min(max(server.character, 0), content)


def apply_change(text: str, change: types.TextDocumentContentChangeEvent, codec: PositionCodec) -> str:
    """``text`` with one ``didChange`` content change applied, its range read by LSP's line
    rules (``\n``, ``\r\n`` and ``\r`` end a line; nothing else does) in the client's units."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return str(change.text)
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    start = _offset(codec, text, lines, starts, change.range.start)
    end = max(start, _offset(codec, text, lines, starts, change.range.end))
    return text[:start] + change.text + text[end:]


def _kind_text(kind: types.CodeActionKind | str) -> str:
    """A code action kind as the protocol spells it (``quickfix``), enum or plain string."""
    return str(kind.value) if isinstance(kind, types.CodeActionKind) else str(kind)


def _key(r: types.Range) -> tuple[int, int, int, int]:
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (b.start.line, b.start.character) <= (
        a.end.line,
        a.end.character,
    )


def make_server(debounce_ms: int = 150, docs_url: str | None = None) -> CuteBindServer:
    """A server with every feature registered (not started)."""
    server = CuteBindServer(debounce_ms, docs_url)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CuteBindServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.opened(params.text_document.uri, params.text_document.version, params.text_document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CuteBindServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: CuteBindServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.saved(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CuteBindServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.closed(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: CuteBindServer, params: types.DidChangeConfigurationParams) -> None:
        ls.reload_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: CuteBindServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(c.uri.endswith("/pyproject.toml") for c in params.changes):
            ls.reload_settings()
        elif params.changes:
            ls.saved(params.changes[0].uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
    )
    def code_action(ls: CuteBindServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: CuteBindServer, params: types.HoverParams) -> types.Hover | None:
        return ls.hover(params)

    @server.feature("cute-bind/stats")
    def stats(ls: CuteBindServer, params: object) -> dict[str, object]:
        """Counters for the benchmark (benchmarks/lsp_latency.py): checks run, the process's memory."""
        import resource

        futures = getattr(ls.protocol, "_request_futures", {})
        return {
            "checks": ls.checks,
            "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            "handler_records": len(futures) if isinstance(futures, dict) else 0,
            "codes": sorted(REPORTED_CODES | DECORATOR_CODES),
        }

    return server


def serve(debounce_ms: int = 150, docs_url: str | None = None, stdin: Any = None, stdout: Any = None) -> None:
    """Run the server on stdin/stdout (or on the given streams: :mod:`cute_bind.lsp.fast` replays what it read)."""
    make_server(debounce_ms, docs_url).start_io(stdin, stdout)
