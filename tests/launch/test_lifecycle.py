"""One lifecycle for the three objects that launch compiled code (issue 25, item 2).

``PreparedLaunch``, ``PreparedTvmFfiLaunch`` and ``Graph`` share
:class:`cute_bind.launch.lifecycle.Lifecycle`: one state, an idempotent
``close()`` that releases once (also from many threads), one refusal per
state raised the same way, and one place that tells the launch paths: the C
launchers' ``poison(refuse)`` and the Python paths' gate. A generated launch
function is never rewritten (its closure is the same before and after a
close), yet a saved ``launch`` reference is refused.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any, Callable

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest

import cute_bind
from cute_bind import dsl
from cute_bind.launch.lifecycle import HandleState, Lifecycle
from tests.kernels import graph_host as K
from tests.kernels.host import scale

SCALE = cute_bind.kernel(scale)
COUNTER = ctypes.c_int64(0)


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    return np.ones(64, np.float32), np.zeros(64, np.float32)


def _handle() -> tuple[Any, Callable[[], Any]]:
    x, y = _arrays()
    h = SCALE.bind(y, x, 1.0, 64, 0)
    return h, lambda: h.launch(y.ctypes.data, x.ctypes.data, 2.0, 64, 0)


@cute.jit
def bump_by(counter: cutlass.Constexpr[int], by: cutlass.Int64):  # type: ignore[no-untyped-def]
    """counter[0] += by (a host counter: the launch is visible on the CPU)."""
    c = cute.make_tensor(cute.make_ptr(cutlass.Int64, counter, cute.AddressSpace.generic, assumed_align=8), cute.make_layout(1))
    c[0] = c[0] + by


@functools.cache
def _tvm_compiled() -> Any:
    return cute.compile(bump_by, ctypes.addressof(COUNTER), cutlass.Int64(1), options="--enable-tvm-ffi")


def _tvm_handle() -> tuple[Any, Callable[[], Any]]:
    pytest.importorskip("tvm_ffi")
    h = cute_bind.prepare(_tvm_compiled(), 1)
    return h, lambda: h.launch(1)


def _graph() -> tuple[Any, Callable[[], Any]]:
    out, inp = _arrays()
    h = cute_bind.kernel(K.scale).bind(out.ctypes.data, inp.ctypes.data, 2.0, 64, 0, K.BOX)
    with cute_bind.graph(0, driver=K.FAKE) as g:
        g.launch(h, out.ctypes.data, inp.ctypes.data, 2.0, 64, 0)
    g._keep = (out, inp, h)  # type: ignore[attr-defined]
    return g, lambda: g.replay()


# (what, how it is made, the code a use after close raises)
OBJECTS = [("PreparedLaunch", _handle, "CB404"), ("PreparedTvmFfiLaunch", _tvm_handle, "CB404"), ("Graph", _graph, "CB806")]


@pytest.fixture(autouse=True)
def _clean_fake() -> Any:
    yield
    K.FAKE.synchronize()


@pytest.mark.parametrize("what, make, code", OBJECTS, ids=[o[0] for o in OBJECTS])
def test_one_lifecycle_close_is_idempotent_and_refuses_the_same_way(path: str, what: str, make: Any, code: str, monkeypatch: Any) -> None:
    obj, use = make()
    assert isinstance(obj, Lifecycle) and type(obj).__name__ == what
    releases: list[HandleState] = []
    release = type(obj)._release
    monkeypatch.setattr(type(obj), "_release", lambda self, state: (releases.append(state), release(self, state))[1])
    use()
    assert obj.state is HandleState.OPEN and not obj.closed
    obj.close()
    obj.close()
    assert obj.state is HandleState.CLOSED and obj.closed and releases == [HandleState.CLOSED]
    for _ in range(2):  # every later use, each a new error
        with pytest.raises(cute_bind.CuteBindError) as info:
            use()
        assert info.value.code == code and "closed" in str(info.value)


@pytest.mark.parametrize("what, make, code", OBJECTS[:2], ids=[o[0] for o in OBJECTS[:2]])
def test_leaving_a_with_block_closes_a_handle(path: str, what: str, make: Any, code: str) -> None:
    obj, use = make()
    with obj as entered:
        assert entered is obj
        use()
    assert obj.closed
    with pytest.raises(cute_bind.CuteBindError) as info:
        use()
    assert info.value.code == code


@pytest.mark.parametrize("what, make, code", OBJECTS, ids=[o[0] for o in OBJECTS])
def test_close_from_many_threads_releases_once(what: str, make: Any, code: str, monkeypatch: Any) -> None:
    obj, _use = make()
    releases: list[HandleState] = []
    release = type(obj)._release
    barrier = threading.Barrier(8)

    def slow_release(self: Any, state: HandleState) -> None:
        releases.append(state)
        release(self, state)

    monkeypatch.setattr(type(obj), "_release", slow_release)

    def close() -> None:
        barrier.wait()
        obj.close()

    threads = [threading.Thread(target=close) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert releases == [HandleState.CLOSED]


def test_a_close_rewrites_no_closure_and_still_refuses_a_saved_launch(monkeypatch: Any) -> None:
    """The pure-Python path reads the gate right before the call: the generated function is left as it is."""
    monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    x, y = _arrays()
    h = SCALE.bind(y, x, 1.0, 64, 0)
    launch = h.launch
    before = [c.cell_contents for c in launch.__closure__ or ()]
    launch(y.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    h.close()
    assert [c.cell_contents for c in launch.__closure__ or ()] == before  # the same objects: nothing rewritten
    y[:] = 0
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        launch(y.ctypes.data, x.ctypes.data, 3.0, 64, 0)
    assert info.value.code == "CB404" and not y.any()


def test_an_unload_is_the_other_way_out_of_open(path: str) -> None:
    h, use = _handle()
    use()
    dsl.unload(h.compiled)
    assert h.state is HandleState.UNLOADED and not h.closed
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        use()
    assert info.value.code == "CB402"
    h.close()  # already out of OPEN: a no-op, the state stays
    assert h.state is HandleState.UNLOADED


@pytest.mark.parametrize("module", ["_claunch", "_ctvmffi"])
def test_both_c_launchers_are_told_the_same_way(module: str) -> None:
    c = pytest.importorskip(f"cute_bind.launch.{module}")
    assert callable(getattr(c.Launcher, "poison", None)) and not hasattr(c.Launcher, "close")
