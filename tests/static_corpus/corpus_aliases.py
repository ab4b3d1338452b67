"""Module-level aliases and imported names resolve to what they stand for."""

import typing
from typing import TypeAlias

import cutlass
import cutlass.cute as cute
from cutlass import Float16 as Half

import cute_bind

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


@cute_bind.kernel
def aliased(
    p: Ptr,
    n: I32,
    m: IntAlias,
    q: TaggedPtr,
    w: Int64,
    h: Half,  # expect: CB104
    t: Tensor,  # expect: CB103
    s: Pair,  # expect: CB105
) -> None:
    pass
