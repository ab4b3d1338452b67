"""Functions compiled with ``--enable-tvm-ffi`` (issue 11): their TVM-FFI entry, TVM-FFI's C API,
how its argument setters class a value, and the constants its calls build.

``tvm_ffi`` below is always the installed top-level package (absolute imports).
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import sys
from dataclasses import dataclass
from typing import Any

from .annotations import cuda_stream_class
from .compiled import runtime_signature

__all__ = [
    "is_tvm_ffi_compiled",
    "TvmFfiEntry",
    "tvm_ffi_entry",
    "tvm_ffi_missing",
    "tvm_ffi_error",
    "is_tvm_ffi_function",
    "tvm_ffi_function_entry",
    "tvm_ffi_scalar_kind",
    "TVM_FFI_CONSTANT_DEPTH",
    "tvm_ffi_constant_leaves_ok",
    "tvm_ffi_constant",
    "tvm_ffi_unpacked_parameters",
    "tvm_ffi_takes_no_structure",
    "tvm_ffi_unpack",
    "is_dataclass_instance",
    "tvm_ffi_structure_array",
]


def is_tvm_ffi_compiled(obj: object) -> bool:
    return "tvm_ffi" in type(obj).__module__


@dataclass(frozen=True)
class TvmFfiEntry:
    """What a prepared TVM-FFI launch needs to call a compiled function's TVM-FFI entry itself."""

    safe_call: int  # int entry(void *self, const TVMFFIAny *args, int32_t n, TVMFFIAny *result)
    handle: int  # the tvm_ffi.Function's object handle, passed as ``self`` (as TVMFFIFunctionCall does)
    function: object  # the tvm_ffi.Function (kept alive: it keeps the engine loaded)
    parameters: tuple[inspect.Parameter, ...]  # each positional argument the entry takes
    set_stream: int  # TVMFFIEnvSetStream
    move_error: int  # TVMFFIErrorMoveFromRaised
    dec_ref: int  # TVMFFIObjectDecRef
    pointer_parameters: frozenset[str]  # parameters whose int addresses the DSL validates before the call
    converts_sequences: bool  # a sequence parameter holds pointers (rewritten element-wise by the DSL)
    unpacked: frozenset[str] = frozenset()  # parameters whose dataclass the call unpacks to nested tuples
    no_structure: frozenset[str] = frozenset()  # parameters annotated as a number or tensor (never a structure)


@functools.lru_cache(maxsize=None)
def _tvm_ffi_c_api() -> tuple[int, int, int]:
    import tvm_ffi

    lib = ctypes.CDLL(tvm_ffi.libinfo.find_libtvm_ffi())
    set_stream, move_error, dec_ref = (
        ctypes.cast(getattr(lib, n), ctypes.c_void_p).value or 0
        for n in ("TVMFFIEnvSetStream", "TVMFFIErrorMoveFromRaised", "TVMFFIObjectDecRef")
    )
    return set_stream, move_error, dec_ref


def tvm_ffi_entry(compiled: Any) -> TvmFfiEntry:
    """Resolve the TVM-FFI entry of a function compiled with ``--enable-tvm-ffi``.

    The DSL makes either a ``tvm_ffi.Function`` subclass (positional
    arguments only) or a wrapper holding one in ``_tvm_ffi_function`` with a
    generated keyword wrapper (``_kwargs_wrapper``, whose signature names the
    entry's positional arguments in order). The entry symbol is
    ``__tvm_ffi_<function_name>`` in the compiled function's engine.
    """
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
        unpacked=tvm_ffi_unpacked_parameters(wrapper) if wrapper is not None else frozenset(),
        no_structure=_no_structure_parameters(compiled),
    )


def tvm_ffi_missing() -> object:
    """The sentinel TVM-FFI's keyword wrapper shows for a default it fills itself."""
    from tvm_ffi.core import MISSING

    return MISSING


def tvm_ffi_error(kind: str, message: str, backtrace: str) -> BaseException:
    """The Python exception the TVM-FFI call raises for an error of ``kind`` (``ValueError``...)."""
    import tvm_ffi

    return tvm_ffi.core.Error(kind, message, backtrace).py_error()


def is_tvm_ffi_function(obj: object) -> bool:
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
    ffi_classes = tuple(
        c for c in (getattr(core, n, None) for n in ("Tensor", "CContainerBase", "CObject", "ObjectRValueRef")) if isinstance(c, type)
    )
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


def tvm_ffi_constant(value: object) -> tuple[object, int, int]:
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


