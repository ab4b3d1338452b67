"""cute_bind: prepared launches for CuTe DSL functions.

Decorate a CuTe DSL host function with :func:`kernel`, ``bind()`` it once and
replay it with :meth:`PreparedLaunch.launch`, which rewrites argument storage
in place and calls the compiled entry point directly. Every error is a typed
diagnostic from :data:`CATALOG` (``python -m cute_bind explain CB204``).
"""

from __future__ import annotations

from .diagnostics import CATALOG, Diagnostic, error, lookup
from .diagnostics.errors import (
    CacheSettingError,
    CacheWarning,
    CudaLaunchError,
    CuteBindError,
    DSLCompatibilityError,
    KernelDefinitionError,
    LaunchArgumentError,
    LaunchRuntimeError,
    LaunchValueError,
    PreparedLaunchError,
)
from . import cache
from .jit import Kernel, check_function, kernel
from .launch import PreparedLaunch, prepare
from ._types import Pointer, PointerSpec, Tensor, TensorSpec

__version__ = "0.2.0"

__all__ = [
    "CacheSettingError",
    "CacheWarning",
    "CATALOG",
    "CudaLaunchError",
    "CuteBindError",
    "DSLCompatibilityError",
    "Diagnostic",
    "Kernel",
    "KernelDefinitionError",
    "LaunchArgumentError",
    "LaunchRuntimeError",
    "LaunchValueError",
    "Pointer",
    "PointerSpec",
    "PreparedLaunch",
    "PreparedLaunchError",
    "Tensor",
    "TensorSpec",
    "__version__",
    "check_function",
    "error",
    "kernel",
    "lookup",
    "prepare",
]
