"""How a catalog entry is written: :func:`entry`, the one constructor the range modules call.

An entry is plain data, a frozen :class:`~cute_bind.diagnostics.errors.Diagnostic`;
building one registers nothing. The range modules (``codes/cb1xx.py``...) bind
each entry to a module-level name, and :mod:`cute_bind.diagnostics.catalog`
gathers them from there.
"""

from __future__ import annotations

import textwrap

from .errors import CuteBindError, Diagnostic

__all__ = ["entry"]


def entry(
    code: str,
    slug: str,
    error_class: type[CuteBindError],
    *,
    summary: str,
    message: str,
    explanation: str,
    example: str,
    fix: str,
    retired: bool = False,
) -> Diagnostic:
    """One catalog entry.

    ``explanation``, ``example`` and ``fix`` are written indented in the range
    modules and stored dedented (the example keeps one final newline: it is a
    whole script that raises ``code``). ``message`` and ``fix`` are templates
    filled at the raise site (``{kernel}``, ``{parameter}``, ``{expected}``,
    ``{got}``, ``{detail}``; CB204's fix also ``{conversion}``). An entry that no longer applies stays, with
    ``retired=True``: its code is never given to another.
    """
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
