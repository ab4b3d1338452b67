"""Host-only CuTe DSL functions used by the tests (they compile and run on the CPU).

The DSL compiles from source files, so test kernels live in this module.
"""

from typing import NamedTuple, Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind

F32 = cute_bind.Pointer[cutlass.Float32]


@cute.jit
def scale(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream):
    """out[k] = inp[k] * alpha for k < n (n <= 64)."""
    o = cute.make_tensor(out, cute.make_layout(64))
    i = cute.make_tensor(inp, cute.make_layout(64))
    for k in range(n):
        o[k] = i[k] * alpha


@cute.jit
def scale_ptr(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream):
    """The same body with plain cute.Pointer annotations (dtype comes from the values)."""
    o = cute.make_tensor(out, cute.make_layout(64))
    i = cute.make_tensor(inp, cute.make_layout(64))
    for k in range(n):
        o[k] = i[k] * alpha


@cute_bind.kernel
def scale_plain(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream):
    """A plain function (no @cute.jit) decorated with bare @cute_bind.kernel."""
    o = cute.make_tensor(out, cute.make_layout(64))
    i = cute.make_tensor(inp, cute.make_layout(64))
    for k in range(n):
        o[k] = i[k] * alpha


@cute.jit
def all_scalars(
    out: cute_bind.Pointer[cutlass.Float64],
    b: cutlass.Boolean,
    i8: cutlass.Int8,
    i16: cutlass.Int16,
    i32: cutlass.Int32,
    i64: cutlass.Int64,
    u8: cutlass.Uint8,
    u16: cutlass.Uint16,
    u32: cutlass.Uint32,
    u64: cutlass.Uint64,
    f32: cutlass.Float32,
    f64: cutlass.Float64,
    tf32: cutlass.TFloat32,
    pb: bool,
    pi: int,
    pf: float,
):
    """Writes every scalar, converted to Float64, to out[0..15]."""
    o = cute.make_tensor(out, cute.make_layout(16))
    o[0] = cutlass.Float64(1.0) if b else cutlass.Float64(0.0)
    o[1] = cutlass.Float64(i8)
    o[2] = cutlass.Float64(i16)
    o[3] = cutlass.Float64(i32)
    o[4] = cutlass.Float64(i64)
    o[5] = cutlass.Float64(u8)
    o[6] = cutlass.Float64(u16)
    o[7] = cutlass.Float64(u32)
    o[8] = cutlass.Float64(u64)
    o[9] = cutlass.Float64(f32)
    o[10] = f64
    o[11] = cutlass.Float64(tf32)
    o[12] = cutlass.Float64(1.0) if pb else cutlass.Float64(0.0)
    o[13] = cutlass.Float64(pi)
    o[14] = cutlass.Float64(pf)
    o[15] = cutlass.Float64(2.0)


@cute.jit
def with_constexpr(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32, offset: cutlass.Constexpr[int]):
    """out[0] = value + offset (offset is compile-time)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value + offset


@cute.jit
def with_default(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32, extra: cutlass.Int32 = 5):
    """out[0] = value + extra (extra has a default)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value + extra


@cute.jit
def two_defaults(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32, a: cutlass.Int32 = 1, b: cutlass.Int32 = 2):
    """out[0] = value * 100 + a * 10 + b (two defaults: a keyword call may give b and leave a out)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value * 100 + a * 10 + b


@cute.jit
def spin(out: cute_bind.Pointer[cutlass.Int64], n: cutlass.Int64):
    """A slow host function: counts to n into out[0] (for concurrency tests)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    acc = cutlass.Int64(0)
    for k in range(n):
        acc = acc + 1
    o[0] = acc


@cute.jit
def fill_i32(out: cute_bind.Pointer[cutlass.Int32, 16], value: cutlass.Int32):
    """out[0] = value; the pointer is declared 16-byte aligned."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value


def looping_undecorated(out: cute_bind.Pointer[cutlass.Int32], n: cutlass.Int32):
    """Dynamic control flow in a function with no decorator in its source (cute_bind.kernel(fn) still rewrites it)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    for k in range(n):
        o[0] = k


