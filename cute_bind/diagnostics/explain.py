"""An entry read without an occurrence: ``python -m cute_bind explain`` (:func:`render_entry`) and templates as the docs pages show them (:func:`render_template`)."""

from __future__ import annotations

import textwrap
from typing import Any

from .errors import Diagnostic

__all__ = ["render_entry", "render_template"]


class _Placeholders(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


def render_template(text: str) -> str:
    """A message or fix template as read without an occurrence: ``{expected}`` becomes ``<expected>``.

    Pages and ``explain`` show an entry with no call behind it; a placeholder
    there reads as a word to fill in, never as raw format syntax.
    """
    return text.format_map(_Placeholders())


def render_entry(diagnostic: Diagnostic) -> str:
    """Plain-text rendering of an entry, as printed by ``python -m cute_bind explain``."""
    status = " (retired)" if diagnostic.retired else ""
    lines = [
        f"{diagnostic.code} {diagnostic.slug}{status}",
        "",
        diagnostic.summary,
        "",
        diagnostic.explanation,
        "",
        "Raises: " + diagnostic.error_class.__name__,
        "",
        "Example:",
        textwrap.indent(diagnostic.example.rstrip(), "    "),
        "",
        "Fix:",
        textwrap.indent(render_template(diagnostic.fix), "    "),
    ]
    return "\n".join(lines) + "\n"
