"""Module-level aliases and imported names resolve to what they stand for."""

import typing
from typing import TypeAlias

import cutlass
import cutlass.cute as cute
from cutlass import Float16 as Half

import cute_bind
from cute_bind import Tensor as CbTensor

try:
    from cutlass import Int64
except ImportError:  # the import is what the annotation means
    Int64 = int  # type: ignore[misc, assignment]

Ptr = cute_bind.Pointer[cutlass.Float32, 16]
I32: TypeAlias = cutlass.Int32
IntAlias: TypeAlias = I32
TaggedPtr = typing.Annotated[cute.Pointer, "device"]
Tensor: TypeAlias = cute.Tensor
Pair = tuple[int, int]
Matrix = CbTensor[cutlass.Float32, 2]
Mixed = tuple[Ptr, Tensor, Half, Matrix]
Narrow = cutlass.Float8E4M3FN
Nested = tuple[int, Pair]
Helper = CbTensor
# mypy reports "static" as an undefined name here (a forward reference to it, before
# any plugin hook runs); the tests only read this file's cute-bind errors.
Fixed = CbTensor[cutlass.Float16, 2, 16, "static"]


@cute_bind.kernel
def aliased(
    p: Ptr,
    n: I32,
    m: IntAlias,
    q: TaggedPtr,
    w: Int64,
    h: Half,
    t: Tensor,
    s: Pair,
    mat: Matrix,
    mixed: Mixed,
    many: list[Matrix],
    fixed: Fixed,
    fixed_pair: tuple[Fixed, Matrix],
    narrow: Narrow,  # expect: CB104
    nested: Nested,  # expect: CB113
    pairs: list[Pair],  # expect: CB113
    helper: Helper,  # expect: CB102
    narrows: tuple[int, Narrow],  # expect: CB113
) -> None:
    pass