@cute.jit
def fill_unannotated(out: cute.Pointer, value):  # noqa: ANN001 - left unannotated on purpose
    """out[0] = value, with `value` unannotated (its kind comes from the value at prepare)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value


# ------------------------------------------------------------------ tensors, half scalars, sequences
@cute.jit
def tscale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    """out[i] = inp[i] * alpha over a rank-1 tensor of any extent."""
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha


@cute.jit
def tadd2d(out: cute_bind.Tensor[cutlass.Float32, 2], inp: cute_bind.Tensor[cutlass.Float32, 2], beta: cutlass.Float32):
    """out[i, j] = inp[i, j] + beta over a rank-2 tensor (annotated: dynamic layout)."""
    for i in range(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = inp[i, j] + beta


@cute.jit
def tstatic(out: cute_bind.Tensor[cutlass.Float32, 1, None, "static"], inp: cute_bind.Tensor[cutlass.Float32, 1, None, "static"]):
    """out = inp * 3 with every extent compiled in."""
    for i in range(cute.size(out)):
        out[i] = inp[i] * cutlass.Float32(3.0)


@cute.jit
def halves(out: F32, a: cutlass.Float16, b: cutlass.BFloat16, c: cutlass.Float32):
    """out[0] = a, out[1] = b, out[2] = c (Float32)."""
    o = cute.make_tensor(out, cute.make_layout(3))
    o[0] = cutlass.Float32(a)
    o[1] = cutlass.Float32(b)
    o[2] = c


@cute.jit
def seq_sum(out: F32, ins: tuple[F32, F32], scales: tuple[cutlass.Float32, cutlass.Float16], n: cutlass.Int32):
    """out[k] = ins[0][k] * scales[0] + ins[1][k] * scales[1] for k < n (n <= 64)."""
    o = cute.make_tensor(out, cute.make_layout(64))
    a = cute.make_tensor(ins[0], cute.make_layout(64))
    b = cute.make_tensor(ins[1], cute.make_layout(64))
    for k in range(n):
        o[k] = a[k] * scales[0] + b[k] * cutlass.Float32(scales[1])


@cute.jit
def seq_tensors(outs: tuple, alpha: cutlass.Float32):
    """Each tensor of the bare tuple `outs` (rank 1) is multiplied by alpha in place."""
    for t in cutlass.range_constexpr(len(outs)):
        for i in range(cute.size(outs[t])):
            outs[t][i] = outs[t][i] * alpha


@cute.jit
def tptr_equiv(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32):
    """The pointer-only equivalent of tscale (for the benchmark)."""
    o = cute.make_tensor(out, cute.make_layout(n))
    i = cute.make_tensor(inp, cute.make_layout(n))
    for k in range(n):
        o[k] = i[k] * alpha


@cute.jit
def tcopy_any(out: cute.Tensor, inp: cute.Tensor, beta: cutlass.Float32):
    """out[i] = inp[i] + beta for every linear coordinate i (any rank, any layout)."""
    for i in range(cute.size(out)):
        out[i] = inp[i] + beta


@cute.jit
def thalf_default(out: cute.Tensor, scale: cutlass.Float16 = 0.5):
    """out[i] = out[i] * scale (Float16 scalar with a default)."""
    for i in range(cute.size(out)):
        out[i] = out[i] * cutlass.Float32(scale)


@cute.jit
def tlead0(out: cute_bind.Tensor[cutlass.Float32, 2, 16, 0], inp: cute_bind.Tensor[cutlass.Float32, 2, 16, 0], beta: cutlass.Float32):
    """out = inp + beta for column-major rank-2 tensors (leading dimension 0, 16-byte aligned)."""
    for i in range(cute.size(out)):
        out[i] = inp[i] + beta


# ------------------------------------------------------------------ torch ops (tests/torch)
@cute.jit
def tscale_stream(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """out[i] = inp[i] * alpha with a stream parameter (ignored on the host) that defaults to None."""


# ------------------------------------------------------------------ calls (kernel(...)): a stream left out
@cute.jit
def scale_stream_default(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream = None):
    """out[k] = inp[k] * alpha for k < n (n <= 64); the stream may be left out of a call."""
    o = cute.make_tensor(out, cute.make_layout(64))
    i = cute.make_tensor(inp, cute.make_layout(64))
    for k in range(n):
        o[k] = i[k] * alpha


@cute.jit
def sum25_stream_default(
    out: cute_bind.Pointer[cutlass.Int32],
    a0: cutlass.Int32,
    a1: cutlass.Int32,
    a2: cutlass.Int32,
    a3: cutlass.Int32,
    a4: cutlass.Int32,
    a5: cutlass.Int32,
    a6: cutlass.Int32,
    a7: cutlass.Int32,
    a8: cutlass.Int32,
    a9: cutlass.Int32,
    a10: cutlass.Int32,
    a11: cutlass.Int32,
    a12: cutlass.Int32,
    a13: cutlass.Int32,
    a14: cutlass.Int32,
    a15: cutlass.Int32,
    a16: cutlass.Int32,
    a17: cutlass.Int32,
    a18: cutlass.Int32,
    a19: cutlass.Int32,
    a20: cutlass.Int32,
    a21: cutlass.Int32,
    a22: cutlass.Int32,
    a23: cutlass.Int32,
    a24: cutlass.Int32,
    stream: cuda.CUstream = None,
):
    """out[0] = a0 + ... + a24: more arguments than a left-out stream's call keeps on the C stack."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = (
        a0
        + a1
        + a2
        + a3
        + a4
        + a5
        + a6
        + a7
        + a8
        + a9
        + a10
        + a11
        + a12
        + a13
        + a14
        + a15
        + a16
        + a17
        + a18
        + a19
        + a20
        + a21
        + a22
        + a23
        + a24
    )


