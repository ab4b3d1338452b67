"""The contract with the DSL's internals: what an installed version lacks, one line each.

``check_contract()`` lists the imports, classes and methods the package
reads (and, with ``deep``, compiles and calls a tiny host function to
exercise the instance-level ones); ``python -m cute_bind contract`` prints
it and ``tests/dsl/test_contract.py`` turns it into one clear failure per
missing piece. The first prepared launch of a process runs the check
(:func:`require_contract_once`): CB501 names what is missing; a version
outside :data:`~cute_bind.dsl.version.SUPPORTED_VERSIONS` that has it all runs
with a one-time CB503 warning.
"""

from __future__ import annotations

import ctypes
import warnings
from typing import Any, Callable

from .. import diagnostics as D
from .. import settings
from . import version as _version
from .compiled import add_unload_listener, entry_function, entry_point, is_unloaded, marshal, runtime_signature, unload
from .hooks import compile_jit
from .imports import _resolve, dsl
from .values import dsl_tensor, dsl_tensor_capsule, is_dsl_tensor, make_pointer, runtime_pointer_fields, tensor_layout
from .version import SUPPORTED_VERSIONS

__all__ = [
    "check_contract",
    "require_contract",
    "warn_untested_version",
    "require_contract_once",
]


#: What must import or exist without compiling anything: (owner, attribute),
#: the owner a dotted module path, optionally followed by a class name.
_REQUIRED: tuple[tuple[str, str], ...] = (
    ("cutlass.base_dsl.jit_executor", "JitCompiledFunction"),
    ("cutlass.base_dsl.jit_executor", "JitExecutor"),
    ("cutlass.base_dsl.jit_executor", "JitModule"),
    ("cutlass.base_dsl.jit_executor", "ExecutionArgs"),
    ("cutlass.base_dsl.jit_executor.ExecutionArgs", "generate_execution_args"),
    ("cutlass.base_dsl.jit_executor.JitCompiledFunction", "to"),
    ("cutlass.base_dsl.jit_executor.JitModule", "unload"),
    ("cutlass.cute.runtime", "_Pointer"),
    ("cutlass.cute.runtime", "make_ptr"),
    ("cutlass.cute.runtime", "_Tensor"),
    ("cutlass.cute.runtime", "from_dlpack"),
    ("cutlass", "Constexpr"),
    ("cutlass", "NumericMeta"),
    ("cutlass.cute", "Pointer"),
    ("cutlass.cute", "Tensor"),
    ("cutlass.cute", "compile"),
    ("cutlass.cute", "jit"),
    # the source rewriter's decorator rule, widened for cute_bind's own functions
    ("cutlass.base_dsl.ast_preprocessor.DSLPreprocessor", "transform_function"),
    ("cutlass.base_dsl.ast_preprocessor.DSLPreprocessor", "check_decorator"),
    # cute_bind.compile and the cute.compile hook (compile_call.py): the compile callable, its option parsing
    ("cutlass.base_dsl.compiler.CompileCallable", "__call__"),
    ("cutlass.base_dsl.compiler", "_parse_compile_options_from_str"),
)


def _static_problems() -> list[str]:
    problems = []
    for owner, attr in _REQUIRED:
        try:
            obj = _resolve(owner)
        except Exception as exc:
            problems.append(f"{owner}: cannot import ({type(exc).__name__}: {exc})")
            continue
        if not hasattr(obj, attr):
            problems.append(f"{owner}.{attr} is missing")
    return problems


