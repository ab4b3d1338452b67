"""Tutorial 7: measuring launch overhead.

Run it:  python tutorials/07_launch_overhead.py

Host-side cost of one launch, measured five ways on the same compiled
function: the DSL's compiled call, cute_bind's normal call, and a prepared
launch given the arrays themselves (each address read and its dtype, device and
alignment checked, in C), in checked mode, and given plain ints (nothing to
read or check). Arrays and ints both take the fast path. On a GPU the function launches a real (tiny) device kernel,
so the numbers include the driver's launch call; on a CPU machine it is a
host-only function with no work, so they are pure argument overhead. The
benchmark report (docs/benchmarks.md) has the full measurements.
"""

from __future__ import annotations

import os
import statistics
import timeit


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
from cutlass.cute.runtime import make_ptr

import cute_bind

F32Ptr = cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]


@cute.kernel
def scale_kernel(out: cute.Pointer, inp: cute.Pointer, alpha: cutlass.Float32, n: cutlass.Int32):
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
    scale_kernel(out, inp, alpha, n).launch(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), stream=stream)


@cute_bind.kernel
def scale_host(
    out: cute_bind.Pointer[cutlass.Float32, 16],
    inp: cute_bind.Pointer[cutlass.Float32, 16],
    alpha: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    o = cute.make_tensor(out, cute.make_layout(n))
    x = cute.make_tensor(inp, cute.make_layout(n))
    for i in range(n):
        o[i] = x[i] * alpha


# --8<-- [start:timer]
def per_call_us(fn, number: int, repeat: int = 5, sync=None) -> tuple[float, float]:
    """(best, median) microseconds per call of fn() over `repeat` runs of `number` calls."""
    fn()  # warm up: first-call work (loading, caches) is not launch overhead
    runs = []
    for _ in range(repeat):
        t = timeit.timeit(fn, number=number)
        if sync is not None:
            sync()  # keep the GPU queue from growing without bound
        runs.append(t / number * 1e6)
    return min(runs), statistics.median(runs)


# --8<-- [end:timer]


def measure(kernel, out, inp, n, stream, stream_int, sync, number) -> dict[str, tuple[float, float]]:
    # --8<-- [start:measure]
    out_addr, inp_addr = address(out), address(inp)
    space = cute.AddressSpace.gmem if GPU else cute.AddressSpace.generic
    p_out = make_ptr(cutlass.Float32, out_addr, space, assumed_align=16)
    p_inp = make_ptr(cutlass.Float32, inp_addr, space, assumed_align=16)

    # What you would do without cute_bind: compile once, call every step.
    # (kernel.compile returns exactly what cute.compile returns.)
    compiled = kernel.compile(out, inp, 2.0, n, stream)
    handle = kernel.bind(out, inp, 2.0, n, stream)
    checked = handle.with_checks()

    results = {
        "compiled(ptrs, ...)  [DSL call]": per_call_us(
            lambda: compiled(p_out, p_inp, 2.0, n, cuda.CUstream(stream_int)),
            number // 10,
            sync=sync,
        ),
        "kernel(arrays, ...)  [cute_bind call]": per_call_us(lambda: kernel(out, inp, 2.0, n, stream), number // 10, sync=sync),
        "handle.launch(arrays, ...)  [arrays]": per_call_us(lambda: handle.launch(out, inp, 2.0, n, stream), number, sync=sync),
        "checked.launch(ints, ...)  [checked mode]": per_call_us(
            lambda: checked.launch(out_addr, inp_addr, 2.0, n, stream_int),
            number,
            sync=sync,
        ),
        "handle.launch(ints, ...)  [ints]": per_call_us(lambda: handle.launch(out_addr, inp_addr, 2.0, n, stream_int), number, sync=sync),
    }
    # --8<-- [end:measure]
    return results


def address(buf) -> int:
    return buf.data_ptr() if hasattr(buf, "data_ptr") else buf.ctypes.data


def report(results: dict[str, tuple[float, float]]) -> None:
    # --8<-- [start:report]
    ints = results["handle.launch(ints, ...)  [ints]"][1]
    print(f"{'per launch, host side':44} {'best us':>9} {'median us':>10} {'vs ints':>8}")
    for name, (best, median) in results.items():
        print(f"{name:44} {best:9.2f} {median:10.2f} {median / ints:7.1f}x")
    # A prepared launch must beat the DSL's own call (by a wide margin in practice).
    assert ints < results["compiled(ptrs, ...)  [DSL call]"][1]
    assert results["handle.launch(arrays, ...)  [arrays]"][1] < results["compiled(ptrs, ...)  [DSL call]"][1]
    # --8<-- [end:report]


def run_on_gpu() -> None:
    # --8<-- [start:gpu]
    import torch

    n = 1024
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    stream = torch.cuda.current_stream()
    results = measure(scale, y, x, n, stream, stream.cuda_stream, torch.cuda.synchronize, number=5_000)
    torch.cuda.synchronize()
    assert torch.equal(y, 2.0 * x)  # every variant computed the same thing
    # --8<-- [end:gpu]
    print("GPU:", torch.cuda.get_device_name(), "-- tiny device kernel, host time per launch")
    report(results)


def run_on_cpu() -> None:
    # --8<-- [start:cpu]
    n = 0  # no work: what remains is the cost of getting the arguments in
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    results = measure(scale_host, y, x, n, 0, 0, None, number=5_000)
    y[:] = 0
    scale_host.bind(y, x, 2.0, 16, 0).launch(y.ctypes.data, x.ctypes.data, 2.0, 16, 0)
    assert np.array_equal(y, 2.0 * x)
    # --8<-- [end:cpu]
    print("CPU: host-only function with no work -- argument overhead per launch")
    report(results)


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
        print("note: no CUDA device; compiling the device kernel only and timing the host-only variant")
        scale.compile(1 << 20, 1 << 20, 2.0, 1024, 0)
        run_on_cpu()
    print("ok")


if __name__ == "__main__":
    main()
