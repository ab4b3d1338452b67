"""Tutorial 9: annotate and call -- `kernel(*args)` specializes, caches and launches.

Run it:  python tutorials/09_calling.py

Calling a `@cute_bind.kernel` is the everyday path: the call reads the key of
its values (dtypes, ranks, layouts, devices, Constexpr values), compiles a
specialization the first time it sees a key, and launches through a prepared
handle per specialization and thread, as cheaply as `handle.launch`. A stream
parameter declared `stream: cuda.CUstream = None` may be left out: the call
then launches on torch's current stream.

The host part runs on any machine (host-only functions on torch CPU tensors,
or NumPy arrays without torch). On a machine with a CUDA GPU and PyTorch the
script also calls a real device kernel on the current stream and checks every
result against torch. Without a GPU it compiles that device kernel for sm_90a.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings


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


def tensor(a: np.ndarray):
    """A torch CPU tensor sharing `a`'s memory, or `a` itself without torch (both are DLPack tensors)."""
    return torch.from_numpy(a) if torch is not None else a


# --8<-- [start:define]
@cute_bind.kernel  # innermost: the DSL reads `@...kernel` as its own decorator
def scale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """out[i] = inp[i] * alpha over a rank-1 tensor (a host-only loop: runs on the CPU)."""
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha


# --8<-- [end:define]


def run_calls() -> None:
    # --8<-- [start:call]
    for n in (8, 100, 3):  # new tensors, other extents: one specialization serves them all
        x = np.arange(n, dtype=np.float32)
        y = np.zeros_like(x)
        scale(tensor(y), tensor(x), 2.0)  # the stream left out: the current stream
        assert np.array_equal(y, 2.0 * x)
    info = scale.cache_info()
    print(info)
    assert (info["misses"], info["hits"], info["specializations"]) == (1, 2, 1)
    # --8<-- [end:call]

    # --8<-- [start:specialize]
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("cute_bind.jit.dispatch").setLevel(logging.INFO)  # log each new specialization

    x64 = np.arange(5, dtype=np.float64)
    y64 = np.zeros_like(x64)
    scale(tensor(y64), tensor(x64), 2.0)  # Float64 tensors: a new key, compiled once
    assert np.array_equal(y64, 2.0 * x64)
    new = scale.specializations()[-1]
    print(f"#{new.index}: {new.reason}")
    assert "Float32" in new.reason and "Float64" in new.reason
    assert scale.cache_info()["specializations"] == 2

    scale(tensor(np.zeros(4, np.float32)), tensor(np.ones(4, np.float32)), 1.0)  # Float32 again: found, not compiled
    assert scale.cache_info()["specializations"] == 2
    # --8<-- [end:specialize]


# --8<-- [start:limit]
@cute_bind.kernel(max_specializations=2)
@cute.jit
def shift(out: cute.Tensor, inp: cute.Tensor, offset: cutlass.Constexpr[int]):
    """out[i] = inp[i] + offset, the offset compiled in."""
    for i in range(cute.size(out)):
        out[i] = inp[i] + offset


# --8<-- [end:limit]


def run_limit() -> None:
    # --8<-- [start:limit-run]
    x = np.arange(4, dtype=np.float32)
    y = np.zeros_like(x)
    shift(tensor(y), tensor(x), 1)
    shift(tensor(y), tensor(x), 2)
    try:
        shift(tensor(y), tensor(x), 3)  # a third Constexpr value: past the limit of 2
    except cute_bind.SpecializationError as err:
        print(err)
        assert err.code == "CB601" and "offset" in str(err)
    else:
        raise AssertionError("the third specialization must be refused")
    assert np.array_equal(y, x + 2)  # the refused call launched nothing

    lenient = cute_bind.kernel(max_specializations=1, on_limit="warn")(shift.fn)
    lenient(tensor(y), tensor(x), 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lenient(tensor(y), tensor(x), 5)  # compiled anyway, with a CB602 warning
    assert np.array_equal(y, x + 5) and caught[0].message.code == "CB602"
    # --8<-- [end:limit-run]


def run_threads() -> None:
    # --8<-- [start:threads]
    @cute_bind.kernel
    def triple(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None):
        for i in range(cute.size(out)):
            out[i] = inp[i] * alpha * 3.0

    results = {}

    def work(i: int) -> None:  # each thread launches through its own handle
        x = np.full(16, i, np.float32)
        y = np.zeros_like(x)
        for _ in range(10):
            triple(tensor(y), tensor(x), 1.0)
        results[i] = bool(np.array_equal(y, 3.0 * x))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results.values()) and len(results) == 4
    assert triple.cache_info()["specializations"] == 1  # four threads saw it first: one compile
    # --8<-- [end:threads]


# --8<-- [start:gpu-define]
@cute.kernel
def scale_kernel(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 256 + tidx
    if i < cute.size(out):
        out[i] = inp[i] * alpha


@cute_bind.kernel
def scale_gpu(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    n = cute.size(out)
    scale_kernel(out, inp, alpha).launch(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), stream=stream)


# --8<-- [end:gpu-define]


def run_gpu() -> None:
    # --8<-- [start:gpu]
    side = torch.cuda.Stream()
    for n in (1000, 4096, 77):
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        with torch.cuda.stream(side):  # torch's current stream: the call launches on `side`
            scale_gpu(y, x, 0.5)
        side.synchronize()
        assert torch.equal(y, x * 0.5)
    scale_gpu(y, x, 2.0)  # outside the block: torch's current stream of x's device
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2.0) and scale_gpu.cache_info()["specializations"] == 1
    # --8<-- [end:gpu]
    print("GPU: scale_gpu called on", torch.cuda.get_device_name())


def compile_gpu_kernel() -> None:
    """Without a GPU: compile the device kernel for sm_90a (nothing is launched)."""
    x = np.zeros(64, np.float32)
    compiled = scale_gpu.compile(tensor(x), tensor(x), 1.0)
    assert compiled is not None
    print("no GPU: scale_gpu compiled for", os.environ.get("CUTE_DSL_ARCH"))


if __name__ == "__main__":
    if torch is None:
        print("note: torch is not installed; the host part uses NumPy arrays and the default stream")
    run_calls()
    run_limit()
    run_threads()
    if GPU and torch is not None:
        run_gpu()
    else:
        if GPU:
            print("note: a GPU is present but torch is not installed; compiling the device kernel only")
        compile_gpu_kernel()
    print("tutorial 9: ok")
