"""What the disk compile cache (``cute_bind/cache/``) needs from the DSL.

The functions the DSL traces behind a decorator and their code as written,
whether a module is the DSL's own, an identity of the installed compiler, and
the export/reload of a compiled function as an object file (``export_to_c`` +
``cutlass.runtime.load_module``). Whether this DSL has those at all is
``features().disk_cache``.
"""

from __future__ import annotations

import functools
import os
import weakref
from types import CodeType, FunctionType
from typing import Any

from . import hooks
from .compiled import is_compiled, is_executor
from .imports import dsl
from .tvm_ffi import is_tvm_ffi_compiled
from .version import dsl_version

__all__ = [
    "traced_functions",
    "is_dsl_module_name",
    "compiler_identity",
    "export_object",
    "load_object",
    "is_loaded_from_binary",
    "source_code",
]


# What the compile cache (cute_bind/cache/) needs from the DSL: the function
# the DSL traces behind a decorator, whether a module is the DSL's own, an
# identity of the installed compiler, and the export/reload of a compiled
# function as an object file (``export_to_c`` + ``cutlass.runtime.load_module``).
_DSL_MODULE_ROOTS = frozenset({"cutlass", "cuda", "cutlass_dsl", "nvidia_cutlass_dsl", "_mlir", "tvm_ffi"})


def traced_functions(obj: object) -> list[FunctionType]:
    """The plain Python functions a ``@cute.jit``/``@cute.kernel`` (or any ``functools.wraps``) wrapper stands for.

    The DSL's decorators return a wrapper that records ``_decorator_kind`` and
    keeps the decorated function as ``__wrapped__``; the DSL preprocesses and
    traces that function's source. Every plain function along the
    ``__wrapped__`` chain is returned (a user's own wrapper runs too), the
    DSL's own wrappers are left out; empty when ``obj`` is no function.
    """
    import inspect

    chain: list[FunctionType] = []
    for _ in range(16):
        if inspect.isfunction(obj) and not _is_dsl_code(obj.__code__):
            chain.append(obj)
        inner = getattr(obj, "__wrapped__", None)
        if inner is None:
            break
        obj = inner
    return chain


@functools.lru_cache(maxsize=None)
def _dsl_install_root() -> str:
    try:
        return os.path.dirname(os.path.dirname(os.path.abspath(str(dsl().cutlass.__file__))))
    except Exception:
        return "\0"


def _is_dsl_code(code: CodeType) -> bool:
    """Code of the DSL's own functions (its decorators' wrappers): located in its installation."""
    return bool(os.path.abspath(code.co_filename).startswith(_dsl_install_root() + os.sep))


def is_dsl_module_name(name: str) -> bool:
    """Whether a module belongs to the DSL or its runtime (its code is covered by the DSL's identity)."""
    return name.partition(".")[0] in _DSL_MODULE_ROOTS


@functools.lru_cache(maxsize=None)
def compiler_identity() -> tuple[str, ...]:
    """What identifies the installed compiler beyond the code being compiled.

    The DSL's version (``cutlass.__version__``, read without a metadata scan)
    and the names of the folders of the ``nvidia_cutlass_dsl`` installation,
    which name its CUDA variant (``cu12``, ``cu13``): two installations with
    the same version number but another CUDA build must not share entries.
    """
    try:
        cutlass = dsl().cutlass
    except Exception:
        return ("no-dsl",)
    version = str(getattr(cutlass, "__version__", "") or dsl_version())
    variant: list[str] = []
    try:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(str(cutlass.__file__)))))
        if os.path.basename(root) == "nvidia_cutlass_dsl":
            variant = sorted(n for n in os.listdir(root) if not n.startswith(("_", ".")))
    except OSError:
        pass
    return (version, *variant)


def export_object(compiled: Any, prefix: str) -> bytes:
    """The compiled function as a relocatable object file (what ``export_to_c`` writes), symbols prefixed ``prefix``.

    ``dump_to_object`` is the part of ``export_to_c`` that makes the object
    (the device binary embedded in it); the C header ``export_to_c`` also
    writes is not needed to load it back, and cannot be generated for some
    arguments (tuples), so it is skipped. Raises whatever the DSL raises when
    the function cannot be exported (e.g. a TVM-FFI function, or one compiled
    by a backend without an engine).
    """
    if is_executor(compiled) or is_tvm_ffi_compiled(compiled) or not hasattr(compiled, "dump_to_object"):
        # a TVM-FFI function exports, but loads back only as a tvm_ffi.Function: not the same function
        raise TypeError(f"{type(compiled).__name__} cannot be exported and loaded back as the same kind of function")
    with hooks._COMPILE_LOCK:  # LLVM code generation again, under the DSL's process-wide state
        return bytes(compiled.dump_to_object(prefix))


def load_object(path: str, prefix: str) -> Any:
    """Load an object file written by :func:`export_object` and return its compiled function.

    The result is the same kind of compiled function ``cute.compile`` returns
    (``ir_module`` is ``None``: it was loaded from a binary); binding and
    launching it go through the same entry point and marshalling.
    """
    import cutlass.runtime as cutlass_runtime  # the DSL's public loader of exported objects

    module = cutlass_runtime.load_module(path, enable_tvm_ffi=False)
    function = getattr(module, prefix)
    if not is_compiled(function):
        raise TypeError(f"the loaded module holds a {type(function).__name__}, not a compiled function")
    # The function's engine owns the loaded code; the module object only wraps it.
    try:
        function._cute_bind_loaded_module = module
    except AttributeError:
        pass
    return function


def is_loaded_from_binary(obj: Any) -> bool:
    """Whether a compiled function was loaded from an exported object (it has no IR)."""
    target = obj.jit_module if is_executor(obj) else obj
    return getattr(target, "ir_module", "absent") is None


# The code objects of functions as cute_bind first saw them (weakly keyed by the function).
_FIRST_CODE: weakref.WeakKeyDictionary[object, CodeType] = weakref.WeakKeyDictionary()


def source_code(fn: Any) -> CodeType:
    """The code object of ``fn`` as written.

    The DSL's preprocessor replaces ``fn.__code__`` with its rewrite on the
    first compile (of ``fn`` or of a function that calls it). 4.8 keeps the
    original as ``_original_code`` on the functions it compiles; 4.5 to 4.7
    keep nothing, and no version does for the helpers a function calls. So the
    code seen the first time a function is asked about is remembered: the disk
    cache's key asks before compiling, so it hashes what was written, in every
    process alike. (A function the DSL rewrote before cute_bind ever saw it,
    with no ``_original_code``, is hashed as rewritten: stable within a process
    and across processes that do the same, only not equal to a fresh
    process's key.)
    """
    original: CodeType | None = getattr(fn, "_original_code", None)
    if original is not None:
        return original
    code: CodeType = fn.__code__
    try:
        return _FIRST_CODE.setdefault(fn, code)
    except TypeError:  # not weak-referenceable: nothing rewrites it behind our back
        return code
