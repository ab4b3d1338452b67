"""Host-only functions that "launch" kernels through the fake driver (tests/graph, CPU).

Each function writes launch records to ``FAKE``'s mailbox (a compile-time
constant, so not a runtime slot) with :func:`cute_bind.graph.fake.fake_launch`;
the fake turns them into kernel nodes under capture and runs the Python
bodies below on host memory otherwise. The bodies compute in float32/float64
with NumPy, so results are bit-exact and comparable.
"""

import ctypes

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np

import cute_bind
from cute_bind.graph.fake import FakeDriver, fake_launch

FAKE = FakeDriver()
BOX = FAKE.mailbox
F32 = cute_bind.Pointer[cutlass.Float32]
F64 = cute_bind.Pointer[cutlass.Float64]


def f32(address, n):
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(address))


def f64(address, n):
    return np.ctypeslib.as_array((ctypes.c_double * n).from_address(address))


def _u64(b):
    return int.from_bytes(b[:8], "little")


def _i32(b):
    return int.from_bytes(b[:4], "little", signed=True)


def _f32(b):
    return np.frombuffer(b[:4], dtype=np.float32)[0]


# ------------------------------------------------------------------ kernel bodies (what the "device" runs)
def _scale_body(grid, block, p):  # out[k] = inp[k] * alpha, k < n
    np.seterr(over="ignore", invalid="ignore")
    n = _i32(p[3])
    out, inp = f32(_u64(p[0]), n), f32(_u64(p[1]), n)
    out[:] = inp * _f32(p[2])


def _scale2_body(grid, block, p):  # the same, n arriving doubled
    n = _i32(p[3]) // 2
    out, inp = f32(_u64(p[0]), n), f32(_u64(p[1]), n)
    out[:] = inp * _f32(p[2])


def _add_body(grid, block, p):  # out[k] = a[k] + b[k], k < n
    n = _i32(p[3])
    f32(_u64(p[0]), n)[:] = f32(_u64(p[1]), n) + f32(_u64(p[2]), n)


def _map_body(grid, block, p):  # out[k] = inp[k] + 1, the input's address inside a 128-byte "tensor map"
    n = _i32(p[2])
    f32(_u64(p[0]), n)[:] = f32(_u64(p[1][:8]), n) + np.float32(1.0)


def _mix_body(grid, block, p):  # out[0] = combination of every scalar
    out = f64(_u64(p[0]), 1)
    i8, i16, u32 = _i32(p[1]), _i32(p[2]), int.from_bytes(p[3][:4], "little")
    i64 = int.from_bytes(p[4], "little", signed=True)
    d = np.frombuffer(p[5], dtype=np.float64)[0]
    flag = _i32(p[6])
    v = np.float64(i8) * 3 + np.float64(i16) * 5 + np.float64(u32) * 7 + np.float64(i64) + d
    out[0] = -v if flag else v


def _tensor_body(grid, block, p):  # out[k] = inp[k] * alpha over a 1-D tensor of extent m
    m = _i32(p[2])
    f32(_u64(p[0]), m)[:] = f32(_u64(p[1]), m) * _f32(p[3])


def _axpby_body(grid, block, p):  # out[k] = a[k] * sa + b[k] * sb, k < n
    n = _i32(p[5])
    a, b = f32(_u64(p[1]), n), f32(_u64(p[2]), n)
    f32(_u64(p[0]), n)[:] = a * _f32(p[3]) + b * _f32(p[4])


FAKE.kernel(1, "scale", (8, 8, 4, 4), _scale_body)
FAKE.kernel(7, "axpby", (8, 8, 8, 4, 4, 4), _axpby_body)
FAKE.kernel(2, "scale_doubled_n", (8, 8, 4, 4), _scale2_body)
FAKE.kernel(3, "add", (8, 8, 8, 4), _add_body)
FAKE.kernel(4, "tensor_map", (8, 128, 4), _map_body)
FAKE.kernel(5, "mix", (8, 4, 4, 4, 8, 8, 4), _mix_body)
FAKE.kernel(6, "tensor_scale", (8, 8, 4, 4), _tensor_body)


# ------------------------------------------------------------------ host functions (what the DSL compiles)
@cute.jit
def scale(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int]):
    """Everything passes straight through; a fixed grid."""
    fake_launch(box, 1, 4, 128, ("ptr", out), ("ptr", inp), ("f32", alpha), ("i32", n))


