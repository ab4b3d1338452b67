"""Diagnostics: every error cute_bind reports, defined once.

Raise sites write ``raise D.error(D.WRONG_KIND, ...)`` with
``from cute_bind import diagnostics as D``. What lives where:

- ``codes/``: the entries, as data, one module per range of codes
  (``codes/cb2xx.py`` holds CB201..., in code order);
- ``define.py``: :func:`~cute_bind.diagnostics.define.entry`, how an entry is written;
- ``catalog.py``: the entries gathered: :data:`CATALOG` by code, their names, :func:`lookup`;
- ``messages.py``: one occurrence: its message and fix (:func:`format_message`), its exception (:func:`error`);
- ``explain.py``: an entry read without an occurrence (``explain``, the docs pages);
- ``errors.py``: the exception hierarchy and the :class:`Diagnostic` record each exception carries.

``__all__`` is derived: the names above plus every entry's name as gathered
by the catalog (tests/diagnostics/test_codes.py checks each is exported once).
"""

from __future__ import annotations

from .catalog import CATALOG, lookup
from .catalog import ENTRY_NAMES as _ENTRY_NAMES

# Every entry by its name (D.WRONG_KIND): a range module binds no other public
# name (but WRONG_KIND_CONVERSIONS in cb2xx and SUPPORTED_DSL_VERSIONS in
# cb5xx), so each star import brings exactly its entries. Written out rather than looped so that type checkers see them.
from .codes.cb1xx import *  # noqa: F403
from .codes.cb2xx import *  # noqa: F403
from .codes.cb2xx import WRONG_KIND_CONVERSIONS
from .codes.cb3xx import *  # noqa: F403
from .codes.cb4xx import *  # noqa: F403
from .codes.cb5xx import *  # noqa: F403
from .codes.cb5xx import SUPPORTED_DSL_VERSIONS
from .codes.cb6xx import *  # noqa: F403
from .codes.cb7xx import *  # noqa: F403
from .codes.cb8xx import *  # noqa: F403
from .codes.cb9xx import *  # noqa: F403
from .errors import (
    CacheSettingError,
    CacheWarning,
    CudaLaunchError,
    CuteBindError,
    Diagnostic,
    DSLCompatibilityError,
    DSLVersionWarning,
    KernelCompileError,
    KernelDefinitionError,
    LaunchArgumentError,
    LaunchRuntimeError,
    LaunchValueError,
    PreparedLaunchError,
    SpecializationError,
    SpecializationWarning,
    did_you_mean,
    exception_summary,
    exception_text,
)
from .explain import render_entry, render_template
from .messages import error, format_message

__all__ = [
    "CATALOG",
    "Diagnostic",
    "error",
    "format_message",
    "lookup",
    "render_entry",
    "render_template",
    "SUPPORTED_DSL_VERSIONS",
    "WRONG_KIND_CONVERSIONS",
    *_ENTRY_NAMES,
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
