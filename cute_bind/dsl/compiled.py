"""Compiled functions (``cute.compile``'s result and its ``.to(device)`` executors): their
runtime signature and names, the DSL's marshalling, the packed entry point a prepared launch
calls, the module's unload, and the bare call the benchmark measures against.
"""

from __future__ import annotations

import ctypes
import re
import weakref
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from .. import diagnostics as D
from .imports import dsl
from .values import TensorLayout, tensor_layout

__all__ = [
    "Compiled",
    "is_compiled",
    "is_executor",
    "direct_call_tensor_layout",
    "compiled_from_dsl_values",
    "execution_args_of",
    "RuntimeSignature",
    "runtime_signature",
    "mangled_name",
    "function_name",
    "workspace_argument_count",
    "marshal",
    "EntryPoint",
    "entry_point",
    "entry_function",
    "is_unloaded",
    "add_unload_listener",
    "unload",
    "BareCall",
    "bare_call",
    "raw_kernel_function",
    "compiled_display_name",
]


#: A compiled function as the rest of cute_bind holds it: ``cute.compile``'s result, its ``.to(device)``
#: executor, a TVM-FFI function. Their classes are the DSL's own (untyped); outside this package one is
#: only called, compared and handed back to the functions here, which read it.
Compiled = Callable[..., object]


def is_compiled(obj: object) -> bool:
    """``cute.compile`` result or its ``.to(device)`` executor."""
    je = dsl().jit_executor
    return isinstance(obj, (je.JitCompiledFunction, je.JitExecutor))


def is_executor(obj: object) -> bool:
    return isinstance(obj, dsl().jit_executor.JitExecutor)


def direct_call_tensor_layout(compiled: object, value: object) -> TensorLayout | None:
    """The layout the direct call of ``compiled`` reads a plain tensor ``value`` as, or ``None``
    when it does not read it through the DSL's own tensor adapter.

    The direct call (``ExecutionArgs.generate_execution_args``) converts a
    value without ``__c_pointers__`` with the JIT argument adapter registered
    for its type, in the compiled function's adapter scope; for torch tensors,
    NumPy arrays and JAX arrays that is ``cute.runtime.TensorAdapter``, which
    is ``from_dlpack(value).mark_layout_dynamic()``: the value's own leading
    dimension, every other stride and every extent dynamic, the element's
    alignment. Replicated here with the same two calls.
    """
    if hasattr(value, "__c_pointers__"):
        return None
    runtime = dsl().runtime
    adapter_class = getattr(runtime, "TensorAdapter", None)
    try:
        from cutlass.base_dsl.runtime.jit_arg_adapters import JitArgAdapterRegistry

        scope = getattr(execution_args_of(compiled), "_jit_arg_adapter_scope", None)
        adapter = JitArgAdapterRegistry.call_with_scope(scope, JitArgAdapterRegistry.get_registered_adapter, value)
    except Exception:  # no registry or scopes in this version: nothing to replicate
        return None
    if adapter_class is None or adapter is not adapter_class:
        return None
    try:
        return tensor_layout(runtime.from_dlpack(value).mark_layout_dynamic())
    except Exception:  # the direct call would fail on it too
        return None


def compiled_from_dsl_values(compiled: object) -> bool | None:
    """What the DSL recorded of the values ``compiled`` was compiled from: ``True`` when every
    runtime argument was a value its C header generator spells (``from_dlpack`` and fake
    tensors, numbers, pointers, streams), ``False`` when one was not (a plain torch tensor,
    which the compile read with the DSL's tensor adapter), ``None`` when nothing was recorded.

    The DSL generates the AOT C header arguments from the compile's runtime
    arguments when it makes the compiled function
    (``JitCompiledFunction._generate_c_header_arguments``) and keeps only the
    result or the error (``CHeaderArguments.error_msg``), never the values.
    """
    if is_executor(compiled):
        return None
    header = getattr(compiled, "c_header_arguments", None)
    if header is None or not hasattr(header, "error_msg"):
        return None
    return header.error_msg is None


def execution_args_of(obj: Any) -> Any:
    if is_executor(obj):
        return obj.jit_module.execution_args
    return obj.execution_args


@dataclass(frozen=True)
class RuntimeSignature:
    """The runtime (non-constexpr) parameters of a compiled function."""

    names: tuple[str, ...]
    kwonly: tuple[str, ...]
    annotations: tuple[object, ...]
    defaults: dict[str, object]


def runtime_signature(obj: object) -> RuntimeSignature:
    meta = execution_args_of(obj)._meta
    missing = getattr(execution_args_of(obj), "_missing", None)
    defaults: dict[str, object] = {}
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


_CIFACE_PREFIX = re.compile(r"^_mlir_\w*?__mlir_ciface_")


def mangled_name(obj: Any) -> str:
    """The compiled entry's symbol: ``cutlass_<function>_<argument types...>``."""
    if is_executor(obj):
        return str(getattr(obj.jit_module.execution_args, "function_name", "compiled"))
    return str(getattr(obj, "function_name", "compiled"))


