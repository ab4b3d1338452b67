"""What ``cute_bind.compile`` and the ``cute.compile`` hook (cute_bind/cache/compile.py) read of ``cute.compile``.

``cute.compile`` is an instance of the DSL's ``CompileCallable``;
``cute.compile[opts]`` makes another one holding ``opts`` as a
``CompileOptions``, and ``options="--enable-tvm-ffi ..."`` replaces those
with the parsed string (keeping two selectors). This module gives the cache
that reading without calling into it twice:

- :func:`compile_callable` (the instance ``cute.compile`` is) and
  :func:`call_original` (its own compile, never the hook);
- :func:`resolved_options`: the ``CompileOptions`` one call would compile
  with, spelled as plain data, whether it makes a TVM-FFI function, and which
  options write files besides the function (``--keep-ptx``, ``--dump-dir``...:
  such a compile is never served from the cache, the files would be missing);
- :func:`compile_target`: what the DSL traces for ``fn`` (a function, a bound
  method's function and its object, a callable object's ``__call__``);
- :func:`argument_spelling`: a compile argument the DSL reads through its own
  types (fake and ``from_dlpack`` tensors, pointers, ``SymInt`` scalars,
  streams, values its argument adapters convert) as plain data; ``None`` for
  any other value (the cache key spells it as data, or refuses it);
- :func:`install_compile_hook` / :func:`remove_compile_hook`: route every
  ``CompileCallable.__call__`` (every ``cute.compile`` and
  ``cute.compile[...]`` of the process) through one function;
- :func:`export_tvm_ffi_object` / :func:`load_tvm_ffi_object`: a TVM-FFI
  function's object file (what ``export_to_c`` writes) and its reload as a
  ``tvm_ffi.Function``; :func:`tvm_ffi_call_spec` and :func:`tvm_ffi_caller`:
  how the DSL's own call of such a function maps keyword arguments and
  defaults, so a reloaded one is called the same way.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import tempfile
import threading
from types import ModuleType
from typing import Any, Callable

from . import hooks
from .imports import dsl
from .placeholders import CompileOnly, fake_stream_spelling, fake_tensor_spelling, is_fake_stream, is_fake_tensor
from .tvm_ffi import is_tvm_ffi_compiled

__all__ = [
    "ResolvedOptions",
    "argument_spelling",
    "call_original",
    "compile_callable",
    "compile_callable_options",
    "compile_target",
    "compiling_inside_cute_bind",
    "export_tvm_ffi_object",
    "hook_installed",
    "install_compile_hook",
    "load_tvm_ffi_object",
    "remove_compile_hook",
    "resolved_options",
    "side_effect_environment",
    "tvm_ffi_call_spec",
    "tvm_ffi_caller",
]


def _compiler_module() -> ModuleType:
    return importlib.import_module("cutlass.base_dsl.compiler")  # the DSL's CompileCallable and CompileOptions


def compile_callable() -> Any:
    """The ``CompileCallable`` instance ``cute.compile`` is."""
    return dsl().cute.compile


def compile_callable_options(callable_: Any) -> Any:
    """The ``CompileOptions`` a ``cute.compile[...]`` instance holds (``cute.compile`` itself: the defaults)."""
    return callable_._compile_options


#: options whose compile writes files (or records diagnostics) besides the function: a compile with one on
#: is never served from the cache, since a loaded entry would not write them
_SIDE_EFFECT_OPTIONS = frozenset(
    {
        "KeepCUBIN",
        "KeepPTX",
        "KeepSASS",
        "DumpDir",
        "FlattenLocsOutputJsonPath",
        "RemarkOutput",
        "DeviceTarget",
        "CollectCompilerDiagnostics",
    }
)


class ResolvedOptions:
    """The options one ``cute.compile`` call compiles with: ``spelling`` (every option's class name and
    value, plain data), ``tvm_ffi`` (it makes a TVM-FFI function) and ``side_effects`` (the names of
    options that write files besides the function, set on)."""

    __slots__ = ("spelling", "tvm_ffi", "side_effects")

    def __init__(self, spelling: tuple[object, ...], tvm_ffi: bool, side_effects: tuple[str, ...]) -> None:
        self.spelling = spelling
        self.tvm_ffi = tvm_ffi
        self.side_effects = side_effects


def _option_value(value: Any) -> Any:
    """An option's value as plain data; ``ValueError`` when it is not plain."""
    if value is None or type(value) in (bool, int, str, float):
        return value
    if type(value) in (tuple, list):
        return tuple(_option_value(v) for v in value)
    if type(value) in (set, frozenset):
        return tuple(sorted(str(_option_value(v)) for v in value))
    raise ValueError(f"an option value of type {type(value).__name__}")


