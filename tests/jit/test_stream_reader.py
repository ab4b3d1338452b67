"""A left-out stream read through torch's DLPack ``current_work_stream`` (issue 44 item 7).

Where torch's exchange table gives ``current_work_stream``, the getter of a left-out stream is a
:class:`cute_bind.jit.streams.StreamReader`: the C call path calls that C function itself (no Python
call), a Python caller calls the reader, which asks torch's ``_cuda_getCurrentRawStream``. No CUDA
here: a ctypes function stands in for torch's table entry and records what it was asked; a Python
``raw`` stands in for torch's Python-visible reader. Each kernel form is called three times, on the C
call path and on the Python one.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import numpy as np
import pytest

import cute_bind
from cute_bind.jit import dispatch as dispatch_mod
from cute_bind.jit import streams as streams_mod
from tests.kernels.host import add_constexpr_stream, scale_stream_default, sum25_stream_default, tscale_stream_default
from tests.optional import torch_or_skip

WORK_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


class FakeTorch:
    """torch's two readers: ``current_work_stream`` (a C function pointer) and the Python ``raw``."""

    def __init__(self, stream: int, current_device: int = 3, fail: bool = False) -> None:
        self.stream, self.current_device, self.fail = stream, current_device, fail
        self.table_calls: list[tuple[int, int]] = []
        self.raw_calls: list[int] = []
        self.function = WORK_STREAM(self._work_stream)  # kept alive by this object

    def _work_stream(self, device_type: int, device: int, out: Any) -> int:
        self.table_calls.append((device_type, device))
        if self.fail:
            return -1
        out[0] = self.stream
        return 0

    def raw(self, device: int) -> int:
        self.raw_calls.append(device)
        if self.fail:
            raise RuntimeError("invalid device ordinal")
        return self.stream

    def device(self) -> int:
        return self.current_device

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        torch_streams = dispatch_mod._TORCH
        monkeypatch.setattr(torch_streams, "raw", self.raw)
        monkeypatch.setattr(torch_streams, "device", self.device)
        monkeypatch.setattr(torch_streams, "work_stream", ctypes.cast(self.function, ctypes.c_void_p).value)
        monkeypatch.setattr(torch_streams, "capsule", self.function)


class PyCallKernel(cute_bind.Kernel):  # type: ignore[type-arg]
    __call__ = cute_bind.Kernel._python_call  # type: ignore[attr-defined]


@pytest.fixture(params=["c", "python"])
def make(request: pytest.FixtureRequest) -> Any:
    """A kernel factory on the C call path or on the Python one (as tests/jit/test_dispatch.py's)."""
    if request.param == "c":
        if dispatch_mod.call_path() != "c":
            pytest.skip("the C call path is not built")
        return cute_bind.kernel
    return PyCallKernel if dispatch_mod.call_path() == "c" else cute_bind.Kernel


def _stream_of(k: Any) -> int:
    ((_, _, handle, _),) = k._calls.local.handles.values()
    return int.from_bytes(handle.slot_bytes("stream"), sys.byteorder)


def _c_path(k: Any) -> bool:
    return dispatch_mod.call_path() == "c" and type(k).__call__ is cute_bind.Kernel.__call__


