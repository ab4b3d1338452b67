"""Device kernels for the cute_bind.jax GPU tests and benchmark (compile anywhere with CUTE_DSL_ARCH=sm_90a).

Each computation is written twice over one device kernel: as a cute_bind
kernel (the object torch users call and cute_bind.jax takes) and as a
``cutlass_call`` host function (the DSL's own JAX bridge: ``(stream, *inputs,
*outputs, **constants)``), so the two bridges launch the same device code.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind

T = 256
G = cute.AddressSpace.gmem
F32x1 = cute_bind.Tensor[cutlass.Float32, 1]
P32 = cute_bind.Pointer[cutlass.Float32, 16, G]


def _grid(n):
    return ((n + T - 1) // T, 1, 1)


@cute.kernel
def _scale_k(out: cute.Tensor, x: cute.Tensor, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < cute.size(out):
        out[k] = x[k] * alpha


@cute.kernel
def _axpy_k(y: cute.Tensor, x: cute.Tensor, a: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < cute.size(y):
        y[k] = y[k] + x[k] * a


@cute.kernel
def _affine_k(out: cute.Tensor, x: cute.Tensor, shift: cutlass.Float32, square: cutlass.Constexpr[bool]):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < cute.size(out):
        if cutlass.const_expr(square):
            out[k] = x[k] * x[k] + shift
        else:
            out[k] = x[k] + shift


@cute.kernel
def _pscale_k(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    k = bidx * T + tidx
    if k < n:
        o[k] = x[k] * alpha


# ------------------------------------------------------------------ cute_bind kernels
@cute_bind.kernel
def tscale(out: F32x1, x: F32x1, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """out = x * alpha (tensors, a number, the stream)."""
    _scale_k(out, x, alpha).launch(grid=_grid(cute.size(out)), block=(T, 1, 1), stream=stream)


@cute_bind.kernel
def taxpy(y: F32x1, x: F32x1, a: cutlass.Float32, stream: cuda.CUstream = None):
    """y += a * x, in place."""
    _axpy_k(y, x, a).launch(grid=_grid(cute.size(y)), block=(T, 1, 1), stream=stream)


@cute_bind.kernel
def taffine(out: F32x1, x: F32x1, shift: cutlass.Constexpr[float], square: cutlass.Constexpr[bool], stream: cuda.CUstream = None):
    """out = x * x + shift or x + shift, chosen at compile time."""
    _affine_k(out, x, cutlass.Float32(shift), square).launch(grid=_grid(cute.size(out)), block=(T, 1, 1), stream=stream)


@cute_bind.kernel
def pscale(out: P32, inp: P32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream = None):
    """out[k] = inp[k] * alpha for k < n (16-byte aligned pointers)."""
    _pscale_k(out, inp, alpha, n).launch(grid=_grid(n), block=(T, 1, 1), stream=stream)


# ------------------------------------------------------------------ cutlass_call host functions (stream, *inputs, *outputs, **constants)
@cute.jit
def cc_scale(stream: cuda.CUstream, x: cute.Tensor, out: cute.Tensor, *, alpha: cutlass.Constexpr[float]):
    _scale_k(out, x, cutlass.Float32(alpha)).launch(grid=_grid(cute.size(out)), block=(T, 1, 1), stream=stream)


@cute.jit
def cc_axpy(stream: cuda.CUstream, y: cute.Tensor, x: cute.Tensor, *, a: cutlass.Constexpr[float]):
    # with input_output_aliases={0: 0} cutlass_call passes the aliased output as the input only
    _axpy_k(y, x, cutlass.Float32(a)).launch(grid=_grid(cute.size(y)), block=(T, 1, 1), stream=stream)


@cute.jit
def cc_affine(stream: cuda.CUstream, x: cute.Tensor, out: cute.Tensor, *, shift: cutlass.Constexpr[float], square: cutlass.Constexpr[bool]):
    _affine_k(out, x, cutlass.Float32(shift), square).launch(grid=_grid(cute.size(out)), block=(T, 1, 1), stream=stream)


@cute.jit
def cc_pscale(stream: cuda.CUstream, x: cute.Tensor, out: cute.Tensor, *, alpha: cutlass.Constexpr[float]):
    n = cute.size(out)
    _pscale_k(out.iterator, x.iterator, cutlass.Float32(alpha), n).launch(grid=_grid(n), block=(T, 1, 1), stream=stream)
