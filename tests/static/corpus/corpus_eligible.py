"""Eligible kernels only: the runtime, cute-bind check and the mypy plugin report nothing.

Covers every eligible slot kind and the spellings that reach it. mypy must not
report anything at all for this file (cute_bind.Pointer[...] and
cute_bind.Tensor[...] included). A string layout (cute_bind.Tensor[..., "static"])
is in corpus_aliases.py: mypy reads it as an undefined name (see cute_bind.mypy).
"""

import collections.abc
import typing
from typing import Callable, TypeVar

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import BFloat16, Constexpr, Float16, Float32, Int32
from cutlass.cute import Pointer

import cute_bind

F = TypeVar("F", bound=Callable[..., object])


def passthrough(fn: F) -> F:
    """A decorator under @cute_bind.kernel: the function's own parameters are what count."""
    return fn


@cute_bind.kernel
def pointers(
    a: cute.Pointer,
    b: cute_bind.Pointer[cutlass.Float32],
    c: cute_bind.Pointer[cutlass.Int8, 4],
    d: cute_bind.Pointer[cutlass.Float64, 16, cute.AddressSpace.gmem],
    e: Pointer,
    f: cutlass.cute.Pointer,
) -> None:
    pass


@cute_bind.kernel
def dsl_scalars(
    a: cutlass.Boolean,
    b: cutlass.Int8,
    c: cutlass.Int16,
    d: cutlass.Int32,
    e: cutlass.Int64,
    f: cutlass.Uint8,
    g: cutlass.Uint16,
    h: cutlass.Uint32,
    i: cutlass.Uint64,
    j: cutlass.Float32,
    k: cutlass.Float64,
    m: cutlass.TFloat32,
    n: Int32,
    o: Float32,
    p: cute.Int32,
) -> None:
    pass


@cute_bind.kernel
def half_scalars(
    a: cutlass.Float16,
    b: cutlass.BFloat16,
    c: Float16,
    d: BFloat16,
    e: cute.Float16,
    f: cute.BFloat16,
) -> None:
    pass


@cute_bind.kernel
def tensors(
    a: cute.Tensor,
    b: cutlass.cute.Tensor,
    c: cutlass.cute.typing.Tensor,
    d: cute_bind.Tensor[cutlass.Float32, 2],
    e: cute_bind.Tensor[cutlass.Float16, 1, 16],
    f: cute_bind.Tensor[cutlass.Int8, 3, None, 0],
    g: cute_bind.Tensor[cutlass.Float32, 2, 16, 1],
    h: cute_bind.Tensor[cutlass.BFloat16, 0],
    i: typing.Annotated[cute.Tensor, "tag"],
    j: typing.Annotated[cute_bind.Tensor[cutlass.Float32, 1], "tag"],
) -> None:
    pass


@cute_bind.kernel
def sequences(
    a: tuple,
    b: list,
    c: typing.Sequence,
    d: collections.abc.Sequence,
    e: typing.Tuple,
    f: typing.List,
    g: tuple[int, int],
    h: tuple[int, ...],
    i: list[cute.Pointer],
    j: typing.Tuple[cutlass.Float16, cutlass.Int32],
    k: typing.List[cute_bind.Pointer[cutlass.Float32, 16]],
    m: typing.Sequence[cute.Tensor],
    n: collections.abc.Sequence[cute_bind.Tensor[cutlass.Float32, 2]],
    o: tuple[()],
    p: tuple[cuda.CUstream, cute_bind.Tensor[cutlass.Float32, 2], float, bool],
    q: typing.MutableSequence[float],
    r: tuple[typing.Annotated[cute.Tensor, "tag"], typing.Annotated[cute.Pointer, "p"]],
    s: tuple[cutlass.BFloat16, ...],
    t: list[Int32],
    u: typing.Annotated[list[int], "tag"],
    v: typing.Annotated[tuple, "tag"],
    w: tuple[typing.Annotated[cute_bind.Pointer[cutlass.Int8], "p"], cute_bind.Tensor[cutlass.Int8, 1]],
) -> None:
    pass


@cute_bind.kernel
def python_scalars(flag: bool, count: int, scale: float) -> None:
    pass


@cute_bind.kernel
def with_stream(out: cute.Pointer, stream: cuda.CUstream) -> None:
    pass


@cute_bind.kernel
def compile_time(
    out: cute_bind.Pointer[cutlass.Float32],
    /,
    shape: cutlass.Constexpr,
    tile: cutlass.Constexpr[int] = 128,
    *,
    sizes: Constexpr[tuple[int, int]] = (1, 2),
    n: int = 0,
) -> None:
    pass


@cute_bind.kernel
@cute.jit
def jitted(out: cute.Pointer, n: cutlass.Int32) -> None:
    pass


@cute_bind.kernel
@passthrough
def under_another_decorator(out: cute.Pointer, n: int) -> None:
    pass


@cute_bind.kernel
def optionals(
    a: typing.Optional[cutlass.Int32],
    b: cutlass.Int32 | None,
    c: None | cute.Tensor,
    d: typing.Union[cute_bind.Pointer[cutlass.Float32], None],
    e: typing.Optional[tuple[int, int]],
    f: typing.Optional[cuda.CUstream],
    g: float | None,
    h: typing.Optional[typing.Optional[Int32]],
) -> None:
    pass