def resolved_options(callable_: object, options: object) -> ResolvedOptions:
    """What ``callable_(fn, ..., options=options)`` compiles with, read as the DSL's ``_compile`` reads it
    (a non-empty string replaces the bracket options, keeping ``FrontendNext`` and ``DisableCuteExtCompile``).

    Raises whatever the DSL raises for malformed options, and ``ValueError`` for an option value that is
    not plain data (the caller then compiles without the cache, and the DSL reports its own errors).
    """
    compiler = _compiler_module()
    base = compile_callable_options(callable_)
    if isinstance(options, str) and options:
        resolved = compiler._parse_compile_options_from_str(options)
        for selector in (getattr(compiler, "FrontendNext", None), getattr(compiler, "DisableCuteExtCompile", None)):
            if selector is not None and base.options[selector].value:
                resolved.options[selector].value = True
    elif options is None or options == "":
        resolved = base
    else:
        raise ValueError(f"options of type {type(options).__name__}")
    parts = []
    side: list[str] = []
    tvm_ffi = False
    for cls, option in resolved.options.items():
        name = f"{cls.__module__}.{cls.__qualname__}"
        value = _option_value(getattr(option, "value", None))
        parts.append((name, value))
        if cls.__name__ == "EnableTVMFFI":
            tvm_ffi = bool(value)
        if cls.__name__ in _SIDE_EFFECT_OPTIONS and value not in (None, False, "", 0):
            side.append(cls.__name__)
    parts.sort(key=lambda p: p[0])
    extra = (
        ("debug", tuple(sorted(str(s) for s in getattr(resolved, "_debug_selectors", ()) or ()))),
        ("ptxas-diagnostics", bool(getattr(resolved, "_ptxas_diagnostics_enabled", False))),
    )
    return ResolvedOptions((tuple(parts), extra), tvm_ffi, tuple(sorted(side)))


def side_effect_environment() -> tuple[str, ...]:
    """``CUTE_DSL_*`` variables set to make a compile write files or print (``CUTE_DSL_KEEP_PTX``,
    ``CUTE_DSL_DUMP_DIR``, ``CUTE_DSL_PRINT_IR``...): a loaded entry would not do it."""
    found = []
    for name, value in os.environ.items():
        if name.startswith("CUTE_DSL_") and value not in ("", "0", "False", "false"):
            if any(word in name for word in ("KEEP", "DUMP", "PRINT", "LINEINFO_PATH", "REMARK")):
                found.append(name)
    return tuple(sorted(found))


def compile_target(fn: object) -> tuple[object, object] | None:
    """``(object, function)`` the DSL traces for ``cute.compile(fn, ...)``: the object is the bound method's
    ``__self__`` or the callable object itself (``None`` for a plain function), the function the ``@cute.jit``
    function (the DSL unwraps ``__wrapped__``). ``None``: the DSL refuses ``fn`` (it then says why itself).

    Read the way ``CompileCallable._compile`` reads it; the object's ``__call__`` is looked up on its class
    (never through the object's own attribute hooks).
    """
    if inspect.isfunction(fn):
        return None, fn
    if inspect.ismethod(fn):
        return fn.__self__, fn
    call = None
    for klass in type(fn).__mro__:
        if "__call__" in klass.__dict__:
            call = klass.__dict__["__call__"]
            break
    if call is None or not inspect.isfunction(call) and not hasattr(call, "__wrapped__"):
        return None
    return fn, call


