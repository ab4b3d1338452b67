"""Multi-GPU: one handle per device, bitwise equal to the direct call on that device.

Skipped with fewer than two CUDA devices (run on a two-GPU machine with
``python -m pytest -m gpu tests/gpu/test_multi_gpu.py``). The DSL's executor
runs "under the currently active CUDA context": every direct call and every
launch of device d's handle below runs with d current (``torch.cuda.device(d)``,
or ``torch.cuda.set_device(d)`` in a thread of its own) on a stream of d.

- ``cute_bind.prepare(compiled.to(d), ...)``: an executor per device, made by
  the caller;
- ``kernel.bind(...)`` with tensors on device d: cute_bind picks the compiled
  function's executor for d itself;
- launched from one thread (devices interleaved) and from one thread per
  device at the same time;
- a tensor or a pointer (a tensor's memory) from the other device is CB214,
  and nothing runs.
"""

import threading

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cuda.bindings.driver as cuda  # noqa: E402
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack, make_ptr  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind.bench.kernels import scale  # noqa: E402
from tests.kernels.gpu import tensor2d  # noqa: E402

pytestmark = pytest.mark.gpu

N = 4096
GMEM = cute.AddressSpace.gmem
SEEDS = range(6)


@pytest.fixture(autouse=True)
def _require_two_gpus():
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")


def devices():
    return list(range(torch.cuda.device_count()))


def fresh(seed, device, n=N, shape=None):
    g = torch.Generator(device=f"cuda:{device}").manual_seed(seed * 131 + device)
    return torch.randn(shape or (n,), device=f"cuda:{device}", generator=g)


def poisoned_like(x):
    return torch.full_like(x, float("nan"))


def bitwise_equal(a, b):
    return a.device == b.device and torch.equal(a.view(torch.int32), b.view(torch.int32))


def ptr(t):
    return make_ptr(cutlass.Float32, t.data_ptr(), GMEM, assumed_align=16)


def dyn(t):
    return from_dlpack(t).mark_layout_dynamic()


