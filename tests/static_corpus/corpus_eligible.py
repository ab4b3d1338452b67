"""Eligible kernels only: the runtime, cute-bind check and the mypy plugin report nothing.

Covers every eligible slot kind and the spellings that reach it. mypy must not
report anything at all for this file (cute_bind.Pointer[...] included).
"""

from typing import Callable, TypeVar

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Constexpr, Float32, Int32
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
