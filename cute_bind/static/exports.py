"""The names ``from cute_bind import *`` binds, as data.

A star import of ``cute_bind`` binds exactly ``cute_bind.__all__``; the static
tools need that list to know which names such an import provides (a name it
does not export comes from an earlier star import). Reading ``__all__`` would
import the whole runtime into the checker, the mypy plugin and the language
server, whose packages sit just above ``diagnostics`` and ``_whitelist``
(docs/concepts/architecture.md); so the list is kept here, and
``tests/static/test_exports.py`` fails when it and ``cute_bind.__all__`` differ.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PUBLIC_NAMES"]

#: ``cute_bind.__all__``, as a set.
PUBLIC_NAMES: Final[frozenset[str]] = frozenset(
    {
        "CATALOG",
        "CacheSettingError",
        "CacheWarning",
        "CudaLaunchError",
        "CuteBindError",
        "DSLCompatibilityError",
        "DSLVersionWarning",
        "Diagnostic",
        "Graph",
        "Kernel",
        "KernelCompileError",
        "KernelDefinitionError",
        "LaunchArgumentError",
        "LaunchRuntimeError",
        "LaunchValueError",
        "OptionalDependencyError",
        "Pointer",
        "PointerSpec",
        "PreparedLaunch",
        "PreparedLaunchError",
        "SpecializationError",
        "SpecializationWarning",
        "Tensor",
        "TensorSpec",
        "__version__",
        "check_function",
        "compile",
        "error",
        "graph",
        "kernel",
        "lookup",
        "prepare",
    }
)