def test_the_getter_is_a_reader_where_torch_gives_its_table(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTorch(0xABC0)
    fake.install(monkeypatch)
    reader = dispatch_mod._TORCH.getter(None)
    assert isinstance(reader, streams_mod.StreamReader) and reader[1] == -1
    assert reader() == 0xABC0 and fake.raw_calls == [3]  # called from Python: torch's raw reader, current device
    on_five = dispatch_mod._TORCH.getter(5)
    assert on_five() == 0xABC0 and fake.raw_calls == [3, 5] and fake.table_calls == []
    monkeypatch.setattr(dispatch_mod._TORCH, "work_stream", 0)
    assert not isinstance(dispatch_mod._TORCH.getter(None), streams_mod.StreamReader)  # no table: a Python getter


@pytest.mark.parametrize("form", ["pointers", "constexpr"])
def test_a_left_out_stream_is_read_from_the_table_on_the_c_path(make: Any, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    fake = FakeTorch(0x5150)
    fake.install(monkeypatch)
    if form == "pointers":
        k = make(scale_stream_default)
        x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
        for _ in range(3):
            k(y, x, 2.0, 64)
        assert np.array_equal(y, x * np.float32(2.0))
    else:
        k = make(add_constexpr_stream)
        buf = (ctypes.c_int32 * 1)()
        for _ in range(3):
            k(ctypes.addressof(buf), 1, 2)
        assert buf[0] == 3
    assert _stream_of(k) == 0x5150  # the handle launched on torch's current stream
    if _c_path(k):
        # the first call binds on the dispatch path (torch's raw reader); every hit reads the table from C
        assert fake.table_calls == [(2, 3), (2, 3)] and fake.raw_calls == [3]
    else:
        assert fake.table_calls == [] and fake.raw_calls == [3, 3, 3]


def test_a_tensor_kernels_left_out_stream_asks_the_table_for_torchs_current_device(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = torch_or_skip()
    fake = FakeTorch(0x7770, current_device=1)
    fake.install(monkeypatch)
    k = make(tscale_stream_default)
    x, y = torch.randn(16), torch.empty(16)
    for _ in range(2):
        k(y, x, 2.0)
    assert torch.equal(y, x * 2)
    assert _stream_of(k) == 0x7770
    assert (fake.table_calls == [(2, 1)]) if _c_path(k) else (fake.raw_calls == [1, 1])  # host tensors: the current device


def test_a_failing_table_goes_to_the_dispatch_path_which_raises_cb221(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTorch(0x5150)
    fake.install(monkeypatch)
    k = make(scale_stream_default)
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    k(y, x, 2.0, 64)  # bound while torch answers
    fake.fail = True
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        k(y, x, 3.0, 64)
    assert info.value.code == "CB221" and "invalid device ordinal" in str(info.value)
    if _c_path(k):
        assert fake.table_calls == [(2, 3)]  # the C path asked the table, which failed; the dispatch path raised


def test_a_kernel_of_many_parameters_reads_a_left_out_stream_too(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """26 arguments: the C path's left-out stream call keeps up to 24 on the C stack, more on the heap."""
    fake = FakeTorch(0x6160)
    fake.install(monkeypatch)
    k = make(sum25_stream_default)
    buf = (ctypes.c_int32 * 1)()
    for step in range(3):
        k(ctypes.addressof(buf), *range(step, step + 25))
        assert buf[0] == sum(range(step, step + 25))
    assert _stream_of(k) == 0x6160
    if _c_path(k):
        assert fake.table_calls == [(2, 3), (2, 3)]


@pytest.mark.parametrize("resolves", [True, False])
def test_a_device_less_call_leaves_the_current_device_to_torch_where_it_takes_minus_one(
    make: Any, monkeypatch: pytest.MonkeyPatch, resolves: bool
) -> None:
    """Where torch's readers were seen to take -1 for its current device, a call without a device asks
    no current device first (one Python call less per left-out stream); otherwise it asks, as before."""
    fake = FakeTorch(0x4240, current_device=2)
    fake.install(monkeypatch)
    monkeypatch.setattr(dispatch_mod._TORCH, "resolves_current", resolves)
    asked: list[int] = []

    def device() -> int:
        asked.append(1)
        return fake.current_device

    monkeypatch.setattr(dispatch_mod._TORCH, "device", device)
    reader = dispatch_mod._TORCH.getter(None)
    assert isinstance(reader, streams_mod.StreamReader) and (reader[2] is None) == resolves
    assert reader() == 0x4240 and fake.raw_calls == [-1 if resolves else 2]
    k = make(add_constexpr_stream)
    buf = (ctypes.c_int32 * 1)()
    for _ in range(3):
        k(ctypes.addressof(buf), 1, 2)
    assert buf[0] == 3 and _stream_of(k) == 0x4240
    if _c_path(k):
        assert fake.table_calls == [(2, -1 if resolves else 2)] * 2
        assert len(asked) == (1 if resolves else 4)  # the reader's own call above, then the bind (dispatch path)
    assert dispatch_mod._TORCH.getter(7)[2] is not None  # a call on a known device never passes -1


class _Side:
    def __init__(self, handle: int) -> None:
        self.cuda_stream = handle


class _FakeCuda:
    def __init__(self, current: int) -> None:
        self.current = current
        self.made: list[tuple[int, int]] = []

    def Stream(self) -> _Side:  # noqa: N802 - torch's name
        raise AssertionError("no stream is created (the first use of torch's pool is a CUDA call)")

    def ExternalStream(self, handle: int, device: int) -> _Side:  # noqa: N802 - torch's name
        self.made.append((handle, device))
        return _Side(handle)

    def stream(self, side: _Side) -> Any:
        import contextlib

        cuda = self

        @contextlib.contextmanager
        def made_current() -> Any:
            before, cuda.current = cuda.current, side.cuda_stream
            try:
                yield
            finally:
                cuda.current = before

        return made_current()


@pytest.mark.parametrize(
    "case, current, table_answer, raw_answer, expected",
    [
        ("both readers name the stream made current", 0, "current", "current", True),
        ("the per-thread stream is current: the legacy one is made current", 2, "current", "current", True),
        ("the table refuses -1", 0, "fail", "current", False),
        ("the table reads -1 as another device", 0, 0x1234, "current", False),
        ("the table answers the default stream whatever is current", 0, 0, "current", False),
        ("the Python reader refuses -1", 0, "current", "raise", False),
    ],
)
def test_torch_taking_minus_one_is_checked_under_a_stream_made_current(
    case: str, current: int, table_answer: Any, raw_answer: Any, expected: bool
) -> None:
    """Checked under one of CUDA's special streams wrapped by torch (no stream created: the first use
    of torch's stream pool is a CUDA call, which would break a graph capture in progress)."""
    cuda = _FakeCuda(current=current)
    torch = type("torch", (), {"cuda": cuda})

    def work_stream(device_type: int, device: int, out: Any) -> int:
        if table_answer == "fail" or device != -1:
            return -1
        out[0] = cuda.current if table_answer == "current" else table_answer
        return 0

    def raw(device: int) -> int:
        if device == 3:
            return cuda.current  # the current device, asked by number
        if raw_answer == "raise" or device != -1:
            raise RuntimeError("invalid device ordinal")
        return cuda.current

    function = WORK_STREAM(work_stream)
    address = ctypes.cast(function, ctypes.c_void_p).value
    assert streams_mod._resolves_current(torch, address, raw, 3) is expected, case  # type: ignore[arg-type]
    assert cuda.current == current  # the stream made current for the check is undone
    assert cuda.made == [(1 if current == 2 else 2, 3)]
