"""What the language server needs before pygls and lsprotocol are imported (issue 44 item 6).

The server proper (:mod:`cute_bind.lsp.server`) and its fast start (:mod:`cute_bind.lsp.fast`) both
use these: the diagnostics' source, the documentation links, a file URI's path, and the findings of a
text (the static rules through :class:`cute_bind.static.incremental.Document`). Nothing here imports
pygls or lsprotocol.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from ..diagnostics import CATALOG, render_entry
from ..static.incremental import Document, Finding
from ..static.rules import not_checked, refresh_modules, too_deep
from ..static.source import LIMIT_TEXT, MAX_SOURCE_BYTES
from . import pages

__all__ = ["MARKER", "SOURCE", "doc_url", "file_path", "findings", "version"]

#: ``Diagnostic.source`` of every diagnostic the server publishes.
SOURCE = "cute-bind"
#: Every way of reaching the decorator goes through an import naming the package (as in checker.py).
MARKER = "cute_bind"


def version() -> str:
    """cute-bind's installed version ("0" for a checkout on sys.path that is not installed)."""
    try:
        from importlib.metadata import version as dist_version

        return dist_version("cute-bind")
    except Exception:  # not installed as a distribution (a checkout on sys.path)
        return "0"


def doc_url(code: str, base: str | None) -> str | None:
    """The page of ``code``: ``base/diagnostics/CODE/`` on a documentation site (the layout the
    docs build gives, docs/hooks/catalog.py), or, without a site, a local Markdown page rendered
    from the catalog entry (what ``python -m cute_bind explain CODE`` prints), written in the
    user's own cache folder (:mod:`cute_bind.lsp.pages`); ``None`` where that folder may not be
    used or the page cannot be written."""
    if base:
        return f"{base.rstrip('/')}/diagnostics/{code}/"
    folder, _ = pages.private_folder(*pages.pages_folder(version()))
    if folder is None:
        return None
    try:
        return Path(pages.write_page(folder, f"{code}.md", render_entry(CATALOG[code]))).as_uri()
    except OSError:
        return None


def file_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI (None for any other scheme)."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def findings(document: Document, path: str | None, text: str) -> tuple[Document, list[Finding]]:
    """``document`` updated to ``text`` and its findings, or a fresh document and one CB126 for the file
    where the text is too large or too deep to analyse."""
    where = path or "<unsaved>"
    if len(text) > MAX_SOURCE_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return Document(document.module), [Finding(not_checked(where, f"it holds more than the {LIMIT_TEXT} the static tools read"), -1)]
    refresh_modules()  # a module a structure comes from may have been saved since
    try:
        document.update(text)
    except (RecursionError, MemoryError) as exc:
        return Document(document.module), [Finding(too_deep(where, exc), -1)]
    return document, document.findings
