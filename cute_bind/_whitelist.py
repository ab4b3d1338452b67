"""The eligibility whitelist, as plain data.

Both the runtime check (``@cute_bind.kernel`` at decoration time) and the
static checks (the mypy plugin and ``cute-bind check``) read these tables, so
the three always agree. Nothing here imports the DSL.

Names are the DSL's public spellings relative to its packages: ``cutlass.X``
for numeric types, ``cute.X`` for ``cutlass.cute`` types.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "SCALAR_FORMATS",
    "PYTHON_SCALARS",
    "BITCAST_SCALARS",
    "POINTER_NAMES",
    "STREAM_NAMES",
    "TENSOR_NAMES",
    "CONSTEXPR_NAMES",
    "SEQUENCE_NAMES",
    "ELIGIBLE_SUMMARY",
]

#: Eligible numeric scalar types -> native ``struct`` format of their storage.
#: These are exactly the DSL numeric types marshalled through one plain ctypes
#: value (``c_bool``, ``c_intN``, ``c_uintN``, ``c_float``, ``c_double``).
SCALAR_FORMATS: Final[dict[str, str]] = {
    "Boolean": "?",
    "Int8": "b",
    "Int16": "h",
    "Int32": "i",
    "Int64": "q",
    "Uint8": "B",
    "Uint16": "H",
    "Uint32": "I",
    "Uint64": "Q",
    "Float32": "f",
    "Float64": "d",
    "TFloat32": "f",
}

#: Plain Python annotations and the DSL type the DSL maps their values to.
PYTHON_SCALARS: Final[dict[str, str]] = {
    "bool": "Boolean",
    "int": "Int32",
    "float": "Float32",
}

#: Numeric types the DSL stores through a bit-cast or no plain ctypes type (CB104),
#: and the abstract numeric bases, which have no storage of their own.
BITCAST_SCALARS: Final[frozenset[str]] = frozenset(
    {
        "Numeric",
        "Integer",
        "Float",
        "Float16",
        "BFloat16",
        "Float8E4M3",
        "Float8E4M3FN",
        "Float8E4M3B11FNUZ",
        "Float8E5M2",
        "Float8E8M0FNU",
        "FloatNV8E5M3FNU",
        "Float6E2M3FN",
        "Float6E3M2FN",
        "Float6E2M3FNx4",
        "Float6E3M2FNx4",
        "Float4E2M1FN",
        "Float4E2M1FNx2",
        "Int4",
        "Int128",
        "Uint128",
    }
)

#: Qualified names of pointer annotations (``cute.Pointer`` and subscripted
#: ``cute_bind.Pointer[...]``; a bare ``cute_bind.Pointer`` is not an annotation, CB102).
POINTER_NAMES: Final[frozenset[str]] = frozenset(
    {"cutlass.cute.Pointer", "cutlass.cute.typing.Pointer", "cute_bind.Pointer", "cute_bind._types.Pointer"}
)

#: Qualified names of stream annotations.
STREAM_NAMES: Final[frozenset[str]] = frozenset({"cuda.bindings.driver.CUstream", "cuda.cuda.CUstream"})

#: Qualified names of tensor annotations (CB103).
TENSOR_NAMES: Final[frozenset[str]] = frozenset({"cutlass.cute.Tensor", "cutlass.cute.typing.Tensor"})

#: Qualified names of compile-time parameter markers (not runtime slots).
CONSTEXPR_NAMES: Final[frozenset[str]] = frozenset({"cutlass.Constexpr", "cutlass.base_dsl.typing.Constexpr"})

#: Sequence annotations (CB105), by the origin's qualified name.
SEQUENCE_NAMES: Final[frozenset[str]] = frozenset(
    {
        "builtins.list",
        "builtins.tuple",
        "typing.List",
        "typing.Tuple",
        "typing.Sequence",
        "collections.abc.Sequence",
        "typing.MutableSequence",
        "collections.abc.MutableSequence",
    }
)

#: Human-readable summary used as the "expected" part of eligibility messages.
ELIGIBLE_SUMMARY: Final[str] = (
    "a pointer (cute.Pointer, cute_bind.Pointer[dtype]), a numeric scalar ("
    + ", ".join(f"cutlass.{n}" for n in SCALAR_FORMATS)
    + ", bool, int, float), a stream (cuda.CUstream) or cutlass.Constexpr[...]"
)
