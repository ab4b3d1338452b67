"""Source files as the static tools read them: regular files of bounded size, split into lines
as Python and the Language Server Protocol count them.

:func:`read_source` is the one way ``cute-bind check``, the mypy plugin, the language server
(modules a checked file imports from) and the settings (``pyproject.toml``) read a file: a
FIFO, a device or a link to one (``/dev/zero``) is never read, and neither is a file larger
than :data:`MAX_SOURCE_BYTES`; such a file is refused with CB126 (a
:class:`~cute_bind.diagnostics.KernelDefinitionError` carrying the code), so one bad path costs
the check that file, never the process.

:func:`split_lines` splits text where both Python's tokenizer and LSP end a line: at ``\\n``,
``\\r\\n`` and ``\\r`` only (``str.splitlines`` also splits at form feed, ``\\x0b``,
``\\x1c``-``\\x1e``, NEL, U+2028 and U+2029, which would move every later position down).
"""

from __future__ import annotations

import os
import re
import stat

from .. import diagnostics as D

__all__ = ["MAX_SOURCE_BYTES", "LIMIT_TEXT", "read_source", "refusal", "split_lines", "line_starts"]

#: The largest file the static tools read (bytes); a larger one is CB126.
MAX_SOURCE_BYTES = 8 * 1024 * 1024
#: :data:`MAX_SOURCE_BYTES` in words, for messages.
LIMIT_TEXT = "8 MiB"

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_BREAK = re.compile(r"\r\n|\r|\n")

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their line ends, split at ``\\n``, ``\\r\\n`` and ``\\r`` only."""
    return _LINE.findall(text)


def line_starts(text: str) -> list[int]:
    """The offset in ``text`` where each line starts (the first is 0), by :func:`split_lines`'s rules."""
    return [0, *(m.end() for m in _BREAK.finditer(text))]


def refusal(path: str, detail: str) -> D.CuteBindError:
    """The CB126 error saying ``path`` was not checked, and why (the caller raises or reports it)."""
    return D.error(D.SOURCE_NOT_CHECKED, got=repr(path), expected=LIMIT_TEXT, detail=detail, details={"detail": detail})


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a plain file"


def _too_large(path: str, size: int, limit: int) -> D.CuteBindError:
    words = LIMIT_TEXT if limit == 8 * 1024 * 1024 else f"{limit} bytes"
    return refusal(path, f"it holds {size} bytes or more, over the {words} the static tools read")


def read_source(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (default :data:`MAX_SOURCE_BYTES`).

    Raises CB126 (:class:`~cute_bind.diagnostics.KernelDefinitionError`) for a path that is not a
    regular file (followed through links) or holds more than ``limit`` bytes, and :class:`OSError`
    for one that cannot be opened. The file is opened without blocking (a FIFO with no writer
    does not stall the open) and checked again once open, and the read stops past the limit,
    so a file that changes kind or grows meanwhile is refused too.
    """
    limit = MAX_SOURCE_BYTES if limit is None else limit
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise refusal(path, f"it is not a regular file ({_kind(st.st_mode)})")
    if st.st_size > limit:
        raise _too_large(path, st.st_size, limit)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped for something else between the two looks
            raise refusal(path, f"it is not a regular file ({_kind(st.st_mode)})")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _too_large(path, total, limit)
    finally:
        os.close(fd)
    return b"".join(chunks)
