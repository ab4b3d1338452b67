"""Tutorial 8: tensor slots -- bind with a tensor, launch with new ones.

Run it:  python tutorials/08_tensors.py

A `cute.Tensor` parameter is a tensor slot: `bind()` compiles for the tensor
it is given (layout dynamic by default, so one compile serves every extent)
and `launch()` takes a new tensor each time, checks it against what was
compiled and rewrites only its descriptor (data address, extents, strides).

The host part runs on any machine: host-only functions on torch CPU tensors
(NumPy arrays when torch is not installed). On a machine with a CUDA GPU and
PyTorch the script also launches a real device kernel on CUDA tensors of a new
extent each step, and checks every result bit for bit against the DSL's normal
call. Without a GPU it compiles that device kernel for sm_90a.
"""

from __future__ import annotations

import os


def gpu_available() -> bool:
    """True when a CUDA device can run kernels here (through torch if it is installed)."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        return bool(torch.cuda.is_available())
    try:
        import cuda.bindings.driver as drv

        (err,) = drv.cuInit(0)
        if err != drv.CUresult.CUDA_SUCCESS:
            return False
        err, count = drv.cuDeviceGetCount()
        return err == drv.CUresult.CUDA_SUCCESS and count > 0
    except Exception:
        return False


GPU = gpu_available()
if not GPU:
    # No device: compile device kernels for Hopper on the CPU (nothing is launched).
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np

import cute_bind

try:
    import torch
except ImportError:
    torch = None


# --8<-- [start:arrays]
def tensor(a: np.ndarray):
    """A torch CPU tensor sharing `a`'s memory, or `a` itself without torch.

    Both are DLPack tensors; the script checks results on the NumPy side.
    """
    return torch.from_numpy(a) if torch is not None else a


# --8<-- [end:arrays]


# --8<-- [start:host]
@cute_bind.kernel
def scale_host(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    """out[i] = inp[i] * alpha, for a rank-1 tensor of any extent."""
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha


# --8<-- [end:host]


def run_host_tensors() -> None:
    # --8<-- [start:bind]
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    handle = scale_host.bind(tensor(y), tensor(x), 2.0)  # compiles: layout (?):(1)
    print(handle)

    # New tensors, other extents: no recompile, only the descriptor changes.
    for n in (8, 100, 3):
        x = np.arange(n, dtype=np.float32)
        y = np.zeros_like(x)
        handle.launch(tensor(y), tensor(x), 3.0)
        assert np.array_equal(y, 3.0 * x)

        # bit for bit what the DSL's normal call computes
        ref = np.zeros_like(x)
        scale_host.call_dsl(tensor(ref), tensor(x), 3.0)
        assert ref.tobytes() == y.tobytes()
    assert scale_host.cache_info()["compiled"] == 1
    # --8<-- [end:bind]

    # --8<-- [start:layout-error]
    # The compiled layout has a unit stride: every other element is refused.
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    try:
        handle.launch(tensor(y)[::2], tensor(x)[::2], 3.0)
    except cute_bind.LaunchValueError as err:
        print(err)
        assert err.code == "CB213" and err.parameter == "out"
    else:
        raise AssertionError("a strided tensor must be refused")
    assert not y.any()  # a launch that raises has launched nothing

    # Make it contiguous, as the message says.
    handle.launch(tensor(y[::2].copy()), tensor(x[::2].copy()), 3.0)
    # --8<-- [end:layout-error]


# --8<-- [start:annotated]
@cute_bind.kernel
def add2d_host(
    out: cute_bind.Tensor[cutlass.Float32, 2],
    inp: cute_bind.Tensor[cutlass.Float32, 2],
    beta: cutlass.Float16,
):
    """out[i, j] = inp[i, j] + beta over a rank-2 tensor; beta is a half scalar."""
    for i in range(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = inp[i, j] + cutlass.Float32(beta)


# --8<-- [end:annotated]


def run_annotated() -> None:
    # --8<-- [start:annotated-run]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.zeros_like(x)
    handle = add2d_host.bind(tensor(y), tensor(x), 0.5)
    print(handle)  # layout (?,?):(?{i64},1): extents and the row stride are dynamic

    # Another shape, and a Float16 value: 0.1 is stored as the nearest half.
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    y = np.zeros_like(x)
    handle.launch(tensor(y), tensor(x), 0.1)
    assert np.array_equal(y, x + np.float32(np.float16(0.1)))
    assert handle.slot_bytes("beta") == np.float16(0.1).tobytes()

    # A float64 tensor for a Float32 slot is refused before anything runs.
    try:
        handle.launch(tensor(y), tensor(x.astype(np.float64)), 0.1)
    except cute_bind.LaunchArgumentError as err:
        assert err.code == "CB211"
    # --8<-- [end:annotated-run]


# --8<-- [start:sequence]
F32Ptr = cute_bind.Pointer[cutlass.Float32]


@cute_bind.kernel
def sum2_host(out: F32Ptr, ins: tuple[F32Ptr, F32Ptr], n: cutlass.Int32):
    """out[k] = ins[0][k] + ins[1][k] for k < n: a tuple of two pointers."""
    o = cute.make_tensor(out, cute.make_layout(n))
    a = cute.make_tensor(ins[0], cute.make_layout(n))
    b = cute.make_tensor(ins[1], cute.make_layout(n))
    for k in range(n):
        o[k] = a[k] + b[k]


# --8<-- [end:sequence]


def run_sequence() -> None:
    # --8<-- [start:sequence-run]
    a = np.arange(16, dtype=np.float32)
    b = np.full(16, 10.0, dtype=np.float32)
    out = np.zeros_like(a)
    handle = sum2_host.bind(out, (a, b), 16)
    handle.launch(out.ctypes.data, (a.ctypes.data, b.ctypes.data), 16)  # ints work too
    assert np.array_equal(out, a + b)

    # The length is fixed (here by the annotation): three pointers are refused.
    try:
        handle.launch(out, (a, b, a), 16)
    except cute_bind.LaunchValueError as err:
        assert err.code == "CB215"
    # --8<-- [end:sequence-run]


# --8<-- [start:device]
@cute.kernel
def scale_kernel(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    """Device code: out[i] = inp[i] * alpha, one element per thread."""
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < cute.size(out):
        out[i] = inp[i] * alpha


@cute_bind.kernel
def scale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream):
    """Host function: one thread per element, the grid sized from the extent."""
    n = cute.size(out)
    scale_kernel(out, inp, alpha).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


# --8<-- [end:device]


def run_on_gpu() -> None:
    # --8<-- [start:gpu]
    stream = torch.cuda.current_stream()
    x = torch.randn(1000, device="cuda")
    y = torch.empty_like(x)
    handle = scale.bind(y, x, 2.0, stream)

    for step, n in enumerate((1000, 4096, 77, 1 << 20)):
        x = torch.randn(n, device="cuda")  # new tensors, a new extent each step
        y = torch.empty_like(x)
        handle.launch(y, x, 0.5 + step, stream)

        ref = torch.empty_like(x)
        scale.call_dsl(ref, x, 0.5 + step, stream)  # the DSL's normal call
        torch.cuda.synchronize()
        assert torch.equal(y.view(torch.int32), ref.view(torch.int32))  # bit for bit
    assert scale.cache_info()["compiled"] == 1
    # --8<-- [end:gpu]
    print("GPU: tensor scale launched on", torch.cuda.get_device_name())


def compile_only() -> None:
    # --8<-- [start:compile-only]
    # No GPU: compile the device kernel from host tensors (their dtype and rank).
    x = np.zeros(1000, dtype=np.float32)
    compiled = scale.compile(tensor(x), tensor(x), 2.0, 0)
    print(
        "compiled for",
        os.environ.get("CUTE_DSL_ARCH", "this GPU"),
        "->",
        type(compiled).__name__,
    )
    # --8<-- [end:compile-only]


def main() -> None:
    if torch is None:
        print("note: torch is not installed; the host part uses NumPy arrays")
    run_host_tensors()
    run_annotated()
    run_sequence()
    print("CPU: host-only tensor, Float16 and sequence functions ran")
    if GPU and torch is not None:
        run_on_gpu()
    elif GPU:
        print("note: a GPU is present but torch is not installed; skipping the device part")
    else:
        print("note: no CUDA device; compiling the device kernel only")
        compile_only()
    print("ok")


if __name__ == "__main__":
    main()