def run(mode, work):
    """``work(d)`` for every device: interleaved from this thread, or one thread per device (each with its device current)."""
    if mode == "one thread":
        for d in devices():
            with torch.cuda.device(d):
                work(d)
        return
    errors = []

    def target(d):
        try:
            torch.cuda.set_device(d)
            work(d)
        except BaseException as exc:  # reported below, with the device
            errors.append((d, exc))

    threads = [threading.Thread(target=target, args=(d,), name=f"cuda:{d}") for d in devices()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors


MODES = ["one thread", "thread per device"]


# ------------------------------------------------------------------ prepare(compiled.to(d))
@pytest.mark.parametrize("mode", MODES)
def test_prepare_per_device_executor_matches_direct_call(mode):
    x0 = fresh(0, 0)
    compiled = cute.compile(scale, ptr(x0), ptr(x0), cutlass.Float32(1.0), cutlass.Int32(N), cuda.CUstream(0))
    handles, streams, executors = {}, {}, {}
    for d in devices():
        with torch.cuda.device(d):
            executors[d] = compiled.to(d)
            streams[d] = torch.cuda.Stream(device=d)
            x = fresh(0, d)
            handles[d] = cute_bind.prepare(executors[d], poisoned_like(x), x, 1.0, N, streams[d])

    def work(d):
        s = streams[d]
        for seed in SEEDS:
            x = fresh(seed + 1, d)
            alpha, n = 0.75 - seed, N - 5 * seed
            ref = poisoned_like(x)
            executors[d](ptr(ref), ptr(x), cutlass.Float32(alpha), cutlass.Int32(n), cuda.CUstream(s.cuda_stream))
            out = poisoned_like(x)
            assert handles[d].launch(out.data_ptr(), x.data_ptr(), alpha, n, s.cuda_stream) == 0
            s.synchronize()
            assert bitwise_equal(out, ref), (d, seed)
            assert torch.equal(out[:n], x[:n] * torch.tensor(alpha, device=x.device)) and torch.isnan(out[n:]).all()

    run(mode, work)


# ------------------------------------------------------------------ kernel.bind with values on each device
@pytest.mark.parametrize("mode", MODES)
def test_bind_pointer_slots_per_device(mode):
    k = cute_bind.kernel(scale)
    streams = {d: torch.cuda.Stream(device=d) for d in devices()}
    handles = {}
    for d in devices():  # bound from this thread, whatever device is current: cute_bind picks d's executor
        x = fresh(0, d)
        handles[d] = k.bind(poisoned_like(x), x, 1.0, N, streams[d])
    assert len({id(h.compiled) for h in handles.values()}) == len(handles), "one executor per device"

    def work(d):
        s = streams[d]
        for seed in SEEDS:
            x = fresh(seed + 20, d)
            alpha = 1.25 + seed
            ref = poisoned_like(x)
            handles[d].compiled(ptr(ref), ptr(x), cutlass.Float32(alpha), cutlass.Int32(N), cuda.CUstream(s.cuda_stream))
            out = poisoned_like(x)
            handles[d].launch(out, x, alpha, N, s)  # tensors as pointer values, a torch stream
            s.synchronize()
            assert bitwise_equal(out, ref), (d, seed)

    run(mode, work)


@pytest.mark.parametrize("mode", MODES)
def test_bind_tensor_slots_per_device(mode):
    k = cute_bind.kernel(tensor2d)
    streams = {d: torch.cuda.Stream(device=d) for d in devices()}
    handles = {}
    for d in devices():
        z = torch.zeros(4, 8, device=f"cuda:{d}")
        handles[d] = k.bind(z, z, 1.0, 0.5, 0.25, streams[d])

    def work(d):
        s = streams[d]
        for seed, (m, n) in enumerate([(4, 8), (33, 65), (257, 129)]):
            x = fresh(seed + 40, d, shape=(m, n + seed))[:, :n]  # a row stride != n for seed > 0
            alpha, beta, gamma = 1.5 - seed, 0.1 * seed + 1.1, -3.3 / (seed + 1)
            ref = torch.full((m, n), float("nan"), device=x.device)
            handles[d].compiled(
                dyn(ref), dyn(x), cutlass.Float32(alpha), cutlass.Float16(beta), cutlass.BFloat16(gamma), cuda.CUstream(s.cuda_stream)
            )
            out = torch.full((m, n), float("nan"), device=x.device)
            assert handles[d].launch(out, x, alpha, beta, gamma, s) == 0
            s.synchronize()
            assert bitwise_equal(out, ref), (d, m, n)
            assert not torch.isnan(out).any()

    run(mode, work)


# ------------------------------------------------------------------ the other device's memory
def test_other_devices_tensor_or_pointer_is_cb214():
    other = {0: 1, 1: 0}
    scale_k, tensor_k = cute_bind.kernel(scale), cute_bind.kernel(tensor2d)
    for d in (0, 1):
        with torch.cuda.device(d):
            x = fresh(0, d)
            out = poisoned_like(x)
            z = torch.zeros(4, 8, device=f"cuda:{d}")
            compiled = cute.compile(scale, ptr(x), ptr(x), cutlass.Float32(1.0), cutlass.Int32(N), cuda.CUstream(0))
            handles = {
                "kernel.bind, pointer slots": (scale_k.bind(out, x, 1.0, N, 0), "inp"),
                "prepare(compiled.to(d)), pointer slots": (cute_bind.prepare(compiled.to(d), out, x, 1.0, N, 0), "inp"),
                "kernel.bind, tensor slots": (tensor_k.bind(z, z, 1.0, 0.5, 0.25, 0), "inp"),
            }
            foreign = fresh(1, other[d])
            foreign2d = torch.zeros(4, 8, device=f"cuda:{other[d]}")
            for name, (h, param) in handles.items():
                for checked in (False, True):
                    hh = h.with_checks(checked)
                    args = (out, foreign, 2.0, N, 0) if "pointer" in name else (z, foreign2d, 1.0, 0.5, 0.25, 0)
                    with pytest.raises(cute_bind.LaunchValueError) as info:
                        hh.launch(*args)
                    assert (info.value.code, info.value.parameter) == ("CB214", param), (name, checked)
                    assert f"cuda:{other[d]}" in str(info.value) and f"cuda:{d}" in str(info.value)
            torch.cuda.synchronize()
            assert torch.isnan(out).all(), "a refused launch ran"
    with pytest.raises(cute_bind.LaunchValueError) as info:  # one handle launches on one device
        scale_k.bind(poisoned_like(fresh(0, 0)), fresh(0, 1), 1.0, N, 0)
    assert (info.value.code, info.value.parameter) == ("CB214", "inp")
