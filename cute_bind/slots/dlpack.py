"""Reading tensors through DLPack: data pointer, device, dtype, shape and strides.

A tensor slot needs five facts of each tensor it is given. This module reads
them without building a DSL tensor:

- through the DLPack C exchange API when the value's type offers one
  (``type(value).__dlpack_c_exchange_api__``, e.g. ``torch.Tensor``): one C call
  fills a non-owning ``DLTensor`` view; the C fast path calls that function
  itself, this module finds it (:func:`exchange_function`) and uses it through
  ctypes on the Python paths;
- else through ``value.__dlpack__()``: the capsule's ``DLTensor`` is read and
  the capsule dropped (its destructor releases the producer's tensor).

Nothing here touches the DSL.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any, Callable, NamedTuple

__all__ = ["DLView", "DLTensor", "exchange_function", "exchange_for", "read", "read_capsule", "read_exchange", "describe_dtype", "is_cute_dtype", "DEVICE_NAMES"]

#: DLPack device types, for messages.
DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host (pinned)", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm", 13: "cuda_managed"}

# DLPack (code, bits) -> CuTe numeric type name, for messages and dtype checks
# (DLPack codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool, 8-17 the narrow floats).
_DTYPE_NAMES = {
    (0, 8): "Int8", (0, 16): "Int16", (0, 32): "Int32", (0, 64): "Int64",
    (1, 8): "Uint8", (1, 16): "Uint16", (1, 32): "Uint32", (1, 64): "Uint64",
    (2, 16): "Float16", (2, 32): "Float32", (2, 64): "Float64", (4, 16): "BFloat16",
    (6, 8): "Boolean", (8, 8): "Float8E4M3", (9, 8): "Float8E4M3B11FNUZ", (10, 8): "Float8E4M3FN",
    (12, 8): "Float8E5M2", (14, 8): "Float8E8M0FNU", (15, 6): "Float6E2M3FN", (16, 6): "Float6E3M2FN",
    (17, 4): "Float4E2M1FN",
}  # fmt: skip


def is_cute_dtype(dtype: tuple[int, int, int]) -> bool:
    """Whether a DLPack dtype has a CuTe element type (one lane)."""
    return dtype[2] == 1 and (dtype[0], dtype[1]) in _DTYPE_NAMES


class DLTensor(ctypes.Structure):
    """``DLTensor`` from dlpack.h (48 bytes)."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLView(NamedTuple):
    """The facts of one tensor a tensor slot checks and writes (a tuple: cheap to build per launch)."""

    address: int  # data + byte_offset
    device: tuple[int, int]  # (DLPack device type, device id)
    dtype: tuple[int, int, int]  # (code, bits, lanes)
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements; compact row-major when the producer gives none


def describe_dtype(dtype: tuple[int, int, int]) -> str:
    code, bits, lanes = dtype
    name = _DTYPE_NAMES.get((code, bits))
    if name is None or lanes != 1:
        return f"DLPack dtype (code={code}, bits={bits}, lanes={lanes})"
    return name


def describe_device(device: tuple[int, int]) -> str:
    return f"{DEVICE_NAMES.get(device[0], f'device type {device[0]}')}:{device[1]}"


_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]

# PYFUNCTYPE: the call keeps the GIL (the function may set a Python exception,
# which then propagates) -- a CFUNCTYPE call would release it.
_FROM_PYOBJECT = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
# DLPackExchangeAPI: header {DLPackVersion version (2 x u32); prev_api*}, then the
# function pointers managed_tensor_allocator, managed_tensor_from_py_object_no_sync,
# managed_tensor_to_py_object_no_sync, dltensor_from_py_object_no_sync, ...
_DLTENSOR_FROM_PYOBJECT_OFFSET = 16 + 3 * 8
_EXCHANGE_CACHE: dict[type, tuple[int, Any, Any] | None] = {}
_UNKNOWN: Any = object()


def exchange_function(tp: type) -> tuple[int, Any, Any] | None:
    """``(address, ctypes_function, capsule)`` of ``tp``'s ``dltensor_from_py_object_no_sync``, or None.

    The capsule is returned so holders keep the producer's table alive.
    """
    if tp in _EXCHANGE_CACHE:
        return _EXCHANGE_CACHE[tp]
    found: tuple[int, Any, Any] | None = None
    capsule = getattr(tp, "__dlpack_c_exchange_api__", None)
    if capsule is not None and _api.PyCapsule_IsValid(capsule, b"dlpack_exchange_api"):
        table = _api.PyCapsule_GetPointer(capsule, b"dlpack_exchange_api")
        major = ctypes.c_uint32.from_address(table).value
        address = ctypes.c_void_p.from_address(table + _DLTENSOR_FROM_PYOBJECT_OFFSET).value
        if major >= 1 and address:
            found = (int(address), _FROM_PYOBJECT(address), capsule)
    _EXCHANGE_CACHE[tp] = found
    return found


def _view(dl: DLTensor) -> DLView:
    ndim = dl.ndim
    shape = tuple(dl.shape[:ndim]) if ndim else ()
    if ndim and dl.strides:
        strides = tuple(dl.strides[:ndim])
    else:  # no strides: compact row-major
        acc, out = 1, []
        for extent in reversed(shape):
            out.append(acc)
            acc *= extent
        strides = tuple(reversed(out))
    return DLView((dl.data or 0) + dl.byte_offset, (dl.device_type, dl.device_id), (dl.code, dl.bits, dl.lanes), shape, strides)


