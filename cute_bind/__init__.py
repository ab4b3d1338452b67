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
    KernelCompileError,
    DSLVersionWarning,
    KernelDefinitionError,
    LaunchArgumentError,
    LaunchRuntimeError,
    LaunchValueError,
    OptionalDependencyError,
    PreparedLaunchError,
    SpecializationError,
    SpecializationWarning,
)
from . import cache as cache  # cute_bind.cache.warm(...), the disk compile cache
from .jit import Kernel, check_function, kernel
from .launch import PreparedLaunch, prepare
from .cache import compile  # cute.compile through the disk cache (cute_bind.cache.install() for every cute.compile)
from . import graph as _graph_package  # noqa: F401  (the package first: the name below is its recording function)
from .graph import Graph, graph
from ._types import Pointer, PointerSpec, Tensor, TensorSpec
from . import torch as torch  # cute_bind.torch.op(...); imports torch itself only when an op is made

cache.cute_compile.PREPARE[:] = [prepare]  # a cached compile's .prepare() (the cache package imports no launch code)

__version__ = "0.3.0"

__all__ = [
    "CacheSettingError",
    "CacheWarning",
    "CATALOG",
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
]

# Public names report the package users import them from, so no repr, message
# or traceback names a private module path (``cute_bind.launch.prepared.PreparedLaunch``).
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj) and hasattr(_obj, "__module__"):
        _obj.__module__ = __name__
del _name, _obj

if cache.settings.compile_hook():  # CUTE_BIND_COMPILE_HOOK=1: every cute.compile of the process through the cache
    cache.install()
