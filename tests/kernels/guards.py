"""Host-only kernels that need what a client's fake tensors say (tests/jit/test_guards.py)."""

from typing import Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute


@cute.jit
def rows4(mX: cute.Tensor, mO: cute.Tensor, eps: cutlass.Float32, stream: cuda.CUstream):
    """mO = mX * 2 + eps for rows of exactly 4 elements: N must be static (quack's norms need it)."""
    if cutlass.const_expr(cute.size(mX, mode=[1]) == 4):
        for i in range(cute.size(mX, mode=[0])):
            for j in cutlass.range_constexpr(4):
                mO[i, j] = mX[i, j] * cutlass.Float32(2.0) + eps


@cute.jit
def rows4_default_stream(mX: cute.Tensor, mO: cute.Tensor, eps: cutlass.Float32, stream: cuda.CUstream = None):
    """rows4 with the stream declared ``= None`` (a call may leave it out)."""
    if cutlass.const_expr(cute.size(mX, mode=[1]) == 4):
        for i in range(cute.size(mX, mode=[0])):
            for j in cutlass.range_constexpr(4):
                mO[i, j] = mX[i, j] * cutlass.Float32(2.0) + eps


@cute.jit
def rows4_weighted(mX: cute.Tensor, mW: Optional[cute.Tensor], mO: cute.Tensor, eps: cutlass.Float32, stream: cuda.CUstream):
    """mO = mX * 2 (* mW, an optional weight per column) + eps, N = 4 static (quack's norms' weight)."""
    if cutlass.const_expr(cute.size(mX, mode=[1]) == 4):
        for i in range(cute.size(mX, mode=[0])):
            for j in cutlass.range_constexpr(4):
                y = mX[i, j] * cutlass.Float32(2.0)
                if cutlass.const_expr(mW is not None):
                    y = y * mW[j]
                mO[i, j] = y + eps


@cute.jit
def scaled_rows(mX: cute.Tensor, mO: cute.Tensor, scale: cutlass.Constexpr[int]):
    """mO = mX * scale (compile-time), any static N."""
    for i in range(cute.size(mX, mode=[0])):
        for j in range(cute.size(mX, mode=[1])):
            mO[i, j] = mX[i, j] * cutlass.Float32(scale)


# ------------------------------------------------------------------ device kernels (tests/gpu/test_guards_gpu.py)
@cute.kernel
def _rows64_kernel(mX: cute.Tensor, mO: cute.Tensor, eps: cutlass.Float32):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    if cutlass.const_expr(cute.size(mX, mode=[1]) == 64):  # the client's code needs a static N
        mO[bidx, tidx] = mX[bidx, tidx] * cutlass.Float32(2.0) + eps


@cute.jit
def rows64(mX: cute.Tensor, mO: cute.Tensor, eps: cutlass.Float32, stream: cuda.CUstream):
    """mO = mX * 2 + eps, one block of 64 threads per row (N = 64, static in the client's fakes)."""
    _rows64_kernel(mX, mO, eps).launch(grid=(cute.size(mX, mode=[0]), 1, 1), block=(64, 1, 1), stream=stream)
