"""The scalar slot kind: an integer, real, half or boolean in one plain C value."""

from __future__ import annotations

import operator
import struct
import typing
from typing import Any

from .. import dsl
from .. import _whitelist as W
from .. import diagnostics as D
from .base import Bound, Rejected, SlotKind, Where, describe_annotation, describe_value
from .registry import register

__all__ = ["ScalarKind", "float16_bits", "bfloat16_bits"]

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
        if dsl.is_numeric_type(annotation) and getattr(annotation, "__name__", "") in W.SCALAR_FORMATS:
            return cls(annotation.__name__)
        return None

    @classmethod
    def rejection(cls, annotation: Any) -> Rejected | None:
        """A DSL numeric type with no runtime storage (Float8, Int4, 128-bit...) is CB104."""
        base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
        if dsl.is_numeric_type(base) and getattr(base, "__name__", "") not in W.SCALAR_FORMATS:
            return Rejected(D.NON_CTYPES_SCALAR, describe_annotation(annotation))
        return None

    def dsl_type(self) -> Any:
        return getattr(dsl.dsl().cutlass, self.dtype_name)

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
        return None

    def coerce(self, value: Any, where: Where, checked: bool = False) -> Any:
        if dsl.is_numeric_type(type(value)):  # a cutlass.Int32(...) style object
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
            raise self.refusal(where, value)
        try:
            as_int = operator.index(value)
        except Exception as exc:  # not an integer, or a hostile __index__ that raised: a typed error
            raise self.refusal(where, value) from exc
        if as_int not in (0, 1):
            raise D.error(
                D.INTEGER_OUT_OF_RANGE, kernel=where.kernel, parameter=where.parameter, expected="Boolean (0 or 1)", got=str(as_int)
            )
        return bool(as_int)

    def _coerce_int(self, value: Any, where: Where) -> int:
        # bool before int: True/False are ints in Python and pack as 1/0, as in the direct call.
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float):
            raise self.refusal(where, value)
        try:
            as_int = operator.index(value)
        except Exception as exc:  # not an integer, or a hostile __index__ that raised: a typed error
            raise self.refusal(where, value) from exc
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
            raise self.refusal(where, value)
        try:
            return float(value)
        except OverflowError:
            raise D.error(
                D.INTEGER_OUT_OF_RANGE,
                kernel=where.kernel,
                parameter=where.parameter,
                expected=f"a value representable as {self.dtype_name}",
                got=describe_value(value),
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