@cute.jit
def scale_grid(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int]):
    """The grid derives from n (CB802 for n)."""
    fake_launch(box, 1, (n + 127) // 128, 128, ("ptr", out), ("ptr", inp), ("f32", alpha), ("i32", n))


@cute.jit
def scale_doubled(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int]):
    """n reaches the kernel as n * 2 (CB801 for n)."""
    fake_launch(box, 2, 4, 128, ("ptr", out), ("ptr", inp), ("f32", alpha), ("i32", n * 2))


@cute.jit
def plus_one_map(out: F32, inp: F32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int]):
    """inp reaches the kernel inside a 128-byte descriptor (CB801, tensor map)."""
    fake_launch(box, 4, 1, 32, ("ptr", out), ("map", inp.toint()), ("i32", n))


@cute.jit
def scale_then_add(
    out: F32, tmp: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int]
):
    """Two kernels per launch: tmp = inp * alpha, out = tmp + inp."""
    fake_launch(box, 1, 4, 128, ("ptr", tmp), ("ptr", inp), ("f32", alpha), ("i32", n))
    fake_launch(box, 3, 4, 128, ("ptr", out), ("ptr", tmp), ("ptr", inp), ("i32", n))


@cute.jit
def scale_then_add_grid(
    out: F32, tmp: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int]
):
    """scale_then_add with a grid derived from n: inp reaches two nodes, and another n re-records."""
    fake_launch(box, 1, (n + 127) // 128, 128, ("ptr", tmp), ("ptr", inp), ("f32", alpha), ("i32", n))
    fake_launch(box, 3, (n + 127) // 128, 128, ("ptr", out), ("ptr", tmp), ("ptr", inp), ("i32", n))


@cute.jit
def mix(out: F64, i8: cutlass.Int8, i16: cutlass.Int16, u32: cutlass.Uint32, i64: cutlass.Int64, d: cutlass.Float64, flag: cutlass.Boolean,
        stream: cuda.CUstream, box: cutlass.Constexpr[int]):  # fmt: skip
    """Scalars of several kinds, the narrow ones widened to 32 bits by the host function."""
    fake_launch(box, 5, 1, 1, ("ptr", out), ("i32", i8), ("i32", i16), ("i32", u32), ("i64", i64), ("f64", d), ("i32", flag))


@cute.jit
def tensor_scale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream, box: cutlass.Constexpr[int]):
    """A dynamic 1-D tensor: address passes through, the extent sizes the grid (CB802)."""
    m = cute.size(out)
    fake_launch(box, 6, (m + 127) // 128, 128, ("ptr", out.iterator), ("ptr", inp.iterator), ("i32", m), ("f32", alpha))


_COUNTER = (ctypes.c_int64 * 1)()
COUNTER = ctypes.addressof(_COUNTER)


@cute.jit
def flaky(out: F32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int], counter: cutlass.Constexpr[int]):
    """Launches one kernel, and a second one every other call: not reproducible (CB805)."""
    c = cute.make_tensor(cute.make_ptr(cutlass.Int64, counter, cute.AddressSpace.generic, assumed_align=8), cute.make_layout(1))
    c[0] = c[0] + 1
    fake_launch(box, 1, 1, 32, ("ptr", out), ("ptr", out), ("f32", cutlass.Float32(1.0)), ("i32", n))
    if c[0] % 2 == 0:
        fake_launch(box, 1, 1, 32, ("ptr", out), ("ptr", out), ("f32", cutlass.Float32(1.0)), ("i32", n))


@cute.jit
def no_launch(out: F32, n: cutlass.Int32, stream: cuda.CUstream, box: cutlass.Constexpr[int]):
    """Launches nothing (as a launch on another stream would leave the capture empty)."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = cutlass.Float32(n)


@cute.jit
def axpby(out: F32, ins: tuple[F32, F32], scales: tuple[cutlass.Float32, cutlass.Float32], n: cutlass.Int32, stream: cuda.CUstream,
          box: cutlass.Constexpr[int]):  # fmt: skip
    """Sequence slots: a tuple of pointers and a tuple of scalars, every element passing straight through."""
    fake_launch(box, 7, 2, 64, ("ptr", out), ("ptr", ins[0]), ("ptr", ins[1]), ("f32", scales[0]), ("f32", scales[1]), ("i32", n))
