"""Griffe extension: render cute_bind's reST-flavoured docstrings as Markdown.

The library's docstrings use Sphinx idioms (``:func:`kernel```, double
backticks, ``::`` before literal blocks). mkdocstrings renders Markdown, so
this extension rewrites them when the API is loaded:

- ``:role:`name``` becomes a cross-reference to ``cute_bind.name`` when that
  name is part of the public API (``cute_bind.__all__``), else inline code;
- double backticks become single backticks;
- a paragraph ending in ``::`` ends in ``:`` (the indented block after it is
  already a Markdown code block).

Nothing here changes the library; it only affects the rendered pages.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import griffe

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import cute_bind  # noqa: E402  (no DSL import: cute_bind loads the DSL lazily)

_PUBLIC = frozenset(n for n in cute_bind.__all__ if not n.startswith("_"))
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|exc|mod|obj):`([^`]+)`")
_DOUBLE = re.compile(r"``(.+?)``")
_LITERAL = re.compile(r"(\S)::[ \t]*$", re.MULTILINE)


def _role(match: re.Match[str]) -> str:
    text = match.group(1).strip()
    target = text
    if "<" in text and text.endswith(">"):  # :class:`label <target>`
        text, target = (s.strip() for s in text[:-1].split("<", 1))
    target = target.lstrip("~.")
    shown = target.rsplit(".", 1)[-1] if match.group(1).startswith("~") else text.lstrip("~.")
    name = target.removeprefix("cute_bind.")
    if name in _PUBLIC:
        return f"[`{shown}`][cute_bind.{name}]"
    return f"`{shown}`"


def convert(text: str) -> str:
    """Markdown for one reST-flavoured docstring."""
    text = _ROLE.sub(_role, text)
    text = _DOUBLE.sub(r"`\1`", text)
    return _LITERAL.sub(r"\1:", text)


class RestToMarkdown(griffe.Extension):
    """Rewrite every loaded docstring with :func:`convert`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
