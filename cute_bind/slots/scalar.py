"""The scalar slot kind: an integer, real, half or boolean in one plain C value."""

from __future__ import annotations

import functools
import operator
import struct
import numbers
import sys
import typing
from typing import Any, Callable, NamedTuple

from .. import dsl
from .. import _whitelist as W
from .. import diagnostics as D
from .base import Converter, Bound, Rejected, SlotKind, Where, describe_annotation, describe_value
from .registry import register

__all__ = ["ScalarKind", "CNumberSpec", "float16_bits", "bfloat16_bits"]

_INT_RANGES = {fmt: (-(1 << (8 * struct.calcsize(fmt) - 1)), (1 << (8 * struct.calcsize(fmt) - 1)) - 1) for fmt in "bhiq"}
_INT_RANGES.update({fmt: (0, (1 << (8 * struct.calcsize(fmt))) - 1) for fmt in "BHIQ"})


class CNumberSpec(NamedTuple):
    """What the C fast path's number classes need to take more than exact ints and floats
    (``_claunch.c``'s ``ObjSpec``): ``types`` are read in C with ``operator.index`` (integer
    slots) or ``float()`` (float slots), and any other value is given to ``reader``, which
    returns the Python number (an exact int or float) or raises; the slow path takes what
    either refuses (and raises its catalog error)."""

    types: tuple[type, ...]
    reader: Callable[[object], int | float] | None


