"""Tutorial 4: streams, and PyTorch interop.

Run it:  python tutorials/04_streams_torch.py

A `cuda.CUstream` parameter becomes a stream slot: it takes a raw handle
(int), a `cuda.CUstream`, or a `torch.cuda.Stream` (its `.cuda_stream`).
Pointer slots take torch tensors (their `data_ptr()`), whose dtype, device and
alignment are checked. On a GPU this launches on side streams and orders the
work with torch; on a CPU machine it shows the same slots with a host-only
function (torch CPU tensors as pointers). Without torch installed, the torch
parts are skipped with a note.
"""

from __future__ import annotations

import os
import struct


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


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


GPU = gpu_available()
if not GPU:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np

import cute_bind

F32Ptr = cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]


@cute.kernel
def add_kernel(out: cute.Pointer, a: cute.Pointer, b: cute.Pointer, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    at = cute.make_tensor(a, cute.make_layout(n))
    bt = cute.make_tensor(b, cute.make_layout(n))
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        o[i] = at[i] + bt[i]


# --8<-- [start:define]
@cute_bind.kernel
def add(out: F32Ptr, a: F32Ptr, b: F32Ptr, n: cutlass.Int32, stream: cuda.CUstream):
    """out = a + b on `stream` (device kernel)."""
    add_kernel(out, a, b, n).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), stream=stream)


# --8<-- [end:define]


@cute_bind.kernel
def add_host(
    out: cute_bind.Pointer[cutlass.Float32],
    a: cute_bind.Pointer[cutlass.Float32],
    b: cute_bind.Pointer[cutlass.Float32],
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    """out = a + b as a host-only loop (the stream slot is stored, not used)."""
    o = cute.make_tensor(out, cute.make_layout(n))
    at = cute.make_tensor(a, cute.make_layout(n))
    bt = cute.make_tensor(b, cute.make_layout(n))
    for i in range(n):
        o[i] = at[i] + bt[i]


N = 1 << 12


def run_on_gpu(torch) -> None:
    # --8<-- [start:gpu-streams]
    a = torch.rand(N, device="cuda")
    b = torch.rand(N, device="cuda")
    out1 = torch.empty_like(a)
    out2 = torch.empty_like(a)

    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    handle = add.bind(out1, a, b, N, s1)

    # The inputs were written on the current stream: make the side streams wait.
    s1.wait_stream(torch.cuda.current_stream())
    s2.wait_stream(torch.cuda.current_stream())

    handle.launch(out1, a, b, N, s1)  # a torch.cuda.Stream object
    handle.launch(out2.data_ptr(), a.data_ptr(), b.data_ptr(), N, s2.cuda_stream)  # raw handle: fast path

    # Give the results back to the current stream before reading them.
    torch.cuda.current_stream().wait_stream(s1)
    torch.cuda.current_stream().wait_stream(s2)
    assert torch.equal(out1, a + b) and torch.equal(out2, a + b)
    # Tensors used on other streams: tell the caching allocator (as for any kernel).
    out1.record_stream(s1)
    out2.record_stream(s2)
    # --8<-- [end:gpu-streams]

    # --8<-- [start:gpu-cuda-stream]
    # A stream made with cuda-bindings works the same way.
    err, raw = cuda.cuStreamCreate(0)
    assert err == cuda.CUresult.CUDA_SUCCESS
    torch.cuda.synchronize()
    out3 = torch.zeros_like(a)
    handle.launch(out3, a, b, N, raw)  # cuda.CUstream
    (err,) = cuda.cuStreamSynchronize(raw)
    assert err == cuda.CUresult.CUDA_SUCCESS
    assert torch.equal(out3, a + b)
    cuda.cuStreamDestroy(raw)
    # --8<-- [end:gpu-cuda-stream]

    # --8<-- [start:gpu-checks]
    # Tensors are checked (dtype, device, alignment); raw ints are not.
    for bad, code in ((a.double(), "CB210"), (a[1:], "CB207")):
        try:
            handle.launch(out1, bad, b, N - 1, s1)
        except cute_bind.PreparedLaunchError as err:
            assert err.code == code, err
        else:
            raise AssertionError(f"expected {code}")
    # --8<-- [end:gpu-checks]
    torch.cuda.synchronize()
    print(
        "GPU: add launched on two torch streams and a cuda-bindings stream on",
        torch.cuda.get_device_name(),
    )


def run_on_cpu(torch) -> None:
    # --8<-- [start:cpu-streams]
    a = np.linspace(0.0, 1.0, N, dtype=np.float32)
    b = np.ones(N, dtype=np.float32)
    out = np.zeros(N, dtype=np.float32)
    handle = add_host.bind(out, a, b, N, 0)

    # Every stream spelling lands in the same 8-byte slot.
    for stream in (0, cuda.CUstream(0), cuda.CUstream(0x1234), 0x1234):
        handle.launch(out, a, b, N, stream)
        print(f"  stream {stream!r:>30} -> slot bytes {handle.slot_bytes('stream').hex()}")
    assert handle.slot_bytes("stream") == struct.pack("@Q", 0x1234)
    assert np.array_equal(out, a + b)

    # A stream slot does not take a float, a string or None.
    try:
        handle.launch(out, a, b, N, None)
    except cute_bind.LaunchArgumentError as err:
        assert err.code == "CB204" and err.parameter == "stream"
    # --8<-- [end:cpu-streams]

    if torch is None:
        print("note: torch is not installed; skipping the torch tensor part")
        return

    # --8<-- [start:cpu-torch]
    ta = torch.linspace(0.0, 1.0, N, dtype=torch.float32)
    tb = torch.full((N,), 2.0)
    tout = torch.zeros(N)
    handle.launch(tout, ta, tb, N, 0)  # CPU tensors: their data_ptr()
    assert torch.equal(tout, ta + tb)

    handle.launch(tout.data_ptr(), ta.data_ptr(), tb.data_ptr(), N, 0)  # fast path
    assert torch.equal(tout, ta + tb)

    # dtype is checked for tensors (raw ints carry no type).
    try:
        handle.launch(tout, ta.double(), tb, N, 0)
    except cute_bind.LaunchArgumentError as err:
        assert err.code == "CB210" and err.parameter == "a"

    # A handle holds addresses, not tensors: keep them alive while you launch.
    # --8<-- [end:cpu-torch]
    print("CPU: torch CPU tensors launched through the host-only add")


def main() -> None:
    torch = torch_or_none()
    if GPU and torch is not None:
        run_on_gpu(torch)
    else:
        if GPU:
            print("note: a GPU is present but torch is not installed; running the host-only variant")
        else:
            print("note: no CUDA device; compiling the device kernel only and running the host-only variant")
            add.compile(1 << 20, 1 << 20, 1 << 20, N, 0)
        run_on_cpu(torch)
    print("ok")


if __name__ == "__main__":
    main()
