"""Device kernels for the GPU suite (compile anywhere with CUTE_DSL_ARCH=sm_90a; run on a GPU)."""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind

T = 128
G = cute.AddressSpace.gmem


@cute.kernel
def _ints_kernel(out: cute.Pointer, inp: cute.Pointer, n: cutlass.Int32, b: cutlass.Boolean, i8: cutlass.Int8, i16: cutlass.Int16,
                 i32: cutlass.Int32, i64: cutlass.Int64, u8: cutlass.Uint8, u16: cutlass.Uint16, u32: cutlass.Uint32, u64: cutlass.Uint64):  # fmt: skip
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < n:
        acc = x[k] + cutlass.Int64(i8) * 3 + cutlass.Int64(i16) * 5 + cutlass.Int64(i32) * 7 + i64
        acc = acc + cutlass.Int64(u8) * 11 + cutlass.Int64(u16) * 13 + cutlass.Int64(u32) * 17 + cutlass.Int64(u64)
        if b:
            acc = -acc
        o[k] = acc


@cute.jit
def ints(out: cute_bind.Pointer[cutlass.Int64, 16, G], inp: cute_bind.Pointer[cutlass.Int64, 16, G], n: cutlass.Int32,
         b: cutlass.Boolean, i8: cutlass.Int8, i16: cutlass.Int16, i32: cutlass.Int32, i64: cutlass.Int64,
         u8: cutlass.Uint8, u16: cutlass.Uint16, u32: cutlass.Uint32, u64: cutlass.Uint64, stream: cuda.CUstream):  # fmt: skip
    """Every integer scalar kind (and Boolean) mixed into an Int64 output."""
    _ints_kernel(out, inp, n, b, i8, i16, i32, i64, u8, u16, u32, u64).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


@cute.kernel
def _floats_kernel(out: cute.Pointer, inp: cute.Pointer, n: cutlass.Int32, f32: cutlass.Float32, f64: cutlass.Float64,
                   tf32: cutlass.TFloat32, flag: cutlass.Boolean, pf: cutlass.Float32, pi: cutlass.Int32):  # fmt: skip
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < n:
        v = x[k] * f64 + cutlass.Float64(f32) + cutlass.Float64(tf32) * 0.5 + cutlass.Float64(pf) * 0.25 + cutlass.Float64(pi)
        if flag:
            v = v * 2.0
        o[k] = v


@cute.jit
def floats(out: cute_bind.Pointer[cutlass.Float64, 16, G], inp: cute_bind.Pointer[cutlass.Float64, 16, G], n: cutlass.Int32,
           f32: cutlass.Float32, f64: cutlass.Float64, tf32: cutlass.TFloat32, flag: bool, pf: float, pi: int, stream: cuda.CUstream):  # fmt: skip
    """Every float scalar kind and the plain Python bool/int/float annotations."""
    _floats_kernel(out, inp, n, f32, f64, tf32, flag, pf, pi).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


