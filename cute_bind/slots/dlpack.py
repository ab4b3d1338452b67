"""Reading tensors through DLPack: data pointer, device, dtype, shape and strides.

A tensor slot needs five facts of each tensor it is given. This module reads
them without building a DSL tensor:

- through the DLPack C exchange API when the value's type offers one
  (``type(value).__dlpack_c_exchange_api__``, e.g. ``torch.Tensor``): one C call
  fills a non-owning ``DLTensor`` view; the C fast path calls that function
  itself, this module finds it (:func:`exchange_function`) and uses it through
  ctypes on the Python paths;
- else through ``value.__dlpack__()``: the capsule's ``DLTensor`` is read and
  the capsule returned with the view (:attr:`DLView.owner`): it may own the
  memory (a producer exporting a fresh copy), so the launch holds it until the
  entry point returns.

Every description is validated before use (:class:`InvalidDLPack`): a known
DLPack major version, no negative extent, no INT64_MIN stride, a data address
within 64 bits; a capsule flagged read-only raises :class:`ReadOnlyDLPack`.
The per-type caches hold types weakly, so a type (and whatever it refers to)
can be collected.

Nothing here touches the DSL.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import weakref
from types import ModuleType
from typing import Any, Callable, Final, NamedTuple, TypedDict

__all__ = [
    "ArrayLayout",
    "CtypesLayout",
    "array_layout",
    "array_address",
    "ctypes_layout",
    "dtype_code",
    "DLView",
    "DLTensor",
    "InvalidDLPack",
    "ReadOnlyDLPack",
    "EXCHANGE_FROM_PYOBJECT_OFFSET",
    "EXCHANGE_WORK_STREAM_OFFSET",
    "Exchange",
    "exchange_function",
    "exchange_table",
    "exchange_for",
    "read",
    "read_capsule",
    "read_exchange",
    "describe_dtype",
    "is_cute_dtype",
    "DEVICE_NAMES",
]

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
    owner: object = None  # what the view's memory may belong to (a capsule): held until the launch returns


class InvalidDLPack(ValueError):
    """A DLPack description that cannot be read safely (CB218)."""


class ReadOnlyDLPack(BufferError):
    """A DLPack capsule flagged read-only (CB217)."""


_INT64_MIN: Final = -(1 << 63)
_U64: Final = 1 << 64
#: DLPack major versions whose structs this module reads
DLPACK_MAJOR: Final = 1


def dtype_code(name: str) -> tuple[int, int, int] | None:
    """The DLPack (code, bits, lanes) of a CuTe element type name (``"Float32"``), or None."""
    for (code, bits), known in _DTYPE_NAMES.items():
        if known == name:
            return (code, bits, 1)
    return None


def describe_dtype(dtype: tuple[int, int, int]) -> str:
    code, bits, lanes = dtype
    name = _DTYPE_NAMES.get((code, bits))
    if name is None or lanes != 1:
        return f"DLPack dtype (code={code}, bits={bits}, lanes={lanes})"
    return name


def describe_device(device: tuple[int, int]) -> str:
    return f"{DEVICE_NAMES.get(device[0], f'device type {device[0]}')}:{device[1]}"


def python_api(name: str, restype: Any, *argtypes: Any) -> Any:
    """Our own ctypes function object for the C API function ``name``: ``ctypes.pythonapi.X`` is one
    object per process, whose ``argtypes`` another library may set (a ``CFUNCTYPE`` destructor for
    ``PyCapsule_New``, seen on the GPU machine) and which we must not set for it either.
    PYFUNCTYPE keeps the GIL, so a Python exception the function sets propagates."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


