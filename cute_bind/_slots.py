"""Slot kinds: how a runtime parameter is recognised, checked and stored.

A slot kind is one object that knows three things:

- how it is recognised from an annotation (``recognize``),
- how a value is checked and turned into what its storage holds (``coerce``,
  plus ``bind`` for the compile-time view of the value),
- how it is written: the native ``struct`` format of each C argument the DSL
  marshals it into (``parts``; a scalar or pointer is one part of one item, a
  tensor one part holding its memref descriptor, a sequence one part per
  element), plus what the fast paths need: an optional guard expression
  (``guard``) true when a value can be packed as it is, or a converter
  (``converter``) that turns a value into the items to pack, and the C fast
  path's class (``fast``) with its data (``c_spec``).

The launch loop (:mod:`cute_bind._prepared`) only ever uses those; adding a
kind means adding a class and listing it in ``KINDS``. A kind the C fast path
has no class for uses its generic class ``"X"`` (it calls the converter).
"""

from __future__ import annotations

import ctypes
import operator
import re
import struct
import typing
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from . import _diagnostics as D
from . import _dlpack, _dsl
from . import _whitelist as W
from ._types import PointerSpec, pointer_spec_of

__all__ = [
    "Where",
    "SlotKind",
    "ScalarKind",
    "PointerKind",
    "StreamKind",
    "TensorKind",
    "SequenceKind",
    "Bound",
    "KINDS",
    "Constexpr",
    "Rejected",
    "classify",
    "describe_value",
    "describe_annotation",
]

_U64 = 1 << 64


@dataclass(frozen=True)
class Where:
    """Kernel and parameter names, for messages."""

    kernel: str
    parameter: str


