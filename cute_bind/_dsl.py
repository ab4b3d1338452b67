"""The one module that touches nvidia-cutlass-dsl internals.

Everything cute_bind needs from the DSL beyond its public API goes through the
functions here: the execution-argument marshaller, the compiled entry point,
the executor's CUDA-result slot and extra packed arguments, the module's
unloaded flag, and the fields of runtime pointer objects. ``check_contract()``
lists what an installed version lacks; ``tests/dsl/test_contract.py`` turns
that into one clear failure per missing piece.

Versions: cute_bind supports :data:`SUPPORTED_VERSIONS` (every minor of it is
tested by ``.ci/dsl_matrix``). What differs between those versions is decided
here, by what the installed DSL has rather than by its number
(:func:`features`), and nowhere else in the package. A version outside the
range that still has everything the contract lists runs with a one-time
CB503 warning; one that lacks something gets CB501 naming it.

The DSL is imported lazily so that ``import cute_bind`` (and the static
checker) work on machines without it.
"""

from __future__ import annotations

import contextvars
import ctypes
import functools
import importlib.metadata
import os
import re
import threading
import sys
import typing
import warnings
import weakref
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from . import diagnostics as D

__all__ = [
    "SUPPORTED_VERSIONS",
    "Features",
    "dsl",
    "dsl_version",
    "features",
    "import_torch",
    "check_contract",
    "EntryPoint",
    "entry_point",
]

#: The nvidia-cutlass-dsl versions cute_bind supports (mirrors pyproject.toml;
#: .ci/dsl_matrix tests the newest patch of every minor in it).
SUPPORTED_VERSIONS = D.SUPPORTED_DSL_VERSIONS
_SUPPORTED_MIN = (4, 5, 3)
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


@dataclass(frozen=True)
class Features:
    """Where the supported DSL versions really differ, read from the installed DSL itself.

    - ``spec_reentry`` (4.8): a compiled function may carry a specialization
      record (``_pyir_spec``, sealed by a trace under the DSL's PyIR frontend)
      that every direct call re-checks against live state, refusing on drift;
      cute_bind runs the same check (:func:`specialization_guard`).
    - ``unload_callback`` (4.8): ``register_library_unload_callback``. It is
      keyed by CUDA library handle and fires only for modules that hold a
      device library (never for host-only functions), so the unload listener
      below wraps ``JitModule.unload`` on every version instead.
    - ``base_dsl_on_path`` (4.5 to 4.7): importing the DSL appended its
      ``base_dsl/`` folder to ``sys.path``; from 4.6 on that folder holds a
      ``torch.py`` (see :func:`import_torch`).
    """

    spec_reentry: bool
    unload_callback: bool
    base_dsl_on_path: bool
    #: ``cutlass.runtime.load_module`` and ``dump_to_object`` (4.6 on): without them the disk cache is off
    disk_cache: bool = True


@functools.lru_cache(maxsize=None)
def features() -> Features:
    """The :class:`Features` of the installed DSL (imports it)."""
    je = dsl().jit_executor
    return Features(
        spec_reentry=callable(getattr(je, "_pyir_validate_spec_reentry", None)),
        unload_callback=callable(getattr(je, "register_library_unload_callback", None)),
        base_dsl_on_path=any(os.path.realpath(p) in _dsl_folders() for p in sys.path if p),
        disk_cache=all(_present(owner, attr) for owner, attr in _CACHE_REQUIRED),
    )


@functools.lru_cache(maxsize=None)
def _dsl_folders() -> frozenset[str]:
    """The DSL's ``cutlass/base_dsl`` folders (found without importing the DSL)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("cutlass")
    except (ImportError, ValueError):
        return frozenset()
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return frozenset(os.path.realpath(os.path.join(loc, "base_dsl")) for loc in locations)


def _in_dsl_folder(path: str | None) -> bool:
    """Whether the file ``path`` lies directly in one of the DSL's ``base_dsl`` folders."""
    return bool(path) and os.path.dirname(os.path.realpath(str(path))) in _dsl_folders()


def import_torch() -> Any:
    """``import torch``, never reaching the DSL's own ``base_dsl/torch.py``.

    DSL 4.5 to 4.7 append ``base_dsl/`` to ``sys.path`` when imported, and from
    4.6 on that folder holds a ``torch.py`` (the DSL's dtype helpers, which
    import torch themselves). Where torch is not installed, a plain ``import
    torch`` then runs that file and fails with a bare ``ImportError`` instead of
    ``ModuleNotFoundError``. Every lazy torch import in the package goes
    through here: it raises ``ModuleNotFoundError`` when torch is not
    installed, and loads the real torch even if the DSL's file comes first on
    the path.
    """
    return _import_outside_dsl("torch")


def _import_outside_dsl(name: str) -> Any:
    """Import the top-level module ``name`` from anywhere but the DSL's ``base_dsl`` folders."""
    import importlib
    import importlib.machinery
    import importlib.util

    if name in sys.modules and sys.modules[name] is None:  # import blocked on purpose (the import system's own rule)
        raise ModuleNotFoundError(f"import of {name} halted; None in sys.modules", name=name)
    module = sys.modules.get(name)
    if module is not None and not _in_dsl_folder(getattr(module, "__file__", None)):
        return module
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and not _in_dsl_folder(spec.origin):
        return importlib.import_module(name)
    # Missing, or shadowed by the DSL's file: look past the DSL's folders.
    path = [p for p in sys.path if not (p and os.path.realpath(p) in _dsl_folders())]
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


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


