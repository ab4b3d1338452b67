"""A device kernel, compiled on the CPU with CUTE_DSL_ARCH=sm_90a in the tests (never launched here)."""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind

THREADS = 128


@cute.kernel
def _scale_kernel(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    i = cute.make_tensor(inp, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * THREADS + tidx
    if k < n:
        o[k] = i[k] * alpha


@cute.jit
def scale(
    out: cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem],
    inp: cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem],
    alpha: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    _scale_kernel(out, inp, alpha, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream)
