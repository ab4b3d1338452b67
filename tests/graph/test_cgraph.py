"""The C replay loop (cute_bind/graph/_cgraph.c) on its own: calls, order, failures and hostile arguments.

ctypes callbacks stand in for the driver's cuGraphExecKernelNodeSetParams and
cuGraphLaunch, recording what the loop passes them.
"""

from __future__ import annotations

import ctypes

import pytest

cgraph = pytest.importorskip("cute_bind.graph._cgraph")

SET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class Driver:
    """Two fake entry points; ``fail`` maps a call ("set" or "launch") to the CUresult it answers."""

    def __init__(self, fail=None, fail_at=0):
        self.calls = []
        self.fail = fail or {}
        self.fail_at = fail_at
        self._set = SET(self._on_set)
        self._launch = LAUNCH(self._on_launch)
        self.set_addr = ctypes.cast(self._set, ctypes.c_void_p).value
        self.launch_addr = ctypes.cast(self._launch, ctypes.c_void_p).value

    def _on_set(self, graph_exec, node, params):
        self.calls.append(("set", graph_exec, node, params))
        sets = sum(1 for c in self.calls if c[0] == "set")
        return self.fail.get("set", 0) if sets > self.fail_at else 0

    def _on_launch(self, graph_exec, stream):
        self.calls.append(("launch", graph_exec, stream))
        return self.fail.get("launch", 0)

    def replay(self, graph_exec, dirty, stream):
        return cgraph.replay(self.set_addr, self.launch_addr, graph_exec, dirty, stream)


def test_every_dirty_node_is_rewritten_in_order_then_the_graph_launched():
    drv = Driver()
    dirty = {3: (0x1000, 0x2000), 1: (0x1100, 0x2100), 7: (2**64 - 1, 0x2200)}
    assert drv.replay(0xABC, dirty, 0xDEF) is None
    assert drv.calls == [
        ("set", 0xABC, 0x1000, 0x2000),
        ("set", 0xABC, 0x1100, 0x2100),
        ("set", 0xABC, 2**64 - 1, 0x2200),
        ("launch", 0xABC, 0xDEF),
    ]
    assert dirty == {}


def test_nothing_dirty_is_one_launch_and_stream_zero_is_the_null_stream():
    drv = Driver()
    assert drv.replay(0xABC, {}, 0) is None
    assert drv.calls == [("launch", 0xABC, None)]  # ctypes gives a null void* as None


@pytest.mark.parametrize(
    "fail, fail_at, expected, calls",
    [
        ({"set": 700}, 0, ("cuGraphExecKernelNodeSetParams", 700), ["set"]),
        ({"set": 400}, 1, ("cuGraphExecKernelNodeSetParams", 400), ["set", "set"]),
        ({"launch": 719}, 0, ("cuGraphLaunch", 719), ["set", "set", "launch"]),
    ],
)
def test_the_first_failing_call_stops_the_loop_and_leaves_dirty_for_a_retry(fail, fail_at, expected, calls):
    drv = Driver(fail, fail_at)
    dirty = {0: (0x10, 0x20), 1: (0x30, 0x40)}
    assert drv.replay(0x1, dirty, 0x2) == expected
    assert [c[0] for c in drv.calls] == calls
    assert dirty == {0: (0x10, 0x20), 1: (0x30, 0x40)}


@pytest.mark.parametrize(
    "args, error",
    [
        # function addresses, graph and stream handles
        (lambda d: (0, d.launch_addr, 1, {}, 0), ValueError),
        (lambda d: (d.set_addr, 0, 1, {}, 0), ValueError),
        (lambda d: (d.set_addr, d.launch_addr, 0, {}, 0), ValueError),
        (lambda d: (d.set_addr, d.launch_addr, -1, {}, 0), ValueError),
        (lambda d: (d.set_addr, d.launch_addr, 2**64, {}, 0), ValueError),
        (lambda d: (d.set_addr, d.launch_addr, 1.0, {}, 0), TypeError),
        (lambda d: (str(d.set_addr), d.launch_addr, 1, {}, 0), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {}, None), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {}, -5), ValueError),
        # the dirty mapping and its pairs
        (lambda d: (d.set_addr, d.launch_addr, 1, [(1, 2)], 0), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: [1, 2]}, 0), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: (1, 2, 3)}, 0), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: (1,)}, 0), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: None}, 0), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: (0, 2)}, 0), ValueError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: (1, 0)}, 0), ValueError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: (1, -2)}, 0), ValueError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: ("1", 2)}, 0), TypeError),
        (lambda d: (d.set_addr, d.launch_addr, 1, {0: (1, 2), 1: (1, 2**70)}, 0), ValueError),
    ],
)
def test_bad_arguments_are_refused_before_any_driver_call(args, error):
    drv = Driver()
    with pytest.raises(error):
        cgraph.replay(*args(drv))
    assert drv.calls == []


@pytest.mark.parametrize("argc", [0, 4, 6])
def test_wrong_argument_count_is_a_type_error(argc):
    drv = Driver()
    with pytest.raises(TypeError):
        cgraph.replay(*([drv.set_addr, drv.launch_addr, 1, {}, 0, 0][:argc]))