@cute.kernel
def _scale_kernel(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * bdim + tidx
    if k < n:
        o[k] = x[k] * alpha


@cute.jit
def scale_threads(out: cute_bind.Pointer[cutlass.Float32, 16, G], inp: cute_bind.Pointer[cutlass.Float32, 16, G], alpha: cutlass.Float32,
                  n: cutlass.Int32, stream: cuda.CUstream, threads: cutlass.Constexpr[int]):  # fmt: skip
    """The scale kernel with a compile-time block size (2048 makes the launch itself fail)."""
    _scale_kernel(out, inp, alpha, n).launch(grid=((n + threads - 1) // threads, 1, 1), block=(threads, 1, 1), stream=stream)


# ------------------------------------------------------------------ tensors, half scalars, sequences
@cute.kernel
def _tensor2d_kernel(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, beta: cutlass.Float16, gamma: cutlass.BFloat16):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    m = cute.size(out, mode=[0])
    if k < cute.size(out):
        i = k % m
        j = k // m
        out[i, j] = inp[i, j] * alpha + cutlass.Float32(beta) + cutlass.Float32(gamma) * cutlass.Float32(j)


@cute.jit
def tensor2d(
    out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, beta: cutlass.Float16, gamma: cutlass.BFloat16, stream: cuda.CUstream
):
    """out[i, j] = inp[i, j] * alpha + beta + gamma * j over a rank-2 dynamic-layout tensor (any extents, any row stride)."""
    n = cute.size(out)
    _tensor2d_kernel(out, inp, alpha, beta, gamma).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


@cute.kernel
def _seq_kernel(out: cute.Pointer, a: cute.Pointer, b: cute.Pointer, sa: cutlass.Float32, sb: cutlass.Float32, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(a, cute.make_layout(n))
    y = cute.make_tensor(b, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < n:
        o[k] = x[k] * sa + y[k] * sb


@cute.jit
def seq_axpby(out: cute_bind.Pointer[cutlass.Float32, 16, G], ins: tuple[cute_bind.Pointer[cutlass.Float32, 16, G], cute_bind.Pointer[cutlass.Float32, 16, G]],
              scales: tuple[cutlass.Float32, cutlass.Float32], n: cutlass.Int32, stream: cuda.CUstream):  # fmt: skip
    """out = ins[0] * scales[0] + ins[1] * scales[1] (a tuple of pointers and a tuple of scalars)."""
    _seq_kernel(out, ins[0], ins[1], scales[0], scales[1], n).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


# ------------------------------------------------------------------ graphs: every value passes straight through
FIXED_BLOCKS = 16


@cute.kernel
def _scale_strided_kernel(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    for k in cutlass.range(bidx * T + tidx, n, FIXED_BLOCKS * T):
        o[k] = x[k] * alpha


@cute.jit
def scale_fixed_grid(out: cute_bind.Pointer[cutlass.Float32, 16, G], inp: cute_bind.Pointer[cutlass.Float32, 16, G], alpha: cutlass.Float32,
                     n: cutlass.Int32, stream: cuda.CUstream):  # fmt: skip
    """out[k] = inp[k] * alpha for k < n with a fixed grid (a grid-stride loop): n is an ordinary kernel parameter."""
    _scale_strided_kernel(out, inp, alpha, n).launch(grid=(FIXED_BLOCKS, 1, 1), block=(T, 1, 1), stream=stream)


@cute.jit
def scale_twice(out: cute_bind.Pointer[cutlass.Float32, 16, G], tmp: cute_bind.Pointer[cutlass.Float32, 16, G],
                inp: cute_bind.Pointer[cutlass.Float32, 16, G], a: cutlass.Float32, b: cutlass.Float32, n: cutlass.Int32,
                stream: cuda.CUstream):  # fmt: skip
    """Two kernels from one host function: tmp = inp * a, then out = tmp * b (fixed grids)."""
    _scale_strided_kernel(tmp, inp, a, n).launch(grid=(FIXED_BLOCKS, 1, 1), block=(T, 1, 1), stream=stream)
    _scale_strided_kernel(out, tmp, b, n).launch(grid=(FIXED_BLOCKS, 1, 1), block=(T, 1, 1), stream=stream)


# ------------------------------------------------------------------ torch ops (tests/gpu/test_torch_ops.py)
@cute.kernel
def _tscale_kernel(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < cute.size(out):
        out[k] = inp[k] * alpha


@cute.jit
def tscale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """out = inp * alpha over a rank-1 dynamic-layout tensor, on `stream` (a torch op fills it)."""
    n = cute.size(out)
    _tscale_kernel(out, inp, alpha).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


@cute.jit
def tscale_default_stream(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    """The same kernel without a stream parameter: it launches on the default stream."""
    n = cute.size(out)
    _tscale_kernel(out, inp, alpha).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1))
