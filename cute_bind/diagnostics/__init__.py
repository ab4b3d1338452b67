"""Diagnostics: every error cute_bind reports, defined once.

``errors`` holds the exception hierarchy and the :class:`Diagnostic` record
each exception carries; ``catalog`` holds every entry (``CB101``...) and the
one way to build an error from an entry (:func:`error`). Raise sites write
``raise D.error(D.WRONG_KIND, ...)`` with ``from cute_bind import diagnostics as D``.
"""

from __future__ import annotations

from .catalog import *  # noqa: F403  (the entries and their builders; catalog.__all__ lists them)
from .catalog import __all__ as _catalog_all
from .errors import (
    CacheSettingError,
    CacheWarning,
    CudaLaunchError,
    CuteBindError,
    DSLCompatibilityError,
    KernelCompileError,
    DSLVersionWarning,
    KernelDefinitionError,
    LaunchArgumentError,
    LaunchRuntimeError,
    LaunchValueError,
    PreparedLaunchError,
    did_you_mean,
    exception_summary,
    exception_text,
    SpecializationError,
    SpecializationWarning,
)

__all__ = [
    *_catalog_all,
    "CacheSettingError",
    "CacheWarning",
    "CudaLaunchError",
    "CuteBindError",
    "DSLCompatibilityError",
    "KernelCompileError",
    "DSLVersionWarning",
    "KernelDefinitionError",
    "LaunchArgumentError",
    "LaunchRuntimeError",
    "LaunchValueError",
    "PreparedLaunchError",
    "did_you_mean",
    "exception_summary",
    "exception_text",
    "SpecializationError",
    "SpecializationWarning",
]