#: The attributes ``cute.jit``/``cute.kernel`` set on the object they decorate
#: (``BaseDSL.jit_runner``); a :class:`cute_bind.Kernel` refuses them, which is
#: how a DSL decorator stacked *above* ``@cute_bind.kernel`` fails at decoration.
DSL_DECORATION_MARKS = frozenset({"_dsl_cls", "_decorator_kind"})

# The plain functions cute_bind jits (weakly held): the DSL's source rewriter
# treats them as if their innermost source decorator were ``@cute.jit``.
_OWNED: weakref.WeakSet[Any] = weakref.WeakSet()
_OWNED_NOW = contextvars.ContextVar("cute_bind_owned_now", default=False)
_HOOK_MARK = "__cute_bind_decorator_hook__"
_HOOK_LOCK = threading.Lock()


def _install_decorator_hook() -> None:
    """Let the DSL's AST rewriter accept every decorator spelling for functions cute_bind owns.

    The rewriter (``DSLPreprocessor.transform_function``) re-reads the
    function's source and rewrites it only when ``check_decorator`` finds the
    innermost decorator spelled ``@<x>.jit``/``@<x>.kernel``; it raises
    UNSUP_DECORATOR_ORDER when such a decorator is not innermost. It takes any
    attribute named ``kernel`` for its own, so ``@cute_bind.kernel`` over
    ``@cute.jit`` fails and ``@kernel`` or ``@cute_bind.kernel(checked=True)``
    alone are silently not rewritten. For a function cute_bind jits, the
    source's decorators say nothing the rewriter needs (they are all dropped
    from the rewritten function): it is rewritten exactly as under a plain
    ``@cute.jit``. Every other function keeps the DSL's own rule.
    """
    from cutlass.base_dsl.ast_preprocessor import DSLPreprocessor

    with _HOOK_LOCK:
        if getattr(DSLPreprocessor, _HOOK_MARK, False):
            return
        transform_function = DSLPreprocessor.transform_function
        check_decorator = DSLPreprocessor.check_decorator

        @functools.wraps(transform_function)
        def owned_transform_function(self: Any, func_name: str, function_pointer: Any) -> Any:
            try:
                owned = function_pointer in _OWNED
            except TypeError:
                owned = False
            token = _OWNED_NOW.set(owned)
            try:
                return transform_function(self, func_name, function_pointer)
            finally:
                _OWNED_NOW.reset(token)

        @functools.wraps(check_decorator)
        def owned_check_decorator(self: Any, node: Any) -> bool:
            import ast

            if _OWNED_NOW.get() and isinstance(node, ast.FunctionDef):
                return True
            return bool(check_decorator(self, node))

        DSLPreprocessor.transform_function = owned_transform_function
        DSLPreprocessor.check_decorator = owned_check_decorator
        setattr(DSLPreprocessor, _HOOK_MARK, True)


#: ``BaseDSL.jit_runner``'s executor names before 4.8 recorded ``_decorator_kind``
_EXECUTOR_KINDS = {"_func": "jit", "_kernel_helper": "kernel"}


def is_dsl_decorated(fn: Any) -> str | None:
    """``"jit"`` or ``"kernel"`` when ``fn`` is ``@cute.jit``/``@cute.kernel``-decorated, else ``None``.

    4.8 marks the wrapper with ``_decorator_kind``. 4.5 to 4.7 mark it with
    ``_dsl_cls`` only; there the kind is the ``executor_name`` the wrapper
    closes over (``"_func"`` for ``cute.jit``, ``"_kernel_helper"`` for
    ``cute.kernel``). The plain function under the wrapper carries
    ``_dsl_cls`` too but closes over nothing, so it is not taken for one.
    """
    kind = getattr(fn, "_decorator_kind", None)
    if kind is not None:
        return str(kind)
    if getattr(fn, "_dsl_cls", None) is None:
        return None
    code, closure = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    names = getattr(code, "co_freevars", ())
    if not closure or "executor_name" not in names:
        return None
    try:
        executor = closure[names.index("executor_name")].cell_contents
    except (ValueError, IndexError):  # an empty cell
        return None
    return _EXECUTOR_KINDS.get(executor) if isinstance(executor, str) else None


def jit(fn: Any, raw: Any) -> Any:
    """``fn`` ready for ``cute.compile``, rewritten exactly as under a plain ``@cute.jit``.

    ``fn`` is what the user decorated (a plain function or a ``@cute.jit``
    wrapper, with its options); ``raw`` the plain Python function under it,
    the one the DSL rewrites. Whatever decorators the source spells above
    ``def`` (``@cute_bind.kernel`` over ``@cute.jit``, ``@kernel``,
    ``@cb.kernel(checked=True)``, none for ``cute_bind.kernel(fn)``), the
    DSL rewrites ``raw``'s control flow as it would for ``@cute.jit``.
    """
    _install_decorator_hook()
    try:
        _OWNED.add(raw)
    except TypeError:  # not weak-referenceable: not a Python function, the DSL reports it
        pass
    if is_dsl_decorated(fn) is None:
        fn = dsl().cute.jit(fn)
    return fn


