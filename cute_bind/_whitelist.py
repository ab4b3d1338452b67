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
    "HALF_SCALARS",
    "BITCAST_SCALARS",
    "POINTER_NAMES",
    "STREAM_NAMES",
    "TENSOR_NAMES",
    "CONSTEXPR_NAMES",
    "SEQUENCE_NAMES",
    "OPTIONAL_NAMES",
    "NAMEDTUPLE_BASES",
    "DATACLASS_DECORATORS",
    "ELIGIBLE_SUMMARY",
    "RUNTIME_SCALARS_SUMMARY",
    "expected_for",
    "DECORATOR_ORDER",
    "DEVICE_KERNEL",
]

#: Eligible numeric scalar types -> native ``struct`` format of their storage.
#: These are exactly the DSL numeric types the DSL marshals through one plain C
#: value: ``c_bool``, ``c_intN``, ``c_uintN``, ``c_float``, ``c_double``, and
#: the 16-bit patterns of Float16 and BFloat16 (``HALF_SCALARS``).
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
    "Float16": "H",
    "BFloat16": "H",
}

#: Scalars stored as a 16-bit pattern computed from a Python float, exactly as
#: the DSL's direct call computes it (Float16: IEEE binary16, round to nearest
#: even; BFloat16: the high half of the float32 value).
HALF_SCALARS: Final[frozenset[str]] = frozenset({"Float16", "BFloat16"})

#: Plain Python annotations and the DSL type the DSL maps their values to.
PYTHON_SCALARS: Final[dict[str, str]] = {
    "bool": "Boolean",
    "int": "Int32",
    "float": "Float32",
}

#: Numeric types the DSL cannot pass as runtime scalars at all (CB104): the
#: narrow floats, Int4, the 128-bit integers and the abstract numeric bases.
BITCAST_SCALARS: Final[frozenset[str]] = frozenset(
    {
        "Numeric",
        "Integer",
        "Float",
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

#: Qualified names of tensor annotations (``cute.Tensor`` and subscripted
#: ``cute_bind.Tensor[...]``; a bare ``cute_bind.Tensor`` is not an annotation, CB102).
TENSOR_NAMES: Final[frozenset[str]] = frozenset(
    {"cutlass.cute.Tensor", "cutlass.cute.typing.Tensor", "cute_bind.Tensor", "cute_bind._types.Tensor"}
)

#: Qualified names of compile-time parameter markers (not runtime slots).
CONSTEXPR_NAMES: Final[frozenset[str]] = frozenset({"cutlass.Constexpr", "cutlass.base_dsl.typing.Constexpr"})

#: Sequence annotations, by the origin's qualified name: eligible when every
#: element annotation is a pointer, scalar, stream or tensor (else CB113).
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

#: Optional annotations, by the origin's qualified name: ``Optional[X]``,
#: ``Union[X, Y, None]`` (and ``X | Y | None``, spelled with ``|``) are an optional
#: (union) slot when every member besides ``None`` is an eligible runtime kind (a
#: pointer, scalar, stream, tensor, sequence or structure), else CB114; a union
#: without ``None`` is CB102.
OPTIONAL_NAMES: Final[frozenset[str]] = frozenset(
    {"typing.Optional", "typing.Union", "typing_extensions.Optional", "typing_extensions.Union"}
)

#: Structure annotations: a class with one of these bases (a NamedTuple) or under one
#: of these decorators (a dataclass) is a structure slot when each field is an eligible
#: kind or ``None`` (a dataclass also takes ``cutlass.Constexpr[...]`` fields), else CB125.
NAMEDTUPLE_BASES: Final[frozenset[str]] = frozenset({"typing.NamedTuple", "typing_extensions.NamedTuple"})
DATACLASS_DECORATORS: Final[frozenset[str]] = frozenset({"dataclasses.dataclass"})

#: Human-readable summary used as the "expected" part of eligibility messages
#: (short: the full list is in ``python -m cute_bind explain``'s pages).
ELIGIBLE_SUMMARY: Final[str] = (
    "cute.Pointer or cute_bind.Pointer[dtype], a numeric scalar (cutlass.Int32, cutlass.Float32, ...,"
    " bool, int, float), cuda.CUstream, cute.Tensor or cute_bind.Tensor[dtype, rank],"
    " a tuple/list/NamedTuple or X | None of these, or cutlass.Constexpr[...]"
)

#: The "expected" part of CB104: the scalar types that have runtime storage.
RUNTIME_SCALARS_SUMMARY: Final[str] = "a scalar type with runtime storage (cutlass." + ", ".join(SCALAR_FORMATS) + ")"


def expected_for(code: str) -> str:
    """The "expected" part of a definition-time message with this code (one place for runtime and static tools)."""
    return RUNTIME_SCALARS_SUMMARY if code == "CB104" else ELIGIBLE_SUMMARY


#: CB116 and CB117 (decorator forms that cannot work): ``(got, expected)``,
#: shared by the decorator and the static tools so their messages agree.
DECORATOR_ORDER: Final[tuple[str, str]] = (
    "@cute.jit or @cute.kernel above @cute_bind.kernel",
    "@cute_bind.kernel outermost, over @cute.jit or alone",
)
#: CB127 (``@cute_bind.kernel`` over a method in its class body): the "expected" part, and the "got"
#: part for the method's qualified name, shared by the decorator and the static tools.
METHOD_EXPECTED: Final[str] = "a host function or the bound method of an object (`cute_bind.kernel(obj.host)`)"


def method_got(name: str) -> str:
    return f"the method {name} in its class body (its `self` does not exist yet)"


DEVICE_KERNEL: Final[tuple[str, str]] = (
    "a @cute.kernel (device) function",
    "a host function, plain or @cute.jit,",
)