def function_name(obj: object) -> str:
    """The Python name of a compiled function, recovered from the DSL's mangled symbol.

    The DSL names the entry ``cutlass_<function>_<argument types...>``; the
    argument-type suffix is cut at its first type token.
    """
    # a function loaded from an object file carries its module's C-interface prefix
    # (``_mlir_<module>__mlir_ciface_cutlass_...``): the user's name is after it
    mangled = _CIFACE_PREFIX.sub("", mangled_name(obj))
    name = mangled[len("cutlass_") :] if mangled.startswith("cutlass_") else mangled
    m = _MANGLED_SUFFIX.search(name)
    return name[: m.start()] if m and m.start() > 0 else name


def workspace_argument_count(obj: object) -> int:
    return int(getattr(obj, "total_added_arguments", 0) or 0)


def marshal(obj: object, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[list[int], list[object]]:
    """Run the DSL's normal marshalling once.

    Returns the packed-argument addresses (one per C pointer) and the objects
    that own the storage they point to (to keep alive while bytes are read):
    the DSL's execution arguments and adapted values, and the arguments
    themselves, whose memory (a tensor's descriptor, a capsule) an address
    may point into.
    """
    exe_args, adapted = execution_args_of(obj).generate_execution_args(args, kwargs)
    addresses = []
    for a in exe_args:
        if isinstance(a, ctypes.c_void_p):
            addresses.append(int(a.value or 0))
        else:
            addresses.append(int(a))
    return addresses, [exe_args, adapted, args, kwargs]


@dataclass(frozen=True)
class EntryPoint:
    """What a prepared launch needs to call the compiled entry point itself."""

    address: int  # the packed-interface C function: void entry(void **args)
    result_ctype: type | None  # type of the CUDA-result slot, or None
    extra_pointers: tuple[int, ...]  # packed-array entries after the result slot
    module: Any  # the JIT module; holds the engine and the loaded CUDA library
    keepalive: tuple[object, ...]


def entry_point(obj: Any, kernel: str | None = None) -> EntryPoint:
    """Resolve (and load, if needed) the entry point of a compiled function."""
    kernel = kernel or function_name(obj)
    if getattr(obj, "engine", True) is None:
        raise D.error(D.NO_ENGINE, kernel=kernel, expected="a compiled function with an engine", got="engine=None")
    try:
        executor = obj if is_executor(obj) else _default_executor(obj)
    except Exception as exc:  # e.g. no CUDA driver to load the device module on this machine
        raise D.error(D.NO_ENGINE, kernel=kernel, expected="a module that loads on this machine", got=D.exception_summary(exc)) from exc
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


def entry_function(address: int) -> Callable[[ctypes.c_void_p], None]:
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


def is_unloaded(module: object) -> bool:
    return bool(getattr(module, "_unloaded", False))


def add_unload_listener(module: Any, listener: Callable[[], object]) -> None:
    """Call ``listener()`` after ``module.unload()`` runs (explicitly or from the DSL's ``__del__``).

    The module instance's ``unload`` is wrapped once, on every supported
    version; the wrapper holds the module weakly to keep it collectable.
    DSL 4.8's ``register_library_unload_callback`` is not used: it is one
    process-wide list keyed by CUDA library handle, called before the library
    goes, and never for host-only modules (no library), so it would need this
    wrapper beside it anyway (``Features.unload_callback`` records it).
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


class BareCall(NamedTuple):
    """What :func:`bare_call` returns (see there); the objects keep the marshalled storage alive."""

    entry: Callable[..., object]  # the DSL's ctypes entry point
    packed: ctypes.Array[ctypes.c_void_p]
    address: int
    raw_entry: Callable[[ctypes.c_void_p], None]
    raw_arg: ctypes.c_void_p


def bare_call(compiled: Any, args: tuple[object, ...]) -> BareCall:
    """The floor a launch through the DSL's engine can reach, for the benchmark.

    Returns a :class:`BareCall` ``(entry, packed, address, raw_entry, raw_arg)``: the DSL's own
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
    own._cute_bind_keepalive = (exe_args, adapted, executor)  # type: ignore[attr-defined]  # ctypes instances take attributes
    raw = entry_function(ctypes.cast(executor.capi_func, ctypes.c_void_p).value or 0)
    return BareCall(executor.capi_func, own, ctypes.addressof(own), raw, ctypes.c_void_p(ctypes.addressof(own)))


def raw_kernel_function(compiled: Any) -> tuple[object, list[int]] | None:
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


# The DSL appends each argument's spelling to the function name (``mangle_name``):
# besides the type tokens ``function_name`` knows, a callable object's ``self``
# (``<pkg.Cls object at 0x...>`` spelled ``pkgCls_object_at_``), fake tensors and
# streams, ``None`` and Constexpr values.
_MANGLED_EXTRA = re.compile(r"_(?=[A-Za-z0-9]*_object_at_|Fake(?:Tensor|Stream)|None(?:_|$)|True(?:_|$)|False(?:_|$))")


def compiled_display_name(obj: object) -> str:
    """The Python name of a compiled function for messages (``__call__`` for a callable object's).

    The entry's symbol is only a display source here: nothing is checked
    against it (it is cut at 180 characters).
    """
    name = function_name(obj)
    m = _MANGLED_EXTRA.search(name)
    return name[: m.start()] if m and m.start() > 0 else name
