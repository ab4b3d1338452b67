"""Module-level kernels for the disk cache tests (worker processes import them by name)."""

import cutlass
import cutlass.cute as cute

import cute_bind

I32 = cute_bind.Pointer[cutlass.Int32]
F32 = cute_bind.Pointer[cutlass.Float32]
STEP = 7


@cute.jit
def _twice(x):
    return x * 2


@cute_bind.kernel
def affine(out: I32, value: cutlass.Int32, bias: cutlass.Constexpr[int]):
    """out[0] = 2 * value + bias + STEP (a helper, a module constant and a Constexpr)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = _twice(value) + bias + STEP


@cute_bind.kernel
def saxpy(out: F32, x: F32, y: F32, a: cutlass.Float32, n: cutlass.Int32):
    """out[k] = a * x[k] + y[k] for k < n (n <= 256)."""
    o = cute.make_tensor(out, cute.make_layout(256))
    xs = cute.make_tensor(x, cute.make_layout(256))
    ys = cute.make_tensor(y, cute.make_layout(256))
    for k in range(n):
        o[k] = a * xs[k] + ys[k]


@cute_bind.kernel
def polynomial(out: F32, x: F32, n: cutlass.Int32, degree: cutlass.Constexpr[int]):
    """out[k] = sum_{d < degree} (d + 1) * x[k]**d (Horner, fully unrolled: compile time grows with degree)."""
    o = cute.make_tensor(out, cute.make_layout(256))
    xs = cute.make_tensor(x, cute.make_layout(256))
    for k in range(n):
        acc = cutlass.Float32(0.0)
        for d in cutlass.range_constexpr(degree):
            acc = acc * xs[k] + cutlass.Float32(degree - d)
        o[k] = acc
