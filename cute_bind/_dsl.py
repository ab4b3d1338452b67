"""The one module that touches nvidia-cutlass-dsl internals.

Everything cute_bind needs from the DSL beyond its public API goes through the
functions here: the execution-argument marshaller, the compiled entry point,
the executor's CUDA-result slot and extra packed arguments, the module's
unloaded flag, and the fields of runtime pointer objects. ``check_contract()``
lists what an installed version lacks; ``tests/dsl/test_contract.py`` turns
that into one clear failure per missing piece.

The DSL is imported lazily so that ``import cute_bind`` (and the static
checker) work on machines without it.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os
import re
import typing
import weakref
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from . import diagnostics as D

__all__ = [
    "SUPPORTED_VERSIONS",
    "dsl",
    "dsl_version",
    "check_contract",
    "EntryPoint",
    "entry_point",
]

#: The nvidia-cutlass-dsl versions cute_bind is tested with (mirrors pyproject.toml).
SUPPORTED_VERSIONS = ">=4.8.0,<4.9"
_SUPPORTED_MIN = (4, 8, 0)
_SUPPORTED_MAX_EXCLUSIVE = (4, 9, 0)


@dataclass(frozen=True)
class DSL:
    """The DSL's public modules and the private objects cute_bind uses."""

    cutlass: ModuleType
    cute: ModuleType
    cuda_driver: ModuleType
    runtime: ModuleType  # cutlass.cute.runtime
    typing: ModuleType  # cutlass.base_dsl.typing
    jit_executor: ModuleType  # cutlass.base_dsl.jit_executor
    runtime_pointer_class: type  # cutlass.cute.runtime._Pointer
    constexpr: Any  # cutlass.Constexpr
    numeric_meta: type  # cutlass.NumericMeta


@functools.lru_cache(maxsize=None)
def dsl() -> DSL:
    """Import the DSL once; raise CB502 when it is missing."""
    try:
        import cuda.bindings.driver as cuda_driver
        import cutlass
        import cutlass.base_dsl.jit_executor as jit_executor
        import cutlass.base_dsl.typing as dsl_typing
        import cutlass.cute as cute
        import cutlass.cute.runtime as runtime
    except ImportError as exc:
        raise D.error(D.DSL_MISSING, expected=f"nvidia-cutlass-dsl{SUPPORTED_VERSIONS}", detail=str(exc)) from exc
    return DSL(
        cutlass=cutlass,
        cute=cute,
        cuda_driver=cuda_driver,
        runtime=runtime,
        typing=dsl_typing,
        jit_executor=jit_executor,
        runtime_pointer_class=getattr(runtime, "_Pointer", type(None)),
        constexpr=getattr(cutlass, "Constexpr", None),
        numeric_meta=getattr(cutlass, "NumericMeta", type(None)),
    )


def dsl_available() -> bool:
    try:
        dsl()
    except Exception:
        return False
    return True


def dsl_version() -> str:
    try:
        return importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def version_supported(version: str | None = None) -> bool:
    v = _version_tuple(version or dsl_version())
    return _SUPPORTED_MIN <= v < _SUPPORTED_MAX_EXCLUSIVE


# ------------------------------------------------------------------ annotations
def is_constexpr(annotation: Any) -> bool:
    """``cutlass.Constexpr`` or ``cutlass.Constexpr[...]``."""
    c = dsl().constexpr
    if c is None:
        return False
    if annotation is c:
        return True
    if isinstance(annotation, type):
        try:
            return issubclass(annotation, c)
        except TypeError:
            return False
    return typing.get_origin(annotation) is c


def cute_pointer_class() -> type:
    return dsl().cute.Pointer  # type: ignore[no-any-return]


def cute_tensor_class() -> type:
    return dsl().cute.Tensor  # type: ignore[no-any-return]


def cuda_stream_class() -> type:
    return dsl().cuda_driver.CUstream  # type: ignore[no-any-return]


def is_numeric_type(annotation: Any) -> bool:
    return isinstance(annotation, dsl().numeric_meta)