def read_capsule(capsule: Any) -> DLView:
    """Read the ``DLTensor`` inside a DLPack capsule (versioned or not, used or not)."""
    name = _api.PyCapsule_GetName(capsule)
    pointer = _api.PyCapsule_GetPointer(capsule, name)
    # DLManagedTensorVersioned: {DLPackVersion, manager_ctx, deleter, flags, DLTensor}
    offset = 32 if name and b"versioned" in name else 0
    return _view(DLTensor.from_address(pointer + offset))


def exchange_for(tp: type) -> tuple[int, Any, Any] | None:
    """:func:`exchange_function`, through its cache first (the per-launch form)."""
    found = _EXCHANGE_CACHE.get(tp, _UNKNOWN)
    return exchange_function(tp) if found is _UNKNOWN else found


def read_exchange(found: tuple[int, Any, Any], value: Any) -> DLView | None:
    """Read ``value`` (of exactly the type ``found`` belongs to) through its exchange function;
    None if the producer refuses it (e.g. a meta or sparse torch tensor)."""
    dl = DLTensor()
    try:
        if found[1](value, ctypes.addressof(dl)) == 0:
            return _view(dl)
    except Exception:
        pass
    return None


# ---------------------------------------------------------------- per-type readers (Python paths)
#: value -> DLView, or None when this value cannot be read that way
Reader = Callable[[Any], "DLView | None"]
_READERS: dict[type, Reader | None] = {}

#: torch dtype attribute name -> DLPack (code, bits, lanes): the one torch dtype table.
TORCH_DTYPE_CODES: dict[str, tuple[int, int, int]] = {
    "float32": (2, 32, 1), "float64": (2, 64, 1), "float16": (2, 16, 1), "bfloat16": (4, 16, 1),
    "int8": (0, 8, 1), "int16": (0, 16, 1), "int32": (0, 32, 1), "int64": (0, 64, 1),
    "uint8": (1, 8, 1), "uint16": (1, 16, 1), "uint32": (1, 32, 1), "uint64": (1, 64, 1),
    "bool": (6, 8, 1), "float8_e4m3fn": (10, 8, 1), "float8_e5m2": (12, 8, 1),
}  # fmt: skip
_TORCH_DTYPES: dict[Any, tuple[int, int, int]] = {}


def _torch_dtypes(torch: Any) -> dict[Any, tuple[int, int, int]]:
    if not _TORCH_DTYPES:
        for name, dl in TORCH_DTYPE_CODES.items():
            dtype = getattr(torch, name, None)
            if dtype is not None:
                _TORCH_DTYPES[dtype] = dl
    return _TORCH_DTYPES


def _torch_reader(torch: Any) -> Reader:
    """Read a strided CPU/CUDA torch tensor through its attributes: on the Python paths several
    times cheaper than a ctypes call of the exchange function; anything else returns None."""
    dtypes = _torch_dtypes(torch)

    def read_torch(t: Any) -> DLView | None:
        try:
            if t.is_cuda:
                device = (2, t.get_device())
            elif t.is_cpu:
                device = (1, 0)
            else:
                return None
            dtype = dtypes.get(t.dtype)
            if dtype is None:
                return None
            return DLView(t.data_ptr(), device, dtype, tuple(t.shape), t.stride())
        except Exception:  # sparse and other non-strided tensors
            return None

    return read_torch


def reader_for(tp: type) -> Reader | None:
    """The cheapest Python reader for values of exactly type ``tp`` (value -> DLView or None), or None."""
    if tp in _READERS:
        return _READERS[tp]
    reader: Reader | None = None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(tp, type) and issubclass(tp, torch.Tensor):
        reader = _torch_reader(torch)
    else:
        found = exchange_for(tp)
        if found is not None:
            reader = functools.partial(read_exchange, found)
    _READERS[tp] = reader
    return reader


# __dlpack__ keyword sets, tried in order: no synchronisation (as the DSL asks)
# and no copy (a copy's address would dangle once the capsule is dropped), then
# what older producers accept.
_EXPORT_KWARGS: tuple[dict[str, Any], ...] = ({"stream": -1, "copy": False}, {"copy": False}, {"stream": -1}, {})
#: per type, the keyword sets in the order to try them: the one that last worked
#: first, so a producer refusing the first set (NumPy takes no stream) exports once
_EXPORT_ORDER: dict[type, tuple[dict[str, Any], ...]] = {}


def read(value: Any) -> DLView:
    """Read a DLPack-capable value; raise TypeError, BufferError, ... when it cannot be read in place."""
    reader = reader_for(type(value))
    if reader is not None:
        view = reader(value)
        if view is not None:
            return view
    exporter = getattr(value, "__dlpack__", None)
    if exporter is None:
        raise TypeError(f"{type(value).__name__} does not implement __dlpack__")
    error: Exception | None = None
    order = _EXPORT_ORDER.get(type(value), _EXPORT_KWARGS)
    for kwargs in order:
        try:
            capsule = exporter(**kwargs)
        except BufferError:
            raise  # the producer would have to copy
        except Exception as exc:  # a keyword this producer does not take, or a refusal
            error = error or exc
            continue
        if kwargs is not order[0]:
            _EXPORT_ORDER[type(value)] = (kwargs, *(k for k in _EXPORT_KWARGS if k is not kwargs))
        return read_capsule(capsule)
    raise error if error is not None else TypeError("__dlpack__ failed")


def device_of(value: Any) -> tuple[int, int] | None:
    """``value.__dlpack_device__()`` when the value offers it (cheap, no export)."""
    get = getattr(value, "__dlpack_device__", None)
    if get is None:
        return None
    try:
        device = get()
        return (int(device[0]), int(device[1]))
    except Exception:  # not a usable answer: the export that follows decides
        return None
