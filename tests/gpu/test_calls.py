"""GPU suite, calls: kernel(...) on CUDA tensors, the left-out stream, specializations, threads.

Run on a GPU machine with ``python -m pytest -m gpu tests/gpu``; skipped where
no CUDA device exists. Results are compared bitwise with torch's arithmetic.
"""

import sys
import threading

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cute_bind  # noqa: E402
from cute_bind.bench.kernels import scale, scale_left_out, scale_tensors  # noqa: E402
from cute_bind.jit import streams  # noqa: E402

pytestmark = pytest.mark.gpu


def _stream_of_last_call(k):
    """The stream the calling thread's handle launched on last (its stream slot's bytes)."""
    ((_, _, handle, _),) = [v for s, v in k._calls.local.handles.items() if s is k._calls.local.last]
    return int.from_bytes(handle.slot_bytes("stream"), sys.byteorder)


@pytest.mark.parametrize("n", [1, 255, 4096, 100_003])
def test_tensor_call_on_the_current_stream(n):
    k = cute_bind.kernel(scale_tensors)
    side = torch.cuda.Stream()
    x = torch.randn(n, device="cuda")
    y = torch.full_like(x, float("nan"))
    with torch.cuda.stream(side):
        k(y, x, 1.5)
        assert _stream_of_last_call(k) == side.cuda_stream
    side.synchronize()
    assert torch.equal(y, x * 1.5)
    y.fill_(float("nan"))
    k(y, x, 2.5)  # outside: torch's current stream of the device
    assert _stream_of_last_call(k) == torch.cuda.current_stream(x.device).cuda_stream
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2.5)
    assert k.cache_info()["specializations"] == 1


def test_int_address_call_leaves_the_current_device_to_torch():
    """Int addresses name no device: the left-out stream is torch's current stream of its current
    device, read with device -1 where torch takes it (checked once, under a stream made current)."""
    k = cute_bind.kernel(scale_left_out)
    x = torch.randn(4096, device="cuda")
    y = torch.full_like(x, float("nan"))
    k(y.data_ptr(), x.data_ptr(), 1.0, 4096)  # binds; torch's readers are found with CUDA initialised
    torch.cuda.synchronize()
    assert streams._TORCH.resolves_current, "torch's current_work_stream and raw reader take -1 on this torch"
    assert streams._TORCH.getter(None)[2] is None  # the C path passes -1 and asks no current device
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for alpha in (2.0, 3.0):  # the second call is a hit on the C path: torch's table read with -1
            k(y.data_ptr(), x.data_ptr(), alpha, 4096)
            assert _stream_of_last_call(k) == side.cuda_stream
    side.synchronize()
    assert torch.equal(y, x * 3.0)


