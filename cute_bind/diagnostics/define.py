"""How a catalog entry is written: :func:`entry`, the one constructor the range modules call.

An entry is plain data, a frozen :class:`~cute_bind.diagnostics.errors.Diagnostic`;
building one registers nothing. The range modules (``codes/cb1xx.py``...) bind
each entry to a module-level name, and :mod:`cute_bind.diagnostics.catalog`
gathers them from there.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from .errors import CuteBindError, Diagnostic

__all__ = ["Illustration", "entry", "illustration"]

#: how long a line of an illustration's script may grow before its fields wrap
_WIDTH = 100


@dataclass(frozen=True)
class Illustration:
    """An example that raises its entry's error itself (the docs label it an illustration), for a
    condition an example cannot bring about here (a GPU fault, a second device, another DSL release,
    XLA's handler): ``note`` says what raises it for real, ``fields`` fill the message. Made by
    :func:`illustration`; :func:`entry` writes it as a script that raises the entry's own code."""

    note: str
    fields: tuple[tuple[str, str], ...]

    def script(self, code: str) -> str:
        """``import cute_bind``, the note as a comment, and ``raise cute_bind.error(...)`` of ``code``."""
        opening = f'raise cute_bind.error(cute_bind.CATALOG["{code}"]'
        lines, line = [], opening
        for name, value in self.fields:
            literal = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
            if line != opening and len(line) + len(name) + len(literal) + 4 > _WIDTH:
                lines.append(line + ",")
                line = " " * len("raise cute_bind.error(") + f"{name}={literal}"
            else:
                line += f", {name}={literal}"
        comment = [f"# {text}" for text in textwrap.wrap(self.note, _WIDTH - 2)]
        return "\n".join(["import cute_bind", "", *comment, *lines, line + ")"]) + "\n"


def illustration(note: str = "", **fields: str) -> Illustration:
    """An :class:`Illustration`: ``note`` (what raises it for real; "" where the explanation says), then the message's fields."""
    return Illustration(note, tuple(fields.items()))


def entry(
    code: str,
    slug: str,
    error_class: type[CuteBindError],
    *,
    summary: str,
    message: str,
    explanation: str,
    example: str | Illustration,
    fix: str,
    retired: bool = False,
) -> Diagnostic:
    """One catalog entry.

    ``explanation``, ``example`` and ``fix`` are written indented in the range
    modules and stored dedented (the example keeps one final newline: it is a
    whole script that raises ``code``). ``message`` and ``fix`` are templates
    filled at the raise site (``{kernel}``, ``{parameter}``, ``{expected}``,
    ``{got}``, ``{detail}``; CB204's fix also ``{conversion}``). An entry that no longer applies stays, with
    ``retired=True``: its code is never given to another. An :func:`illustration` is written as the
    script that raises ``code``.
    """
    if isinstance(example, Illustration):
        example = example.script(code)
    return Diagnostic(
        code=code,
        slug=slug,
        summary=summary,
        explanation=textwrap.dedent(explanation).strip(),
        example=textwrap.dedent(example).strip() + "\n",
        fix=textwrap.dedent(fix).strip(),
        error_class=error_class,
        message=message,
        retired=retired,
    )