def preprocessing_decorator(fn: Any) -> tuple[bool, str]:
    """Whether the DSL will rewrite ``fn``'s control flow, and the decorator it sees.

    The DSL's AST preprocessor only transforms a function whose innermost
    source decorator is an attribute named ``jit``/``kernel`` (optionally
    called with its own known options); this mirrors that rule.
    """
    import ast
    import inspect
    import textwrap

    if getattr(fn, "_decorator_kind", None) is not None:
        return True, "@cute.jit"
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False, "no source"
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.decorator_list:
        return False, "no decorator"
    last = node.decorator_list[-1]
    spelled = "@" + ast.unparse(last)
    call = last if isinstance(last, ast.Call) else None
    target = call.func if call is not None else last
    if not isinstance(target, ast.Attribute) or target.attr not in ("jit", "kernel"):
        return False, spelled
    if call is not None and any(k.arg not in ("preprocess", "attributes") for k in call.keywords):
        return False, spelled
    return True, spelled


# ------------------------------------------------------------------ runtime values
def is_runtime_pointer(value: Any) -> bool:
    """A pointer object made by ``cute.runtime.make_ptr``."""
    return isinstance(value, dsl().runtime_pointer_class)


def runtime_pointer_fields(value: Any) -> tuple[int, Any, Any, int]:
    """``(address, dtype, address_space, assumed_align)`` of a ``make_ptr`` pointer."""
    address = value._desc.value or 0
    return int(address), value._dtype, value._addr_space, int(value._assumed_align)


def make_pointer(dtype: Any, address: int, space: Any, align: int) -> Any:
    """A DSL pointer object, used only to compile (never on the launch path)."""
    return dsl().runtime.make_ptr(dtype, address, space, assumed_align=align)


# ------------------------------------------------------------------ runtime tensors
@dataclass(frozen=True)
class Mode:
    """One extent or stride of a compiled tensor layout.

    ``static`` is the compiled-in value, or ``None`` for a dynamic mode, which
    the memref descriptor stores as an integer of ``width`` bits and the
    compiled code assumes divisible by ``divisibility``.
    """

    static: int | None
    width: int = 32
    divisibility: int = 1


@dataclass(frozen=True)
class TensorLayout:
    """What a DSL tensor argument compiles in, read from the DSL tensor itself."""

    dtype: Any  # cutlass numeric type (the element type the function was compiled for)
    shape: tuple[Mode, ...]
    stride: tuple[Mode, ...]
    assumed_align: int | None
    text: str  # the DSL's own spelling, e.g. "(?,?):(?{i64},1)"
    cache_key: Any


def is_dsl_tensor(value: Any) -> bool:
    """A tensor made by ``cute.runtime.from_dlpack`` (its ``type()`` is the runtime class)."""
    return type(value) is getattr(dsl().runtime, "_Tensor", None)


def dsl_tensor(value: Any, align: int | None, layout: str | int) -> Any:
    """The DSL tensor for a DLPack value: ``from_dlpack`` plus the layout marking of a tensor annotation."""
    t = dsl().runtime.from_dlpack(value, assumed_align=align)
    if layout == "dynamic":
        t = t.mark_layout_dynamic()
    elif not isinstance(layout, str):
        t = t.mark_layout_dynamic(leading_dim=layout)
    return t


def dsl_tensor_capsule(value: Any) -> Any:
    """The DLPack capsule a ``from_dlpack`` tensor was made from."""
    return value._dlpack_data


_MODE = re.compile(r"^(?:(-?\d+)|\?(?:\{([^}]*)\})?)$")


def _parse_modes(text: str) -> tuple[Mode, ...]:
    inner = text.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        inner = f"({inner})"
    inner = inner[1:-1].strip()
    if "(" in inner or ")" in inner:
        raise ValueError(f"nested layout {text!r}")
    modes = []
    for token in filter(None, (t.strip() for t in inner.split(","))):
        m = _MODE.match(token)
        if m is None:
            raise ValueError(f"unrecognised layout mode {token!r}")
        if m.group(1) is not None:
            modes.append(Mode(int(m.group(1))))
            continue
        width, div = 32, 1
        for attr in (m.group(2) or "").split():
            if attr in ("i64", "i32"):
                width = int(attr[1:])
            elif attr.startswith("div="):
                div = int(attr[4:])
            else:
                raise ValueError(f"unrecognised layout attribute {attr!r}")
        modes.append(Mode(None, width, div))
    return tuple(modes)