def compiling_inside_cute_bind() -> bool:
    """Whether this thread is inside one of cute_bind's own compiles (it holds the compile lock): the
    decorator's compiles keep their own cache, the hook leaves them alone."""
    is_owned = getattr(hooks._COMPILE_LOCK, "_is_owned", None)
    return bool(is_owned()) if is_owned is not None else False


def call_original(callable_: object, fn: object, *args: object, **kwargs: object) -> Any:
    """The DSL's own compile for ``callable_`` (``cute.compile`` or a ``cute.compile[...]``), never the hook,
    under cute_bind's compile lock."""
    with hooks._COMPILE_LOCK:
        return _original_call()(callable_, fn, *args, **kwargs)


# ------------------------------------------------------------------ argument spellings
def _symint_class() -> type | None:
    try:
        import cutlass.cute.typing as typing_

        cls = getattr(typing_, "SymInt", None)
    except Exception:  # pragma: no cover - every supported version has it
        return None
    return cls if isinstance(cls, type) else None


def _name(cls: object) -> str:
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', getattr(cls, '__name__', '?'))}"


def argument_spelling(value: Any, state: CompileOnly) -> tuple[object, ...] | None:
    """A compile argument the DSL reads through its own types, as plain data (``state`` numbers the call's
    ``SymInt`` objects by first appearance, so two modes sharing one stay one); ``None`` for any other value.

    - a fake tensor: element type, memory space, alignment, extents and strides (SymInts with width,
      divisibility and number), the 32-bit stride flag (:func:`~cute_bind.dsl.placeholders.fake_tensor_spelling`);
      a fake stream: whether it is the TVM-FFI environment stream;
    - a ``from_dlpack`` tensor: the DSL's own cache key of it (element type, alignment, memory space,
      layout with its dynamic marks) and whether it was made for TVM-FFI;
    - a ``make_ptr`` pointer: element type, address space, alignment (not its address: a runtime value);
    - a ``SymInt`` scalar: width, divisibility, number;
    - a ``cuda.CUstream``: only that it is one (its value is a runtime argument);
    - a value one of the DSL's argument adapters converts (a torch tensor, a NumPy array): the spelling of
      what the adapter makes of it, and the value's type and device (the adapter's conversion reads no data).
    """
    d = dsl()
    if is_fake_tensor(value):
        return ("fake-tensor", _name(type(value)), fake_tensor_spelling(value, state))
    if is_fake_stream(value):
        return fake_stream_spelling(value)
    runtime = d.runtime
    if type(value) is getattr(runtime, "_Tensor", None):
        key = value.__cache_key__
        return (
            "dsl-tensor",
            _name(key[0]),
            repr(key[1]),
            str(key[2]),
            bool(getattr(value, "_enable_tvm_ffi", False) or getattr(value, "enable_tvm_ffi", False)),
            bool(getattr(value, "_use_32bit_stride", False)),
        )
    if type(value) is d.runtime_pointer_class:
        ptr: Any = value  # narrowed to object by the check on its (untyped) class
        dtype, space, align = ptr.__cache_key__
        return ("dsl-pointer", _name(dtype), str(space), int(align or 0))
    symint = _symint_class()
    if symint is not None and isinstance(value, symint):
        sym: Any = value  # narrowed to object by the check on its (untyped) class
        return ("symint", int(sym.width), int(sym.divisibility), state.number(sym))
    stream = getattr(getattr(d, "cuda_driver", None), "CUstream", None)
    if stream is not None and type(value) is stream:
        return ("cuda-stream",)
    torch = sys.modules.get("torch")
    np = sys.modules.get("numpy")
    if (torch is not None and isinstance(value, torch.Tensor)) or (np is not None and isinstance(value, np.ndarray)):
        return _adapted(value, state)
    return None