def compile_options_problem(options: str) -> str | None:
    """Why ``cute.compile(..., options=options)`` would refuse ``options``, or ``None``.

    Parsed with the DSL's own parser (``base_dsl.compiler._parse_compile_options_from_str``)
    so that a typo is reported at decoration instead of at the first compile;
    argparse's usage text goes nowhere. Where the DSL has no such parser, nothing
    is checked here (the compile still refuses a bad string).
    """
    import contextlib
    import io

    try:
        parse = importlib.import_module("cutlass.base_dsl.compiler")._parse_compile_options_from_str
    except Exception:
        return None
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parse(options)
    except BaseException as exc:  # the DSL's DSLUserCodeError, or argparse's SystemExit
        if isinstance(exc, (KeyboardInterrupt, MemoryError)):
            raise
        said = [line.split("error:", 1)[1].strip() for line in err.getvalue().splitlines() if "error:" in line]
        return said[0] if said else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return None


def preprocessing_source(fn: Any) -> str | None:
    """Why the DSL cannot rewrite ``fn``'s control flow (it reads the source), or ``None`` if it can."""
    import inspect

    try:
        inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        return f"its source cannot be read ({exc})"
    return None


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


def direct_call_tensor_layout(compiled: Any, value: Any) -> TensorLayout | None:
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


def compiled_from_dsl_values(compiled: Any) -> bool | None:
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
    keepalive: tuple[Any, ...]


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
)


def _resolve(owner: str) -> Any:
    """Import the longest module prefix of ``owner``, then walk the remaining attributes."""
    import importlib

    parts = owner.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            if cut == 1:
                raise
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(owner)  # pragma: no cover - the loop returns or raises


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

    def step(what: str, fn: Any) -> bool:
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
    def contract_probe(out, value, stream):  # type: ignore[no-untyped-def]
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
        raise D.error(D.DSL_INCOMPATIBLE, expected=SUPPORTED_VERSIONS, got=dsl_version(), detail="; ".join(problems))
    warn_untested_version()


_WARNED_VERSION = False


def warn_untested_version() -> None:
    """The one-time CB503 warning for a version outside :data:`SUPPORTED_VERSIONS`."""
    global _WARNED_VERSION
    if _WARNED_VERSION or version_supported():
        return
    _WARNED_VERSION = True
    warning = D.error(D.DSL_UNTESTED_VERSION, expected=SUPPORTED_VERSIONS, got=dsl_version())
    if isinstance(warning, Warning):  # always: the entry's class is DSLVersionWarning
        warnings.warn(warning, stacklevel=3)


_CONTRACT_OK = False


def require_contract_once() -> None:
    """``require_contract()`` on the first prepared launch of the process (skip: CUTE_BIND_SKIP_DSL_CHECK=1)."""
    global _CONTRACT_OK
    if _CONTRACT_OK or os.environ.get("CUTE_BIND_SKIP_DSL_CHECK", "") not in ("", "0"):
        return
    require_contract()
    _CONTRACT_OK = True


# ------------------------------------------------------------------ re-entry validation (DSL 4.8)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _dsl_error_line(exc: BaseException) -> str:
    """The one-line gist of a DSL user-code error (its ``error[...]`` line, colours removed)."""
    text = _ANSI.sub("", str(exc)).strip()
    for line in text.splitlines():
        if "error[" in line:
            return line.split("]:", 1)[-1].strip().rstrip(".")
    return (text.splitlines() or [type(exc).__name__])[0].rstrip(".")


def specialization_guard(compiled: Any, kernel: str, names: typing.Sequence[str]) -> typing.Callable[[], None] | None:
    """The DSL's re-entry validation of a compiled function, for a prepared launch.

    DSL 4.8 seals, with a function compiled under its PyIR frontend, the
    trace-time values the compiled code baked in (module globals, closure
    cells, the receiver of a jitted method, default objects) and re-checks
    them on every direct call, refusing when one has changed. A prepared
    launch must refuse too. The record never roots at a runtime parameter
    (the DSL traces those as staged values, so nothing about the value a
    slot receives is baked); this is checked here, and a record that does
    is refused at bind, since a handle could not re-check it per launch.

    Returns ``None`` when there is nothing to check (every version before
    4.8, and any function whose trace sealed no record). Otherwise runs the
    DSL's own check now (CB504 when a direct call would refuse) and returns
    a function that re-runs it, raising CB504, before every launch.
    """
    if not features().spec_reentry:
        return None
    spec = getattr(compiled, "_pyir_spec", None)
    if spec is None:
        return None
    runtime = sorted({str(root[1]) for root in spec[0] if root[0] == "arg" and root[1] in names})
    if runtime:
        raise D.error(
            D.STALE_SPECIALIZATION,
            kernel=kernel,
            parameter=", ".join(runtime),
            expected="a specialization on trace-time values only",
            got="the compiled code baked in a value read from a runtime parameter, which a prepared launch cannot re-check",
        )
    # The engine itself, not the executor's hook into it (which re-runs its
    # lazy import on every call).
    try:
        import importlib

        validate = importlib.import_module("cutlass.base_dsl.pyir_spec")._pyir_validate_spec_reentry
    except (ImportError, AttributeError):
        validate = dsl().jit_executor._pyir_validate_spec_reentry
    execution_args = execution_args_of(compiled)
    # The record never reads runtime parameters (checked above), so the
    # binding it is validated against needs their names only, not values.
    placeholders = (None,) * len(names)

    def check() -> None:
        try:
            validate(spec, execution_args, placeholders, {})
        except Exception as exc:
            raise D.error(
                D.STALE_SPECIALIZATION,
                kernel=kernel,
                expected="the trace-time values the compiled code was specialized on",
                got=_dsl_error_line(exc),
            ) from exc

    check()
    return check


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