class _CapsuleApi:
    PyCapsule_GetPointer = python_api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
    PyCapsule_GetName = python_api("PyCapsule_GetName", ctypes.c_char_p, ctypes.py_object)
    PyCapsule_IsValid = python_api("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
    #: a capsule of a pointer, with a destructor (``None``: none)
    PyCapsule_New = python_api("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)


_api = _CapsuleApi
#: ``PyCapsule_New(pointer, name, destructor)`` (a DLPack capsule of a producer cute_bind makes)
capsule_new = _CapsuleApi.PyCapsule_New

# PYFUNCTYPE: the call keeps the GIL (the function may set a Python exception,
# which then propagates) -- a CFUNCTYPE call would release it.
_FROM_PYOBJECT = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
# DLPackExchangeAPI: header {DLPackVersion version (2 x u32); prev_api*}, then the
# function pointers managed_tensor_allocator, managed_tensor_from_py_object_no_sync,
# managed_tensor_to_py_object_no_sync, dltensor_from_py_object_no_sync,
# current_work_stream. This module is the one reader of that table.
#: Offset of ``dltensor_from_py_object_no_sync`` in the DLPackExchangeAPI table:
#: the one definition; the C fast path gets it in each tensor spec (CTensorSpec.api_offset).
EXCHANGE_FROM_PYOBJECT_OFFSET: Final = 16 + 3 * ctypes.sizeof(ctypes.c_void_p)
#: Offset of ``current_work_stream`` (the pointer after the reader).
EXCHANGE_WORK_STREAM_OFFSET: Final = EXCHANGE_FROM_PYOBJECT_OFFSET + ctypes.sizeof(ctypes.c_void_p)


class Exchange(NamedTuple):
    """What a type's DLPack exchange API gives cute_bind (read by :func:`exchange_table`)."""

    address: int
    """``dltensor_from_py_object_no_sync``: fills a non-owning ``DLTensor`` view of a value"""
    read: Callable[[object, int], int]
    """the same function through ctypes, keeping the GIL (the Python paths' reader)"""
    capsule: object
    """the type's ``__dlpack_c_exchange_api__`` capsule: holders keep the producer's table alive"""
    work_stream: int
    """``current_work_stream`` (a device's current stream), or 0 where the table has none"""


_EXCHANGE_CACHE: weakref.WeakKeyDictionary[type, Exchange | None] = weakref.WeakKeyDictionary()
#: what :data:`_EXCHANGE_CACHE` answers for a type it has not seen (compared by identity)
_UNKNOWN_EXCHANGE: Final = Exchange(0, lambda value, address: -1, None, 0)


def exchange_table(tp: type) -> Exchange | None:
    """``tp``'s DLPack exchange API, read from the type now (not cached: the attribute may
    appear later, e.g. installed by tvm_ffi on a torch without one); None where it has none,
    its capsule is not one, or its table is of another DLPack major version (another layout)
    or has no reader."""
    capsule = getattr(tp, "__dlpack_c_exchange_api__", None)
    if capsule is None or not _api.PyCapsule_IsValid(capsule, b"dlpack_exchange_api"):
        return None
    table = _api.PyCapsule_GetPointer(capsule, b"dlpack_exchange_api")
    if not table or ctypes.c_uint32.from_address(table).value != DLPACK_MAJOR:
        return None
    address = ctypes.c_void_p.from_address(table + EXCHANGE_FROM_PYOBJECT_OFFSET).value
    if not address:
        return None
    work_stream = ctypes.c_void_p.from_address(table + EXCHANGE_WORK_STREAM_OFFSET).value or 0
    return Exchange(int(address), _FROM_PYOBJECT(address), capsule, int(work_stream))


def exchange_function(tp: type) -> Exchange | None:
    """:func:`exchange_table` of ``tp``, cached per type (what slots read their values through)."""
    cached = _EXCHANGE_CACHE.get(tp, _UNKNOWN_EXCHANGE)
    if cached is not _UNKNOWN_EXCHANGE:
        return cached
    found = exchange_table(tp)
    try:
        _EXCHANGE_CACHE[tp] = found
    except TypeError:  # a type that cannot be weakly referenced: not cached
        pass
    return found


def _compact_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides of a compact row-major tensor of ``shape`` (what a producer giving no strides means)."""
    acc, out = 1, []
    for extent in reversed(shape):
        out.append(acc)
        acc *= extent
    return tuple(reversed(out))


def _view(dl: DLTensor, owner: object = None) -> DLView:
    """The facts of ``dl``, validated (:class:`InvalidDLPack` for a description that cannot exist)."""
    ndim = dl.ndim
    if ndim < 0 or ndim > 64 or (ndim and not dl.shape):
        raise InvalidDLPack(f"ndim {ndim} with {'a' if dl.shape else 'no'} shape")
    shape = tuple(dl.shape[:ndim]) if ndim else ()
    if any(e < 0 for e in shape):
        raise InvalidDLPack(f"a negative extent in shape {shape}")
    if ndim and dl.strides:
        strides = tuple(dl.strides[:ndim])
        if _INT64_MIN in strides:
            raise InvalidDLPack(f"a stride of INT64_MIN in strides {strides}")
    else:  # no strides: compact row-major
        strides = _compact_strides(shape)
    address = (dl.data or 0) + dl.byte_offset
    if address >= _U64:
        raise InvalidDLPack(f"data {dl.data or 0:#x} + byte_offset {dl.byte_offset} beyond 64 bits")
    return DLView(address, (dl.device_type, dl.device_id), (dl.code, dl.bits, dl.lanes), shape, strides, owner)


#: DLManagedTensorVersioned flags (dlpack.h)
_FLAG_READ_ONLY: Final = 1


#: the names a fresh DLPack export carries; a consumer renames them "used_..." when it takes the tensor
_FRESH_NAMES = (b"dltensor", b"dltensor_versioned")
_USED_NAMES = (b"used_dltensor", b"used_dltensor_versioned")


def read_capsule(capsule: object, *, consumed: bool = False) -> DLView:
    """Read the ``DLTensor`` inside a DLPack capsule (versioned or not); the view holds the capsule.

    A capsule from ``__dlpack__`` must be a fresh export (named ``dltensor`` or
    ``dltensor_versioned``): any other capsule is not a DLPack tensor (its
    pointer is something else), and a used one's memory may already be freed.
    ``consumed=True`` also takes the used names: for a ``from_dlpack`` tensor,
    whose DSL object consumed the capsule and keeps the tensor alive.
    """
    if type(capsule).__name__ != "PyCapsule" or type(capsule).__module__ != "builtins":
        raise TypeError(f"__dlpack__ returned {type(capsule).__name__}, not a capsule")  # not a tensor at all (CB204)
    name = _api.PyCapsule_GetName(capsule)
    if name not in _FRESH_NAMES + (_USED_NAMES if consumed else ()):
        shown = name.decode("utf-8", "replace") if isinstance(name, bytes) else repr(name)
        raise InvalidDLPack(f"a capsule named {shown!r}, not a fresh DLPack export ('dltensor' or 'dltensor_versioned')")
    pointer = _api.PyCapsule_GetPointer(capsule, name)
    if not pointer:
        raise InvalidDLPack("an empty capsule")
    offset = 0
    if name and b"versioned" in name:
        # DLManagedTensorVersioned: {DLPackVersion {u32 major, u32 minor}, manager_ctx, deleter, u64 flags, DLTensor}
        major = ctypes.c_uint32.from_address(pointer).value
        if major != DLPACK_MAJOR:
            raise InvalidDLPack(f"DLPack major version {major} (this reader knows {DLPACK_MAJOR})")
        if ctypes.c_uint64.from_address(pointer + 24).value & _FLAG_READ_ONLY:
            raise ReadOnlyDLPack("the capsule is flagged read-only")
        offset = 32
    return _view(DLTensor.from_address(pointer + offset), capsule)


def exchange_for(tp: type) -> Exchange | None:
    """:func:`exchange_function`, through its cache first (the per-launch form)."""
    found = _EXCHANGE_CACHE.get(tp, _UNKNOWN_EXCHANGE)
    return exchange_function(tp) if found is _UNKNOWN_EXCHANGE else found


def read_exchange(found: Exchange, value: object) -> DLView | None:
    """Read ``value`` (of exactly the type ``found`` belongs to) through its exchange function;
    None if the producer refuses it (e.g. a meta or sparse torch tensor)."""
    dl = DLTensor()
    try:
        if found.read(value, ctypes.addressof(dl)) == 0:
            return _view(dl)  # borrowed from ``value``, which the launch holds
    except Exception:
        pass
    return None


# ---------------------------------------------------------------- per-type readers (Python paths)
#: value -> DLView, or None when this value cannot be read that way
Reader = Callable[[Any], "DLView | None"]
_READERS: weakref.WeakKeyDictionary[type, Reader | None] = weakref.WeakKeyDictionary()


def _unknown_reader(value: object) -> DLView | None:
    """What :data:`_READERS` answers for a type it has not seen (compared by identity; never called)."""
    return None  # pragma: no cover


#: torch dtype attribute name -> DLPack (code, bits, lanes): the one torch dtype table.
TORCH_DTYPE_CODES: dict[str, tuple[int, int, int]] = {
    "float32": (2, 32, 1), "float64": (2, 64, 1), "float16": (2, 16, 1), "bfloat16": (4, 16, 1),
    "int8": (0, 8, 1), "int16": (0, 16, 1), "int32": (0, 32, 1), "int64": (0, 64, 1),
    "uint8": (1, 8, 1), "uint16": (1, 16, 1), "uint32": (1, 32, 1), "uint64": (1, 64, 1),
    "bool": (6, 8, 1), "float8_e4m3fn": (10, 8, 1), "float8_e5m2": (12, 8, 1),
}  # fmt: skip
_TORCH_DTYPES: dict[object, tuple[int, int, int]] = {}


def _torch_dtypes(torch: ModuleType) -> dict[object, tuple[int, int, int]]:
    if not _TORCH_DTYPES:
        for name, dl in TORCH_DTYPE_CODES.items():
            dtype = getattr(torch, name, None)
            if dtype is not None:
                _TORCH_DTYPES[dtype] = dl
    return _TORCH_DTYPES


def _torch_reader(torch: ModuleType) -> Reader:
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


# ---------------------------------------------------------------- NumPy arrays and ctypes objects
class ArrayLayout(NamedTuple):
    """Where ``numpy.ndarray``'s fields sit in the array object (PyArrayObject_fields, NumPy's public
    C ABI, the same in NumPy 1.x and 2.x), verified by :func:`array_layout` against real arrays.

    The C fast path reads an array through it (``_claunch.configure``), and the Python paths its
    data address: NumPy has no DLPack exchange function, and ``__array_interface__`` (1.5 us) or
    ``__dlpack__`` (a capsule per call) cost more than the rest of a launch.
    """

    type: type  # numpy.ndarray (exactly: a subclass may behave differently)
    data: int
    nd: int
    dims: int
    strides: int
    descr: int
    flags: int
    type_num: int  # offsets in the dtype object
    byteorder: int
    writeable: int  # NPY_ARRAY_WRITEABLE
    dtypes: tuple[tuple[int, int, int], ...]  # (type number, DLPack code, bits): what NumPy's own export says


_P = ctypes.sizeof(ctypes.c_void_p)
_HEAD = 2 * _P  # PyObject_HEAD: refcount, type
#: PyArrayObject_fields: data, nd, dimensions, strides, base, descr, flags; PyArray_Descr: typeobj, kind, type, byteorder, flags, type_num
_ARRAY_OFFSETS = {
    "data": _HEAD,
    "nd": _HEAD + _P,
    "dims": _HEAD + 2 * _P,
    "strides": _HEAD + 3 * _P,
    "descr": _HEAD + 5 * _P,
    "flags": _HEAD + 6 * _P,
}
_DESCR_OFFSETS = {"byteorder": _HEAD + _P + 2, "type_num": _HEAD + _P + 4}
_NPY_WRITEABLE: Final = 0x0400
#: the NumPy element types read without an export (each with its own type number; long and longlong may share a code)
_NUMPY_NAMES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "intc",
    "uintc",
    "longlong",
    "ulonglong",
)


class _Layouts(TypedDict, total=False):
    """The verified layouts, once looked for (None: not usable); a missing key: not looked for yet."""

    numpy: ArrayLayout | None
    ctypes: CtypesLayout | None


_LAYOUTS: _Layouts = {}


def _read_ptr(address: int) -> int:
    return ctypes.c_void_p.from_address(address).value or 0


def _check_array(np: ModuleType, a: Any) -> bool:
    """Whether reading ``a`` at :data:`_ARRAY_OFFSETS` gives what its attributes say."""
    base, o = id(a), _ARRAY_OFFSETS
    nd = ctypes.c_int.from_address(base + o["nd"]).value
    if _read_ptr(base + o["data"]) != a.__array_interface__["data"][0] or nd != a.ndim or _read_ptr(base + o["descr"]) != id(a.dtype):
        return False
    dims, strides = _read_ptr(base + o["dims"]), _read_ptr(base + o["strides"])
    if nd and not (dims and strides):
        return False
    if tuple(ctypes.c_int64.from_address(dims + 8 * k).value for k in range(nd)) != a.shape:
        return False
    if tuple(ctypes.c_int64.from_address(strides + 8 * k).value for k in range(nd)) != a.strides:
        return False
    flags = ctypes.c_int.from_address(base + o["flags"]).value
    if bool(flags & _NPY_WRITEABLE) != bool(a.flags.writeable):
        return False
    d = id(a.dtype)
    return bool(
        ctypes.c_int.from_address(d + _DESCR_OFFSETS["type_num"]).value == a.dtype.num
        and ctypes.c_char.from_address(d + _DESCR_OFFSETS["byteorder"]).value == a.dtype.byteorder.encode()
    )


def array_layout() -> ArrayLayout | None:
    """NumPy's ndarray layout, verified on arrays of several shapes, strides, dtypes and flags;
    None when NumPy is not imported, the platform is not 64-bit, or any check fails (then arrays
    are read through their Python protocols, as before)."""
    if "numpy" in _LAYOUTS:
        return _LAYOUTS["numpy"]
    np = sys.modules.get("numpy")
    if np is None:
        return None  # not cached: NumPy may be imported later
    found: ArrayLayout | None = None
    try:
        if _P == 8 and ctypes.sizeof(ctypes.c_ssize_t) == 8:
            base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
            ro = np.zeros(5, np.int16)
            ro.flags.writeable = False
            samples = [base, base[:, ::2, 1:], base.T, np.zeros((), np.float64), ro, np.zeros(7, np.uint8)[1:], np.zeros(3, ">f4")]
            if all(_check_array(np, a) for a in samples):
                dtypes = []
                for name in _NUMPY_NAMES:
                    dt = np.dtype(getattr(np, name))
                    try:
                        code, bits, lanes = read_capsule(np.zeros(1, dt).__dlpack__()).dtype  # what NumPy's own export says
                    except Exception:
                        continue
                    if lanes == 1 and bits == 8 * dt.itemsize and dt.num < 64:
                        dtypes.append((dt.num, code, bits))
                o = _ARRAY_OFFSETS
                found = ArrayLayout(
                    np.ndarray, o["data"], o["nd"], o["dims"], o["strides"], o["descr"], o["flags"],
                    _DESCR_OFFSETS["type_num"], _DESCR_OFFSETS["byteorder"], _NPY_WRITEABLE, tuple(sorted(set(dtypes))),
                )  # fmt: skip
    except Exception:  # noqa: S110 - any surprise: no layout, the Python protocols are used
        found = None
    _LAYOUTS["numpy"] = found
    return found


class CtypesLayout(NamedTuple):
    """Where a ctypes object keeps its buffer pointer (what ``ctypes.addressof`` returns); a
    ``c_void_p`` or ``POINTER(T)`` object holds its address there. Verified by :func:`ctypes_layout`."""

    void_p: type
    pointer: type  # ctypes._Pointer, the base of every POINTER(T)
    b_ptr: int


def ctypes_layout() -> CtypesLayout | None:
    """The verified :class:`CtypesLayout`, or None (then ctypes objects take the slow path)."""
    if "ctypes" in _LAYOUTS:
        return _LAYOUTS["ctypes"]
    found: CtypesLayout | None = None
    try:
        buf = (ctypes.c_float * 4)()
        samples = [
            ctypes.c_void_p(ctypes.addressof(buf)),
            ctypes.c_void_p(None),
            ctypes.pointer(ctypes.c_float(1.0)),
            ctypes.cast(buf, ctypes.POINTER(ctypes.c_float)),
        ]
        if all(_read_ptr(id(p) + _HEAD) == ctypes.addressof(p) for p in samples) and all(
            _read_ptr(ctypes.addressof(p)) == (ctypes.cast(p, ctypes.c_void_p).value or 0) for p in samples
        ):
            found = CtypesLayout(ctypes.c_void_p, ctypes._Pointer, _HEAD)
    except Exception:  # noqa: S110 - no layout: the slow path reads ctypes objects
        found = None
    _LAYOUTS["ctypes"] = found
    return found


def array_address(layout: ArrayLayout, value: object) -> int:
    """The data address of ``value``, an exact ``numpy.ndarray`` (through the verified layout)."""
    return _read_ptr(id(value) + layout.data)


def _numpy_reader(np: ModuleType) -> Reader | None:
    """Read a writable native-order NumPy array as its ``__dlpack__`` export would describe it,
    without exporting; None for anything else (the export then decides, e.g. CB217 read-only)."""
    layout = array_layout()
    if layout is None:
        return None
    codes = {num: (code, bits, 1) for num, code, bits in layout.dtypes}
    dtypes = {}
    for name in _NUMPY_NAMES:
        dt = np.dtype(getattr(np, name))
        if dt.num in codes:
            dtypes[dt] = (codes[dt.num], dt.itemsize)
    address = ctypes.c_void_p.from_address
    off = layout.data
    host = (1, 0)

    def read_numpy(a: Any) -> DLView | None:
        found = dtypes.get(a.dtype)
        if found is None or not a.flags.writeable:
            return None
        dtype, item = found
        st = a.strides
        if item != 1:
            if any(s % item for s in st):
                return None  # NumPy refuses to export it
            st = tuple(s // item for s in st)
        return DLView(address(id(a) + off).value or 0, host, dtype, a.shape, st)

    return read_numpy


#: array-interface typestrs without their byte order ("f4", "i8", "b1") -> DLPack (code, bits, lanes):
#: the one table (pointer slots name their values' element types from it; the C fast path's
#: ``typestr_dtype`` reads the same letters and sizes, and tests hold the two together)
TYPESTR_DTYPES: Final = {
    f"{kind}{size}": (code, 8 * size, 1)
    for kind, code, sizes in (("f", 2, (2, 4, 8)), ("i", 0, (1, 2, 4, 8)), ("u", 1, (1, 2, 4, 8)), ("b", 6, (1,)))
    for size in sizes
}
# __cuda_array_interface__ typestr -> DLPack (code, bits, lanes): little-endian or no byte order
# (a big-endian array goes to the export, which refuses it)
_CAI_DTYPES: Final = {order + t: dtype for t, dtype in TYPESTR_DTYPES.items() for order in "<|="}


def cai_typestrs(dtype: tuple[int, int, int]) -> frozenset[str]:
    """The ``__cuda_array_interface__`` typestrs read as ``dtype`` without an export (empty: none)."""
    return frozenset(t for t, d in _CAI_DTYPES.items() if d == dtype)


_I64_MAX: Final = (1 << 63) - 1


def read_cai(value: Any) -> DLView | None:
    """Read a ``__cuda_array_interface__`` exporter (CuPy, Numba...) as its DLPack export would
    describe it, without exporting (the device from ``__dlpack_device__()``); None for what it
    cannot take as is (read-only, masked, big-endian, strides not a multiple of the item size,
    no device): the export then decides. The C fast path's ``read_cai_tensor`` reads the same."""
    try:
        iface = value.__cuda_array_interface__
        device = value.__dlpack_device__()
    except Exception:  # a property or method that raised: the export decides (and reports)
        return None
    if type(iface) is not dict or type(device) is not tuple or len(device) != 2:
        return None
    get = iface.get
    data, shape, strides = get("data"), get("shape"), get("strides")
    typestr = get("typestr")
    dtype = _CAI_DTYPES.get(typestr) if type(typestr) is str else None
    if (
        dtype is None
        or type(data) is not tuple
        or len(data) != 2
        or data[1] is not False
        or type(data[0]) is not int
        or not 0 <= data[0] < _U64
        or type(shape) is not tuple
        or len(shape) > 64
        or get("mask") is not None
        or not isinstance(device[0], int)  # torch answers an IntEnum (DLDeviceType.kDLCUDA)
        or not isinstance(device[1], int)
        or isinstance(device[0], bool)
    ):
        return None
    device = (int(device[0]), int(device[1]))
    for extent in shape:
        if type(extent) is not int or not 0 <= extent <= _I64_MAX:
            return None
    if strides is None:
        elements = _compact_strides(shape)
    else:
        item = dtype[1] // 8
        if type(strides) is not tuple or len(strides) != len(shape):
            return None
        for x in strides:
            if type(x) is not int or not -_I64_MAX <= x <= _I64_MAX or x % item:
                return None
        elements = tuple(x // item for x in strides) if item != 1 else strides
    return DLView(data[0], device, dtype, shape, elements)


def cai_read_only(value: Any) -> bool:
    """Whether ``value``'s ``__cuda_array_interface__`` says its memory is read-only (False when it has none)."""
    try:
        data = value.__cuda_array_interface__.get("data")
        return type(data) is tuple and len(data) == 2 and data[1] is True
    except Exception:  # no interface, or one that cannot be read: not known to be read-only
        return False


def reader_for(tp: type) -> Reader | None:
    """The cheapest Python reader for values of exactly type ``tp`` (value -> DLView or None), or None.

    Exact ``torch.Tensor`` and ``torch.nn.Parameter`` are read through their
    attributes; a tensor subclass (which may override ``data_ptr()``,
    ``shape`` or ``stride()``) through the exchange function, which reads the
    real tensor exactly as the C fast path does.
    """
    reader = _READERS.get(tp, _unknown_reader)
    if reader is not _unknown_reader:
        return reader
    reader = None
    torch = sys.modules.get("torch")
    if torch is not None and (tp is torch.Tensor or tp is getattr(getattr(torch, "nn", None), "Parameter", None)):
        reader = _torch_reader(torch)
    elif tp.__module__ == "numpy" and tp.__name__ == "ndarray" and "numpy" in sys.modules and tp is sys.modules["numpy"].ndarray:
        reader = _numpy_reader(sys.modules["numpy"])
    else:
        found = exchange_for(tp)
        if found is not None:
            reader = functools.partial(read_exchange, found)
        elif hasattr(tp, "__cuda_array_interface__") and hasattr(tp, "__dlpack_device__"):
            reader = read_cai  # CuPy: its interface dict, no DLPack export per launch
    try:
        _READERS[tp] = reader
    except TypeError:  # not weakly referenceable: not cached
        pass
    return reader


# __dlpack__ keyword sets, tried in order: no synchronisation (as the DSL asks)
# and no copy (a copy's address would dangle once the capsule is dropped), then
# what older producers accept.
_EXPORT_KWARGS: tuple[dict[str, object], ...] = ({"stream": -1, "copy": False}, {"copy": False}, {"stream": -1}, {})
#: per type, the keyword sets in the order to try them: the one that last worked
#: first, so a producer refusing the first set (NumPy takes no stream) exports once
_EXPORT_ORDER: weakref.WeakKeyDictionary[type, tuple[dict[str, object], ...]] = weakref.WeakKeyDictionary()


def read(value: object) -> DLView:
    """Read a DLPack-capable value; raise TypeError, BufferError, ... when it cannot be read in place.

    A view read through ``__dlpack__`` holds the capsule (``owner``): keep the
    view until the memory is no longer used.
    """
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
            try:
                _EXPORT_ORDER[type(value)] = (kwargs, *(k for k in _EXPORT_KWARGS if k is not kwargs))
            except TypeError:
                pass
        return read_capsule(capsule)
    raise error if error is not None else TypeError("__dlpack__ failed")


def device_of(value: object) -> tuple[int, int] | None:
    """``value.__dlpack_device__()`` when the value offers it (cheap, no export)."""
    get = getattr(value, "__dlpack_device__", None)
    if get is None:
        return None
    try:
        device = get()
        return (int(device[0]), int(device[1]))
    except Exception:  # not a usable answer: the export that follows decides
        return None
