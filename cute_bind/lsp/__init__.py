"""``cute-bind lsp``: cute_bind's eligibility errors in any editor, as a language server.

The server speaks the Language Server Protocol over stdin/stdout (pygls and
lsprotocol, the ``lsp`` extra: ``pip install -e ".[lsp]"`` from the repository). It runs the
static rules of ``cute-bind check`` and the mypy plugin
(:mod:`cute_bind.static.rules`, through the incremental
:mod:`cute_bind.static.incremental`) on the text of each open Python file, as
it changes, and publishes:

- diagnostics with the catalog code (``CB101``...), a link to the code's
  page, and the runtime's message;
- quick fixes where the catalog's fix is mechanical
  (:mod:`cute_bind.static.fixes`), the fix in words otherwise;
- hover on a kernel and on each of its parameters: slot kind, what
  ``launch()`` accepts, whether it is part of the compile key
  (:mod:`cute_bind.static.describe`).

Settings: ``[tool.cute-bind]`` in ``pyproject.toml``
(:mod:`cute_bind.static.config`, shared with ``cute-bind check``).
Nothing here imports the DSL, torch or the checked code; pygls is imported
only when the server starts (:func:`main`), so the package imports without
the extra.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

__all__ = ["main"]

DEFAULT_DEBOUNCE_MS = 150


def _parser(prog: str = "cute-bind lsp") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Language server (stdin/stdout) reporting @cute_bind.kernel eligibility errors as you type, "
        "with quick fixes and hover. Settings: [tool.cute-bind] in pyproject.toml.",
    )
    parser.add_argument(
        "--debounce-ms",
        type=int,
        default=DEFAULT_DEBOUNCE_MS,
        help="after a check, changes arriving within this many ms are checked together once the time is up "
        "(the first change after a quiet period is checked at once); default %(default)s",
    )
    parser.add_argument(
        "--docs-url",
        metavar="URL",
        default=None,
        help="base URL of the documentation site: a diagnostic links to URL/diagnostics/CODE/ "
        "(default: $CUTE_BIND_DOCS_URL, else a local page rendered from the catalog)",
    )
    parser.add_argument("--stdio", action="store_true", help="accepted for clients that pass it; stdio is the only transport")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "cute-bind lsp") -> int:
    """Run the server on stdin/stdout until the client exits it; returns the exit status.

    ``prog``: the command as the user typed it, for the usage line (``python -m cute_bind lsp``).
    The first exchange (``initialize`` and the first opened file's diagnostics) is answered before
    pygls is imported (:mod:`cute_bind.lsp.fast`), then the server proper takes over."""
    import importlib.util

    args = _parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    missing = next((name for name in ("pygls", "lsprotocol") if importlib.util.find_spec(name) is None), None)
    if missing is None:
        try:
            from .server_core import version

            docs_url = args.docs_url
            if docs_url is None:
                from ..settings import DOCS_URL

                docs_url = DOCS_URL.text() or None
            from .fast import DropReply, Replay, front

            read, answered = front(sys.stdin.buffer, sys.stdout.buffer, version(), docs_url)
            from .server import serve
        except ImportError as exc:
            missing = exc.name if exc.name and exc.name.split(".")[0] in ("pygls", "lsprotocol") else None
            if missing is None:
                raise
        else:
            serve(
                debounce_ms=args.debounce_ms,
                docs_url=args.docs_url,
                stdin=Replay(read, sys.stdin.buffer),
                stdout=DropReply(sys.stdout.buffer, answered),
            )
            return 0
    print(
        f'cute-bind lsp: the language server needs {missing}, which is not installed; install the extra from the repository\'s checkout: pip install -e ".[lsp]"',
        file=sys.stderr,
    )
    return 2