def _adapted(value: object, state: CompileOnly) -> tuple[object, ...] | None:
    """A value the DSL converts with its registered argument adapter (``from_dlpack(v).mark_layout_dynamic()``
    for torch tensors and NumPy arrays): what the adapter makes of it, spelled; ``None`` without an adapter."""
    try:
        from cutlass.base_dsl.runtime.jit_arg_adapters import JitArgAdapterRegistry

        adapter = JitArgAdapterRegistry.get_registered_adapter(type(value))
    except Exception:
        return None
    if adapter is None:
        return None
    converted = adapter(value)
    inner = argument_spelling(converted, state) if converted is not value else None
    if inner is None:
        return None
    device = getattr(value, "device", None)
    return ("adapted", _name(type(value)), str(getattr(device, "type", device)), inner)


# ------------------------------------------------------------------ the hook
_HOOK_LOCK = threading.Lock()
_ORIGINAL: Callable[..., Any] | None = None


def _original_call() -> Callable[..., Any]:
    """``CompileCallable.__call__`` as the DSL defines it (also while the hook is installed)."""
    return _ORIGINAL if _ORIGINAL is not None else _compiler_module().CompileCallable.__call__


def install_compile_hook(route: Callable[..., object]) -> None:
    """Make ``CompileCallable.__call__`` (every ``cute.compile(...)`` and ``cute.compile[...](...)`` of the
    process, whoever imported it) call ``route(callable, fn, *args, **kwargs)``. Replaces a route already
    installed."""
    global _ORIGINAL
    cls = _compiler_module().CompileCallable
    with _HOOK_LOCK:
        if _ORIGINAL is None:
            _ORIGINAL = cls.__dict__["__call__"]

        def __call__(self: object, *args: object, **kwargs: object) -> object:
            if not args:
                return _original_call()(self, *args, **kwargs)
            return route(self, *args, **kwargs)

        __call__.__doc__ = getattr(_ORIGINAL, "__doc__", None)
        __call__.__cute_bind_hook__ = True  # type: ignore[attr-defined]  # a function takes attributes; hook_installed reads it
        cls.__call__ = __call__


def remove_compile_hook() -> None:
    """Restore the DSL's own ``CompileCallable.__call__``."""
    global _ORIGINAL
    cls = _compiler_module().CompileCallable
    with _HOOK_LOCK:
        if _ORIGINAL is not None:
            cls.__call__ = _ORIGINAL
            _ORIGINAL = None


def hook_installed() -> bool:
    """Whether ``CompileCallable.__call__`` is cute_bind's route."""
    if "cutlass.base_dsl.compiler" not in sys.modules:
        return False
    return bool(getattr(_compiler_module().CompileCallable.__dict__.get("__call__"), "__cute_bind_hook__", False))


# ------------------------------------------------------------------ TVM-FFI functions on disk
def export_tvm_ffi_object(compiled: Any, name: str) -> bytes:
    """A TVM-FFI compiled function's object file, its entry ``__tvm_ffi_<name>`` (what ``export_to_c(path,
    name)`` writes), written into a new private folder and read back. Raises what the DSL raises."""
    if not is_tvm_ffi_compiled(compiled):
        raise TypeError(f"{type(compiled).__name__} is not a TVM-FFI compiled function")
    with hooks._COMPILE_LOCK, tempfile.TemporaryDirectory(prefix="cute_bind_export_") as folder:  # mode 0700
        path = os.path.join(folder, "entry.o")
        compiled.export_to_c(path, name)
        with open(path, "rb") as f:
            return f.read()


def load_tvm_ffi_object(path: str, name: str) -> Any:
    """The ``tvm_ffi.Function`` ``__tvm_ffi_<name>`` of an object file (``cute.runtime.load_module(path,
    enable_tvm_ffi=True)[name]``, quack's ``load_module`` path)."""
    import cutlass.runtime as cutlass_runtime

    module = cutlass_runtime.load_module(path, enable_tvm_ffi=True)
    function = module[name]
    try:
        function._cute_bind_loaded_module = module  # the module owns the loaded code
    except (AttributeError, TypeError):
        pass
    return function