def numpy_scalar_types(floats: bool) -> tuple[type, ...]:
    """NumPy's integer scalar types, and for a float slot its floating ones too (a float slot
    takes integers), where NumPy is imported; their ``__index__``/``__float__`` are NumPy's own."""
    np = sys.modules.get("numpy")
    if np is None:
        return ()
    names = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "longlong", "ulonglong"]
    if floats:
        names += ["float16", "float32", "float64"]
    found = (getattr(np, name, None) for name in names)
    return tuple(dict.fromkeys(t for t in found if isinstance(t, type)))


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
    def recognize(cls, annotation: object) -> ScalarKind | None:
        if isinstance(annotation, type) and annotation.__module__ == "builtins":
            mapped = W.PYTHON_SCALARS.get(annotation.__name__)
            return cls(mapped, annotation) if mapped else None
        name = getattr(annotation, "__name__", "")
        if dsl.is_numeric_type(annotation) and name in W.SCALAR_FORMATS:
            return cls(name)
        return None

    @classmethod
    def rejection(cls, annotation: object) -> Rejected | None:
        """A DSL numeric type with no runtime storage (Float8, Int4, 128-bit...) is CB104."""
        base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
        if dsl.is_numeric_type(base) and getattr(base, "__name__", "") not in W.SCALAR_FORMATS:
            return Rejected(D.NON_CTYPES_SCALAR, describe_annotation(annotation))
        return None

    def dsl_type(self) -> Callable[[object], object]:
        """The DSL's numeric class of this slot (``cutlass.Int32``...), which builds its compile-time value."""
        numeric: Callable[[object], object] = getattr(dsl.dsl().cutlass, self.dtype_name)
        return numeric

    def expected(self) -> str:
        if self.is_bool:
            return "a bool (or 0/1) for a Boolean slot"
        article = "an" if self.dtype_name.startswith("Int") else "a"
        if self.is_float:
            return f"a real number (float or int) for {article} {self.dtype_name} slot"
        lo, hi = self.range or (0, 0)
        return f"an int in [{lo}, {hi}] for {article} {self.dtype_name} slot"

    def conversion(self) -> str:
        kind = "boolean" if self.is_bool else "float" if self.is_float else "integer"
        return D.WRONG_KIND_CONVERSIONS[kind]

    def guard(self, var: str) -> str | None:
        # struct's '?' accepts any object (truthiness); only real bools take the fast path.
        if self.is_bool:
            return f"{var}.__class__ is bool"
        # struct's 'f'/'d' read a float subclass's raw value, ignoring an overridden
        # __float__ that the slow path (float(value), as the DSL's direct call) honours:
        # only exact floats and ints take the fast path
        if self.is_float and not self.is_half:
            return f"({var}.__class__ is float or {var}.__class__ is int)"
        # struct's integer codes call a non-int's __index__ while packing, after every address of
        # the launch was read (the lifetime rule): only exact ints are packed as they are, anything
        # else is read by the fallback with the other numbers, before any address
        if not self.is_half:
            return f"{var}.__class__ is int"
        return None

    def coerce(self, value: object, where: Where, checked: bool = False) -> int | float:
        number = self.number(value, where)
        return self._bits(number) if self.is_half else number

    def number(self, value: Any, where: Where) -> int | float:
        """``value`` as the Python number the slot holds (a bool, an int in range, or a float; a
        half slot's float before its bit pattern), or the catalog error :meth:`coerce` raises."""
        if dsl.is_numeric_type(type(value)):  # a cutlass.Int32(...) style object
            inner = value.value
            if not isinstance(inner, numbers.Number):
                # a DSL number from a trace (Float32(?)): the DSL's compile writes its traced values
                # into the objects it is given, so a dataclass passed to cute.compile comes back so
                raise where.error(
                    D.WRONG_KIND,
                    expected=f"a real number for a {self.dtype_name} slot",
                    got=f"{type(value).__name__} holding a traced value, not a number (cute.compile writes its "
                    "traced values into the objects it is given, such as a dataclass's fields)",
                    conversion="Pass a new object holding numbers (or one made before cute.compile saw it)",
                )
            value = inner
        if self.is_bool:
            return self._coerce_bool(value, where)
        if self.is_float:
            return self._coerce_float(value, where)
        return self._coerce_int(value, where)

    def schema_element(self) -> tuple[str, bool]:
        """A torch op passes it as a Scalar (every number kind)."""
        return ("Scalar", False)

    def probe(self) -> None:
        """Numbers are never part of the compile key."""
        return None

    def c_spec(self) -> CNumberSpec:
        """For the C fast path's number classes ("I", "R", "h", "g", "B"): NumPy's scalar types,
        read with ``operator.index`` (integer slots) or ``float()`` (float slots) in C as
        :meth:`number` reads them, and :meth:`number` itself for any other value (a Boolean slot's
        ``np.True_`` and 0/1, ``cutlass.Int32(...)``...); what either refuses goes to the slow path."""
        types = () if self.is_bool else numpy_scalar_types(floats=self.is_float)
        return CNumberSpec(types, functools.partial(self.number, where=Where("?", "?")))

    def fallback(self, where: Where) -> Converter | None:
        """For the Python fast path of a float, integer or Boolean slot (whose guard takes exact
        floats and ints, exact ints, or exact bools): any other value through :meth:`number` (NumPy
        scalars, ``cutlass.Float32(...)``, an object with ``__index__``), never the slow path."""
        if self.is_half:
            return None
        return functools.partial(self.number, where=where)

    def converter(self, where: Where) -> Converter | None:
        if not self.is_half:
            return None
        bits, coerce = self._bits, self.coerce

        def convert(value: object) -> int | float:
            return bits(value) if value.__class__ is float else coerce(value, where)

        return convert

    def _as_index(self, value: Any, where: Where) -> int:
        """An integer value's ``operator.index``; a float, a non-integer or a hostile ``__index__`` that
        raised is this slot's typed refusal."""
        if isinstance(value, float):
            raise self.refusal(where, value)
        try:
            return operator.index(value)
        except Exception as exc:
            raise self.refusal(where, value) from exc

    def _coerce_bool(self, value: object, where: Where) -> bool:
        if isinstance(value, bool):
            return value
        if type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool"):
            return bool(value)
        as_int = self._as_index(value, where)
        if as_int not in (0, 1):
            raise where.error(D.INTEGER_OUT_OF_RANGE, expected="Boolean (0 or 1)", got=str(as_int))
        return bool(as_int)

    def _coerce_int(self, value: object, where: Where) -> int:
        # bool before int: True/False are ints in Python and pack as 1/0, as in the direct call.
        if isinstance(value, bool):
            return int(value)
        as_int = self._as_index(value, where)
        lo, hi = self.range or (0, 0)
        if not lo <= as_int <= hi:
            raise where.error(D.INTEGER_OUT_OF_RANGE, expected=f"{self.dtype_name} [{lo}, {hi}]", got=str(as_int))
        return as_int

    def _coerce_float(self, value: Any, where: Where) -> float:
        if isinstance(value, (str, bytes, complex)) or value is None:
            raise self.refusal(where, value)
        np = sys.modules.get("numpy")
        if np is not None and isinstance(value, np.complexfloating):  # float() would drop the imaginary part
            raise self.refusal(where, value)
        try:
            return float(value)
        except OverflowError:
            raise where.error(
                D.INTEGER_OUT_OF_RANGE, expected=f"a value representable as {self.dtype_name}", got=describe_value(value)
            ) from None
        except Exception as exc:  # not a number, or a hostile __float__ that raised: a typed error
            raise self.refusal(where, value) from exc

    def bind(self, value: Any, where: Where) -> Bound:
        if self.is_half:
            number = self._coerce_float(value.value if dsl.is_numeric_type(type(value)) else value, where)
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


register(ScalarKind)