# ------------------------------------------------------------------ structures (NamedTuples, tuples, lists, dataclasses)
def tvm_ffi_unpacked_parameters(wrapper: Any) -> frozenset[str]:
    """The parameters whose dataclass value the DSL's keyword wrapper unpacks to nested tuples
    (``tvm_ffi.utils.unpack_dataclass.unpack_dataclass_to_tuple``) before the TVM-FFI call.

    The DSL decides it at compile time (a dataclass annotation or a dataclass compile argument:
    its ``map_dataclass_to_tuple``) and keeps it only in the wrapper's generated code, which calls
    ``__i_unpack(<name>)`` for those parameters. That code is run here once more over a recording
    target and a marking ``__i_unpack``, with one sentinel per parameter: the marked positions are
    the unpacked parameters. Nothing else of the wrapper runs (its globals are a private copy)."""
    import types

    try:
        from tvm_ffi.utils import kwargs_wrapper as kw
    except ImportError:  # a TVM-FFI without the wrapper: the DSL unpacks nothing
        return frozenset()
    code = getattr(wrapper, "__code__", None)
    globals_ = getattr(wrapper, "__globals__", None)
    unpack_name = getattr(kw, "_INTERNAL_UNPACK", "__i_unpack")
    target_name = getattr(kw, "_INTERNAL_TARGET_FUNC", "__i_target_func")
    if code is None or not isinstance(globals_, dict) or unpack_name not in globals_:
        return frozenset()

    class Marked:
        __slots__ = ("value",)

        def __init__(self, value: object) -> None:
            self.value = value

    copy = dict(globals_)
    copy[target_name] = lambda *args: args
    copy[unpack_name] = Marked
    probe = types.FunctionType(code, copy, "probe", wrapper.__defaults__, wrapper.__closure__)
    probe.__kwdefaults__ = wrapper.__kwdefaults__
    names = list(inspect.signature(wrapper).parameters)
    sentinels = {name: object() for name in names}
    try:
        passed = probe(**sentinels)
    except Exception:  # noqa: BLE001 - generated code of another form: nothing is known to be unpacked
        return frozenset()
    by_id = {id(v): name for name, v in sentinels.items()}
    return frozenset(by_id[id(a.value)] for a in passed if isinstance(a, Marked) and id(a.value) in by_id)


def _no_structure_parameters(compiled: object) -> frozenset[str]:
    """Parameters annotated as a DSL number or a tensor (optionally ``| None``): the DSL compiles
    them as a scalar or a tensor whatever its compile argument, so no structure is ever taken there."""
    try:
        sig = runtime_signature(compiled)
    except Exception:  # noqa: BLE001 - no signature: nothing known
        return frozenset()
    return frozenset(n for n, a in zip(sig.names, sig.annotations) if tvm_ffi_takes_no_structure(a))


def tvm_ffi_takes_no_structure(annotation: object) -> bool:
    """Whether the DSL compiles a parameter annotated ``annotation`` as a scalar or a tensor
    (``cutlass.Int32``, ``cutlass.Float32``..., ``cute.Tensor``, ``Optional`` of one)."""
    import typing

    args = typing.get_args(annotation)
    if args and typing.get_origin(annotation) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        members = [a for a in args if a is not type(None)]
        return bool(members) and all(tvm_ffi_takes_no_structure(a) for a in members)
    if not isinstance(annotation, type):
        return False
    try:
        from cutlass.base_dsl.typing import Numeric
        from cutlass.cute.typing import Tensor
    except ImportError:  # pragma: no cover - the DSL is what compiled the function
        return False
    return issubclass(annotation, (Numeric, Tensor))


def is_dataclass_instance(value: object) -> bool:
    import dataclasses

    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def tvm_ffi_unpack(value: object) -> object:
    """``value`` as the DSL's keyword wrapper hands it to TVM-FFI for a parameter it unpacks:
    ``unpack_dataclass_to_tuple`` (dataclasses to tuples of their fields, recursively)."""
    from tvm_ffi.utils.unpack_dataclass import unpack_dataclass_to_tuple

    return unpack_dataclass_to_tuple(value)


_TVM_FFI_NONE = 0
_ANY_SIZE = 16  # TVMFFIAny: type_index (4), padding (4), value (8)


def tvm_ffi_structure_array(template: tuple[object, ...]) -> tuple[object, int, int, tuple[int, ...]]:
    """``(array, handle, type_index, leaves)``: the ``ffi.Array`` (of ``ffi.Array``... for nested
    tuples) TVM-FFI's call builds for a structure of this form, built from ``template`` (nested
    tuples whose leaves are all ``None``), and the address of each leaf's ``TVMFFIAny`` element in
    preorder: a prepared launch writes each leaf there (a ``None`` element holds no object, so
    rewriting it with another value that holds none, an int, a float, a bool, a ``DLTensor``
    pointer, never leaks or frees one). The elements of an array lie in its sequence cell
    (``TVMFFISeqCell``: data, size, after the object header), the cell the compiled entry reads."""
    array, handle, type_index = tvm_ffi_constant(template)  # the same conversion
    leaves: list[int] = []

    def visit(obj: int, form: tuple[object, ...]) -> None:
        data = int(ctypes.c_void_p.from_address(obj + _TVM_FFI_OBJECT_HEADER).value or 0)
        size = int(ctypes.c_int64.from_address(obj + _TVM_FFI_OBJECT_HEADER + 8).value)
        if size != len(form) or (size and not data):
            raise ValueError("the ffi.Array does not hold the structure's elements")
        for k, item in enumerate(form):
            slot = data + _ANY_SIZE * k
            index = int(ctypes.c_int32.from_address(slot).value)
            if isinstance(item, tuple):
                if index != type_index:
                    raise ValueError("a nested structure is not an ffi.Array")
                visit(int(ctypes.c_void_p.from_address(slot + 8).value or 0), item)
            else:
                if index != _TVM_FFI_NONE:
                    raise ValueError("a leaf of the template is not None")
                leaves.append(slot)

    visit(handle, template)
    return array, handle, type_index, tuple(leaves)