def tvm_ffi_call_spec(compiled: Any) -> dict[str, Any] | None:
    """How the DSL's call of a TVM-FFI compiled function takes its arguments, as plain data: the
    parameter names, which of them have defaults, the keyword-only names and the dataclass parameters
    it unpacks, read from the keyword wrapper the DSL built for it (TVM-FFI's generated ``wrapper``:
    its code's parameters, its defaults table). The default values themselves are not stored: the
    entry's key holds the function's defaults, so a process that loads it takes them from its own
    function (:func:`tvm_ffi_caller`). ``None`` when the call converts arguments some other way
    (Python integers for pointer parameters): such a function is not stored."""
    from .tvm_ffi import tvm_ffi_unpacked_parameters

    args = getattr(compiled, "execution_args", None)
    if args is None or getattr(args, "has_pointer_address_arg_specs", False):
        return None
    spec: dict[str, Any] = {"wrapped": False, "names": [], "defaulted": [], "kwonly": [], "unpack": []}
    wrapper = getattr(compiled, "_kwargs_wrapper", None)
    if wrapper is None:
        return spec  # the positional-only class: its call is the function's own
    try:
        from tvm_ffi.utils import kwargs_wrapper

        table = wrapper.__globals__.get(kwargs_wrapper._INTERNAL_DEFAULTS_DICT, {})
        code = wrapper.__code__
        names = list(code.co_varnames[: code.co_argcount])
        kwonly = list(code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount])
        spec["unpack"] = sorted(tvm_ffi_unpacked_parameters(wrapper))
    except Exception:
        return None
    if type(table) is not dict:
        return None
    # the wrapper's own defaults say which parameters have one (None and bools are written into its code,
    # the others stand for the table's values); the values come from the loading process's function
    positional_defaults = len(wrapper.__defaults__ or ())
    defaulted = names[len(names) - positional_defaults :] if positional_defaults else []
    defaulted += [n for n in kwonly if n in (wrapper.__kwdefaults__ or {})]
    spec.update(wrapped=True, names=names, kwonly=kwonly, defaulted=defaulted)
    return spec


def tvm_ffi_caller(function: Any, spec: dict[str, Any] | None, source: Any) -> tuple[Callable[..., Any], inspect.Signature | None]:
    """A call of a reloaded ``tvm_ffi.Function`` that takes arguments as the DSL's call of the compiled
    function took them (keyword arguments, defaults, unpacked dataclasses): TVM-FFI's own keyword wrapper,
    built as the DSL builds it, the defaults read from ``source`` (the traced function of this process,
    whose defaults the entry's key holds); the bare function where the DSL's call was positional only.
    Also the call's signature (``None`` for the bare function): binding a call to it and applying its
    defaults gives the positional arguments the bare function takes, in order.
    ``ValueError`` when ``source`` lacks a default the spec names."""
    if not spec or not spec.get("wrapped"):
        return function, None
    from tvm_ffi.utils import kwargs_wrapper

    try:
        parameters = inspect.signature(inspect.unwrap(source)).parameters
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the traced function's signature cannot be read ({exc})") from None
    defaults: dict[str, Any] = {}
    for name in spec["defaulted"]:
        p = parameters.get(name)
        if p is None or p.default is p.empty:
            raise ValueError(f"the traced function has no default for {name!r}")
        defaults[name] = p.default
    call = kwargs_wrapper.make_kwargs_wrapper(
        function,
        arg_names=list(spec["names"]),
        arg_defaults=tuple(defaults[n] for n in spec["names"] if n in defaults),
        kwonly_names=list(spec["kwonly"]),
        kwonly_defaults={n: defaults[n] for n in spec["kwonly"] if n in defaults},
        map_dataclass_to_tuple=list(spec["unpack"]),
    )
    P = inspect.Parameter
    signature = inspect.Signature(
        [P(n, P.POSITIONAL_OR_KEYWORD, default=defaults.get(n, P.empty)) for n in spec["names"]]
        + [P(n, P.KEYWORD_ONLY, default=defaults.get(n, P.empty)) for n in spec["kwonly"]]
    )
    return call, signature