def tensor_layout(value: Any) -> TensorLayout:
    """Parse the layout a DSL tensor compiles in from its cache key: ``"<space> o (shape):(stride)"``.

    Raises ``ValueError`` for a layout cute_bind cannot rewrite (nested modes).
    """
    key = value.__cache_key__
    text = str(key[2])
    layout = text[text.index("(") :] if "(" in text else text
    shape_text, _, stride_text = layout.partition(":")
    shape, stride = _parse_modes(shape_text), _parse_modes(stride_text)
    if len(shape) != len(stride):
        raise ValueError(f"layout {layout!r} has {len(shape)} extents and {len(stride)} strides")
    return TensorLayout(
        dtype=value.element_type,
        shape=shape,
        stride=stride,
        assumed_align=value._assumed_align,
        text=layout,
        cache_key=key,
    )


def entry_argument_types(obj: Any) -> list[str] | None:
    """The LLVM types of the compiled entry function's arguments, one per marshalled C argument.

    Read from the compiled module's IR (``ir_module``): a tensor argument is
    ``!llvm.struct<(ptr, struct<(i32, ...)>)>``, its dynamic extents and strides
    in order. ``None`` when the IR is not available (e.g. a function loaded
    from a binary).
    """
    module = getattr(obj, "ir_module", None)
    name = getattr(obj, "function_name", None)
    if module is None or not name:
        return None
    try:
        text = str(module)
    except Exception:
        return None
    head = f"llvm.func @{name}("
    start = text.find(head)
    if start < 0:
        return None
    i, depth, current, args = start + len(head), 0, "", []
    while i < len(text):
        ch = text[i]
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append(current)
            current = ""
        else:
            current += ch
        i += 1
    if current.strip():
        args.append(current)
    return [a.split(":", 1)[1].strip() if ":" in a else a.strip() for a in args]


def descriptor_fields(llvm_type: str) -> list[str]:
    """The scalar fields of an LLVM struct type, flattened: ``ptr``, ``i32``, ``i64``..."""
    return re.findall(r"\b(ptr|i\d+|f\d+)\b", llvm_type)


# ------------------------------------------------------------------ compiled functions
def is_compiled(obj: Any) -> bool:
    """``cute.compile`` result or its ``.to(device)`` executor."""
    je = dsl().jit_executor
    return isinstance(obj, (je.JitCompiledFunction, je.JitExecutor))


def is_executor(obj: Any) -> bool:
    return isinstance(obj, dsl().jit_executor.JitExecutor)


def execution_args_of(obj: Any) -> Any:
    if is_executor(obj):
        return obj.jit_module.execution_args
    return obj.execution_args


@dataclass(frozen=True)
class RuntimeSignature:
    """The runtime (non-constexpr) parameters of a compiled function."""

    names: tuple[str, ...]
    kwonly: tuple[str, ...]
    annotations: tuple[Any, ...]
    defaults: dict[str, Any]


def runtime_signature(obj: Any) -> RuntimeSignature:
    meta = execution_args_of(obj)._meta
    missing = getattr(execution_args_of(obj), "_missing", None)
    defaults: dict[str, Any] = {}
    for name, default in zip(meta.pos_names, meta.pos_defaults):
        if default is not missing:
            defaults[name] = default
    for name, default in zip(meta.kwonly_names, meta.kwonly_defaults):
        if default is not missing:
            defaults[name] = default
    return RuntimeSignature(
        names=tuple(meta.all_names),
        kwonly=tuple(meta.kwonly_names),
        annotations=tuple(meta.annotated_types),
        defaults=defaults,
    )


_MANGLED_SUFFIX = re.compile(r"_(?=Ptr|T?Float\d|BFloat|U?[Ii]nt\d|Boolean|_?CUstream|Tensor|Layout|$)")


def mangled_name(obj: Any) -> str:
    """The compiled entry's symbol: ``cutlass_<function>_<argument types...>``."""
    if is_executor(obj):
        return str(getattr(obj.jit_module.execution_args, "function_name", "compiled"))
    return str(getattr(obj, "function_name", "compiled"))


def tensor_symbol(layout: TensorLayout) -> str:
    """How the DSL spells a tensor argument in the entry's symbol: ``Tensor`` and the
    alphanumerics of its layout key (``generic o (?,?):(?{i64},1)`` -> ``Tensorgenericoi641``).
    The assumed alignment is not in it."""
    return "Tensor" + re.sub(r"[^0-9A-Za-z]", "", str(layout.cache_key[2]))


