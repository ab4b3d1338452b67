"""Host-only functions the hostile-input tests launch (they compile and run on the CPU)."""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind

F32 = cute_bind.Pointer[cutlass.Float32]
F64 = cute_bind.Pointer[cutlass.Float64]


@cute.jit
def fill_count(n: cutlass.Int32, tag: cutlass.Int16, out: F32):
    """out[k] = tag for k < n (n <= 64): the pointer comes last, after a slot an extension kind may write."""
    o = cute.make_tensor(out, cute.make_layout(64))
    for k in range(n):
        o[k] = cutlass.Float32(tag)


@cute.jit
def reals(out: F64, a: cutlass.Float32, b: cutlass.Float64, c: cutlass.Float16, d: cutlass.BFloat16):
    """Each real slot, widened to Float64, into out[0..3]."""
    o = cute.make_tensor(out, cute.make_layout(4))
    o[0] = cutlass.Float64(a)
    o[1] = b
    o[2] = cutlass.Float64(c)
    o[3] = cutlass.Float64(d)


@cute.jit
def three(out: cute_bind.Pointer[cutlass.Int64], vals: tuple[cutlass.Int32, cutlass.Int32, cutlass.Int32]):
    """The three elements of a sequence into out[0..2]."""
    o = cute.make_tensor(out, cute.make_layout(3))
    o[0] = cutlass.Int64(vals[0])
    o[1] = cutlass.Int64(vals[1])
    o[2] = cutlass.Int64(vals[2])


@cute.jit
def tsum(out: F32, ins: tuple, n: cutlass.Int32):
    """out[0] = sum of ins[0][k] for k < n (a bare tuple of one tensor)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    acc = cutlass.Float32(0.0)
    t = ins[0]
    for k in range(n):
        acc = acc + t[k]
    o[0] = acc


@cute.jit
def handle_of(out: cute_bind.Pointer[cutlass.Int64], s: cuda.CUstream):
    """The stream handle as an integer into out[0] (never used as a stream on the CPU)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = cutlass.Int64(0)
