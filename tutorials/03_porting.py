"""Tutorial 3: porting an existing `cute.compile` call to `cute_bind.prepare`.

Run it:  python tutorials/03_porting.py

You already compile with `cute.compile(fn, *args)` and call the result on
every step. `cute_bind.prepare(compiled, *args)` wraps that compiled function
without recompiling, and `handle.launch(...)` replaces the per-call
`compiled(...)`. On a GPU this runs a device kernel on torch tensors; on a CPU
machine a host-only function on numpy arrays (the porting steps are the same).
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
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
from cutlass.cute.runtime import from_dlpack, make_ptr

import cute_bind

N = 512


# --8<-- [start:before]
# BEFORE: a tensor-taking host function, compiled once and called every step.
@cute.jit
def axpy_tensor(y: cute.Tensor, x: cute.Tensor, a: cutlass.Float32):
    for i in range(cute.size(y)):
        y[i] = a * x[i] + y[i]


# --8<-- [end:before]


# --8<-- [start:after]
# AFTER: the same computation taking pointers and sizes (any extent, and raw
# integer addresses at launch). Annotations say the slot kinds; `cute.Pointer`
# takes dtype, alignment and address space from the make_ptr values given to
# cute.compile.
@cute.jit
def axpy(
    y: cute.Pointer,
    x: cute.Pointer,
    a: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    yt = cute.make_tensor(y, cute.make_layout(n))
    xt = cute.make_tensor(x, cute.make_layout(n))
    for i in range(n):
        yt[i] = a * xt[i] + yt[i]


# --8<-- [end:after]


# --8<-- [start:device]
@cute.kernel
def axpy_kernel(y: cute.Pointer, x: cute.Pointer, a: cutlass.Float32, n: cutlass.Int32):
    yt = cute.make_tensor(y, cute.make_layout(n))
    xt = cute.make_tensor(x, cute.make_layout(n))
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        yt[i] = a * xt[i] + yt[i]


@cute.jit
def axpy_device(
    y: cute.Pointer,
    x: cute.Pointer,
    a: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    axpy_kernel(y, x, a, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


# --8<-- [end:device]


def run_on_cpu() -> None:
    x = np.arange(N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)

    # --8<-- [start:cpu-before]
    ty, tx = from_dlpack(y), from_dlpack(x)
    compiled_t = cute.compile(axpy_tensor, ty, tx, 2.0)
    compiled_t(ty, tx, 2.0)  # per step: DLPack conversion + marshalling
    assert np.array_equal(y, 2.0 * x + 1.0)

    # prepare() takes the tensor function as it is. from_dlpack() without a
    # marking compiled a static layout, (512):(1): the handle takes tensors of
    # exactly that shape (any DLPack tensor: numpy arrays here) and refuses
    # another extent rather than misreading it.
    handle_t = cute_bind.prepare(compiled_t, ty, tx, 2.0)
    y[:] = 1.0
    handle_t.launch(y, x, 2.0)
    assert np.array_equal(y, 2.0 * x + 1.0)
    try:
        handle_t.launch(y[:100], x[:100], 2.0)
    except cute_bind.LaunchValueError as err:
        assert err.code == "CB213"
        print("prepare(tensor function) refuses another extent:", str(err).splitlines()[0])
    else:
        raise AssertionError("another extent must be refused for a static layout")
    # --8<-- [end:cpu-before]

    # --8<-- [start:cpu-after]
    # Pointers made once, with dtype and alignment (numpy allocates 16-byte aligned).
    py = make_ptr(cutlass.Float32, y.ctypes.data, cute.AddressSpace.generic, assumed_align=16)
    px = make_ptr(cutlass.Float32, x.ctypes.data, cute.AddressSpace.generic, assumed_align=16)
    stream = cuda.CUstream(0)
    compiled = cute.compile(axpy, py, px, 2.0, N, stream)  # unchanged: your existing compile

    # The only new line: prepare the compiled function with the same arguments.
    handle = cute_bind.prepare(compiled, py, px, 2.0, N, stream)

    y[:] = 1.0
    compiled(py, px, 2.0, N, stream)  # the old per-step call ...
    expected = y.copy()
    y[:] = 1.0
    handle.launch(py, px, 2.0, N, stream)  # ... and its replacement
    assert np.array_equal(y, expected)

    # launch() also takes plain ints: the fast path.
    y[:] = 1.0
    handle.launch(y.ctypes.data, x.ctypes.data, 0.5, N, 0)
    assert np.array_equal(y, 0.5 * x + 1.0)
    # --8<-- [end:cpu-after]

    # --8<-- [start:checks]
    # The handle is specialised for what it was prepared with: a pointer object
    # of another dtype is refused, not reinterpreted.
    wrong = make_ptr(cutlass.Int32, y.ctypes.data, cute.AddressSpace.generic, assumed_align=16)
    try:
        handle.launch(wrong, px, 2.0, N, stream)
    except cute_bind.LaunchArgumentError as err:
        assert err.code == "CB210"
    print(handle)
    # --8<-- [end:checks]

    # The device version compiles here too (nothing is launched without a GPU).
    big = make_ptr(cutlass.Float32, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)
    cute.compile(axpy_device, big, big, 2.0, N, stream)
    print(
        "CPU: ported axpy ran; device axpy compiled for",
        os.environ.get("CUTE_DSL_ARCH", "this GPU"),
    )


def run_on_gpu() -> None:
    # --8<-- [start:gpu]
    import torch

    x = torch.arange(N, dtype=torch.float32, device="cuda")
    y = torch.ones(N, dtype=torch.float32, device="cuda")
    torch_stream = torch.cuda.current_stream()
    stream = cuda.CUstream(torch_stream.cuda_stream)

    def ptr(t: torch.Tensor):
        return make_ptr(cutlass.Float32, t.data_ptr(), cute.AddressSpace.gmem, assumed_align=16)

    compiled = cute.compile(axpy_device, ptr(y), ptr(x), 2.0, N, stream)  # your existing compile
    handle = cute_bind.prepare(compiled, ptr(y), ptr(x), 2.0, N, stream)  # the new line

    compiled(ptr(y), ptr(x), 2.0, N, stream)  # old per-step call: y = 2x + 1
    handle.launch(y.data_ptr(), x.data_ptr(), 0.5, N, torch_stream.cuda_stream)  # new: y += 0.5x
    torch.cuda.synchronize()
    assert torch.equal(y, 2.5 * x + 1.0)

    handle.launch(y, x, -2.5, N, torch_stream)  # tensors and torch streams work too
    torch.cuda.synchronize()
    assert torch.equal(y, torch.ones_like(y))
    # --8<-- [end:gpu]
    print("GPU: ported axpy ran on", torch.cuda.get_device_name())


def main() -> None:
    if GPU:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("note: a GPU is present but torch is not installed; running the host-only variant")
            run_on_cpu()
            return
        run_on_gpu()
    else:
        print("note: no CUDA device; running the host-only variant")
        run_on_cpu()
    print("ok")


if __name__ == "__main__":
    main()