def function_name(obj: Any) -> str:
    """The Python name of a compiled function, recovered from the DSL's mangled symbol.

    The DSL names the entry ``cutlass_<function>_<argument types...>``; the
    argument-type suffix is cut at its first type token.
    """
    mangled = mangled_name(obj)
    name = mangled[len("cutlass_") :] if mangled.startswith("cutlass_") else mangled
    m = _MANGLED_SUFFIX.search(name)
    return name[: m.start()] if m and m.start() > 0 else name


def workspace_argument_count(obj: Any) -> int:
    return int(getattr(obj, "total_added_arguments", 0) or 0)


def marshal(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[int], list[Any]]:
    """Run the DSL's normal marshalling once.

    Returns the packed-argument addresses (one per C pointer) and the objects
    that own the storage they point to (to keep alive while bytes are read).
    """
    exe_args, adapted = execution_args_of(obj).generate_execution_args(args, kwargs)
    addresses = []
    for a in exe_args:
        if isinstance(a, ctypes.c_void_p):
            addresses.append(int(a.value or 0))
        else:
            addresses.append(int(a))
    return addresses, [exe_args, adapted]


@dataclass(frozen=True)
class EntryPoint:
    """What a prepared launch needs to call the compiled entry point itself."""

    address: int  # the packed-interface C function: void entry(void **args)
    result_ctype: type | None  # type of the CUDA-result slot, or None
    extra_pointers: tuple[int, ...]  # packed-array entries after the result slot
    module: Any  # the JIT module; holds the engine and the loaded CUDA library
    keepalive: tuple[Any, ...]


def entry_point(obj: Any, kernel: str | None = None) -> EntryPoint:
    """Resolve (and load, if needed) the entry point of a compiled function."""
    kernel = kernel or function_name(obj)
    if getattr(obj, "engine", True) is None:
        raise D.error(D.NO_ENGINE, kernel=kernel, expected="a compiled function with an engine", got="engine=None")
    try:
        executor = obj if is_executor(obj) else _default_executor(obj)
    except Exception as exc:  # e.g. no CUDA driver to load the device module on this machine
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise D.error(D.NO_ENGINE, kernel=kernel, expected="a module that loads on this machine", got=f"{type(exc).__name__}: {first[:160]}") from exc
    capi = executor.jit_module.capi_func
    if capi is None:
        raise D.error(D.NO_ENGINE, kernel=kernel, expected="an entry point", got="capi_func=None")
    address = ctypes.cast(capi, ctypes.c_void_p).value
    result = executor.cuda_result
    kernel_ptrs = executor._kernel_ptrs or ()
    extra = tuple(int((p.value or 0) if isinstance(p, ctypes.c_void_p) else p) for p in kernel_ptrs)
    return EntryPoint(
        address=int(address or 0),
        result_ctype=type(result) if result is not None else None,
        extra_pointers=extra,
        module=executor.jit_module,
        keepalive=(executor, obj),
    )


def entry_function(address: int) -> Any:
    """A ctypes function for the packed entry point ``void entry(void **args)`` at ``address``.

    No ``argtypes``: the caller passes a prebuilt ``c_void_p``, which ctypes
    hands over as is instead of converting an int through ``from_param`` on
    every call. ``restype`` None: the C function returns nothing (its i32
    result is written to the result slot, the last packed argument).
    """
    fn = ctypes.CFUNCTYPE(None)(address)
    fn.argtypes = None  # type: ignore[assignment]  # the stubs omit None, which ctypes documents
    return fn


def _default_executor(compiled: Any) -> Any:
    # The compiled function's own default executor shares its thread-local
    # packed array with direct calls; a prepared launch builds its own array,
    # so any executor of the same module will do. Reuse the default one when
    # it exists (no second module load), else create it the way a first
    # direct call would.
    executor = getattr(compiled, "_default_executor", None)
    if executor is None or is_unloaded(executor.jit_module):
        with compiled._executor_lock:
            executor = compiled.to(None)
            compiled._default_executor = executor
    return executor


def is_unloaded(module: Any) -> bool:
    return bool(getattr(module, "_unloaded", False))


