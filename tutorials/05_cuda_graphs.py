"""Tutorial 5: CUDA graphs.

Run it:  python tutorials/05_cuda_graphs.py

A prepared launch is an ordinary kernel launch on the stream you pass, so it
can be captured into a CUDA graph: capture once, replay many times. The graph
records the argument values of the captured launches; to feed new data,
write it into the same (static) buffers and replay. On a GPU this captures
with `torch.cuda.graph` and with the cuda-bindings stream-capture API; on a
CPU machine it compiles the device kernels and shows the static-buffer pattern
with host-only twins (graphs themselves need a GPU).
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

import cute_bind

F32Ptr = cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]


@cute.kernel
def axpby_kernel(
    out: cute.Pointer,
    x: cute.Pointer,
    y: cute.Pointer,
    a: cutlass.Float32,
    b: cutlass.Float32,
    n: cutlass.Int32,
):
    o = cute.make_tensor(out, cute.make_layout(n))
    xt = cute.make_tensor(x, cute.make_layout(n))
    yt = cute.make_tensor(y, cute.make_layout(n))
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        o[i] = a * xt[i] + b * yt[i]


# --8<-- [start:define]
@cute_bind.kernel
def axpby(
    out: F32Ptr,
    x: F32Ptr,
    y: F32Ptr,
    a: cutlass.Float32,
    b: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    """out = a*x + b*y on `stream`."""
    axpby_kernel(out, x, y, a, b, n).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), stream=stream)


# --8<-- [end:define]


@cute_bind.kernel
def axpby_host(
    out: cute_bind.Pointer[cutlass.Float32],
    x: cute_bind.Pointer[cutlass.Float32],
    y: cute_bind.Pointer[cutlass.Float32],
    a: cutlass.Float32,
    b: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    o = cute.make_tensor(out, cute.make_layout(n))
    xt = cute.make_tensor(x, cute.make_layout(n))
    yt = cute.make_tensor(y, cute.make_layout(n))
    for i in range(n):
        o[i] = a * xt[i] + b * yt[i]


N = 1 << 14


def run_on_gpu() -> None:
    # --8<-- [start:torch-graph]
    import torch

    # Static buffers: the graph will always read and write these addresses.
    x = torch.rand(N, device="cuda")
    y = torch.rand(N, device="cuda")
    t = torch.empty_like(x)
    out = torch.empty_like(x)

    first = axpby.bind(t, x, y, 2.0, 1.0, N, torch.cuda.current_stream())
    second = first.clone()  # one handle per captured call site

    # Warm up outside the capture (modules load, first launches run).
    first.launch(t, x, y, 2.0, 1.0, N, torch.cuda.current_stream())
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        s = torch.cuda.current_stream().cuda_stream  # the capture stream
        first.launch(t.data_ptr(), x.data_ptr(), y.data_ptr(), 2.0, 1.0, N, s)  # t = 2x + y
        second.launch(out.data_ptr(), t.data_ptr(), x.data_ptr(), 0.5, -1.0, N, s)  # out = t/2 - x

    for _ in range(3):
        x.copy_(torch.rand(N, device="cuda"))  # new data, same buffer
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, 0.5 * y)  # (2x + y)/2 - x == y/2

    # Launching the handle outside the graph changes nothing inside it.
    first.launch(t, x, y, 100.0, 0.0, N, torch.cuda.current_stream())
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 0.5 * y)
    # --8<-- [end:torch-graph]

    # --8<-- [start:driver-graph]
    # The same with the driver's stream-capture API (no torch graph machinery).
    err, stream = cuda.cuStreamCreate(0)
    assert err == cuda.CUresult.CUDA_SUCCESS
    (err,) = cuda.cuStreamBeginCapture(stream, cuda.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    assert err == cuda.CUresult.CUDA_SUCCESS
    first.launch(out.data_ptr(), x.data_ptr(), y.data_ptr(), 1.0, 1.0, N, stream)  # out = x + y
    err, g = cuda.cuStreamEndCapture(stream)
    assert err == cuda.CUresult.CUDA_SUCCESS
    err, exe = cuda.cuGraphInstantiate(g, 0)
    assert err == cuda.CUresult.CUDA_SUCCESS
    torch.cuda.synchronize()
    for _ in range(2):
        (err,) = cuda.cuGraphLaunch(exe, stream)
        assert err == cuda.CUresult.CUDA_SUCCESS
    (err,) = cuda.cuStreamSynchronize(stream)
    assert err == cuda.CUresult.CUDA_SUCCESS
    torch.testing.assert_close(out, x + y)
    cuda.cuGraphExecDestroy(exe)
    cuda.cuGraphDestroy(g)
    cuda.cuStreamDestroy(stream)
    # --8<-- [end:driver-graph]
    print("GPU: captured and replayed prepared launches on", torch.cuda.get_device_name())


def run_on_cpu() -> None:
    # --8<-- [start:cpu]
    # Graphs need a GPU. The device function still compiles here ...
    axpby.compile(1 << 20, 1 << 20, 1 << 20, 2.0, 1.0, N, 0)

    # ... and the static-buffer pattern a graph relies on is the same with a
    # host-only twin: fixed addresses, new data written in place, replay.
    rng = np.random.default_rng(0)
    x = rng.random(N, dtype=np.float32)
    y = rng.random(N, dtype=np.float32)
    t = np.empty_like(x)
    out = np.empty_like(x)
    first = axpby_host.bind(t, x, y, 2.0, 1.0, N, 0)
    second = first.clone()
    recorded = [  # what a capture records: the argument values of each launch
        (first, (t.ctypes.data, x.ctypes.data, y.ctypes.data, 2.0, 1.0, N, 0)),
        (second, (out.ctypes.data, t.ctypes.data, x.ctypes.data, 0.5, -1.0, N, 0)),
    ]

    def replay() -> None:
        for handle, args in recorded:
            handle.launch(*args)

    for _ in range(3):
        x[:] = rng.random(N, dtype=np.float32)  # new data, same buffer
        replay()
        np.testing.assert_allclose(out, 0.5 * y, rtol=1e-6, atol=1e-6)
    # --8<-- [end:cpu]
    print(
        "CPU: device kernel compiled for",
        os.environ.get("CUTE_DSL_ARCH", "this GPU"),
        "; static-buffer replay checked",
    )


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
        print("note: no CUDA device; CUDA graphs need one -- running the compile-only and host-only parts")
        run_on_cpu()
    print("ok")


if __name__ == "__main__":
    main()