@cute.jit
def tscale_stream_default(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """out[i] = inp[i] * alpha over a rank-1 tensor; the stream may be left out of a call."""
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha


@cute.jit
def tsplit(lo: cute.Tensor, hi: cute.Tensor, inp: cute.Tensor, *, cut: cutlass.Float32 = 0.0):
    """lo[i] = min(inp[i], cut), hi[i] = max(inp[i], cut): two outputs and a keyword-only scalar."""
    for i in range(cute.size(inp)):
        v = inp[i]
        lo[i] = v if v < cut else cut
        hi[i] = cut if v < cut else v


@cute.jit
def tsum_list(out: cute.Tensor, ins: tuple[cute.Tensor, cute.Tensor], weights: tuple[cutlass.Float32, cutlass.Float32]):
    """out[i] = ins[0][i] * weights[0] + ins[1][i] * weights[1]: sequences of tensors and of floats."""
    for i in range(cute.size(out)):
        out[i] = ins[0][i] * weights[0] + ins[1][i] * weights[1]


@cute.jit
def taxpy_inplace(y: cute.Tensor, x: cute.Tensor, a: cutlass.Float32, k: cutlass.Constexpr[int]):
    """y[i] += a * x[i] + k, in place (k is compile-time)."""
    for i in range(cute.size(y)):
        y[i] = y[i] + a * x[i] + cutlass.Float32(k)


@cute.jit
def two_buffers(a: cute.Pointer, b: cute.Pointer, n: cutlass.Int32):
    """Takes two pointers and touches neither (binds with stand-in device addresses; never launched)."""
    pass


def add_constexpr_stream(
    out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32, offset: cutlass.Constexpr[int], stream: cuda.CUstream = None
):
    """out[0] = value + offset (compile-time), with a stream that may be left out."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value + offset


@cute.jit
def fill_kwonly(out: cute_bind.Pointer[cutlass.Int32], *, value: cutlass.Int32):
    """out[0] = value, with a keyword-only parameter."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value


class OptAux(NamedTuple):
    """A constant structure (as FlashAttention-4's ``AuxData``): compiled in, passed by its default."""

    bias: cute.Tensor | None = None
    shift: cutlass.Int32 | int | None = None


@cute.jit
def topt(
    out: cute.Tensor,
    inp: cute.Tensor,
    lse: Optional[cute.Tensor],
    alpha: cutlass.Float32,
    bias: Optional[cute.Tensor] = None,
    shift: cutlass.Int32 | int | None = None,
    aux: OptAux = OptAux(),
):
    """out = inp * alpha (+ bias) (+ shift); lse, when given, = 2 * out (FlashAttention-4's optional tensors and unions)."""
    for i in range(cute.size(out)):
        v = inp[i] * alpha
        if cutlass.const_expr(bias is not None):
            v = v + bias[i]
        if cutlass.const_expr(shift is not None):
            v = v + cutlass.Float32(shift)
        out[i] = v
        if cutlass.const_expr(lse is not None):
            lse[i] = v * cutlass.Float32(2.0)


@cute.jit
def tsum_rank3(out: cute.Tensor, inp: cute.Tensor):
    """out[0] = the sum of inp[0, :, :] (a rank-3 tensor whose first mode has extent 1)."""
    s = cutlass.Float32(0.0)
    for i in range(cute.size(inp, mode=[1])):
        for j in range(cute.size(inp, mode=[2])):
            s = s + inp[0, i, j]
    out[0] = s
