"""Host-only kernels for the cute_bind.jax tests: they compile and run on the CPU, through XLA's CPU FFI.

The DSL compiles from source files, so the kernels live in this module.
"""

from typing import Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind

F32x1 = cute_bind.Tensor[cutlass.Float32, 1]
F32x2 = cute_bind.Tensor[cutlass.Float32, 2]
I32x1 = cute_bind.Tensor[cutlass.Int32, 1]
F32 = cute_bind.Pointer[cutlass.Float32]


@cute_bind.kernel
def scale(out: F32x1, x: F32x1, alpha: cutlass.Float32):
    """out = x * alpha."""
    for i in range(cute.size(out)):
        out[i] = x[i] * alpha


@cute_bind.kernel
def scale_stream(out: F32x1, x: F32x1, alpha: cutlass.Float32, stream: cuda.CUstream):
    """out = x * alpha, with a stream parameter (unused on the host)."""
    for i in range(cute.size(out)):
        out[i] = x[i] * alpha


@cute_bind.kernel
def axpy(y: F32x1, x: F32x1, a: cutlass.Float32):
    """y += a * x, in place."""
    for i in range(cute.size(y)):
        y[i] = y[i] + x[i] * a


@cute_bind.kernel
def add2d(out: F32x2, a: F32x2, b: F32x2, beta: cutlass.Float32):
    """out = a + beta * b over a rank-2 tensor."""
    for i in range(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = a[i, j] + b[i, j] * beta


@cute_bind.kernel
def ptr_scale(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream):
    """out[k] = inp[k] * alpha for k < n (pointer parameters; n <= 64)."""
    o = cute.make_tensor(out, cute.make_layout(64))
    i = cute.make_tensor(inp, cute.make_layout(64))
    for k in range(n):
        o[k] = i[k] * alpha


@cute_bind.kernel
def affine_cx(out: F32x1, x: F32x1, shift: cutlass.Constexpr[float], square: cutlass.Constexpr[bool]):
    """out = x * x + shift when square, else x + shift (compile-time choices)."""
    for i in range(cute.size(out)):
        if cutlass.const_expr(square):
            out[i] = x[i] * x[i] + shift
        else:
            out[i] = x[i] + shift


@cute_bind.kernel
def split_sign(pos: F32x1, neg: F32x1, counts: I32x1, x: F32x1):
    """Two float outputs and an int output: max(x, 0), min(x, 0), and how many were positive."""
    c = cutlass.Int32(0)
    for i in range(cute.size(x)):
        v = x[i]
        if v > cutlass.Float32(0.0):
            pos[i] = v
            neg[i] = cutlass.Float32(0.0)
            c = c + 1
        else:
            pos[i] = cutlass.Float32(0.0)
            neg[i] = v
    counts[0] = c


@cute_bind.kernel
def scale_opt(out: F32x1, x: F32x1, bias: Optional[F32x1], alpha: cutlass.Float32):
    """out = x * alpha (+ bias where given)."""
    for i in range(cute.size(out)):
        if cutlass.const_expr(bias is None):
            out[i] = x[i] * alpha
        else:
            out[i] = x[i] * alpha + bias[i]


@cute_bind.kernel
def pair_sum(out: F32x1, xs: tuple[F32x1, F32x1]):
    """A sequence parameter (no JAX form): out = xs[0] + xs[1]."""
    for i in range(cute.size(out)):
        out[i] = xs[0][i] + xs[1][i]
