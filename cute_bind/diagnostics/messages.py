"""One occurrence of a catalog entry: its message and fix filled in (:func:`format_message`) and the exception (:func:`error`)."""

from __future__ import annotations

from typing import Any

from .errors import CuteBindError, Diagnostic

__all__ = ["error", "format_message"]


class _Fields(dict[str, Any]):
    # a field the raise site left out reads "?" rather than failing the error it is building
    def __missing__(self, key: str) -> str:
        return "?"


def format_message(diagnostic: Diagnostic, **fields: Any) -> tuple[str, str]:
    """Render ``(message, fix)`` for one occurrence of ``diagnostic``."""
    values = _Fields({k: v for k, v in fields.items() if v is not None})
    body = diagnostic.message.format_map(values)
    # the catalog's fix text is wrapped for the docs; a message keeps it on one line
    fix = " ".join(diagnostic.fix.format_map(values).split())
    # a body that ends in quoted text (a DSL error's) may already end a sentence
    stop = "" if body.endswith((".", "!", "?")) else "."
    text = f"[{diagnostic.code}] {body}{stop}\n  fix: {fix}\n  (python -m cute_bind explain {diagnostic.code})"
    return text, fix


def error(
    diagnostic: Diagnostic,
    *,
    kernel: str | None = None,
    parameter: str | None = None,
    expected: str | None = None,
    got: str | None = None,
    detail: str | None = None,
    details: dict[str, Any] | None = None,
    conversion: str | None = None,
) -> CuteBindError:
    """Build the exception for one occurrence of a catalog entry (the caller raises it)."""
    # the fields the exception keeps as attributes, besides the message they fill
    kept = {"kernel": kernel, "parameter": parameter, "expected": expected, "got": got}
    text, fix = format_message(diagnostic, **kept, detail=detail, conversion=conversion)
    return diagnostic.error_class(diagnostic, text, **kept, fix=fix, details=details)
