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


def test_more_dirty_nodes_than_the_stack_snapshot_holds():
    drv = Driver()
    dirty = {i: (0x1000 + i, 0x9000 + i) for i in range(300)}
    assert drv.replay(0x1, dirty, 0x2) is None
    assert [c[2] for c in drv.calls[:-1]] == [0x1000 + i for i in range(300)] and dirty == {}


# ------------------------------------------------------------------ pointer setters
class Slow:
    """The checked path a setter hands anything else to; records what it got."""

    def __init__(self, raises=None):
        self.got = []
        self.raises = raises

    def __call__(self, value):
        self.got.append(value)
        if self.raises is not None:
            raise self.raises


def _setter(size=32, off=8, raises=None):
    buf = bytearray(size)
    ref = [buf, off, 7, (0x10, 0x20)]
    dirty = {}
    slow = Slow(raises)
    return cgraph.PointerSetter(ref, dirty, slow), buf, ref, dirty, slow


@pytest.mark.parametrize("value", [0, 1, 0x1234_5678_9ABC_DEF0, 2**64 - 1])
def test_a_setter_writes_an_int_address_little_endian_and_marks_the_node(value):
    s, buf, _ref, dirty, slow = _setter()
    s.set(value)
    assert bytes(buf[8:16]) == value.to_bytes(8, "little") and bytes(buf[:8]) == bytes(8) and bytes(buf[16:]) == bytes(16)
    assert dirty == {7: (0x10, 0x20)} and slow.got == []


class IntSub(int):
    pass


@pytest.mark.parametrize("value", [-1, 2**64, True, 1.0, "1", None, IntSub(5), b"\x00" * 8])
def test_anything_but_an_exact_int_address_goes_to_the_slow_path_untouched(value):
    s, buf, _ref, dirty, slow = _setter()
    s.set(value)
    assert slow.got == [value] and buf == bytearray(32) and dirty == {}


@pytest.mark.parametrize(
    "ref",
    [[None, 0, 0, None], [bytearray(8), 1, 0, (1, 2)], [bytearray(8), -1, 0, (1, 2)], [bytearray(16), "0", 0, (1, 2)],
     [bytearray(16), 2**70, 0, (1, 2)], [b"\x00" * 16, 0, 0, (1, 2)]],
    ids=["closed", "past_the_end", "negative_offset", "str_offset", "huge_offset", "bytes_not_bytearray"],
)  # fmt: skip
def test_a_cleared_or_bad_ref_goes_to_the_slow_path(ref):
    dirty, slow = {}, Slow()
    before = [bytes(x) if isinstance(x, (bytes, bytearray)) else x for x in ref]
    cgraph.PointerSetter(ref, dirty, slow).set(0x1000)
    assert slow.got == [0x1000] and dirty == {}
    assert [bytes(x) if isinstance(x, (bytes, bytearray)) else x for x in ref] == before


def test_a_setter_follows_its_ref_when_the_recorder_rewrites_it():
    s, _buf, ref, dirty, slow = _setter()
    other = bytearray(16)
    ref[:] = [other, 0, 3, (0x30, 0x40)]  # a re-record moved the parameter
    s.set(0xAB)
    assert other[0] == 0xAB and dirty == {3: (0x30, 0x40)} and slow.got == []


def test_the_slow_paths_error_propagates():
    s, _buf, _ref, _dirty, slow = _setter(raises=ValueError("refused"))
    with pytest.raises(ValueError, match="refused"):
        s.set("x")


@pytest.mark.parametrize(
    "args",
    [([None] * 3, {}, print), ([None] * 4, [], print), ([None] * 4, {}, 5), ((None,) * 4, {}, print)],
    ids=["short_ref", "dirty_not_dict", "slow_not_callable", "ref_a_tuple"],
)
def test_a_setter_is_built_from_checked_parts(args):
    with pytest.raises(TypeError):
        cgraph.PointerSetter(*args)


def test_set_pointers_writes_each_value_through_its_setter():
    made = [_setter() for _ in range(3)]
    setters = tuple(m[0] for m in made)
    assert cgraph.set_pointers(setters, [0x10, "slow", 0x30]) is None
    assert made[0][1][8] == 0x10 and made[2][1][8] == 0x30 and made[1][4].got == ["slow"]
    assert cgraph.set_pointers(setters, (1, 2, 3)) is None


@pytest.mark.parametrize("values", [[1, 2], [1, 2, 3, 4], {1, 2, 3}, "abc", None, iter([1, 2, 3])])
def test_set_pointers_refuses_another_count_or_type_and_writes_nothing(values):
    made = [_setter() for _ in range(3)]
    assert cgraph.set_pointers(tuple(m[0] for m in made), values) is False
    assert all(m[1] == bytearray(32) and m[3] == {} and m[4].got == [] for m in made)


def test_set_pointers_takes_setters_only():
    with pytest.raises(TypeError):
        cgraph.set_pointers((print,), [1])
    with pytest.raises(TypeError):
        cgraph.set_pointers([_setter()[0]], [1])


def test_a_slow_path_that_empties_the_list_does_not_change_what_the_batch_reads():
    """The batch reads a snapshot of the list (issue 39 row 15: a plain RuntimeError before)."""
    values = [0x10, "slow", 0x30]
    made = [_setter() for _ in range(3)]
    made[1][4].raises = None
    made[1][4].__class__ = type("Clearing", (Slow,), {"__call__": lambda self, v: values.clear()})
    assert cgraph.set_pointers(tuple(m[0] for m in made), values) is None
    assert values == []
    assert made[0][1][8] == 0x10 and made[2][1][8] == 0x30  # the third value of the call was staged


def test_an_uninitialised_or_reinitialised_setter_is_refused():
    """A setter made without __init__ has no ref, dirty or slow path; a second __init__ would free
    what a running set() reads (review of the C setter: both crashed the interpreter)."""
    bare = cgraph.PointerSetter.__new__(cgraph.PointerSetter)
    with pytest.raises(TypeError, match="not initialised"):
        bare.set(1)
    with pytest.raises(TypeError, match="not initialised"):
        cgraph.set_pointers((bare,), [1])
    s, *_ = _setter()
    with pytest.raises(TypeError, match="twice"):
        s.__init__([None, 0, 0, None], {}, print)


class _HashHook:
    """A dirty key whose __hash__ runs Python code: it rewrites the setter's ref (or raises)."""

    def __init__(self, ref, raises=False):
        self.ref, self.raises = ref, raises

    def __hash__(self):
        if self.raises:
            raise RuntimeError("no hash")
        self.ref[:] = [None, 0, 0, None]  # what a close() does
        return 1


def test_a_key_whose_hash_runs_code_cannot_free_what_the_setter_reads():
    buf = bytearray(16)
    ref = [buf, 0, None, (0x10, 0x20)]
    ref[2] = _HashHook(ref)
    dirty, slow = {}, Slow()
    cgraph.PointerSetter(ref, dirty, slow).set(0xAB)
    assert buf[0] == 0xAB and list(dirty.values()) == [(0x10, 0x20)] and slow.got == []


def test_a_failed_dirty_mark_writes_nothing():
    """Marked first, written second: a retry of the same value is then not taken for 'no change'."""
    buf = bytearray(16)
    ref = [buf, 0, None, (0x10, 0x20)]
    ref[2] = _HashHook(ref, raises=True)
    with pytest.raises(RuntimeError, match="no hash"):
        cgraph.PointerSetter(ref, {}, Slow()).set(0xAB)
    assert buf == bytearray(16)
