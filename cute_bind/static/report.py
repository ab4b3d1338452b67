"""What the static tools report: :class:`StaticDiagnostic`, one eligibility problem at a parameter,
rendered from the same catalog entry as the runtime's message; CB126 for a file not checked."""

from __future__ import annotations

from dataclasses import dataclass

from ..diagnostics import CATALOG, CuteBindError, format_message
from .source import LIMIT_TEXT

__all__ = ["NOT_CHECKED", "StaticDiagnostic", "not_checked", "refused", "too_deep"]


@dataclass(frozen=True)
class StaticDiagnostic:
    """One eligibility problem found in source text, at a parameter.

    ``line`` is 1-based and ``column`` 0-based (as in :mod:`ast`); tools print
    ``column + 1``. The fields are those the runtime passes to
    :func:`cute_bind.diagnostics.format_message`, so :attr:`message` is the
    first line of the runtime's message for the same parameter.
    """

    code: str
    kernel: str
    parameter: str
    line: int
    column: int
    end_line: int
    end_column: int
    expected: str
    got: str
    detail: str | None = None

    def _rendered(self) -> tuple[str, str]:
        return format_message(
            CATALOG[self.code],
            kernel=self.kernel,
            parameter=self.parameter,
            expected=self.expected,
            got=self.got,
            detail=self.detail,
        )

    @property
    def message(self) -> str:
        """``[CB101] kernel 'f', parameter 'n': ...``: the runtime message's first line."""
        return self._rendered()[0].splitlines()[0]

    @property
    def text(self) -> str:
        """:attr:`message` without its leading ``[CODE]`` tag."""
        return self.message.removeprefix(f"[{self.code}] ")

    @property
    def fix(self) -> str:
        """The catalog's fix for this occurrence."""
        return self._rendered()[1]


#: The code of a file the static tools could not read or analyse (reported for the file, at its first line).
NOT_CHECKED = "CB126"
_TOO_DEEP = "an expression in it is nested too deeply to analyse ({error})"


def not_checked(path: str, detail: str) -> StaticDiagnostic:
    """The CB126 diagnostic of a file that was not checked, and why."""
    return StaticDiagnostic(NOT_CHECKED, "", "", 1, 0, 1, 0, LIMIT_TEXT, repr(path), detail)


def refused(path: str, exc: CuteBindError) -> StaticDiagnostic:
    """:func:`not_checked` for the CB126 error :func:`cute_bind.static.source.read_source` raised."""
    return not_checked(path, str(exc.details.get("detail") or exc.got or exc.code))


def too_deep(path: str, exc: BaseException) -> StaticDiagnostic:
    """:func:`not_checked` for a file whose analysis ran out of stack or memory."""
    return not_checked(path, _TOO_DEEP.format(error=type(exc).__name__))
