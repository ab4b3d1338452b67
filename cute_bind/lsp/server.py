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
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Sequence
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from ..diagnostics import CATALOG, render_entry
from ..settings import DOCS_URL
from ..static.config import ConfigError, Settings, load_settings
from ..static.describe import describe_kernel, describe_parameter
from ..static.fixes import Fix
from ..static.incremental import Document, Finding
from ..static.rules import DECORATOR_CODES, REPORTED_CODES, module_name_for_path

__all__ = ["CuteBindServer", "SOURCE", "serve", "doc_url"]

#: ``Diagnostic.source`` of every diagnostic the server publishes.
SOURCE = "cute-bind"
# Every way of reaching the decorator goes through an import naming the package (as in checker.py).
_MARKER = "cute_bind"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("cute-bind")
    except Exception:  # not installed as a distribution (a checkout on sys.path)
        return "0"


def doc_url(code: str, base: str | None) -> str:
    """The page of ``code``: ``base/diagnostics/CODE/`` on a documentation site (the layout the
    docs build gives, docs/hooks/catalog.py), or, without a site, a local Markdown page rendered
    from the catalog entry (what ``python -m cute_bind explain CODE`` prints), written once."""
    if base:
        return f"{base.rstrip('/')}/diagnostics/{code}/"
    folder = os.path.join(tempfile.gettempdir(), f"cute-bind-lsp-{_version()}-{os.getuid() if hasattr(os, 'getuid') else 0}")
    path = os.path.join(folder, f"{code}.md")
    if not os.path.exists(path):
        try:
            os.makedirs(folder, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(render_entry(CATALOG[code]))
            os.replace(tmp, path)
        except OSError:
            pass  # the link still names the code; the page is what `explain` prints
    return "file://" + path


@dataclass
class _Open:
    """One open document."""

    document: Document
    settings: Settings
    path: str | None
    version: int | None = None
    handle: asyncio.Handle | None = None
    last_check: float = -1e9
    lines: list[str] = field(default_factory=list)
    published: list[tuple[types.Diagnostic, Finding]] = field(default_factory=list)


def _path(uri: str) -> str | None:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


class CuteBindServer(LanguageServer):
    """The cute_bind language server (``cute-bind lsp``)."""

    def __init__(self, debounce_ms: int = 150, docs_url: str | None = None) -> None:
        super().__init__("cute-bind", _version(), text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.debounce = max(0, debounce_ms) / 1000.0
        self.docs_url = docs_url if docs_url is not None else DOCS_URL.text() or None
        self.open: dict[str, _Open] = {}
        self._settings: dict[str, Settings] = {}
        self._urls: dict[str, str] = {}
        self.checks = 0  # checks run (the benchmark reads it through the custom request)

    # ------------------------------------------------------------------ settings
    def settings_for(self, path: str | None) -> Settings:
        folder = os.path.dirname(path) if path else os.getcwd()
        cached = self._settings.get(folder)
        if cached is not None:
            return cached
        try:
            settings = load_settings(folder)
        except ConfigError as exc:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"cute-bind: {exc}"))
            settings = Settings()
        self._settings[folder] = settings
        return settings

    def reload_settings(self) -> None:
        """Forget the settings read so far (a pyproject.toml changed) and check every open file again."""
        self._settings.clear()
        for uri, state in self.open.items():
            state.settings = self.settings_for(state.path)
            self.check(uri)

    def url(self, code: str) -> str:
        found = self._urls.get(code)
        if found is None:
            found = self._urls[code] = doc_url(code, self.docs_url)
        return found

    # ------------------------------------------------------------------ checking
    def opened(self, uri: str, version: int | None) -> None:
        path = _path(uri)
        module = module_name_for_path(path) if path else None
        self.open[uri] = _Open(Document(module), self.settings_for(path), path, version)
        self.check(uri)

    def forget_finished_handlers(self) -> None:
        """Drop pygls's record of notification handlers that have finished.

        pygls 2.1 runs its built-in notification handlers (didOpen, didChange...) as generators
        and files each step's future in ``_request_futures`` under a fresh id that nothing
        removes for a notification (requests remove theirs when answered): about 2 KB per
        keystroke, 20 MB over 10,000 edits (benchmarks/lsp_latency.py measured it). A finished
        future there is never looked up again, so dropping it is safe.
        """
        futures = getattr(self.protocol, "_request_futures", None)
        if isinstance(futures, dict) and len(futures) > 64:
            for key in [k for k, f in futures.items() if f.done()]:
                del futures[key]

    def changed(self, uri: str, version: int | None) -> None:
        self.forget_finished_handlers()
        state = self.open.get(uri)
        if state is None:
            return
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
        doc = self.workspace.get_text_document(uri)
        text = doc.source
        self.checks += 1
        published: list[tuple[types.Diagnostic, Finding]] = []
        if _MARKER in text and not (state.path and state.settings.excludes(state.path)):
            state.document.update(text)
            state.lines = text.splitlines(keepends=True)
            for finding in state.document.findings:
                if finding.diagnostic.code in state.settings.ignore:
                    continue
                published.append((self._diagnostic(doc, state, finding), finding))
        else:
            state.lines = []
        state.published = published
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[d for d, _ in published], version=state.version)
        )

    # ------------------------------------------------------------------ positions
    def _position(self, doc: TextDocument, lines: Sequence[str], line: int, column: int) -> types.Position:
        """(1-based line, UTF-8 byte column) -> the client's position."""
        index = line - 1
        if index >= len(lines):
            return types.Position(line=index, character=0)
        text = lines[index]
        if text.isascii():
            char = column
        else:
            char = len(text.encode()[:column].decode(errors="ignore"))
        return doc.position_codec.position_to_client_units(lines, types.Position(line=index, character=char))

    def _byte_column(self, doc: TextDocument, lines: Sequence[str], position: types.Position) -> int:
        server = doc.position_codec.position_from_client_units(lines, position)
        if server.line >= len(lines):
            return 0
        return len(lines[server.line][: server.character].encode())

    def _range(self, doc: TextDocument, lines: Sequence[str], line: int, col: int, end_line: int, end_col: int) -> types.Range:
        return types.Range(start=self._position(doc, lines, line, col), end=self._position(doc, lines, end_line, end_col))

    def _diagnostic(self, doc: TextDocument, state: _Open, finding: Finding) -> types.Diagnostic:
        d = finding.diagnostic
        message = d.text
        if state.settings.show_fix:
            message += "\nfix: " + " ".join(d.fix.split())
        return types.Diagnostic(
            range=self._range(doc, state.lines, d.line, d.column, d.end_line, d.end_column),
            message=message,
            severity=types.DiagnosticSeverity.Error,
            code=d.code,
            code_description=types.CodeDescription(href=self.url(d.code)),
            source=SOURCE,
        )

    # ------------------------------------------------------------------ code actions
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        state = self.open.get(params.text_document.uri)
        if state is None:
            return []
        doc = self.workspace.get_text_document(params.text_document.uri)
        wanted = {(d.code, _key(d.range)) for d in params.context.diagnostics if d.source == SOURCE}
        actions: list[types.CodeAction] = []
        for diagnostic, finding in state.published:
            in_context = (diagnostic.code, _key(diagnostic.range)) in wanted
            if not in_context and not _overlaps(diagnostic.range, params.range):
                continue
            for fix in state.document.fixes(finding):
                actions.append(self._action(doc, state, params.text_document.uri, diagnostic, fix))
        only = params.context.only
        if only:
            wanted_kinds = [_kind_text(k) for k in only]
            actions = [a for a in actions if a.kind is not None and any(_kind_text(a.kind).startswith(k) for k in wanted_kinds)]
        return actions

    def _action(self, doc: TextDocument, state: _Open, uri: str, diagnostic: types.Diagnostic, fix: Fix) -> types.CodeAction:
        edit = None
        if fix.edits:
            edits = [
                types.TextEdit(range=self._range(doc, state.lines, e.line, e.column, e.end_line, e.end_column), new_text=e.new_text)
                for e in fix.edits
            ]
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
        state = self.open.get(params.text_document.uri)
        if state is None or not state.lines:
            return None
        doc = self.workspace.get_text_document(params.text_document.uri)
        column = self._byte_column(doc, state.lines, params.position)
        found = state.document.at(params.position.line + 1, column)
        if found is None:
            return None
        analysis, site, offset = found.analysis, found.site, found.line_offset
        if found.param is not None:
            p = found.param
            facts = describe_parameter(p.arg, analysis.slot(site, p))
            rng = self._range(doc, state.lines, p.lineno + offset, p.col_offset, (p.end_lineno or p.lineno) + offset, p.end_col_offset or 0)
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=facts.markdown()), range=rng)
        a = site.node.args
        params_ = a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + ([a.kwarg] if a.kwarg else [])
        text = describe_kernel(found.kernel, [describe_parameter(p.arg, analysis.slot(site, p)) for p in params_])
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


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
        ls.opened(params.text_document.uri, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CuteBindServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: CuteBindServer, params: types.DidSaveTextDocumentParams) -> None:
        if params.text_document.uri.endswith("/pyproject.toml"):
            ls.reload_settings()

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
    def stats(ls: CuteBindServer, params: Any) -> dict[str, Any]:
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


def serve(debounce_ms: int = 150, docs_url: str | None = None) -> None:
    """Run the server on stdin/stdout."""
    make_server(debounce_ms, docs_url).start_io()
