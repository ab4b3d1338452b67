"""Tutorial 6: threads and handle lifetime.

Run it:  python tutorials/06_threads_lifetime.py

The contract: a handle may be used by one thread at a time (handing it from
thread to thread between launches is fine); concurrent threads each take their
own handle with `handle.clone()`, which is cheap and shares the compiled
function. Checked mode (`handle.with_checks()`) detects a violation and raises
CB403. A handle keeps its compiled module loaded until it is closed; a closed
handle raises CB404. On a GPU the threads launch a device kernel on their own
torch streams; elsewhere a host-only function.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor


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
THREADS = 4
ROUNDS = 50
N = 1024


@cute.kernel
def fill_kernel(out: cute.Pointer, value: cutlass.Float32, n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        o[i] = value


@cute_bind.kernel
def fill(out: F32Ptr, value: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream):
    """out[:n] = value on `stream` (device kernel)."""
    fill_kernel(out, value, n).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), stream=stream)


# --8<-- [start:host]
@cute_bind.kernel
def fill_host(
    out: cute_bind.Pointer[cutlass.Float32],
    value: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    """out[:n] = value, as a host-only loop."""
    o = cute.make_tensor(out, cute.make_layout(n))
    for i in range(n):
        o[i] = value


@cute_bind.kernel
def spin(out: cute_bind.Pointer[cutlass.Float32], n: cutlass.Int32):
    """Add 1.0 to out[0] n times: a host launch that takes a while."""
    o = cute.make_tensor(out, cute.make_layout(1))
    for _ in range(n):
        o[0] = o[0] + cutlass.Float32(1.0)


# --8<-- [end:host]


def threads_cpu() -> None:
    # --8<-- [start:clone]
    outs = [np.zeros(N, dtype=np.float32) for _ in range(THREADS)]
    base = fill_host.bind(outs[0], 0.0, N, 0)  # compiles once

    def worker(t: int) -> None:
        handle = base.clone()  # own storage, same compiled function
        out = outs[t]
        for r in range(ROUNDS):
            handle.launch(out.ctypes.data, float(t * 1000 + r), N, 0)
            assert out[0] == out[-1] == t * 1000 + r  # no other thread's value

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    for t, out in enumerate(outs):
        assert (out == t * 1000 + ROUNDS - 1).all()
    # --8<-- [end:clone]

    # --8<-- [start:handover]
    # Handing one handle between threads, one launch at a time, is fine.
    shared = base.clone()
    done = threading.Event()

    def use_then_hand_back() -> None:
        shared.launch(outs[0], 7.0, N, 0)
        done.set()

    threading.Thread(target=use_then_hand_back).start()
    done.wait()
    shared.launch(outs[1], 8.0, N, 0)  # back in the main thread
    assert outs[0][0] == 7.0 and outs[1][0] == 8.0
    # --8<-- [end:handover]


def threads_gpu() -> None:
    # --8<-- [start:gpu]
    import torch

    outs = [torch.zeros(N, device="cuda") for _ in range(THREADS)]
    streams = [torch.cuda.Stream() for _ in range(THREADS)]
    base = fill.bind(outs[0], 0.0, N, streams[0])

    def worker(t: int) -> None:
        handle = base.clone()  # one handle per thread ...
        stream = streams[t]  # ... and here one stream per thread
        for r in range(ROUNDS):
            handle.launch(outs[t].data_ptr(), float(t * 1000 + r), N, stream.cuda_stream)
        stream.synchronize()

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    for t, out in enumerate(outs):
        assert torch.all(out == t * 1000 + ROUNDS - 1)
    # --8<-- [end:gpu]


def checked_mode() -> None:
    # --8<-- [start:checked]
    acc = np.zeros(1, dtype=np.float32)
    handle = spin.bind(acc, 0).with_checks()  # checked mode: detects overlapping launches
    started = threading.Event()

    def long_launch() -> None:  # ~0.3 s of host work inside one launch
        started.set()
        handle.launch(acc.ctypes.data, 300_000_000)

    worker = threading.Thread(target=long_launch)
    worker.start()
    started.wait()
    time.sleep(0.02)  # let it get going
    caught = None
    while worker.is_alive() and caught is None:
        try:
            handle.launch(acc.ctypes.data, 0)  # same handle, other thread, same time: a bug
        except cute_bind.LaunchRuntimeError as err:
            caught = err
    worker.join()
    assert caught is not None and caught.code == "CB403", caught
    print("  checked mode:", str(caught).splitlines()[0])
    # The fix: worker threads launch their own handle.clone().
    # --8<-- [end:checked]


def lifetime() -> None:
    # --8<-- [start:lifetime]
    out = np.zeros(N, dtype=np.float32)

    # A handle keeps its compiled module loaded: dropping the kernel's compile
    # cache does not invalidate handles already bound.
    handle = fill_host.bind(out, 1.0, N, 0)
    fill_host.clear_cache()
    gc.collect()
    handle.launch(out, 2.0, N, 0)
    assert (out == 2.0).all()

    # close() (or leaving a `with` block) releases it; later launches raise CB404.
    with fill_host.bind(out, 3.0, N, 0) as scoped:
        scoped.launch(out, 3.0, N, 0)
    assert scoped.closed and (out == 3.0).all()
    try:
        scoped.launch(out, 4.0, N, 0)
    except cute_bind.LaunchRuntimeError as err:
        assert err.code == "CB404"
        print("  after close:", str(err).splitlines()[0])
    assert (out == 3.0).all()  # nothing ran

    # Handles store addresses, not buffers: keep what they point to alive for
    # as long as you launch with those addresses.
    # --8<-- [end:lifetime]


def main() -> None:
    torch_ok = True
    try:
        import torch  # noqa: F401
    except ImportError:
        torch_ok = False
    if GPU and torch_ok:
        threads_gpu()
        print(f"GPU: {THREADS} threads x {ROUNDS} launches, one cloned handle and stream each")
    else:
        if GPU:
            print("note: a GPU is present but torch is not installed; running the host-only variant")
        else:
            print("note: no CUDA device; compiling the device kernel only and running the host-only variant")
            fill.compile(1 << 20, 0.0, N, 0)
        threads_cpu()
        print(f"CPU: {THREADS} threads x {ROUNDS} launches, one cloned handle each")
    # Checked mode and lifetime use host-only functions: they run everywhere.
    checked_mode()
    lifetime()
    print("ok")


if __name__ == "__main__":
    main()