def test_tensor_call_specializes_on_dtype():
    k = cute_bind.kernel(scale_tensors)
    for dtype in (torch.float32, torch.float64, torch.float32):
        x = torch.randn(999, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        k(y, x, 3.0)
        torch.cuda.synchronize()
        assert torch.equal(y, x * torch.tensor(3.0, dtype=torch.float32).to(dtype))
    info = k.cache_info()
    assert (info["specializations"], info["misses"]) == (2, 2)
    assert "cuda:0" in k.specializations()[0].parameters[0][1]


def test_pointer_call_with_explicit_stream():
    k = cute_bind.kernel(scale)
    side = torch.cuda.Stream()
    x = torch.randn(4096, device="cuda")
    y = torch.full_like(x, float("nan"))
    k(y, x, 2.0, x.numel(), side)
    side.synchronize()
    assert torch.equal(y, x * 2.0)
    k(y.data_ptr(), x.data_ptr(), 4.0, x.numel(), side.cuda_stream)
    side.synchronize()
    assert torch.equal(y, x * 4.0)


def test_threads_call_on_their_own_streams():
    k = cute_bind.kernel(scale_tensors)
    errors = []

    def work(i):
        try:
            s = torch.cuda.Stream()
            x = torch.randn(2048 + i, device="cuda")
            y = torch.empty_like(x)
            with torch.cuda.stream(s):
                for step in range(50):
                    k(y, x, float(step))
                    assert _stream_of_last_call(k) == s.cuda_stream
            s.synchronize()
            assert torch.equal(y, x * 49.0)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert k.cache_info()["specializations"] == 1


class _CudaArray:
    """CuPy's face of a CUDA torch tensor: ``__cuda_array_interface__`` (a class property, as CuPy
    has it) and ``__dlpack_device__``; ``__dlpack__`` counts exports (the fast paths make none)."""

    exports = 0

    def __init__(self, t):
        self.t = t

    @property
    def __cuda_array_interface__(self):
        return self.t.__cuda_array_interface__

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        _CudaArray.exports += 1
        return self.t.__dlpack__(**kwargs)


def _counts():
    try:
        from cute_bind.launch import _claunch
    except ImportError:
        return {"cai": 0}
    return dict(_claunch.counts())


@pytest.mark.parametrize("n", [1, 4096, 100_003])
def test_cuda_array_interface_on_tensor_and_pointer_slots(n):
    """CUDA memory given as a __cuda_array_interface__ exporter: read without a DLPack export on
    both slot kinds, bitwise against torch's arithmetic."""
    from cute_bind.launch import prepared

    side = torch.cuda.Stream()
    x = torch.randn(n, device="cuda")
    y = torch.full_like(x, float("nan"))
    th = cute_bind.kernel(scale_tensors).bind(y, x, 1.0, side.cuda_stream)
    ph = cute_bind.kernel(scale).bind(y, x, 1.0, n, side.cuda_stream)
    _CudaArray.exports = 0
    before = _counts()
    for alpha in (1.5, 2.5):
        y.fill_(float("nan"))
        side.wait_stream(torch.cuda.current_stream())  # the fill (torch's stream) before the launch (side)
        th.launch(_CudaArray(y), _CudaArray(x), alpha, side.cuda_stream)
        side.synchronize()
        assert torch.equal(y, x * alpha)
        y.fill_(float("nan"))
        side.wait_stream(torch.cuda.current_stream())
        ph.launch(_CudaArray(y), _CudaArray(x), alpha, n, side.cuda_stream)
        side.synchronize()
        assert torch.equal(y, x * alpha)
    assert _CudaArray.exports == 0
    if prepared.fast_path() == "c":
        assert _counts()["cai"] - before["cai"] == 8  # two slots, two kernels, two launches: all read in C
    th.close()
    ph.close()


class _DlpackOnly:
    """A CUDA array offering only ``__dlpack__`` (as a JAX array may): no data_ptr, no interface."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kwargs):
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_dlpack_only_arrays_on_a_pointer_slot():
    """CUDA memory given only through ``__dlpack__``: read from its export (the checked path) on a
    pointer slot, bitwise against torch's arithmetic; host memory that way is refused for gmem."""
    side = torch.cuda.Stream()
    x = torch.randn(4096, device="cuda")
    y = torch.full_like(x, float("nan"))
    k = cute_bind.kernel(scale)
    side.wait_stream(torch.cuda.current_stream())
    k(_DlpackOnly(y), _DlpackOnly(x), 2.0, x.numel(), side)
    side.synchronize()
    assert torch.equal(y, x * 2.0)
    h = k.bind(y, x, 1.0, x.numel(), side.cuda_stream)
    y.fill_(float("nan"))
    side.wait_stream(torch.cuda.current_stream())
    h.launch(_DlpackOnly(y), _DlpackOnly(x), 3.0, x.numel(), side.cuda_stream)
    side.synchronize()
    assert torch.equal(y, x * 3.0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(_DlpackOnly(y.cpu()), x, 3.0, x.numel(), side.cuda_stream)
    assert info.value.code == "CB210"
    h.close()
