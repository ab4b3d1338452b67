"""Exception hierarchy.

Every error cute_bind raises is a :class:`CuteBindError` built from one entry of
the diagnostics catalog (:mod:`cute_bind.diagnostics.catalog`). Each concrete class
also subclasses the builtin a caller would naturally catch (``TypeError``,
``ValueError``, ``RuntimeError``), so ``except TypeError`` keeps working.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Diagnostic",
    "CuteBindError",
    "KernelDefinitionError",
    "PreparedLaunchError",
    "LaunchArgumentError",
    "LaunchValueError",
    "LaunchRuntimeError",
    "CudaLaunchError",
    "DSLCompatibilityError",
    "KernelCompileError",
    "exception_text",
    "exception_summary",
    "did_you_mean",
    "OptionalDependencyError",
    "DSLVersionWarning",
    "SpecializationError",
    "SpecializationWarning",
    "CacheWarning",
    "CacheSettingError",
]

# terminal colour and cursor codes (the DSL colours its diagnostics)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def exception_text(exc: BaseException) -> str:
    """An exception's whole text, without terminal colour codes and surrounding blank space."""
    return _ANSI.sub("", str(exc)).strip()


def exception_summary(exc: BaseException, limit: int = 160) -> str:
    """``"TypeName: first line of the text"`` (at most ``limit`` characters of text), for a message's ``got``."""
    text = exception_text(exc)
    first = text.splitlines()[0][:limit].rstrip() if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@dataclass(frozen=True)
class Diagnostic:
    """One catalog entry. Immutable; compare and hash by code."""

    code: str
    slug: str
    summary: str
    explanation: str
    example: str
    fix: str
    error_class: type[CuteBindError] = field(compare=False)
    message: str = field(compare=False)
    retired: bool = False

    @property
    def title(self) -> str:
        return f"{self.code} {self.slug}"


def did_you_mean(word: str, choices: "list[str] | tuple[str, ...]") -> str:
    """``" (did you mean 'value'?)"`` for the closest of ``choices`` to a misspelt ``word``, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class CuteBindError(Exception):
    """Base class of every cute_bind error.

    Attributes mirror the diagnostic that produced the error, so callers can
    branch on structured data instead of parsing messages:

    - ``code``: stable catalog code such as ``"CB204"``.
    - ``diagnostic``: the full catalog entry (summary, explanation, fix...).
    - ``kernel``: name of the kernel (host function) concerned, or ``None``.
    - ``parameter``: name of the parameter concerned, or ``None``.
    - ``expected`` / ``got``: what the slot expected and what it received.
    - ``fix``: the concrete fix, rendered for this occurrence.
    """

    code: str
    diagnostic: Diagnostic
    kernel: str | None
    parameter: str | None
    expected: str | None
    got: str | None
    fix: str
    details: dict[str, Any]

    def __init__(
        self,
        diagnostic: Diagnostic,
        message: str,
        *,
        kernel: str | None = None,
        parameter: str | None = None,
        expected: str | None = None,
        got: str | None = None,
        fix: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.diagnostic = diagnostic
        self.code = diagnostic.code
        self.kernel = kernel
        self.parameter = parameter
        self.expected = expected
        self.got = got
        self.fix = fix
        self.details = dict(details or {})

    @property
    def message(self) -> str:
        """The rendered message (the same text as ``str(error)``)."""
        return str(self.args[0]) if self.args else ""


class KernelDefinitionError(CuteBindError, TypeError):
    """A decorated function cannot be a cute_bind kernel (raised at decoration)."""


class PreparedLaunchError(CuteBindError):
    """Base class of errors raised while binding or launching a prepared launch."""


class LaunchArgumentError(PreparedLaunchError, TypeError):
    """Arguments do not match the kernel's slots (missing, extra, wrong kind)."""


class LaunchValueError(PreparedLaunchError, ValueError):
    """A value has the right kind but cannot be represented (range, address, alignment)."""


class LaunchRuntimeError(PreparedLaunchError, RuntimeError):
    """The handle cannot launch (module unloaded, handle closed, misuse across threads)."""


class CudaLaunchError(LaunchRuntimeError):
    """The compiled entry point reported a non-zero CUDA result.

    ``cuda_error`` holds the integer ``cudaError_t`` value and
    ``cuda_error_name`` its symbolic name when cuda-bindings can name it.
    """

    @property
    def cuda_error(self) -> int:
        return int(self.details.get("cuda_error", 0))

    @property
    def cuda_error_name(self) -> str:
        return str(self.details.get("cuda_error_name", ""))


class DSLCompatibilityError(CuteBindError, RuntimeError):
    """The installed nvidia-cutlass-dsl lacks an internal cute_bind relies on."""


class KernelCompileError(CuteBindError, RuntimeError):
    """The DSL failed to compile the function for the given arguments (its error is chained)."""


class OptionalDependencyError(CuteBindError, ImportError):
    """A feature needs an optional dependency that cannot be imported (PyTorch for ``cute_bind.torch``)."""


class DSLVersionWarning(CuteBindError, RuntimeWarning):
    """A warning, issued once: the installed nvidia-cutlass-dsl is outside the tested range.

    It has every internal cute_bind's contract lists, so cute_bind runs with
    it. Silence it with
    ``warnings.filterwarnings("ignore", category=cute_bind.DSLVersionWarning)``.
    """


class SpecializationError(CuteBindError, RuntimeError):
    """Calling a kernel would create a specialization it may not have (its limit is reached)."""


class SpecializationWarning(CuteBindError, UserWarning):
    """A warning (``warnings.warn``) about a kernel's specializations, e.g. past its limit in ``on_limit="warn"`` mode.

    A warning category and a :class:`CuteBindError` at once: it carries the
    catalog code and fields, and ``warnings.simplefilter("error")`` raises it.
    """


class CacheWarning(CuteBindError, RuntimeWarning):
    """The disk compile cache could not be used for one compile (CB605-CB608).

    Issued with :func:`warnings.warn`, once per cause; the kernel was
    compiled in-process instead, so nothing else changes. Turn it into an
    error with ``warnings.simplefilter("error", cute_bind.CacheWarning)``.
    """


class CacheSettingError(CuteBindError, ValueError):
    """A disk cache setting (environment variable or argument) is invalid (CB609)."""
