"""Generated Python source, compiled so that tracebacks, ``pdb`` and ``inspect`` show it.

Code made with ``exec`` has no file: a traceback through it shows the frame's
name and line number but not the line, and ``pdb`` cannot list it. Each
generated source is compiled here under a filename of its own
(``<cute_bind launch 3 slots-1>``) and put in :mod:`linecache` under that
name, as attrs does for the methods it generates. The entries carry no
modification time, so ``linecache.checkcache()`` keeps them.
"""

from __future__ import annotations

import itertools
import linecache
from types import CodeType

__all__ = ["compile_source"]

# next() on itertools.count is atomic under the GIL: two threads never get one number
_NUMBERS = itertools.count(1)


def compile_source(source: str, what: str) -> CodeType:
    """``compile(source, ...)`` under the filename ``<cute_bind {what}-N>`` (``N`` unique in the
    process), with the source registered in :mod:`linecache` under that filename."""
    filename = f"<cute_bind {what}-{next(_NUMBERS)}>"
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return code