# ------------------------------------------------------------------ compiled argument types (issue 11)
def _llvm_type_tree(text: str) -> Any:
    """An LLVM type as a tree: a struct is a list of its fields, a scalar its name (``ptr``, ``i32``...)."""
    tokens = re.findall(r"struct<\(|\)>|[A-Za-z_][A-Za-z0-9_.]*|,", text.strip().removeprefix("!llvm."))
    pos = 0

    def node() -> Any:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"truncated LLVM type {text!r}")
        tok = tokens[pos]
        pos += 1
        if tok != "struct<(":
            return tok
        fields: list[Any] = []
        while pos < len(tokens) and tokens[pos] != ")>":
            fields.append(node())
            if pos < len(tokens) and tokens[pos] == ",":
                pos += 1
        if pos >= len(tokens):
            raise ValueError(f"unbalanced LLVM type {text!r}")
        pos += 1
        return fields

    tree = node()
    if pos != len(tokens):
        raise ValueError(f"trailing tokens in LLVM type {text!r}")
    return tree


def _int_widths(group: Any) -> tuple[int, ...] | None:
    """The widths of a descriptor group: a bare ``iN`` (one dynamic mode) or a struct of them."""
    items = group if isinstance(group, list) else [group]
    widths = []
    for item in items:
        if not isinstance(item, str) or not re.fullmatch(r"i\d+", item):
            return None
        widths.append(int(item[1:]))
    return tuple(widths)