def test_a_callback_that_mutates_dirty_does_not_disturb_the_loop():
    """The loop works on a snapshot: a driver call that (somehow) runs Python and
    empties the dict mid-loop neither crashes it nor skips a node."""
    dirty = {i: (0x100 + i, 0x200 + i) for i in range(50)}
    seen = []

    def on_set(graph_exec, node, params):
        seen.append(node)
        dirty.clear()
        return 0

    set_cb, launch_cb = SET(on_set), LAUNCH(lambda e, s: 0)
    result = cgraph.replay(ctypes.cast(set_cb, ctypes.c_void_p).value, ctypes.cast(launch_cb, ctypes.c_void_p).value, 1, dirty, 0)
    assert result is None and seen == [0x100 + i for i in range(50)] and dirty == {}


class _ProcAddressDriver:
    """Just enough of cuda.bindings.driver for ``_c_replay``: cuGetProcAddress answers from a table."""

    class CUdriverProcAddress_flags:
        CU_GET_PROC_ADDRESS_DEFAULT = 0

    CUDA_VERSION = 12080

    def __init__(self, table, driver_version=None):
        self.table = table
        self.asked = []
        if driver_version is not None:
            self.cuDriverGetVersion = lambda: (0, driver_version)

    def cuGetProcAddress(self, name, version, flags):
        self.asked.append((name, version))
        if name not in self.table:
            return (500, 0, 0)  # CUDA_ERROR_NOT_FOUND
        return (0, self.table[name], 0)


def test_c_replay_finds_both_entry_points_for_the_bindings_cuda_version(monkeypatch):
    from cute_bind.graph import driver as gd

    monkeypatch.delenv("CUTE_BIND_PURE_PYTHON", raising=False)
    fake = _ProcAddressDriver({b"cuGraphExecKernelNodeSetParams": 0x1234, b"cuGraphLaunch": 0x5678})
    assert gd._c_replay(fake) == (cgraph.replay, 0x1234, 0x5678)
    assert fake.asked == [(b"cuGraphExecKernelNodeSetParams", 12080), (b"cuGraphLaunch", 12080)]


@pytest.mark.parametrize("driver_version, asked", [(12040, 12040), (13000, 12080), (12080, 12080)])
def test_c_replay_asks_for_the_older_of_the_bindings_and_driver_versions(monkeypatch, driver_version, asked):
    # a driver asked for a newer CUDA version than it has answers CUDA_ERROR_INVALID_VALUE
    from cute_bind.graph import driver as gd

    monkeypatch.delenv("CUTE_BIND_PURE_PYTHON", raising=False)
    fake = _ProcAddressDriver({b"cuGraphExecKernelNodeSetParams": 0x1234, b"cuGraphLaunch": 0x5678}, driver_version)
    assert gd._c_replay(fake) == (cgraph.replay, 0x1234, 0x5678)
    assert {v for _, v in fake.asked} == {asked}


@pytest.mark.parametrize(
    "table, env, reason",
    [
        ({b"cuGraphLaunch": 0x5678}, None, "cuGetProcAddress(cuGraphExecKernelNodeSetParams, 12080) found no entry point (CUresult 500)"),
        ({b"cuGraphExecKernelNodeSetParams": 0, b"cuGraphLaunch": 0x5678}, None, "found no entry point (CUresult 0)"),
        ({b"cuGraphExecKernelNodeSetParams": 0x1234, b"cuGraphLaunch": 0x5678}, "1", "CUTE_BIND_PURE_PYTHON=1"),
    ],
)
def test_c_replay_falls_back_to_python_and_says_why(monkeypatch, table, env, reason):
    from cute_bind.graph import driver as gd

    if env is None:
        monkeypatch.delenv("CUTE_BIND_PURE_PYTHON", raising=False)
    else:
        monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", env)
    found = gd._c_replay(_ProcAddressDriver(table))
    assert isinstance(found, str) and reason in found


def test_cuda_driver_c_replay_failure_is_cb804_with_the_cuda_error_name():
    import cute_bind
    from cute_bind.graph import CudaDriver

    fake = Driver({"launch": 700})
    d = CudaDriver()
    d._creplay = (cgraph.replay, fake.set_addr, fake.launch_addr)

    class Handle(int):  # what cuda.bindings hands out: objects int() turns into addresses
        pass

    dirty = {0: d._record_addresses(Handle(0x10), type("P", (), {"getPtr": lambda self: 0x20})())}
    assert dirty == {0: (0x10, 0x20)}
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        d._replay_c(Handle(0x1), dirty, Handle(0x2))
    err = info.value
    assert err.code == "CB804" and err.details["cuda_error"] == 700
    assert "CUDA_ERROR_ILLEGAL_ADDRESS (700) from cuGraphLaunch" in str(err)
    assert [c[0] for c in fake.calls] == ["set", "launch"] and dirty == {0: (0x10, 0x20)}