def add_unload_listener(module: Any, listener: Any) -> None:
    """Call ``listener()`` after ``module.unload()`` runs (explicitly or from the DSL's ``__del__``).

    The DSL offers no unload hook, so the module instance's ``unload`` is
    wrapped once; the wrapper holds the module weakly to keep it collectable.
    """
    listeners = module.__dict__.get("_cute_bind_unload_listeners")
    if listeners is None:
        listeners = []
        module_ref = weakref.ref(module)
        original = type(module).unload

        def unload() -> None:
            m = module_ref()
            try:
                if m is not None:
                    original(m)
            finally:
                for fn in list(listeners):
                    fn()

        module._cute_bind_unload_listeners = listeners
        module.unload = unload
    listeners.append(listener)


def unload(obj: Any) -> None:
    """Unload the module of a compiled function (what the DSL does when it is collected)."""
    module = obj.jit_module
    if module is not None:
        module.unload()


def cuda_error_name(code: int) -> str:
    try:
        import cuda.bindings.runtime as rt

        return str(rt.cudaError_t(code).name)
    except Exception:
        return "unknown"


def cuda_device_count() -> int:
    """Number of CUDA devices the driver sees (0 without a driver)."""
    try:
        import cuda.bindings.driver as drv

        (err,) = drv.cuInit(0)
        if int(err) != 0:
            return 0
        err, count = drv.cuDeviceGetCount()
        return int(count) if int(err) == 0 else 0
    except Exception:
        return 0


def target_arch() -> str | None:
    """The architecture a compile targets now (hardware is consulted here, not at decoration)."""
    arch = os.environ.get("CUTE_DSL_ARCH")
    if arch:
        return arch
    try:
        import cuda.bindings.driver as drv

        (err,) = drv.cuInit(0)
        if int(err) != 0:
            return None
        err, dev = drv.cuCtxGetDevice()
        if int(err) != 0:
            err, dev = drv.cuDeviceGet(0)
            if int(err) != 0:
                return None
        err, major = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        err2, minor = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        if int(err) or int(err2):
            return None
        return f"sm_{major}{minor}"
    except Exception:
        return None


# ------------------------------------------------------------------ contract
_REQUIRED: tuple[tuple[str, str], ...] = (
    ("cutlass.base_dsl.jit_executor", "JitCompiledFunction"),
    ("cutlass.base_dsl.jit_executor", "JitExecutor"),
    ("cutlass.base_dsl.jit_executor", "ExecutionArgs"),
    ("cutlass.base_dsl.jit_executor.ExecutionArgs", "generate_execution_args"),
    ("cutlass.base_dsl.jit_executor.JitCompiledFunction", "to"),
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
)


def check_contract() -> list[str]:
    """What the installed DSL lacks, one line each (empty when all is present).

    Static attributes are checked here; the dynamic parts (the executor's
    ``cuda_result`` and ``_kernel_ptrs``, the execution args' ``_meta``, the
    pointer object's ``_desc``/``_dtype``/``_addr_space``/``_assumed_align``)
    are exercised by compiling a tiny host function in the contract tests.
    """
    import importlib

    problems = []
    if not version_supported():
        problems.append(f"version {dsl_version()} is outside the tested range")
    for owner, attr in _REQUIRED:
        module_name, _, rest = owner.partition(".base_dsl.jit_executor.")
        try:
            if rest:
                obj: Any = getattr(importlib.import_module("cutlass.base_dsl.jit_executor"), rest)
            else:
                obj = importlib.import_module(owner)
        except Exception as exc:
            problems.append(f"{owner}: cannot import ({exc})")
            continue
        if not hasattr(obj, attr):
            problems.append(f"{owner}.{attr} is missing")
    return problems


def require_contract() -> None:
    """Raise CB501 naming what the installed DSL lacks."""
    problems = check_contract()
    if problems:
        raise D.error(D.DSL_INCOMPATIBLE, expected=SUPPORTED_VERSIONS, got=dsl_version(), detail="; ".join(problems))


_CONTRACT_OK = False


def require_contract_once() -> None:
    """``require_contract()`` on the first prepared launch of the process (skip: CUTE_BIND_SKIP_DSL_CHECK=1)."""
    global _CONTRACT_OK
    if _CONTRACT_OK or os.environ.get("CUTE_BIND_SKIP_DSL_CHECK", "") not in ("", "0"):
        return
    require_contract()
    _CONTRACT_OK = True


