"""Host functions written in the styles real CuTe DSL code uses (for the conformance suite).

The styles come from CUTLASS's CuTe DSL examples (unannotated tensor
parameters, ``mark_layout_dynamic``/``mark_compact_shape_dynamic`` at the call
site, static layouts, callable objects whose ``__call__`` is ``@cute.jit``,
kernels launched from helper methods), FlashAttention's cute interface (many
tensor parameters, ``Optional`` scalars such as window sizes passed as
``None``, Constexpr parameters between the tensors and the stream, a stream
keyword with a default) and quack (fake tensors and fake streams at compile
time, TVM-FFI compiles, scalars with defaults). The code is our own.

Host-only functions (CPU, host tensors) run in CI; the device variants
(``device_*``) launch a real kernel and run in tests/gpu on the device job
(they compile anywhere with ``CUTE_DSL_ARCH=sm_90a``).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind


# ------------------------------------------------------------------ CUTLASS example style: unannotated tensors
@cute.jit
def add_unannotated(a, b, c):  # noqa: ANN001 - unannotated on purpose (as the CUTLASS elementwise example)
    """c = a + b, elementwise over the whole (1-D or 2-D) tensor."""
    for i in range(cute.size(c)):
        c[i] = a[i] + b[i]


@cute.jit
def axpy_static(y: cute.Tensor, x: cute.Tensor, alpha: cutlass.Float32):
    """y = alpha * x + y over a statically shaped tensor (from_dlpack without marking)."""
    for i in cutlass.range_constexpr(cute.size(y)):
        y[i] = alpha * x[i] + y[i]


@cute.jit
def scale_rows(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    """out[i, j] = alpha * inp[i, j] for a 2-D tensor of any marking."""
    for i in range(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = inp[i, j] * alpha


# ------------------------------------------------------------------ lists / tuples of tensors
@cute.jit
def sum_list(out: cute.Tensor, ins: list[cute.Tensor]):
    """out = sum of the tensors in ``ins`` (a list parameter: one descriptor per element)."""
    for i in range(cute.size(out)):
        acc = cutlass.Float32(0.0)
        for k in cutlass.range_constexpr(len(ins)):
            acc = acc + ins[k][i]
        out[i] = acc


@cute.jit
def sum_tuple_unannotated(out, ins):  # noqa: ANN001
    """The same with an unannotated tuple of tensors."""
    for i in range(cute.size(out)):
        acc = cutlass.Float32(0.0)
        for k in cutlass.range_constexpr(len(ins)):
            acc = acc + ins[k][i]
        out[i] = acc


# ------------------------------------------------------------------ many tensors (FlashAttention style): a long entry name
@cute.jit
def many_tensors(o, q, k, v, lse, cu_q, cu_k, seq_q, seq_k, page, scale_t, bias):  # noqa: ANN001
    """o[i] = sum of the other eleven tensors at i (12 tensor parameters: the entry symbol is cut at 180)."""
    for i in range(cute.size(o)):
        o[i] = q[i] + k[i] + v[i] + lse[i] + cu_q[i] + cu_k[i] + seq_q[i] + seq_k[i] + page[i] + scale_t[i] + bias[i]


# ------------------------------------------------------------------ callable objects, helper methods, Constexpr, defaults
class Scaler:
    """A host function as a callable object (quack and FlashAttention style): configuration on the
    instance, ``__call__`` decorated with ``@cute.jit``, the work in a helper method."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    @cute.jit
    def _apply(self, out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
        for i in range(cute.size(out)):
            out[i] = inp[i] * alpha + self.offset

    @cute.jit
    def __call__(
        self,
        out: cute.Tensor,
        inp: cute.Tensor,
        twice: cutlass.Constexpr[bool],
        alpha: cutlass.Float32 = 1.5,
        stream: cuda.CUstream = cuda.CUstream(0),
    ):
        self._apply(out, inp, alpha)
        if cutlass.const_expr(twice):
            self._apply(out, out, alpha)


@cute.jit
def windowed(
    out: cute.Tensor,
    inp: cute.Tensor,
    window_left: Optional[cutlass.Int32],
    window_right: cutlass.Int32 | None,
    block: cutlass.Constexpr[int],
    stream: cuda.CUstream,
    softcap: cutlass.Float32 = 0.0,
):
    """FlashAttention-style optional window sizes (None compiles the branch away), a Constexpr
    between the tensors and the stream, a scalar with a default after the stream."""
    for i in range(cute.size(out)):
        v = inp[i] + softcap
        if cutlass.const_expr(window_left is not None):
            v = v + cutlass.Float32(window_left)
        if cutlass.const_expr(window_right is not None):
            v = v * cutlass.Float32(window_right)
        out[i] = v * block


@cute_bind.kernel
def windowed_kernel(
    out: cute.Tensor,
    inp: cute.Tensor,
    window_left: Optional[cutlass.Int32],
    window_right: cutlass.Int32 | None,
    block: cutlass.Constexpr[int],
    stream: cuda.CUstream,
    softcap: cutlass.Float32 = 0.0,
):
    """The same as an annotated ``@cute_bind.kernel`` (plain function, no @cute.jit)."""
    for i in range(cute.size(out)):
        v = inp[i] + softcap
        if cutlass.const_expr(window_left is not None):
            v = v + cutlass.Float32(window_left)
        if cutlass.const_expr(window_right is not None):
            v = v * cutlass.Float32(window_right)
        out[i] = v * block


@cute.jit
def optional_tensor(out: cute.Tensor, inp: cute.Tensor, bias: Optional[cute.Tensor], eps: cutlass.Float32 = 1e-5):
    """An optional tensor (quack's optional bias/residual) and a scalar with a default."""
    for i in range(cute.size(out)):
        v = inp[i] + eps
        if cutlass.const_expr(bias is not None):
            v = v + bias[i]
        out[i] = v


# ------------------------------------------------------------------ device variants (tests/gpu, device job)
@cute.kernel
def _device_axpby(x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i < n:
        out[i] = alpha * x[i] + y[i]


class DeviceAxpby:
    """Device variant: a callable object launching its kernel from a helper method, with a
    Constexpr between the tensors and the stream, an Optional scalar and a stream default."""

    @cute.jit
    def _launch(self, x: cute.Tensor, y: cute.Tensor, out: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream):
        n = cute.size(out)
        _device_axpby(x, y, out, alpha, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)

    @cute.jit
    def __call__(
        self,
        x: cute.Tensor,
        y: cute.Tensor,
        out: cute.Tensor,
        negate: cutlass.Constexpr[bool],
        shift: Optional[cutlass.Float32],
        stream: cuda.CUstream = cuda.CUstream(0),
        alpha: cutlass.Float32 = 2.0,
    ):
        a = alpha
        if cutlass.const_expr(negate):
            a = -alpha
        if cutlass.const_expr(shift is not None):
            a = a + shift
        self._launch(x, y, out, a, stream)


@cute.jit
def device_many(o, q, k, v, lse, cu_q, cu_k, seq_q, seq_k, page, scale_t, bias, stream: cuda.CUstream):  # noqa: ANN001
    """Device variant with 12 unannotated tensors (a cut entry symbol)."""
    n = cute.size(o)
    _device_sum12(o, q, k, v, lse, cu_q, cu_k, seq_q, seq_k, page, scale_t, bias, n).launch(
        grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream
    )


@cute.kernel
def _device_sum12(o, q, k, v, lse, cu_q, cu_k, seq_q, seq_k, page, scale_t, bias, n: cutlass.Int32):  # noqa: ANN001
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i < n:
        o[i] = q[i] + k[i] + v[i] + lse[i] + cu_q[i] + cu_k[i] + seq_q[i] + seq_k[i] + page[i] + scale_t[i] + bias[i]


@cute.jit
def optional_float(out: cute.Tensor, shift: Optional[cutlass.Float32]):
    """out[i] = shift (or -1 for None): an optional Float32 given a Python float."""
    for i in range(cute.size(out)):
        if cutlass.const_expr(shift is None):
            out[i] = cutlass.Float32(-1.0)
        else:
            out[i] = shift


@cute.jit
def optional_window_default(out: cute.Tensor, window: Optional[cutlass.Int32] = None):
    """out[i] = window (or -1 when None): an Optional parameter with a None default (FlashAttention's
    window sizes), compiled with a value as often as without."""
    for i in range(cute.size(out)):
        if cutlass.const_expr(window is None):
            out[i] = cutlass.Float32(-1.0)
        else:
            out[i] = cutlass.Float32(window)


# ------------------------------------------------------------------ FlashAttention style: tensors inside a NamedTuple
class TensorPair(NamedTuple):
    a: cute.Tensor
    b: cute.Tensor


@cute.jit
def add_pair(p: TensorPair, c: cute.Tensor):
    """c = p.a + p.b, elementwise (the tensors reach the kernel inside a structure)."""
    for i in range(cute.size(c)):
        c[i] = p.a[i] + p.b[i]
