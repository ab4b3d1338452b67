"""The benchmark's functions: the 5-argument scale kernel (two pointers, a float, an int, a stream), and a host-only twin.

Kept in a module of their own because the DSL compiles from source files.
"""

from __future__ import annotations

# The DSL's decorators are untyped (mypy skips the DSL's sources).
# mypy: disable-error-code="untyped-decorator"

import functools
from typing import Protocol

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from .._types import Pointer

GMEM = cute.AddressSpace.gmem
THREADS = 256


#: the pointer kernels' pointers: 16-byte aligned global memory on the GPU, plain on the host
GPtr = Pointer[cutlass.Float32, 16, GMEM]
HPtr = Pointer[cutlass.Float32]


@cute.kernel
def _scale_kernel(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32) -> None:
    o = cute.make_tensor(out, cute.make_layout(n))
    i = cute.make_tensor(inp, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * THREADS + tidx
    if k < n:
        o[k] = i[k] * alpha


class _Launcher(Protocol):
    """A ``@cute.kernel`` function called in a jit function: what it launches."""

    def launch(self, *, grid: tuple[object, int, int], block: tuple[int, int, int], stream: cuda.CUstream) -> object: ...


def _launch(kernel: _Launcher, n: cutlass.Int32, stream: cuda.CUstream) -> None:
    """Launch a scale kernel over ``n`` elements: one thread per element, ``THREADS`` per block."""
    kernel.launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream)


@cute.jit
def _scale_on_host(out: HPtr, inp: HPtr, alpha: cutlass.Float32, n: cutlass.Int32) -> None:
    """out[k] = inp[k] * alpha for k < n (at most 64), on the host."""
    o = cute.make_tensor(out, cute.make_layout(64))
    i = cute.make_tensor(inp, cute.make_layout(64))
    for k in range(n):
        o[k] = i[k] * alpha


@cute.jit
def scale(out: GPtr, inp: GPtr, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream) -> None:
    """out[k] = inp[k] * alpha for k < n, on the GPU (the pointer workload's kernel)."""
    _launch(_scale_kernel(out, inp, alpha, n), n, stream)


@cute.jit
def scale_host(out: HPtr, inp: HPtr, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream) -> None:
    """out[k] = inp[k] * alpha for k < n, on the host (same 5-argument shape, no GPU needed)."""
    _scale_on_host(out, inp, alpha, n)


@cute.jit
def scale_left_out(out: GPtr, inp: GPtr, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream = None) -> None:
    """:func:`scale` with a stream that a ``kernel(...)`` call may leave out (torch's current stream then)."""
    _launch(_scale_kernel(out, inp, alpha, n), n, stream)


@cute.jit
def scale_host_left_out(out: HPtr, inp: HPtr, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream = None) -> None:
    """:func:`scale_host` with a stream that a ``kernel(...)`` call may leave out."""
    _scale_on_host(out, inp, alpha, n)


@cute.kernel
def _scale_tensor_kernel(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32) -> None:
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * THREADS + tidx
    if k < cute.size(out):
        out[k] = inp[k] * alpha


@cute.jit
def scale_tensors(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None) -> None:
    """The scale kernel on ``cute.Tensor`` arguments: for the TVM-FFI path with torch tensors (not a cute_bind kernel)."""
    _launch(_scale_tensor_kernel(out, inp, alpha), cute.size(out), stream)


@cute.jit
def scale_tensors_host(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None) -> None:
    """out[k] = inp[k] * alpha over a rank-1 tensor of any extent, on the host (the tensor workload's CPU twin)."""
    for k in range(cute.size(out)):
        out[k] = inp[k] * alpha


@cute.jit
def scale_tensors_k(
    out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, k: cutlass.Constexpr[int], stream: cuda.CUstream = None
) -> None:
    """``scale_tensors`` by ``alpha * k``, ``k`` a Constexpr (the specialization workload's Constexpr rows)."""
    _launch(_scale_tensor_kernel(out, inp, alpha * k), cute.size(out), stream)


@cute.jit
def scale_tensors_k_host(
    out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, k: cutlass.Constexpr[int], stream: cuda.CUstream = None
) -> None:
    """The host twin of ``scale_tensors_k``."""
    for j in range(cute.size(out)):
        out[j] = inp[j] * (alpha * k)


@functools.lru_cache(maxsize=1)
def tvm_ffi_tensor_function() -> object:
    """``scale_tensors`` compiled once for the DSL's TVM-FFI path with torch tensors (both workloads time it).

    Compiled for rank-1 float32 tensors of any extent, with the stream taken
    from torch's current stream. Needs apache-tvm-ffi (``ImportError`` otherwise).
    """
    import tvm_ffi  # noqa: F401  (the option below needs it)
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    fake = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),), assumed_align=16)
    stream = make_fake_stream(use_tvm_ffi_env_stream=True)
    return cute.compile(scale_tensors, fake, fake, cutlass.Float32(1.0), stream, options="--enable-tvm-ffi")