# ------------------------------------------------------------------ benchmark support
def bare_call(compiled: Any, args: tuple[Any, ...]) -> tuple[Any, Any, int, Any, Any]:
    """The floor a launch through the DSL's engine can reach, for the benchmark.

    Returns ``(entry, packed, address, raw_entry, raw_arg)``: the DSL's own
    ctypes entry point and a packed ``void**`` array populated once by the
    DSL's own marshalling for ``args`` (plus the address of that array);
    ``entry(packed)`` is the call exactly as the DSL makes it and
    ``entry(address)`` the same with the address precomputed. ``raw_entry(raw_arg)``
    is the same C function through the cheapest ctypes form (no argtypes,
    a prebuilt ``c_void_p``), the form ``PreparedLaunch.launch`` uses.
    The returned objects keep the marshalled storage alive.
    """
    executor = _default_executor(compiled)
    exe_args, adapted = execution_args_of(compiled).generate_execution_args(args, {})
    packed = executor._get_invoke_packed_args(exe_args)
    # a private copy, so later direct calls (which reuse the executor's
    # thread-local array) cannot change what the bare call passes
    own = (ctypes.c_void_p * len(packed))(*packed)
    own._cute_bind_keepalive = (exe_args, adapted, executor)  # type: ignore[attr-defined]
    raw = entry_function(ctypes.cast(executor.capi_func, ctypes.c_void_p).value or 0)
    return executor.capi_func, own, ctypes.addressof(own), raw, ctypes.c_void_p(ctypes.addressof(own))


def is_tvm_ffi_compiled(obj: Any) -> bool:
    return "tvm_ffi" in type(obj).__module__


def raw_kernel_function(compiled: Any) -> tuple[Any, list[int]] | None:
    """The CUfunction of the single device kernel in a compiled function's CUDA library, for the benchmark.

    Returns ``(function, param_sizes)`` so a ``cuLaunchKernel`` of the very
    same kernel can be timed beside the DSL's paths, or ``None`` when the
    library does not hold exactly one kernel.
    """
    import cuda.bindings.driver as drv

    executor = _default_executor(compiled)
    libraries = list(getattr(executor.jit_module, "cuda_library", []) or [])
    if len(libraries) != 1:
        return None
    library = drv.CUlibrary(int(libraries[0]))
    err, count = drv.cuLibraryGetKernelCount(library)
    if int(err) != 0 or count != 1:
        return None
    err, kernels = drv.cuLibraryEnumerateKernels(count, library)
    if int(err) != 0:
        return None
    err, function = drv.cuKernelGetFunction(kernels[0])
    if int(err) != 0:
        return None
    sizes = []
    for i in range(64):
        err, _offset, size = drv.cuFuncGetParamInfo(function, i)
        if int(err) != 0:
            break
        sizes.append(int(size))
    return function, sizes


# ------------------------------------------------------------------ disk cache support
# What the compile cache (cute_bind/cache/) needs from the DSL: the function
# the DSL traces behind a decorator, whether a module is the DSL's own, an
# identity of the installed compiler, and the export/reload of a compiled
# function as an object file (``export_to_c`` + ``cutlass.runtime.load_module``).
_DSL_MODULE_ROOTS = frozenset({"cutlass", "cuda", "cutlass_dsl", "nvidia_cutlass_dsl", "_mlir", "tvm_ffi"})


def traced_functions(obj: Any) -> list[Any]:
    """The plain Python functions a ``@cute.jit``/``@cute.kernel`` (or any ``functools.wraps``) wrapper stands for.

    The DSL's decorators return a wrapper that records ``_decorator_kind`` and
    keeps the decorated function as ``__wrapped__``; the DSL preprocesses and
    traces that function's source. Every plain function along the
    ``__wrapped__`` chain is returned (a user's own wrapper runs too), the
    DSL's own wrappers are left out; empty when ``obj`` is no function.
    """
    import inspect

    chain: list[Any] = []
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


def _is_dsl_code(code: Any) -> bool:
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


def source_code(fn: Any) -> Any:
    """The code object of ``fn`` as written: the DSL's preprocessor replaces ``fn.__code__`` with its
    rewrite on the first compile and keeps the original as ``_original_code``."""
    return getattr(fn, "_original_code", None) or fn.__code__


# The cache's DSL internals, checked with the rest (appended here so the table above stays as it was).
_REQUIRED = _REQUIRED + (
    ("cutlass.runtime", "load_module"),
    ("cutlass.base_dsl.jit_executor.JitCompiledFunction", "dump_to_object"),
)