def describe_value(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def describe_annotation(annotation: Any) -> str:
    if isinstance(annotation, type):
        return f"{annotation.__module__}.{annotation.__qualname__}".replace("builtins.", "")
    return repr(annotation)


def _wrong_kind(where: Where, expected: str, value: Any) -> Exception:
    return D.error(D.WRONG_KIND, kernel=where.kernel, parameter=where.parameter, expected=expected, got=describe_value(value))


@dataclass(frozen=True)
class Bound:
    """A value bound to a slot at ``bind()``/``prepare()`` time.

    ``packed`` is what the slot's storage holds, ``dsl_value`` the DSL object
    passed to ``cute.compile`` and to the DSL's marshalling, ``key`` the
    value's contribution to the compile-cache key, ``slot`` the slot kind
    specialised for this handle (pointers learn dtype and alignment here).
    """

    packed: Any
    dsl_value: Any
    key: Any
    slot: SlotKind


def item_ranges(fmt: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` byte ranges of the items of native struct format
    ``fmt``, leaving out the alignment padding between and after them."""
    ranges = []
    prefix = "@"
    for count, code in re.findall(r"(\d*)(\D)", fmt.lstrip("@")):
        if code in "sp":  # one item of ``count`` bytes
            count, code = "", count + code
        elif code == "x" or count == "0":
            prefix += count + code
            continue
        for _ in range(int(count or 1)):
            start = struct.calcsize(prefix + "0" + code[-1])
            prefix += code
            ranges.append((start, struct.calcsize(prefix)))
    return ranges


class SlotKind(ABC):
    """One kind of runtime slot."""

    #: short name of the kind, e.g. "pointer"
    kind: ClassVar[str]
    #: native ``struct`` format of the slot's storage (all parts, in order)
    fmt: str
    #: how the C fast path writes the slot: "P" exact int (64-bit), "B" exact
    #: bool, "I" int (range-checked for ``fmt``), "R" real (float or int),
    #: "h"/"g" real as a Float16/BFloat16 bit pattern, "T" tensor (``c_spec``),
    #: "X" generic (calls the packed converter)
    fast: str

    @property
    def parts(self) -> tuple[str, ...]:
        """``struct`` format of each C argument the slot marshals into (one C pointer each)."""
        return (self.fmt,)

    @property
    def width(self) -> int:
        """Number of ``struct`` items the slot packs."""
        return 1

    #: whether ``coerce`` returns a tuple of items (composite kinds) rather than one item
    packs_tuple: ClassVar[bool] = False

    def converter(self, where: Where) -> Any:
        """For the Python fast path: a function turning a value into what ``coerce`` returns
        (raising on anything it does not take as is), or ``None`` to pack values as they are."""
        return None

    def c_spec(self) -> Any:
        """Data the C fast path's class needs (``None`` for the plain classes)."""
        return None

    def coerce_converter(self, where: Where) -> Any:
        """A converter that is ``coerce`` itself, for kinds whose every value needs converting."""
        coerce = self.coerce

        def convert(value: Any) -> Any:
            return coerce(value, where)

        return convert

    @classmethod
    @abstractmethod
    def recognize(cls, annotation: Any) -> SlotKind | None:
        """The kind for ``annotation``, or ``None`` if this kind does not apply."""

    @abstractmethod
    def expected(self) -> str:
        """What values the slot takes, for messages."""

    def guard(self, var: str) -> str | None:
        """Python expression, true when ``var`` may be packed as it is (fast path)."""
        return None

    @abstractmethod
    def coerce(self, value: Any, where: Where, checked: bool = False) -> Any:
        """Check ``value`` and return what the storage holds; raise a catalog error otherwise."""

    @abstractmethod
    def bind(self, value: Any, where: Where) -> Bound:
        """Check ``value`` at bind/prepare time; see :class:`Bound`."""

    @property
    def size(self) -> int:
        return struct.calcsize("@" + self.fmt)

    def describe(self) -> str:
        return self.kind


# --------------------------------------------------------------------------- scalars
_INT_RANGES = {fmt: (-(1 << (8 * struct.calcsize(fmt) - 1)), (1 << (8 * struct.calcsize(fmt) - 1)) - 1) for fmt in "bhiq"}
_INT_RANGES.update({fmt: (0, (1 << (8 * struct.calcsize(fmt))) - 1) for fmt in "BHIQ"})


class ScalarKind(SlotKind):
    """A numeric scalar stored in one plain ctypes value."""

    kind = "scalar"

    def __init__(self, dtype_name: str, python_type: type | None = None) -> None:
        self.dtype_name = dtype_name
        # bool/int/float annotations: the DSL wants the Python value at compile time
        self.python_type = python_type
        self.fmt = W.SCALAR_FORMATS[dtype_name]
        self.is_half = dtype_name in W.HALF_SCALARS
        self.is_bool = self.fmt == "?"
        self.is_float = self.fmt in "fd" or self.is_half
        if self.is_half:
            self.fast = "h" if dtype_name == "Float16" else "g"
            self._bits = float16_bits if dtype_name == "Float16" else bfloat16_bits
        else:
            self.fast = "B" if self.is_bool else ("R" if self.is_float else "I")
        self.range = None if self.is_half else _INT_RANGES.get(self.fmt)

    def __repr__(self) -> str:
        return f"ScalarKind({self.describe()})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScalarKind) and (other.dtype_name, other.python_type) == (self.dtype_name, self.python_type)

    def __hash__(self) -> int:
        return hash(("scalar", self.dtype_name, self.python_type))

    def describe(self) -> str:
        if self.python_type is not None:
            return f"{self.python_type.__name__} (as cutlass.{self.dtype_name})"
        return f"cutlass.{self.dtype_name}"

    @classmethod
    def recognize(cls, annotation: Any) -> ScalarKind | None:
        if isinstance(annotation, type) and annotation.__module__ == "builtins":
            mapped = W.PYTHON_SCALARS.get(annotation.__name__)
            return cls(mapped, annotation) if mapped else None
        if _dsl.is_numeric_type(annotation) and getattr(annotation, "__name__", "") in W.SCALAR_FORMATS:
            return cls(annotation.__name__)
        return None

    def dsl_type(self) -> Any:
        return getattr(_dsl.dsl().cutlass, self.dtype_name)

    def expected(self) -> str:
        if self.is_bool:
            return "a bool (or 0/1) for a Boolean slot"
        if self.is_float:
            return f"a real number (float or int) for a {self.dtype_name} slot"
        lo, hi = self.range or (0, 0)
        return f"an int in [{lo}, {hi}] for a {self.dtype_name} slot"

    def guard(self, var: str) -> str | None:
        # struct's '?' accepts any object (truthiness); only real bools take the fast path.
        return f"{var}.__class__ is bool" if self.is_bool else None

    def coerce(self, value: Any, where: Where, checked: bool = False) -> Any:
        if _dsl.is_numeric_type(type(value)):  # a cutlass.Int32(...) style object
            value = value.value
        if self.is_bool:
            return self._coerce_bool(value, where)
        if self.is_half:
            return self._bits(self._coerce_float(value, where))
        if self.is_float:
            return self._coerce_float(value, where)
        return self._coerce_int(value, where)

    def converter(self, where: Where) -> Any:
        if not self.is_half:
            return None
        bits, coerce = self._bits, self.coerce

        def convert(value: Any) -> int:
            return bits(value) if value.__class__ is float else coerce(value, where)

        return convert

    def _coerce_bool(self, value: Any, where: Where) -> bool:
        if isinstance(value, bool):
            return value
        if type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool"):
            return bool(value)
        if isinstance(value, float):
            raise _wrong_kind(where, self.expected(), value)
        try:
            as_int = operator.index(value)
        except TypeError:
            raise _wrong_kind(where, self.expected(), value) from None
        if as_int not in (0, 1):
            raise D.error(D.INTEGER_OUT_OF_RANGE, kernel=where.kernel, parameter=where.parameter, expected="Boolean (0 or 1)", got=str(as_int))
        return bool(as_int)

    def _coerce_int(self, value: Any, where: Where) -> int:
        # bool before int: True/False are ints in Python and pack as 1/0, as in the direct call.
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float):
            raise _wrong_kind(where, self.expected(), value)
        try:
            as_int = operator.index(value)
        except TypeError:
            raise _wrong_kind(where, self.expected(), value) from None
        lo, hi = self.range or (0, 0)
        if not lo <= as_int <= hi:
            raise D.error(
                D.INTEGER_OUT_OF_RANGE,
                kernel=where.kernel,
                parameter=where.parameter,
                expected=f"{self.dtype_name} [{lo}, {hi}]",
                got=str(as_int),
            )
        return as_int

    def _coerce_float(self, value: Any, where: Where) -> float:
        if isinstance(value, (str, bytes)) or value is None:
            raise _wrong_kind(where, self.expected(), value)
        try:
            return float(value)
        except OverflowError:
            raise D.error(
                D.INTEGER_OUT_OF_RANGE, kernel=where.kernel, parameter=where.parameter, expected=f"a value representable as {self.dtype_name}", got=describe_value(value)
            ) from None
        except (TypeError, ValueError):
            raise _wrong_kind(where, self.expected(), value) from None

    def bind(self, value: Any, where: Where) -> Bound:
        if self.is_half:
            number = self._coerce_float(value.value if _dsl.is_numeric_type(type(value)) else value, where)
            return Bound(packed=self._bits(number), dsl_value=self.dsl_type()(number), key=None, slot=self)
        packed = self.coerce(value, where)
        dsl_value = packed if self.python_type is not None else self.dsl_type()(packed)
        return Bound(packed=packed, dsl_value=dsl_value, key=None, slot=self)


def float16_bits(value: float) -> int:
    """The IEEE binary16 pattern of ``value`` exactly as the DSL's direct call computes it.

    Round to nearest even; a finite value beyond the range becomes an infinity;
    a NaN keeps its sign and the high bits of its payload (never decaying to inf).
    """
    if value != value:
        bits64 = struct.unpack("<Q", struct.pack("<d", value))[0]
        payload = (bits64 & ((1 << 52) - 1)) >> 42
        return int(((bits64 >> 48) & 0x8000) | 0x7C00 | (payload or 1))
    try:
        return int(struct.unpack("<H", struct.pack("<e", value))[0])
    except OverflowError:
        return 0xFC00 if value < 0 else 0x7C00


def bfloat16_bits(value: float) -> int:
    """The BFloat16 pattern of ``value`` exactly as the DSL's direct call computes it.

    The value is rounded to float32 (nearest even; beyond the range: an
    infinity) and the high 16 bits of that float32 are kept. That second step
    truncates rather than rounds, so e.g. 1.00390625 + 2**-20 gives 0x3F80
    where a rounding conversion would give 0x3F81; cute_bind matches the
    direct call bit for bit.
    """
    try:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:
        bits = 0xFF800000 if value < 0 else 0x7F800000
    return int(bits) >> 16


# --------------------------------------------------------------------------- pointers
_NUMPY_TYPESTR = {
    "f4": "Float32", "f8": "Float64", "f2": "Float16",
    "i1": "Int8", "i2": "Int16", "i4": "Int32", "i8": "Int64",
    "u1": "Uint8", "u2": "Uint16", "u4": "Uint32", "u8": "Uint64", "b1": "Boolean",
}  # fmt: skip
# str(torch dtype) -> CuTe type name, from the DLPack module's torch dtype table
_TORCH_DTYPES = {f"torch.{name}": _dlpack.describe_dtype(code) for name, code in _dlpack.TORCH_DTYPE_CODES.items()}


@dataclass(frozen=True)
class _PointerValue:
    address: int
    dtype_name: str | None  # None: the value does not say
    space: Any  # cute.AddressSpace or None
    align: int | None
    host: bool = False  # pageable host memory: never valid for a gmem slot


def _dtype_name(dtype: Any) -> str | None:
    return getattr(dtype, "__name__", None) if dtype is not None else None


class PointerKind(SlotKind):
    """A pointer: 64-bit address storage.

    Accepts ``int`` addresses, ``make_ptr`` pointers, objects with an integer
    ``data_ptr()`` (torch tensors), ``__cuda_array_interface__`` /
    ``__array_interface__`` exporters (CuPy, NumPy) and ctypes pointers.
    """

    kind = "pointer"
    fmt = "Q"
    fast = "P"

    def __init__(self, spec: PointerSpec | None = None, dtype: Any = None, space: Any = None, align: int | None = None) -> None:
        self.spec = spec or PointerSpec()
        # resolved at bind(): what the compiled function assumes (None: unknown)
        self.dtype = dtype
        self.space = space
        self.align = align
        self._dtype_name = _dtype_name(dtype)
        self._accepted_dtype_cache: dict[Any, bool] = {}

    def __repr__(self) -> str:
        return f"PointerKind({self.describe()})"

    def describe(self) -> str:
        if self.dtype is None and self.spec.dtype is None:
            return "cute.Pointer"
        return PointerSpec(self.dtype or self.spec.dtype, self.align or self.spec.align, self.space or self.spec.space).describe()

    @classmethod
    def recognize(cls, annotation: Any) -> PointerKind | None:
        pointer_cls = _dsl.cute_pointer_class()
        spec = pointer_spec_of(annotation)
        base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
        if base is pointer_cls or (isinstance(base, type) and issubclass(base, pointer_cls)):
            return cls(spec)
        return None

    def expected(self) -> str:
        return f"an address (int >= 0), a make_ptr pointer or a tensor for a {self.describe()} slot"

    def guard(self, var: str) -> str | None:
        return f"{var}.__class__ is int"

    # -- reading values
    def _read(self, value: Any, where: Where) -> _PointerValue:
        # bool before int: True is an int but never an address.
        if isinstance(value, bool) or value is None or isinstance(value, (float, str, bytes)):
            raise _wrong_kind(where, self.expected(), value)
        if isinstance(value, int):
            return _PointerValue(self._check_range(value, where), None, None, None)
        if _dsl.is_runtime_pointer(value):
            address, dtype, space, align = _dsl.runtime_pointer_fields(value)
            return _PointerValue(self._check_range(address, where), _dtype_name(dtype), space, align)
        if type(value).__module__ == "numpy" and type(value).__name__ != "ndarray":
            # a NumPy scalar is a number, not an array to take the address of
            if isinstance(value, (float, complex)) or not hasattr(value, "__index__") or type(value).__name__ in ("bool_", "bool"):
                raise _wrong_kind(where, self.expected(), value)
            return _PointerValue(self._check_range(operator.index(value), where), None, None, None)
        data_ptr = getattr(value, "data_ptr", None)
        if data_ptr is not None and callable(data_ptr):
            address = data_ptr()
            if isinstance(address, bool) or not isinstance(address, int):
                raise _wrong_kind(where, self.expected(), value)
            is_cuda = bool(getattr(value, "is_cuda", False))
            space = _dsl.dsl().cute.AddressSpace.gmem if is_cuda else None
            pinned = getattr(value, "is_pinned", None)
            host = not is_cuda and not (callable(pinned) and bool(pinned()))
            return _PointerValue(self._check_range(address, where), self._torch_dtype(value), space, None, host)
        for attr, on_device in (("__cuda_array_interface__", True), ("__array_interface__", False)):
            iface = getattr(value, attr, None)
            if isinstance(iface, dict) and "data" in iface:
                address = int(iface["data"][0] or 0)
                typestr = str(iface.get("typestr", ""))[1:]
                space = _dsl.dsl().cute.AddressSpace.gmem if on_device else None
                return _PointerValue(self._check_range(address, where), _NUMPY_TYPESTR.get(typestr), space, None, not on_device)
        if isinstance(value, (ctypes.c_void_p, ctypes._Pointer)):
            return _PointerValue(self._check_range(ctypes.cast(value, ctypes.c_void_p).value or 0, where), None, None, None)
        try:
            address = operator.index(value)  # numpy integer scalars and the like
        except TypeError:
            raise _wrong_kind(where, self.expected(), value) from None
        return _PointerValue(self._check_range(address, where), None, None, None)

    def _torch_dtype(self, value: Any) -> str | None:
        dtype = getattr(value, "dtype", None)
        return _TORCH_DTYPES.get(str(dtype)) if dtype is not None else None

    @staticmethod
    def _check_range(address: int, where: Where) -> int:
        if not 0 <= address < _U64:
            raise D.error(D.INVALID_ADDRESS, kernel=where.kernel, parameter=where.parameter, expected="an address in [0, 2**64)", got=str(address))
        return address

    def _check_alignment(self, address: int, where: Where) -> None:
        if self.align and address % self.align:
            raise D.error(
                D.MISALIGNED_POINTER,
                kernel=where.kernel,
                parameter=where.parameter,
                expected=f"{self.align} bytes",
                got=hex(address),
            )

    @staticmethod
    def _check_not_host(pv: _PointerValue, space: Any, expected: str, where: Where) -> None:
        if pv.host and space is not None and space == _dsl.dsl().cute.AddressSpace.gmem:
            raise D.error(
                D.POINTER_MISMATCH,
                kernel=where.kernel,
                parameter=where.parameter,
                expected=expected,
                got="pageable host memory (a CPU tensor or array), which a kernel cannot read through a gmem pointer",
            )

    def _check_matches(self, pv: _PointerValue, where: Where) -> None:
        self._check_not_host(pv, self.space, self.describe(), where)
        if pv.dtype_name is not None and self._dtype_name is not None and pv.dtype_name != self._dtype_name:
            raise D.error(
                D.POINTER_MISMATCH, kernel=where.kernel, parameter=where.parameter, expected=self.describe(), got=f"a {pv.dtype_name} pointer"
            )
        if pv.space is not None and self.space is not None and pv.space != self.space and pv.space != _generic():
            raise D.error(
                D.POINTER_MISMATCH,
                kernel=where.kernel,
                parameter=where.parameter,
                expected=self.describe(),
                got=f"a pointer in address space {getattr(pv.space, 'name', pv.space)}",
            )

    # -- slot protocol
    def coerce(self, value: Any, where: Where, checked: bool = False) -> int:
        if value.__class__ is int:
            address = self._check_range(value, where)
            if checked:
                self._check_alignment(address, where)
            return address
        pv = self._read(value, where)
        self._check_matches(pv, where)
        self._check_alignment(pv.address, where)
        return pv.address

    def bind(self, value: Any, where: Where) -> Bound:
        pv = self._read(value, where)
        spec = self.spec
        dtype_name = _dtype_name(spec.dtype) or pv.dtype_name
        if spec.dtype is not None and pv.dtype_name is not None and pv.dtype_name != _dtype_name(spec.dtype):
            raise D.error(D.POINTER_MISMATCH, kernel=where.kernel, parameter=where.parameter, expected=spec.describe(), got=f"a {pv.dtype_name} pointer")
        if dtype_name is None:
            raise D.error(
                D.POINTER_DTYPE_UNKNOWN, kernel=where.kernel, parameter=where.parameter, expected="cute.Pointer", got=describe_value(value)
            )
        dtype = getattr(_dsl.dsl().cutlass, dtype_name)
        space = spec.space if spec.space is not None else (pv.space if pv.space is not None else _generic())
        if spec.space is not None and pv.space is not None and pv.space != spec.space:
            raise D.error(
                D.POINTER_MISMATCH,
                kernel=where.kernel,
                parameter=where.parameter,
                expected=spec.describe(),
                got=f"a pointer in address space {getattr(pv.space, 'name', pv.space)}",
            )
        align = spec.align or pv.align or max(1, int(getattr(dtype, "width", 8)) // 8)
        self._check_not_host(pv, space, spec.describe(), where)
        bound = PointerKind(spec, dtype=dtype, space=space, align=align)
        bound._check_alignment(pv.address, where)
        dsl_value = _dsl.make_pointer(dtype, pv.address, space, align)
        return Bound(packed=pv.address, dsl_value=dsl_value, key=(dtype_name, int(getattr(space, "value", 0)), align), slot=bound)

    def prepare(self, value: Any, where: Where) -> Bound:
        """Bind for an already compiled function: learn what the value says, compile nothing."""
        pv = self._read(value, where)
        dtype = getattr(_dsl.dsl().cutlass, pv.dtype_name) if pv.dtype_name else self.spec.dtype
        space = pv.space if pv.space is not None else self.spec.space
        align = pv.align or self.spec.align
        bound = PointerKind(self.spec, dtype=dtype, space=space, align=align)
        bound._check_alignment(pv.address, where)
        if _dsl.is_runtime_pointer(value):
            dsl_value = value
        else:
            dsl_value = _dsl.make_pointer(_dsl.dsl().cutlass.Uint8, pv.address, space or _generic(), 1)
        return Bound(packed=pv.address, dsl_value=dsl_value, key=None, slot=bound)


def _generic() -> Any:
    return _dsl.dsl().cute.AddressSpace.generic


# --------------------------------------------------------------------------- streams
class StreamKind(SlotKind):
    """A CUDA stream handle: 64-bit storage.

    Accepts raw integer handles, ``cuda.CUstream``/``cudaStream_t``, objects
    with an integer ``cuda_stream`` attribute (``torch.cuda.Stream``) and
    objects implementing ``__cuda_stream__`` (cuda.core streams).
    """

    kind = "stream"
    fmt = "Q"
    fast = "P"

    def __repr__(self) -> str:
        return "StreamKind()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StreamKind)

    def __hash__(self) -> int:
        return hash("stream")

    def describe(self) -> str:
        return "cuda.CUstream"

    @classmethod
    def recognize(cls, annotation: Any) -> StreamKind | None:
        stream_cls = _dsl.cuda_stream_class()
        if annotation is stream_cls or (isinstance(annotation, type) and issubclass(annotation, stream_cls)):
            return cls()
        return None

    def expected(self) -> str:
        return "a stream handle (int), cuda.CUstream, or an object with .cuda_stream (torch.cuda.Stream)"

    def guard(self, var: str) -> str | None:
        return f"{var}.__class__ is int"

    def coerce(self, value: Any, where: Where, checked: bool = False) -> int:
        if isinstance(value, bool) or value is None or isinstance(value, (float, str, bytes)):
            raise _wrong_kind(where, self.expected(), value)
        handle: Any
        if isinstance(value, int):
            handle = value
        elif hasattr(value, "getPtr") and type(value).__module__.startswith("cuda"):
            handle = int(value)  # cuda.CUstream / cudaStream_t
        elif hasattr(value, "cuda_stream"):
            handle = value.cuda_stream
        elif hasattr(value, "__cuda_stream__"):
            proto = value.__cuda_stream__()
            handle = proto[1] if isinstance(proto, tuple) and len(proto) == 2 else None
        else:
            try:
                handle = operator.index(value)
            except TypeError:
                raise _wrong_kind(where, self.expected(), value) from None
        if isinstance(handle, bool) or not isinstance(handle, int):
            raise _wrong_kind(where, self.expected(), value)
        if not 0 <= handle < _U64:
            raise D.error(D.INTEGER_OUT_OF_RANGE, kernel=where.kernel, parameter=where.parameter, expected="a 64-bit stream handle", got=str(handle))
        return handle

    def bind(self, value: Any, where: Where) -> Bound:
        handle = self.coerce(value, where)
        return Bound(packed=handle, dsl_value=_dsl.cuda_stream_class()(handle), key=None, slot=self)


# --------------------------------------------------------------------------- classification
@dataclass(frozen=True)
class Constexpr:
    """A compile-time parameter: part of the compile key, not a runtime slot."""


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', ''))}"


@dataclass(frozen=True)
class Rejected:
    """An ineligible annotation and the catalog entry explaining why."""

    diagnostic: D.Diagnostic
    got: str
    detail: str | None = None


def classify(annotation: Any) -> SlotKind | Constexpr | Rejected:
    """Classify one (already resolved) annotation against the whitelist."""
    if _dsl.is_constexpr(annotation):
        return Constexpr()
    for kind in KINDS:
        found = kind.recognize(annotation)
        if found is not None:
            return found
    got = describe_annotation(annotation)
    origin = typing.get_origin(annotation)
    base = typing.get_args(annotation)[0] if origin is typing.Annotated else annotation
    if _dsl.is_numeric_type(base) and getattr(base, "__name__", "") not in W.SCALAR_FORMATS:
        return Rejected(D.NON_CTYPES_SCALAR, got)
    problem = element_problem(annotation) if is_sequence_annotation(annotation) else None
    if problem is not None:
        return Rejected(D.INELIGIBLE_SEQUENCE_ELEMENT, got, problem)
    return Rejected(D.UNSUPPORTED_ANNOTATION, got)


# The composite kinds are built from the ones above (imported last: they subclass SlotKind).
from ._sequence_slot import SequenceKind, element_problem, is_sequence_annotation  # noqa: E402
from ._tensor_slot import TensorKind  # noqa: E402

#: Kinds a sequence element may have.
ELEMENT_KINDS: tuple[type[SlotKind], ...] = (PointerKind, ScalarKind, StreamKind, TensorKind)
#: Every runtime slot kind, tried in order.
KINDS: tuple[type[SlotKind], ...] = (*ELEMENT_KINDS, SequenceKind)
