"""The diagnostics catalog: every error cute_bind can report, by code, gathered from the range modules.

Each :class:`Diagnostic` has a stable code (``CB101``...), a slug, a one-line
summary, an explanation, a runnable example that triggers it, the fix, the
exception class it raises and the message template filled at the raise site.
Raise sites refer to entries (``raise D.error(D.WRONG_KIND, ...)``); they never
build messages of their own. Codes are never reused or deleted: an entry that
no longer applies is marked ``retired=True`` and stays in the catalog.

The entries are data, written in the range modules of
:mod:`cute_bind.diagnostics.codes` (``codes/cb2xx.py`` holds CB201..., in code
order). This module only gathers them: :data:`CATALOG` (code to entry, in code
order), :data:`ENTRY_NAMES` (the name each entry is bound to, which
``cute_bind.diagnostics`` exports) and :func:`lookup`. Building an occurrence's
message and exception is :mod:`~cute_bind.diagnostics.messages`; reading an
entry without one (``explain``, the docs pages) is
:mod:`~cute_bind.diagnostics.explain`.
"""

from __future__ import annotations

from collections.abc import Mapping

from .codes import RANGES, Range
from .errors import Diagnostic

__all__ = ["CATALOG", "ENTRY_NAMES", "entries_of", "gather", "lookup"]


def entries_of(rng: Range) -> dict[str, Diagnostic]:
    """A range module's entries, by the name each is bound to, in the order written."""
    return {name: value for name, value in vars(rng.module).items() if isinstance(value, Diagnostic)}


def gather(ranges: Mapping[str, Range]) -> tuple[dict[str, Diagnostic], tuple[str, ...]]:
    """``(entries by code, in code order; their names, in the order written)`` of ``ranges``.

    Raises ``RuntimeError`` for a code defined twice (codes are never reused),
    an entry bound to two names or two entries to one, an entry bound to a
    private name, and an entry outside its range's module: each would make
    ``D.NAME``, ``CATALOG`` and the docs disagree.
    """
    by_code: dict[str, Diagnostic] = {}
    names: dict[str, str] = {}  # name -> code, in the order written
    for digit, rng in ranges.items():
        where = rng.module.__name__
        for name, d in entries_of(rng).items():
            if name.startswith("_"):  # the star import of its module would leave it out of D
                raise RuntimeError(f"{d.code} is bound to the private name {name}; an entry's name is public")
            if d.code[2:3] != digit:
                raise RuntimeError(f"{name} ({d.code}) is written in {where}, which holds the CB{digit}xx codes")
            if d.code in by_code:
                first = next(n for n, c in names.items() if c == d.code)
                raise RuntimeError(f"diagnostic code {d.code} defined twice ({first} and {name}); codes are never reused")
            if name in names:
                raise RuntimeError(f"diagnostic name {name} bound twice ({names[name]} and {d.code})")
            by_code[d.code] = d
            names[name] = d.code
    return dict(sorted(by_code.items())), tuple(names)


CATALOG: dict[str, Diagnostic]
ENTRY_NAMES: tuple[str, ...]
CATALOG, ENTRY_NAMES = gather(RANGES)


def lookup(code: str) -> Diagnostic:
    """Return the catalog entry for ``code`` (case-insensitive, e.g. ``"cb204"``)."""
    try:
        return CATALOG[code.strip().upper()]
    except KeyError:
        raise KeyError(f"unknown diagnostic code {code!r}; known codes: {', '.join(sorted(CATALOG))}") from None
