"""Tutorial 1: quickstart -- decorate, bind, launch.

Run it:  python tutorials/01_quickstart.py

On a machine with a CUDA GPU (and PyTorch) it launches a real device kernel on
CUDA tensors. Without a GPU it compiles the same device kernel for sm_90a
(compile only) and runs a host-only twin of the function, which has the same
signature and goes through exactly the same bind/launch path.
"""

from __future__ import annotations

import os


# --8<-- [start:detect]
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
# --8<-- [end:detect]

# --8<-- [start:define]
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np

import cute_bind

# A global-memory float32 pointer, assumed 16-byte aligned. The annotation
# carries the dtype, so bind() can compile from raw integer addresses alone.
F32Ptr = cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]


@cute.kernel
def scale_kernel(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32):
    """Device code: out[i] = alpha * inp[i], one element per thread."""
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        o[i] = x[i] * alpha


@cute_bind.kernel
def scale(
    out: F32Ptr,
    inp: F32Ptr,
    alpha: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    """Host function: launch scale_kernel on `stream` with 128 threads per block."""
    scale_kernel(out, inp, alpha, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


N = 1000  # elements in the examples below
# --8<-- [end:define]


# --8<-- [start:host]
@cute_bind.kernel
def scale_host(
    out: cute_bind.Pointer[cutlass.Float32],
    inp: cute_bind.Pointer[cutlass.Float32],
    alpha: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    """The same computation as a host-only loop: compiles and runs without a GPU."""
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    for i in range(n):
        o[i] = x[i] * alpha


# --8<-- [end:host]


def run_on_gpu() -> None:
    # --8<-- [start:gpu]
    import torch

    x = torch.arange(N, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    stream = torch.cuda.current_stream()

    # bind(): compile (cached) and prepare a handle that holds these values.
    handle = scale.bind(y, x, 2.0, N, stream)

    # launch(): same arguments as a call, rewritten in place -- nothing recompiles.
    handle.launch(y, x, 3.0, N, stream)
    torch.cuda.synchronize()
    assert torch.equal(y, 3.0 * x)

    # Raw integer addresses and the stream handle work too: nothing to read or check.
    handle.launch(y.data_ptr(), x.data_ptr(), 4.0, N, stream.cuda_stream)
    torch.cuda.synchronize()
    assert torch.equal(y, 4.0 * x)
    # --8<-- [end:gpu]
    print("GPU: scale launched on", torch.cuda.get_device_name())


def run_on_cpu() -> None:
    # --8<-- [start:compile-only]
    # Compile the device kernel without launching it. With raw addresses the
    # annotation supplies dtype, alignment and address space.
    compiled = scale.compile(1 << 20, 1 << 20, 2.0, N, 0)
    print(
        "compiled for",
        os.environ.get("CUTE_DSL_ARCH", "this GPU"),
        "->",
        type(compiled).__name__,
    )
    # --8<-- [end:compile-only]

    # --8<-- [start:cpu]
    x = np.arange(N, dtype=np.float32)
    y = np.zeros_like(x)

    handle = scale_host.bind(y, x, 2.0, N, 0)  # numpy arrays are pointer values too
    print(handle)

    handle.launch(y, x, 3.0, N, 0)
    assert np.array_equal(y, 3.0 * x)

    # Plain ints for every slot work too: nothing to read or check.
    handle.launch(y.ctypes.data, x.ctypes.data, 4.0, N, 0)
    assert np.array_equal(y, 4.0 * x)

    # Fewer elements, a new scale: only the slot bytes change.
    y[:] = 0
    handle.launch(y.ctypes.data, x.ctypes.data, -1.0, 10, 0)
    assert np.array_equal(y[:10], -x[:10]) and not y[10:].any()
    # --8<-- [end:cpu]
    print("CPU: host-only scale ran", handle.parameters)


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
        print("note: no CUDA device; compiling the device kernel only and running the host-only variant")
        run_on_cpu()
    print("ok")


if __name__ == "__main__":
    main()