def tensor_argument_groups(llvm_type: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """What a compiled tensor argument holds besides its data pointer.

    The DSL lowers a tensor argument to ``!llvm.struct<(ptr, struct<(S, D)>)>``:
    ``S`` the dynamic extents, ``D`` the dynamic strides, each group a bare
    ``iN`` when it has one member and a struct otherwise (``struct<()>`` when
    empty). Returns ``(extent widths, stride widths)`` in bits, or ``None``
    when the type is not a tensor descriptor. This is the compiled function's
    own argument type: unlike the entry's symbol it is never cut or respelled.
    """
    try:
        tree = _llvm_type_tree(llvm_type)
    except ValueError:
        return None
    if not (isinstance(tree, list) and len(tree) == 2 and tree[0] == "ptr" and isinstance(tree[1], list) and len(tree[1]) == 2):
        return None
    shape, stride = (_int_widths(g) for g in tree[1])
    if shape is None or stride is None:
        return None
    return shape, stride


def compiled_argument_types(obj: Any) -> list[str] | None:
    """The LLVM types of a compiled function's C arguments, from its IR; ``None`` without IR.

    A ``.to(device)`` executor holds no IR (only its module), nor does a
    function loaded from a binary.
    """
    if is_executor(obj) or getattr(obj, "ir_module", None) is None:
        return None
    return entry_argument_types(obj)


# The DSL appends each argument's spelling to the function name (``mangle_name``):
# besides the type tokens ``function_name`` knows, a callable object's ``self``
# (``<pkg.Cls object at 0x...>`` spelled ``pkgCls_object_at_``), fake tensors and
# streams, ``None`` and Constexpr values.
_MANGLED_EXTRA = re.compile(r"_(?=[A-Za-z0-9]*_object_at_|Fake(?:Tensor|Stream)|None(?:_|$)|True(?:_|$)|False(?:_|$))")


def compiled_display_name(obj: Any) -> str:
    """The Python name of a compiled function for messages (``__call__`` for a callable object's).

    The entry's symbol is only a display source here: nothing is checked
    against it (it is cut at 180 characters).
    """
    name = function_name(obj)
    m = _MANGLED_EXTRA.search(name)
    return name[: m.start()] if m and m.start() > 0 else name


# ------------------------------------------------------------------ TVM-FFI compiled functions (issue 11)
@dataclass(frozen=True)
class TvmFfiEntry:
    """What a prepared TVM-FFI launch needs to call a compiled function's TVM-FFI entry itself."""

    safe_call: int  # int entry(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
    handle: int  # the tvm_ffi.Function's object handle, passed as ``self`` (as TVMFFIFunctionCall does)
    function: Any  # the tvm_ffi.Function (kept alive: it keeps the engine loaded)
    parameters: tuple[Any, ...]  # inspect.Parameter of each positional argument the entry takes
    set_stream: int  # TVMFFIEnvSetStream
    move_error: int  # TVMFFIErrorMoveFromRaised
    dec_ref: int  # TVMFFIObjectDecRef
    pointer_parameters: frozenset[str]  # parameters whose int addresses the DSL validates before the call
    converts_sequences: bool  # a sequence parameter holds pointers (rewritten element-wise by the DSL)


@functools.lru_cache(maxsize=None)
def _tvm_ffi_c_api() -> tuple[int, int, int]:
    import tvm_ffi

    lib = ctypes.CDLL(tvm_ffi.libinfo.find_libtvm_ffi())
    return tuple(ctypes.cast(getattr(lib, n), ctypes.c_void_p).value or 0 for n in ("TVMFFIEnvSetStream", "TVMFFIErrorMoveFromRaised", "TVMFFIObjectDecRef"))  # type: ignore[return-value]


def tvm_ffi_entry(compiled: Any) -> TvmFfiEntry:
    """Resolve the TVM-FFI entry of a function compiled with ``--enable-tvm-ffi``.

    The DSL makes either a ``tvm_ffi.Function`` subclass (positional
    arguments only) or a wrapper holding one in ``_tvm_ffi_function`` with a
    generated keyword wrapper (``_kwargs_wrapper``, whose signature names the
    entry's positional arguments in order). The entry symbol is
    ``__tvm_ffi_<function_name>`` in the compiled function's engine.
    """
    import inspect

    import tvm_ffi

    function = compiled if isinstance(compiled, tvm_ffi.Function) else getattr(compiled, "_tvm_ffi_function", None)
    if function is None or not function.__chandle__():
        raise ValueError("the TVM-FFI function is not initialised (compiled for another architecture?)")
    wrapper = getattr(compiled, "_kwargs_wrapper", None)
    if wrapper is not None:
        parameters = tuple(inspect.signature(wrapper).parameters.values())
    else:
        names = runtime_signature(compiled).names
        parameters = tuple(inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names)
    safe_call = int(compiled.engine.lookup("__tvm_ffi_" + compiled.function_name) or 0)
    if not safe_call:
        raise ValueError(f"no symbol __tvm_ffi_{compiled.function_name}")
    set_stream, move_error, dec_ref = _tvm_ffi_c_api()
    ea = compiled.execution_args
    specs = list(getattr(ea, "_pointer_address_arg_specs", ()) or ())
    pointer_specs = {name: specs[i] for name, i in ea._meta.name_to_index.items() if i < len(specs) and specs[i] is not None}
    return TvmFfiEntry(
        safe_call=safe_call,
        handle=int(function.__chandle__()),
        function=function,
        parameters=parameters,
        set_stream=set_stream,
        move_error=move_error,
        dec_ref=dec_ref,
        pointer_parameters=frozenset(n for n, spec in pointer_specs.items() if spec is True),
        converts_sequences=any(isinstance(spec, (list, tuple)) for spec in pointer_specs.values()),
    )


def tvm_ffi_missing() -> Any:
    """The sentinel TVM-FFI's keyword wrapper shows for a default it fills itself."""
    from tvm_ffi.core import MISSING

    return MISSING


def tvm_ffi_error(kind: str, message: str, backtrace: str) -> BaseException:
    """The Python exception the TVM-FFI call raises for an error of ``kind`` (``ValueError``...)."""
    import tvm_ffi

    return tvm_ffi.core.Error(kind, message, backtrace).py_error()


def dlpack_exchange_functions(tp: type) -> tuple[int, int]:
    """``(dltensor_from_py_object_no_sync, current_work_stream)`` addresses of ``tp``'s DLPack
    exchange API (``tp.__dlpack_c_exchange_api__``; importing tvm_ffi installs it on
    ``torch.Tensor`` where torch lacks it), ``(0, 0)`` when it has none.

    Read from the type each time (not cached): the attribute may appear later.
    """
    capsule = getattr(tp, "__dlpack_c_exchange_api__", None)
    if capsule is None:
        return 0, 0
    valid = ctypes.pythonapi.PyCapsule_IsValid
    valid.restype, valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    if not valid(capsule, b"dlpack_exchange_api"):
        return 0, 0
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    table = int(get(capsule, b"dlpack_exchange_api") or 0)
    if not table or ctypes.c_uint32.from_address(table).value < 1:  # DLPack major version
        return 0, 0
    # DLPackExchangeAPI: header (version: 2 x u32, prev_api), then managed_tensor_allocator,
    # managed_tensor_from_py_object_no_sync, managed_tensor_to_py_object_no_sync,
    # dltensor_from_py_object_no_sync, current_work_stream
    p = ctypes.sizeof(ctypes.c_void_p)
    reader = ctypes.c_void_p.from_address(table + 8 + p + 3 * p).value or 0
    stream = ctypes.c_void_p.from_address(table + 8 + p + 4 * p).value or 0
    return int(reader), int(stream)


def is_tvm_ffi_function(obj: Any) -> bool:
    """A ``tvm_ffi.Function`` (e.g. ``cute.runtime.load_module(path, enable_tvm_ffi=True)["func"]``).

    Without tvm_ffi imported nothing can be one, so it is never imported here.
    """
    tvm_ffi = sys.modules.get("tvm_ffi")
    return tvm_ffi is not None and isinstance(obj, tvm_ffi.Function)


def tvm_ffi_function_entry(function: Any, count: int) -> TvmFfiEntry:
    """The entry of a bare ``tvm_ffi.Function`` taking ``count`` positional arguments.

    A function the DSL exported and loaded back (``load_module(...,
    enable_tvm_ffi=True)[name]``, made by ``tvm_ffi.Function.__from_extern_c__``
    over the module's ``__tvm_ffi_<name>`` symbol) has no engine, name or
    signature on the Python side. Its call is positional only and converts
    nothing before TVM-FFI's own argument setters. The entry is its function
    cell's ``safe_call``, right after the object header
    (``TVMFFIFunctionGetCellPtr``: ``handle + sizeof(TVMFFIObject)``), called
    with the function's handle as ``self``, exactly as ``TVMFFIFunctionCall``
    calls it.
    """
    import inspect

    handle = int(function.__chandle__() or 0)
    if not handle:
        raise ValueError("the tvm_ffi.Function has no handle")
    safe_call = int(ctypes.c_void_p.from_address(handle + _TVM_FFI_OBJECT_HEADER).value or 0)
    if not safe_call:
        raise ValueError("the tvm_ffi.Function has no safe_call entry")
    set_stream, move_error, dec_ref = _tvm_ffi_c_api()
    return TvmFfiEntry(
        safe_call=safe_call,
        handle=handle,
        function=function,
        parameters=tuple(inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(count)),
        set_stream=set_stream,
        move_error=move_error,
        dec_ref=dec_ref,
        pointer_parameters=frozenset(),
        converts_sequences=False,
    )


# TVMFFIObject: combined ref count (8), type_index (4), padding (4), deleter (8)
_TVM_FFI_OBJECT_HEADER = 24
_TVM_FFI_TYPE_INDEX_OFFSET = 8


def tvm_ffi_scalar_kind(tp: type) -> tuple[str, bool]:
    """How TVM-FFI's argument setter factory writes a value of type ``tp`` that is not an exact
    ``None``/``bool``/``int``/``float``: ``("i", via_protocol)`` for an int, ``("f", ...)`` for a
    float, ``("", False)`` for anything else.

    Mirrors the order of ``TVMFFICyArgSetterFactory`` (tvm_ffi/cython/function.pxi), which
    dispatches on the exact type: FFI objects, the DLPack, stream and tensor protocols, then
    ``bool``, ``numbers.Integral`` (written as ``int(value)``), ``numbers.Real`` (``float``),
    dtypes, devices, strings, containers, opaque pointers, and only then
    ``__tvm_ffi_int__`` / ``__tvm_ffi_float__`` (the DSL's ``cutlass.Int32``,
    ``cutlass.Float32``... define them: ``return self.value``). ``via_protocol`` is True
    for those last two, whose value is the protocol method's result.
    """
    import numbers

    import tvm_ffi

    core = tvm_ffi.core
    ffi_classes = tuple(c for c in (getattr(core, n, None) for n in ("Tensor", "CContainerBase", "CObject", "ObjectRValueRef")) if isinstance(c, type))
    if issubclass(tp, ffi_classes) or issubclass(tp, cuda_stream_class()):
        return "", False
    if any(hasattr(tp, a) for a in ("__tvm_ffi_object__", "__dlpack_c_exchange_api__", "__cuda_stream__", "__dlpack__")):
        return "", False
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(tp, torch.Tensor):
        return "", False
    if issubclass(tp, bool):
        return "", False
    if issubclass(tp, numbers.Integral):
        return "i", False
    if issubclass(tp, numbers.Real):
        return "f", False
    others = tuple(c for c in (getattr(core, n, None) for n in ("DataType", "Device", "PyNativeObject")) if isinstance(c, type))
    if issubclass(tp, (str, bytes, bytearray, tuple, list, dict, ctypes.c_void_p, Exception, *others)):
        return "", False
    if any(hasattr(tp, a) for a in ("__tvm_ffi_opaque_ptr__", "__dlpack_data_type__", "__dlpack_device__")):
        return "", False
    if hasattr(tp, "__tvm_ffi_int__"):
        return "i", True
    if hasattr(tp, "__tvm_ffi_float__"):
        return "f", True
    return "", False


#: How deep a constant structure may nest (the C launcher compares up to this depth).
TVM_FFI_CONSTANT_DEPTH = 16


def tvm_ffi_constant_leaves_ok(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is a tuple/list (NamedTuples included) whose leaves are all ``None``,
    ``bool``, ``int`` (within int64) or ``float`` (exact types), nested at most
    :data:`TVM_FFI_CONSTANT_DEPTH` deep: a value TVM-FFI's call turns into the same
    ``ffi.Array`` every time it sees an equal one."""
    if depth >= TVM_FFI_CONSTANT_DEPTH or not (isinstance(value, tuple) or type(value) is list):
        return False
    for item in value:
        tp = type(item)
        if item is None or tp is bool or tp is float:
            continue
        if tp is int:
            if not -(2**63) <= item < 2**63:
                return False
            continue
        if not tvm_ffi_constant_leaves_ok(item, depth + 1):
            return False
    return True


def tvm_ffi_constant(value: Any) -> tuple[Any, int, int]:
    """``(array, handle, type_index)``: the ``ffi.Array`` TVM-FFI's call builds from a constant
    structure (``tvm_ffi.convert``: the same ``ffi.Array`` constructor over the same elements),
    the object handle passed as the argument and its type index, read from the object header
    (as ``TVMFFIObjectGetTypeIndex`` does)."""
    import tvm_ffi

    array = tvm_ffi.convert(value)
    handle = int(array.__chandle__() or 0)
    if not handle:
        raise ValueError("tvm_ffi.convert gave no object")
    type_index = int(ctypes.c_int32.from_address(handle + _TVM_FFI_TYPE_INDEX_OFFSET).value)
    return array, handle, type_index
# ------------------------------------------------------------------ devices
def executor_on_device(compiled: Any, device: int, kernel: str | None = None) -> Any:
    """The executor of ``compiled`` for CUDA device ``device``: made once per device, kept on the compiled function.

    The DSL's executor takes its kernel functions from the CUDA context that is
    current when it is made (``compiled.to(...)``), and a compiled function's
    own default executor is made on whatever device is current at its first
    call. A handle bound with values on device ``device`` must call an
    executor made there, so that device's primary context is made current
    around ``compiled.to(device)``. An executor (``compiled.to(d)`` made by
    the caller) is returned as it is.
    """
    if is_executor(compiled):
        return compiled
    import cuda.bindings.driver as drv

    with compiled._executor_lock:
        executors = compiled.__dict__.setdefault("_cute_bind_executors", {})
        executor = executors.get(device)
        if executor is not None and not is_unloaded(executor.jit_module):
            return executor
        try:
            err, dev = drv.cuDeviceGet(device)
            if int(err) != 0:
                raise RuntimeError(f"cuDeviceGet({device}): {cuda_error_name(int(err))}")
            err, ctx = drv.cuDevicePrimaryCtxRetain(dev)
            if int(err) != 0:
                raise RuntimeError(f"cuDevicePrimaryCtxRetain({device}): {cuda_error_name(int(err))}")
            try:
                (err,) = drv.cuCtxPushCurrent(ctx)
                if int(err) != 0:
                    raise RuntimeError(f"cuCtxPushCurrent: {cuda_error_name(int(err))}")
                try:
                    executor = compiled.to(device)
                finally:
                    drv.cuCtxPopCurrent()
            finally:
                drv.cuDevicePrimaryCtxRelease(dev)  # the executor holds its own reference
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise D.error(
                D.NO_ENGINE, kernel=kernel or function_name(compiled), expected=f"a module that loads on CUDA device {device}", got=f"{type(exc).__name__}: {first[:160]}"
            ) from exc
        executors[device] = executor
        return executor
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


# The DSL's compiler is not thread-safe across functions: its session data is
# process-wide and it redirects file descriptor 2 while it compiles, so two
# compiles at once (of different kernels, in two threads) fail with spurious
# errors and can leave fd 2 pointing at a deleted temporary file. Every compile
# and export cute_bind makes holds this lock.
_COMPILE_LOCK = threading.RLock()


def _reset_locks_in_child() -> None:
    """After ``os.fork()``: new locks in the child. A lock held by another thread at the fork (one
    compiling, say) stays held in the child for good, since that thread does not exist there: the
    child's first compile would wait forever."""
    global _COMPILE_LOCK, _HOOK_LOCK
    _COMPILE_LOCK = threading.RLock()
    _HOOK_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork
    os.register_at_fork(after_in_child=_reset_locks_in_child)


def compile_jit(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``cute.compile(fn, *args, **kwargs)``, one at a time in the process (see ``_COMPILE_LOCK``)."""
    with _COMPILE_LOCK:
        return dsl().cute.compile(fn, *args, **kwargs)


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
    with _COMPILE_LOCK:  # LLVM code generation again, under the DSL's process-wide state
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
_FIRST_CODE: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def source_code(fn: Any) -> Any:
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
    original = getattr(fn, "_original_code", None)
    if original is not None:
        return original
    try:
        return _FIRST_CODE.setdefault(fn, fn.__code__)
    except TypeError:  # not weak-referenceable: nothing rewrites it behind our back
        return fn.__code__


# The disk cache's DSL internals: optional (nvidia-cutlass-dsl 4.5 has no
# ``cutlass.runtime``); where one is missing the cache is off and every
# process compiles (``features().disk_cache``).
_CACHE_REQUIRED: tuple[tuple[str, str], ...] = (
    ("cutlass.runtime", "load_module"),
    ("cutlass.base_dsl.jit_executor.JitCompiledFunction", "dump_to_object"),
)


def _present(owner: str, attr: str) -> bool:
    try:
        return hasattr(_resolve(owner), attr)
    except Exception:
        return False


# ------------------------------------------------------------------ compile-only placeholders (issue 23)
# ``cute.compile`` takes placeholders that describe a compile without data:
# ``make_fake_tensor``/``make_fake_compact_tensor`` tensors (shape, strides
# with SymInt positions, divisibility, alignment, memory space) and
# ``make_fake_stream`` streams. ``Kernel.compile(...)`` takes them the same
# way, inside :func:`compile_only`; a launch refuses them (nothing to launch).
class CompileOnly:
    """One ``Kernel.compile(...)`` binding: placeholders are allowed, and the SymInts met are numbered.

    Two modes sharing one ``SymInt`` object are one runtime value (the
    TVM-FFI entry takes it once and checks both against it), so the compile
    key spells a ``SymInt`` by the order it first appears in the call, not by
    its ``id`` (which a fresh object of the next call does not share).
    """

    def __init__(self) -> None:
        self._numbers: dict[int, int] = {}
        self._keep: list[Any] = []  # the numbered objects, alive while numbered (their ids stay theirs)

    def number(self, symbol: Any) -> int:
        n = self._numbers.get(id(symbol))
        if n is None:
            n = self._numbers[id(symbol)] = len(self._numbers)
            self._keep.append(symbol)
        return n


_COMPILE_ONLY: contextvars.ContextVar[CompileOnly | None] = contextvars.ContextVar("cute_bind_compile_only", default=None)


class compile_only:
    """Context manager: values bound inside it are bound for a compile only (placeholders allowed)."""

    def __enter__(self) -> CompileOnly:
        state = CompileOnly()
        self._token = _COMPILE_ONLY.set(state)
        return state

    def __exit__(self, *exc: object) -> None:
        _COMPILE_ONLY.reset(self._token)


def compiling() -> CompileOnly | None:
    """The current :class:`CompileOnly` binding, or ``None`` outside ``Kernel.compile``."""
    return _COMPILE_ONLY.get()


def _fake_class(name: str) -> type | None:
    cls = getattr(dsl().runtime, name, None)
    return cls if isinstance(cls, type) else None


def is_fake_tensor(value: Any) -> bool:
    """A ``cute.runtime.make_fake_tensor``/``make_fake_compact_tensor`` placeholder."""
    cls = _fake_class("_FakeTensor")
    return cls is not None and isinstance(value, cls) and not hasattr(value, "__c_pointers__")


def is_fake_stream(value: Any) -> bool:
    """A ``cute.runtime.make_fake_stream(...)`` placeholder."""
    cls = _fake_class("_FakeStream")
    return cls is not None and isinstance(value, cls)


def _symbolic(value: Any) -> bool:
    cls = getattr(dsl().cute, "SymInt", None) or getattr(importlib.import_module("cutlass.cute.typing"), "SymInt", None)
    return cls is not None and isinstance(value, cls)


def _spell_mode(mode: Any, state: CompileOnly) -> Any:
    if _symbolic(mode):
        return ("?", int(mode.width), int(mode.divisibility), mode.symbol, state.number(mode))
    if isinstance(mode, (tuple, list)):  # a nested mode
        return tuple(_spell_mode(m, state) for m in mode)
    return int(mode)


def fake_tensor_facts(value: Any) -> tuple[str, int]:
    """``(element type name, rank)`` of a fake tensor."""
    return str(value.element_type.__name__), len(tuple(value.shape))


def fake_tensor_spelling(value: Any, state: CompileOnly) -> tuple[Any, ...]:
    """A fake tensor as a compile key part: everything the compile reads of it, in plain values.

    Element type, memory space, assumed alignment, each extent and stride (an
    int, or ``("?", width, divisibility, symbol, n)`` for the ``n``-th SymInt
    of the call) and the 32-bit stride flag.
    """
    memspace = value.memspace
    return (
        "fake tensor",
        str(value.element_type.__name__),
        str(getattr(memspace, "name", memspace)),
        int(value._assumed_align or 0),
        tuple(_spell_mode(m, state) for m in value.shape),
        tuple(_spell_mode(m, state) for m in value.stride),
        bool(getattr(value, "_use_32bit_stride", False)),
    )


def fake_stream_spelling(value: Any) -> tuple[Any, ...]:
    """A fake stream as a compile key part: with the TVM-FFI environment stream the entry has no stream argument."""
    return ("fake stream", bool(getattr(value, "use_tvm_ffi_env_stream", False)))


@functools.lru_cache(maxsize=None)
def _laid_out_class() -> type:
    base: Any = _fake_class("_FakeTensor")

    class LaidOutTensor(base):  # type: ignore[misc]
        """A tensor of exactly the layout a ``cute_bind.Tensor[...]`` annotation describes.

        Compiles as the fake tensor of that layout (static extents, SymInt
        extents and strides with their divisibility, alignment, memory space),
        which ``from_dlpack``'s markings cannot all express (a static extent
        beside a dynamic stride, say); marshals as one real tensor: the
        descriptor cute_bind packed for it (data address, dynamic extents and
        strides, in the layout's C struct), so the DSL's own call and the
        prepared handle's check of it read the value it was made from.
        """

        def __init__(self, dtype: Any, shape: Any, stride: Any, memspace: Any, align: int, descriptor: bytes) -> None:
            super().__init__(dtype, shape, stride=stride, memspace=memspace, assumed_align=align)
            self._descriptor = ctypes.create_string_buffer(descriptor, max(len(descriptor), 1))

        def __c_pointers__(self) -> list[int]:
            return [ctypes.addressof(self._descriptor)]

    return LaidOutTensor


def laid_out_tensor(dtype: Any, shape: tuple[Any, ...], stride: tuple[Any, ...], gpu: bool, align: int, descriptor: bytes) -> Any:
    """The DSL value of a tensor laid out as an annotation says (see ``LaidOutTensor``).

    ``shape``/``stride`` hold an int per static mode and ``(width,
    divisibility)`` per dynamic one (each its own SymInt); ``gpu`` picks the
    memory space ``from_dlpack`` gives a CUDA tensor (gmem), else generic.
    """
    cute = dsl().cute
    typing_module = importlib.import_module("cutlass.cute.typing")

    def mode(m: Any) -> Any:
        if isinstance(m, tuple):
            return typing_module.SymInt(m[0], divisibility=m[1])
        return int(m)

    space = cute.AddressSpace.gmem if gpu else cute.AddressSpace.generic
    return _laid_out_class()(dtype, tuple(mode(m) for m in shape), tuple(mode(m) for m in stride), space, align, descriptor)


def numeric_value(value: Any) -> Any:
    """A DSL number object's Python value (``cutlass.Int32(3)`` -> 3); anything else as it is."""
    if is_numeric_type(type(value)):
        return value.value
    return value