def _runtime_problems() -> list[str]:
    """Compile a tiny host function and use every instance-level internal cute_bind reads.

    Each failing step is reported as ``what: error``; a step that depends on
    an earlier one that failed is skipped.
    """
    import numpy as np

    d = dsl()
    cutlass, cute = d.cutlass, d.cute
    problems: list[str] = []
    found: dict[str, Any] = {}

    def step(what: str, fn: Callable[[], object]) -> bool:
        try:
            fn()
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            problems.append(f"{what}: {type(exc).__name__}: {first[:200]}")
            return False
        return True

    # No annotations: this module's are strings (``from __future__ import
    # annotations``) naming locals the DSL cannot resolve; the values below
    # carry their types.
    @cute.jit
    def contract_probe(out, value, stream):  # type: ignore[no-untyped-def]  # unannotated on purpose (above)
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = value

    buf = np.zeros(1, np.int32)
    address = int(buf.ctypes.data)

    def compile_probe() -> None:
        found["ptr"] = make_pointer(cutlass.Int32, address, cute.AddressSpace.generic, 4)
        found["args"] = (found["ptr"], cutlass.Int32(7), d.cuda_driver.CUstream(0))
        found["compiled"] = compile_jit(contract_probe, *found["args"])  # one compile at a time, as every other

    if not step("cute.compile of a host-only function", compile_probe):
        return problems
    compiled = found["compiled"]

    def signature() -> None:
        names = runtime_signature(compiled).names
        if names != ("out", "value", "stream"):
            raise ValueError(f"ExecutionArgs._meta.all_names gave {names}")

    def pointer_fields() -> None:
        fields = runtime_pointer_fields(found["ptr"])
        if fields[:3] != (address, cutlass.Int32, cute.AddressSpace.generic):
            raise ValueError(f"_Pointer fields read {fields}")

    def marshal_and_call() -> None:
        addresses, keep = marshal(compiled, found["args"], {})
        if len(addresses) != 3 or ctypes.c_int32.from_address(addresses[1]).value != 7:
            raise ValueError("ExecutionArgs.generate_execution_args did not give one C pointer per argument")
        entry = entry_point(compiled, "contract_probe")
        if entry.result_ctype is not ctypes.c_int32:
            raise ValueError(f"JitExecutor.cuda_result is {entry.result_ctype}, not an int32 slot")
        result = ctypes.c_int32(0)
        argv = (ctypes.c_void_p * 4)(*addresses, ctypes.addressof(result))
        entry_function(entry.address)(ctypes.c_void_p(ctypes.addressof(argv)))
        del keep
        if int(buf[0]) != 7 or result.value != 0:
            raise ValueError(f"calling the entry point wrote {int(buf[0])} (result {result.value}), expected 7 (result 0)")
        found["entry"] = entry

    def tensor_layout_readable() -> None:
        t = dsl_tensor(np.zeros((3, 4), np.float32), None, "dynamic")
        layout = tensor_layout(t)
        if layout.text != "(?,?):(?{i64},1)" or not is_dsl_tensor(t) or dsl_tensor_capsule(t) is None:
            raise ValueError(f"from_dlpack tensor reads as {layout.text!r}")

    def unload_listener() -> None:
        fired: list[bool] = []
        module = found["entry"].module
        add_unload_listener(module, lambda: fired.append(True))
        unload(compiled)
        if fired != [True] or not is_unloaded(module):
            raise ValueError("JitModule.unload did not run the listener or set _unloaded")

    step("ExecutionArgs._meta (the runtime signature)", signature)
    step("runtime _Pointer fields (_desc, _dtype, _addr_space, _assumed_align)", pointer_fields)
    if step("marshalling and the entry point (generate_execution_args, capi_func, cuda_result, _kernel_ptrs)", marshal_and_call):
        step("JitModule.unload / _unloaded", unload_listener)
    step("from_dlpack tensors (__cache_key__, element_type, _dlpack_data)", tensor_layout_readable)
    return problems


def check_contract(deep: bool = False) -> list[str]:
    """What the installed DSL lacks, one line each (empty when all is present).

    The version number is not part of it: a version outside
    :data:`SUPPORTED_VERSIONS` that has everything passes (and runs with a
    CB503 warning). Without ``deep`` only what can be checked without
    compiling (imports, classes, methods); with ``deep`` (``python -m
    cute_bind contract``, the contract tests) a tiny host function is also
    compiled, marshalled, called through its entry point and unloaded, which
    exercises the instance-level internals (``ExecutionArgs._meta``,
    ``JitExecutor.cuda_result``/``_kernel_ptrs``, the runtime pointer and
    tensor fields, ``JitModule._unloaded``).
    """
    problems = _static_problems()
    if deep and not problems:
        problems = _runtime_problems()
    return problems


def require_contract() -> None:
    """Raise CB501 naming what the installed DSL lacks; warn (CB503, once) for an untested version that has it all."""
    problems = check_contract()
    if problems:
        raise D.error(D.DSL_INCOMPATIBLE, expected=SUPPORTED_VERSIONS, got=_version.dsl_version(), detail="; ".join(problems))
    warn_untested_version()


_WARNED_VERSION = False


def warn_untested_version() -> None:
    """The one-time CB503 warning for a version outside :data:`SUPPORTED_VERSIONS`."""
    global _WARNED_VERSION
    if _WARNED_VERSION or _version.version_supported():
        return
    _WARNED_VERSION = True
    warning = D.error(D.DSL_UNTESTED_VERSION, expected=SUPPORTED_VERSIONS, got=_version.dsl_version())
    if isinstance(warning, Warning):  # always: the entry's class is DSLVersionWarning
        warnings.warn(warning, stacklevel=3)


_CONTRACT_OK = False


def require_contract_once() -> None:
    """``require_contract()`` on the first prepared launch of the process (skip: CUTE_BIND_SKIP_DSL_CHECK=1)."""
    global _CONTRACT_OK
    if _CONTRACT_OK or settings.SKIP_DSL_CHECK.flag():
        return
    require_contract()
    _CONTRACT_OK = True
