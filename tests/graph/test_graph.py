"""cute_bind.graph on the CPU: recording, mapping, in-place updates and re-recording through the fake driver.

The host functions (tests/kernels/graph_host.py) are real compiled CuTe DSL
functions; they "launch" kernels by writing launch records that the fake
driver turns into kernel nodes under capture, or runs at once otherwise. So
the recorder's probing sees what the compiled code really does with each
value, and replays run the fake kernels on host memory.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_bind
from tests.kernels import graph_host as K

FAKE = K.FAKE
N = 64


pytestmark = pytest.mark.usefixtures("clean_fake")  # tests/graph/conftest.py


def _c_replay_loop(monkeypatch):
    """Route FAKE's replays through the C loop (cute_bind/graph/_cgraph.c), with
    ctypes callbacks standing in for the driver's two entry points."""
    import ctypes

    cgraph = pytest.importorskip("cute_bind.graph._cgraph")
    objects = {}  # raw "address" -> the fake's own object (the C loop sees ints only)

    def raw(obj):
        objects[id(obj)] = obj
        return id(obj)

    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    launch_proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def as_code(call, *args):
        try:
            call(*args)
        except cute_bind.CuteBindError as exc:
            return exc.details["cuda_error"]
        return 0

    set_cb = proto(lambda e, n, p: as_code(FAKE.set_kernel_params, objects[e], objects[n], objects[p]))
    launch_cb = launch_proto(lambda e, s: as_code(FAKE.launch, objects[e], objects[s or 0]))
    objects[0] = 0  # the null stream
    set_addr = ctypes.cast(set_cb, ctypes.c_void_p).value
    launch_addr = ctypes.cast(launch_cb, ctypes.c_void_p).value

    def replay(graph_exec, dirty, stream):
        failed = cgraph.replay(set_addr, launch_addr, raw(graph_exec), dirty, raw(stream) if stream else 0)
        if failed is not None:
            from cute_bind.graph.driver import driver_error

            raise driver_error(failed[0], failed[1], "CUDA_ERROR_FAKE")

    monkeypatch.setattr(FAKE, "record", lambda node, params: (raw(node), raw(params)), raising=False)
    monkeypatch.setattr(FAKE, "replay", replay, raising=False)
    return set_cb, launch_cb  # kept alive by the caller for the test's duration


@pytest.fixture(params=["python", "c"])
def replay_loop(request, monkeypatch):
    """The replay loop under test: the driver's Python one, or the C one."""
    keep = _c_replay_loop(monkeypatch) if request.param == "c" else None
    yield request.param
    del keep


def arr(seed, n=N):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def addr(a):
    return a.ctypes.data


_HANDLES = {}


def bind(fn, *args):
    key = fn.__name__
    if key not in _HANDLES:
        _HANDLES[key] = cute_bind.kernel(fn).bind(*args, K.BOX)
    return _HANDLES[key].clone()


def record(steps, **options):
    """steps: [(handle, args)] -> (graph, [Step])."""
    with cute_bind.graph(0, driver=FAKE, **options) as g:
        recorded = [g.launch(h, *args) for h, args in steps]
    return g, recorded


def eager(steps):
    for h, args in steps:
        h.launch(*args)
    FAKE.synchronize()


# ------------------------------------------------------------------ mapping: what each value does
def _scale_args(out, inp, alpha=2.0, n=N):
    return (addr(out), addr(inp), alpha, n, 0)


MAPPING = [
    # (host function, bind/launch args factory, {item: effect})
    (K.scale, lambda b: _scale_args(*b[:2]), {"out": "in place", "inp": "in place", "alpha": "in place", "n": "in place"}),
    (K.scale_grid, lambda b: _scale_args(*b[:2]), {"out": "in place", "inp": "in place", "alpha": "in place", "n": "grid"}),
    (K.scale_doubled, lambda b: _scale_args(*b[:2]), {"out": "in place", "inp": "in place", "alpha": "in place", "n": "transformed"}),
    (K.plus_one_map, lambda b: (addr(b[0]), addr(b[1]), N, 0), {"out": "in place", "inp": "tensor map", "n": "in place"}),
    (K.scale_then_add, lambda b: (addr(b[0]), addr(b[1]), addr(b[2]), 1.5, N, 0),
     {"out": "in place", "tmp": "in place", "inp": "in place", "alpha": "in place", "n": "in place"}),
    # narrow signed integers widened by the host function are not their own bytes; unsigned and bool are
    (K.mix, lambda b: (addr(b[3]), -5, 300, 7, -(2**40), 0.25, True, 0),
     {"out": "in place", "i8": "transformed", "i16": "transformed", "u32": "in place", "i64": "in place", "d": "in place", "flag": "in place"}),
    (K.axpby, lambda b: (addr(b[0]), (addr(b[1]), addr(b[2])), (0.5, -2.0), N, 0),
     {"out": "in place", "ins[0]": "in place", "ins[1]": "in place", "scales[0]": "in place", "scales[1]": "in place", "n": "in place"}),
    (K.tensor_scale, lambda b: (b[0], b[1], 2.0, 0),
     {"out.address": "in place", "out.extent[0]": "grid", "inp.address": "in place", "inp.extent[0]": "unused", "alpha": "in place"}),
]  # fmt: skip


@pytest.mark.parametrize("fn, args, expected", MAPPING, ids=[m[0].__name__ for m in MAPPING])
def test_each_value_is_classified(fn, args, expected):
    bufs = [arr(1), arr(2), arr(3), np.zeros(1, np.float64)]
    h = bind(fn, *args(bufs))
    g, (step,) = record([(h, args(bufs))])
    got = {it.name: e.how for it, e in step.effects.items()}
    assert got == expected
    codes = {f.parameter: f.code for f in g.findings}
    derived = {name.split(".")[0] for name, how in expected.items() if how not in ("in place", "unused")}
    assert set(codes) == derived
    for f in g.findings:
        launch_effect = any(how in ("grid", "block", "shared memory", "launches") for _, how, _ in f.effects)
        assert f.code == ("CB802" if launch_effect else "CB801")
        assert f.policy == "fixed" and f"[{f.code}]" in f.message
    g.close()


def test_a_value_in_two_kernels_is_rewritten_in_both():
    out, tmp, inp = arr(0), arr(0), arr(1)
    h = bind(K.scale_then_add, addr(out), addr(tmp), addr(inp), 1.5, N, 0)
    g, (step,) = record([(h, (addr(out), addr(tmp), addr(inp), 1.5, N, 0))])
    [inp_item] = [it for it in step.items if it.parameter == "inp"]
    assert [(loc.node, loc.param) for loc in step.effects[inp_item].locations] == [(0, 1), (1, 2)]
    other = arr(7)
    g.replay({step: {"inp": addr(other)}})
    assert np.array_equal(out, other * np.float32(1.5) + other)
    g.close()


# ------------------------------------------------------------------ replay == one-by-one launches
OUTS = [arr(100 + i) for i in range(4)]
INS = [arr(200 + i) for i in range(4)]


def _chain_handles():
    a = bind(K.scale, addr(OUTS[0]), addr(INS[0]), 1.0, N, 0)
    b = bind(K.scale_then_add, addr(OUTS[1]), addr(OUTS[2]), addr(OUTS[0]), 1.0, N, 0)
    c = bind(K.scale, addr(OUTS[3]), addr(OUTS[1]), 1.0, N, 0)
    return a, b, c


def _chain_args(values):
    (i0, a0, n0), (a1, n1), (a2, n2) = values
    return [
        (addr(OUTS[0]), addr(INS[i0]), a0, n0, 0),
        (addr(OUTS[1]), addr(OUTS[2]), addr(OUTS[0]), a1, n1, 0),
        (addr(OUTS[3]), addr(OUTS[1]), a2, n2, 0),
    ]


def _snapshot():
    return [o.copy() for o in OUTS]


def _reset():
    for i, o in enumerate(OUTS):
        o[:] = arr(100 + i)


alphas = st.floats(-4, 4, allow_nan=False, width=32)
ns = st.integers(1, N)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.tuples(st.integers(0, 3), alphas, ns), st.tuples(alphas, ns), st.tuples(alphas, ns)), min_size=1, max_size=4))
def test_chain_replays_equal_one_by_one_launches(replay_loop, rounds):
    handles = _chain_handles()
    _reset()
    g, steps = record(list(zip(handles, _chain_args(rounds[0]))))
    for values in rounds:
        (i0, a0, n0), (a1, n1), (a2, n2) = values
        _reset()
        g.replay({steps[0]: {"inp": INS[i0], "alpha": a0, "n": n0}, steps[1]: {"alpha": a1, "n": n1}, steps[2]: {"alpha": a2, "n": n2}})
        replayed = _snapshot()
        _reset()
        eager(list(zip(handles, _chain_args(values))))
        for x, y in zip(replayed, _snapshot()):
            assert x.tobytes() == y.tobytes()
    assert g.stats.rerecords == 0 and g.stats.replays == len(rounds)
    g.close()


def test_only_changed_nodes_are_rewritten(replay_loop):
    handles = _chain_handles()
    g, steps = record(list(zip(handles, _chain_args(((0, 1.0, N), (1.0, N), (1.0, N))))))
    before = FAKE.calls["set_kernel_params"]
    g.replay()
    assert FAKE.calls["set_kernel_params"] == before
    g.replay({steps[1]: {"alpha": 2.0}})  # one step, two kernel nodes: only the one alpha reaches
    assert FAKE.calls["set_kernel_params"] == before + 1
    g.replay({steps[1]: {"alpha": 2.0}})  # same value: nothing to rewrite
    assert FAKE.calls["set_kernel_params"] == before + 1
    assert g.stats.nodes_updated == 1
    g.close()


class _DLCopy:
    """A ``__dlpack__``-only array whose export owns a fresh copy (``alive`` cleared when it is freed)."""

    def __init__(self, a):
        self.a, self.alive = a, []

    def __dlpack__(self, **kwargs):
        import weakref

        copy = self.a.copy()
        flag = [True]
        weakref.finalize(copy, flag.clear)
        self.alive = flag
        return copy.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_a_staged_value_read_through_an_export_lives_until_the_next_update(replay_loop):
    handles = _chain_handles()
    g, steps = record(list(zip(handles, _chain_args(((0, 2.0, N), (1.0, N), (1.0, N))))))
    src = _DLCopy(INS[2])
    g.update(steps[0], inp=src)
    import gc

    gc.collect()
    assert src.alive == [True]  # the node holds an address into the copy: the copy is held
    for _ in range(2):
        g.replay()
        assert np.array_equal(OUTS[0], INS[2] * np.float32(2.0))
    g.updater(steps[0], "inp")(INS[1])  # a new value through the checked path: the old copy may go
    gc.collect()
    assert src.alive == []
    g.replay()
    assert np.array_equal(OUTS[0], INS[1] * np.float32(2.0))
    g.close()


def test_what_a_step_was_recorded_with_lives_until_the_slot_is_updated(replay_loop):
    """A temporary given to g.launch (an array no one else holds) stays alive while the nodes hold its
    address: before, it was freed when g.launch returned and a replay read freed memory."""
    import gc
    import weakref

    handles = _chain_handles()
    temp = INS[2].copy()
    gone = weakref.ref(temp)
    with cute_bind.graph(0, driver=FAKE) as g:
        steps = [g.launch(handles[0], addr(OUTS[0]), temp, 2.0, N, stream=0)]  # the array itself, a keyword too
    del temp
    gc.collect()
    assert gone() is not None
    g.replay()
    assert np.array_equal(OUTS[0], INS[2] * np.float32(2.0))
    g.update(steps[0], inp=addr(INS[1]))  # a new value: the recorded array may go
    gc.collect()
    assert gone() is None
    g.replay()
    assert np.array_equal(OUTS[0], INS[1] * np.float32(2.0))
    g.close()
    temp = INS[2].copy()
    gone = weakref.ref(temp)
    g, _ = record([(handles[0], (addr(OUTS[0]), temp, 2.0, N, 0))])
    del temp
    g.close()  # nothing can replay the nodes any more: what they were recorded with is let go
    gc.collect()
    assert gone() is None


def test_updater_writes_like_update(replay_loop):
    handles = _chain_handles()
    g, steps = record(list(zip(handles, _chain_args(((0, 2.0, N), (1.0, N), (1.0, N))))))
    set_inp = g.updater(steps[0], "inp")
    for i in (1, 2, 3):
        set_inp(addr(INS[i]))
        g.replay()
        assert np.array_equal(OUTS[0], INS[i] * np.float32(2.0))
    set_inp(INS[0])  # not an int: the checked path
    g.replay()
    assert np.array_equal(OUTS[0], INS[0] * np.float32(2.0))
    with pytest.raises(cute_bind.CuteBindError):
        set_inp("nope")
    g.close()


@pytest.fixture(params=["c", "python"])
def setter_path(request, monkeypatch):
    """Pointer updaters made in the test use the C setter (``_cgraph.PointerSetter``) or the Python closure."""
    if request.param == "python":
        monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    else:
        pytest.importorskip("cute_bind.graph._cgraph")
        monkeypatch.delenv("CUTE_BIND_PURE_PYTHON", raising=False)
    return request.param


@pytest.fixture
def checked_sets(monkeypatch):
    """Every value that went through the recorder's checked path (``Graph._set``)."""
    from cute_bind.graph.recorder import Graph

    calls = []
    original = Graph._set

    def counting(self, st, j, value):
        calls.append((st.index, st.names[j], value))
        return original(self, st, j, value)

    monkeypatch.setattr(Graph, "_set", counting)
    return calls


def test_pointer_updaters_write_ints_without_the_checked_path(setter_path, replay_loop, checked_sets):
    handles = _chain_handles()
    g, steps = record(list(zip(handles, _chain_args(((0, 2.0, N), (1.0, N), (1.0, N))))))
    set_inp = g.updater(steps[0], "inp")
    if setter_path == "c":
        from cute_bind.graph._cgraph import PointerSetter

        assert isinstance(set_inp.__self__, PointerSetter)
    for i in (1, 2, 3):
        set_inp(addr(INS[i]))
        g.replay()
        assert np.array_equal(OUTS[0], INS[i] * np.float32(2.0))
    assert checked_sets == []
    set_inp(INS[0])  # an array, not an int: the checked path
    assert checked_sets == [(0, "inp", INS[0])]
    g.close()


def test_batched_updaters_equal_one_updater_per_step(setter_path, replay_loop, checked_sets):
    handles = _chain_handles()
    values = ((0, 2.0, N), (1.5, N), (-1.0, N))
    g, steps = record(list(zip(handles, _chain_args(values))))
    set_all = g.updaters([(steps[0], "inp"), (steps[0], "alpha"), (steps[2], "inp")])
    for i in (1, 2, 3):
        set_all([addr(INS[i]), 0.5 * i, addr(OUTS[2])])
        _reset()
        g.replay()
        replayed = _snapshot()
        _reset()
        args = _chain_args(((i, 0.5 * i, N), (1.5, N), (-1.0, N)))
        args[2] = (addr(OUTS[3]), addr(OUTS[2]), -1.0, N, 0)
        eager(list(zip(handles, args)))
        assert all(x.tobytes() == y.tobytes() for x, y in zip(replayed, _snapshot()))
    # the float goes through its own updater (the checked path); the pointers never do
    assert [c[1] for c in checked_sets] == ["alpha"] * 3
    g.close()


@pytest.mark.parametrize("values", [[1], [1, 2, 3], (), None, "ab", {0: 1, 1: 2}], ids=["short", "long", "empty", "none", "str", "dict"])
def test_a_batched_updater_refuses_another_count_and_stages_nothing(setter_path, values):
    o, i, other = arr(360), arr(361), arr(362)
    h = bind(K.scale, addr(o), addr(i), 2.0, N, 0)
    g, (s,) = record([(h, (addr(o), addr(i), 2.0, N, 0))])
    set_both = g.updaters([(s, "out"), (s, "inp")])
    before = FAKE.calls["set_kernel_params"]
    with pytest.raises(cute_bind.CuteBindError) as info:
        set_both(values)
    assert info.value.code == "CB806" and "2 values" in str(info.value)
    g.replay()
    assert FAKE.calls["set_kernel_params"] == before  # nothing was staged
    set_both([addr(other), addr(i)])
    g.replay()
    assert np.array_equal(other, i * np.float32(2.0))
    g.close()


@pytest.mark.parametrize(
    "targets",
    [5, "out", [("out",)], [(0, 5)], [(0, "nope")], [(7, "out")]],
    ids=["int", "str", "one_tuple", "parameter_not_str", "unknown_parameter", "unknown_step"],
)
def test_batched_updaters_take_step_parameter_pairs(targets):
    o, i = arr(370), arr(371)
    h = bind(K.scale, addr(o), addr(i), 2.0, N, 0)
    g, _ = record([(h, (addr(o), addr(i), 2.0, N, 0))])
    with pytest.raises(cute_bind.CuteBindError) as info:
        g.updaters(targets)
    assert info.value.code == "CB806"
    g.close()


def test_saved_updaters_refuse_after_close(setter_path):
    o, i = arr(380), arr(381)
    h = bind(K.scale, addr(o), addr(i), 2.0, N, 0)
    g, (s,) = record([(h, (addr(o), addr(i), 2.0, N, 0))])
    one, batch = g.updater(s, "out"), g.updaters([(s, "out")])
    g.close()
    for call in (lambda: one(addr(i)), lambda: batch([addr(i)])):
        with pytest.raises(cute_bind.CuteBindError) as info:
            call()
        assert info.value.code == "CB806"


def test_batched_updaters_follow_rerecords(setter_path):
    out, inp, other = arr(0), arr(1), arr(2)
    h = bind(K.scale_grid, addr(out), addr(inp), 2.0, N, 0)
    g, (step,) = record([(h, (addr(out), addr(inp), 2.0, N, 0))], derived="rerecord")
    set_out = g.updaters([(step, "out")])
    g.replay({step: {"n": 32}})  # the grid changes: re-recorded, new nodes
    set_out([addr(other)])
    g.replay()
    assert g.stats.rerecords == 1
    assert np.array_equal(other[:32], inp[:32] * np.float32(2.0)) and np.array_equal(other[32:], arr(2)[32:])
    g.close()


def test_scalars_bitwise():
    out = np.zeros(1, np.float64)
    h = bind(K.mix, addr(out), 1, 2, 3, 4, 0.5, False, 0)
    g, (step,) = record([(h, (addr(out), 1, 2, 3, 4, 0.5, False, 0))], derived="rerecord")
    cases = [
        (1, 2, 2**32 - 1, -(2**63), -0.0, True),
        (-128, -32768, 0, 2**63 - 1, 1e300, False),
        (127, 32767, 12345, -1, float("inf"), True),
    ]
    for i8, i16, u32, i64, d, flag in cases:
        g.replay({step: dict(i8=i8, i16=i16, u32=u32, i64=i64, d=d, flag=flag)})
        replayed = out.copy()
        eager([(h, (addr(out), i8, i16, u32, i64, d, flag, 0))])
        assert replayed.tobytes() == out.tobytes()
    assert g.stats.rerecords == 2  # i8/i16 are widened: each change re-records (the first case keeps them)
    g.close()


# ------------------------------------------------------------------ derived values: fixed, error, re-record
def test_fixed_value_change_raises_and_launches_nothing():
    out, inp = arr(0), arr(1)
    h = bind(K.scale_grid, addr(out), addr(inp), 2.0, N, 0)
    g, (step,) = record([(h, (addr(out), addr(inp), 2.0, N, 0))])
    launches = FAKE.calls["launch"]
    with pytest.raises(cute_bind.LaunchValueError) as info:
        g.replay({step: {"n": 32}})
    assert info.value.code == "CB803" and info.value.parameter == "n"
    assert FAKE.calls["launch"] == launches
    g.replay({step: {"n": N, "alpha": 3.0}})  # the recorded n: fine
    assert np.array_equal(out, inp * np.float32(3.0))
    g.close()


@pytest.mark.parametrize("fn, code", [(K.scale_grid, "CB802"), (K.scale_doubled, "CB801")])
def test_derived_error_raises_at_record(fn, code):
    out, inp = arr(0), arr(1)
    h = bind(fn, addr(out), addr(inp), 2.0, N, 0)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        record([(h, (addr(out), addr(inp), 2.0, N, 0))], derived="error")
    assert info.value.code == code and info.value.parameter == "n"


def test_rerecord_on_other_extents_matches_one_by_one():
    """Dynamic-layout tensors of other extents: the extent sizes the grid, so the graph re-records."""
    x, y = arr(10, 200), np.zeros(200, np.float32)
    h = bind(K.tensor_scale, y, x, 2.0, 0)
    g, (step,) = record([(h, (y, x, 2.0, 0))], derived="rerecord")
    assert {f.parameter for f in g.findings} == {"out"}
    for seed, m in enumerate((200, 77, 1000, 1000, 3)):
        xi, yi, ref = arr(20 + seed, m), np.full(m, np.nan, np.float32), np.full(m, np.nan, np.float32)
        g.replay({step: {"out": yi, "inp": xi, "alpha": 0.5 + seed}})
        eager([(h, (ref, xi, 0.5 + seed, 0))])
        assert yi.tobytes() == ref.tobytes()
    assert g.stats.rerecords == 3  # 200 -> 77 -> 1000, 1000 again is in place, -> 3
    g.close()


def test_set_policy_per_parameter():
    out, inp = arr(0), arr(1)
    h = bind(K.scale_doubled, addr(out), addr(inp), 2.0, N, 0)
    g, (step,) = record([(h, (addr(out), addr(inp), 2.0, N, 0))])
    g.set_policy(step, "n", "rerecord")
    assert g.findings[0].policy == "rerecord"
    g.replay({step: {"n": 10}})
    ref = arr(1)
    ref[:10] *= np.float32(2.0)
    assert g.stats.rerecords == 1 and np.array_equal(out[:10], ref[:10])
    g.set_policy(0, "n", "fixed")
    with pytest.raises(cute_bind.LaunchValueError, match="CB803"):
        g.replay({0: {"n": 11}})
    g.close()


def test_graph_with_other_work_cannot_rerecord():
    out, inp = arr(0), arr(1)
    h = bind(K.scale_grid, addr(out), addr(inp), 2.0, N, 0)
    other = h.clone()
    with cute_bind.graph(0, driver=FAKE) as g:
        step = g.launch(h, addr(out), addr(inp), 2.0, N, 0)
        other.launch(addr(inp), addr(inp), 1.0, N, 0)  # captured, but not a recorded step
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        g.set_policy(step, "n", "rerecord")
    assert info.value.code == "CB805"
    g.close()


# ------------------------------------------------------------------ misuse and driver failures
def test_misuse_is_cb806():
    out, inp = arr(0), arr(1)
    h = bind(K.scale, addr(out), addr(inp), 2.0, N, 0)
    args = (addr(out), addr(inp), 2.0, N, 0)
    g = cute_bind.graph(0, driver=FAKE)
    cases = [
        lambda: g.launch(h, *args),  # not recording yet
        lambda: g.replay(),  # not recorded yet
    ]
    for case in cases:
        with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
            case()
    with g:
        a = g.launch(h, *args)
        b = g.launch(h, *args)
        with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
            g.replay()
        with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
            g.launch(object(), *args)
    for updates in ({a: {"beta": 1.0}}, {h: {"alpha": 1.0}}, {7: {"alpha": 1.0}}, {"a": {"alpha": 1.0}}):
        with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
            g.replay(updates)
    g.replay({b: {"alpha": 4.0}})
    assert np.array_equal(out, inp * np.float32(4.0))
    with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
        g.__enter__()
    g.close()
    with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
        g.replay()
    with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
        cute_bind.graph(0, driver=FAKE, derived="sometimes")


@pytest.mark.parametrize("call", ["launch", "set_kernel_params"])
def test_driver_failure_on_replay_is_cb804(replay_loop, call):
    out, inp = arr(0), arr(1)
    h = bind(K.scale, addr(out), addr(inp), 2.0, N, 0)
    g, (step,) = record([(h, (addr(out), addr(inp), 2.0, N, 0))])
    FAKE.fail(call, 700)
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        g.replay({step: {"alpha": 3.0}})
    # the C loop names the driver entry point it called; the fake names its method
    named = {"launch": "cuGraphLaunch", "set_kernel_params": "cuGraphExecKernelNodeSetParams"}[call] if replay_loop == "c" else call
    assert info.value.code == "CB804" and info.value.details["cuda_error"] == 700 and f"from {named}" in str(info.value)
    g.replay({step: {"alpha": 3.0}})  # the failure left nothing half-done: a retry works
    assert np.array_equal(out, inp * np.float32(3.0))
    g.close()


def test_driver_failure_while_recording_closes_the_graph():
    out, inp = arr(0), arr(1)
    h = bind(K.scale, addr(out), addr(inp), 2.0, N, 0)
    FAKE.fail("instantiate", 2)
    with pytest.raises(cute_bind.LaunchRuntimeError, match="CB804"):
        record([(h, (addr(out), addr(inp), 2.0, N, 0))])
    assert FAKE.calls["destroy_graph"] > 0


def test_exception_in_the_block_ends_the_capture():
    out, inp = arr(0), arr(1)
    h = bind(K.scale, addr(out), addr(inp), 2.0, N, 0)
    with pytest.raises(cute_bind.LaunchArgumentError):
        with cute_bind.graph(0, driver=FAKE) as g:
            g.launch(h, addr(out), addr(inp), 2.0)  # n missing: the handle's own error
    assert not FAKE._capturing
    with pytest.raises(cute_bind.LaunchRuntimeError, match="CB806"):
        g.replay()


def test_recording_leaves_the_handle_usable():
    out, inp = arr(0), arr(1)
    h = bind(K.scale, addr(out), addr(inp), 2.0, N, 0)
    g, _ = record([(h, (addr(out), addr(inp), 2.0, N, 0))])
    before = h.storage_bytes()
    g.replay({0: {"alpha": 9.0}})
    assert h.storage_bytes() == before  # replays never touch the handle
    h.launch(addr(out), addr(inp), 5.0, N, 0)
    FAKE.synchronize()
    assert np.array_equal(out, inp * np.float32(5.0))
    assert "in place" in repr(g.steps[0].effect("alpha").values()) and g.report() == ""
    g.close()


def test_updater_stays_valid_across_rerecords():
    out, inp, other = arr(0), arr(1), arr(2)
    h = bind(K.scale_grid, addr(out), addr(inp), 2.0, N, 0)
    g, (step,) = record([(h, (addr(out), addr(inp), 2.0, N, 0))], derived="rerecord")
    set_out = g.updater(step, "out")
    g.replay({step: {"n": 32}})  # the grid changes: re-recorded, new nodes
    assert g.stats.rerecords == 1
    set_out(addr(other))
    g.replay()
    assert np.array_equal(other[:32], inp[:32] * np.float32(2.0)) and np.array_equal(other[32:], arr(2)[32:])
    g.replay({step: {"n": N}})  # re-records with the pointer the fast path wrote
    assert g.stats.rerecords == 2 and np.array_equal(other, inp * np.float32(2.0))
    g.close()


def test_a_launch_that_captures_differently_each_time_is_cb805():
    out = arr(0)
    h = cute_bind.kernel(K.flaky).bind(addr(out), N, 0, K.BOX, K.COUNTER)
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        record([(h, (addr(out), N, 0))])
    assert info.value.code == "CB805" and "captured twice alike" in str(info.value)


def test_a_launch_that_adds_no_node_is_cb805():
    out = arr(0)
    h = bind(K.no_launch, addr(out), 3, 0)
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        record([(h, (addr(out), 3, 0))])
    assert info.value.code == "CB805" and "no node" in str(info.value)


def test_sequence_slots_update_per_element():
    out, a, b, c = arr(0), arr(1), arr(2), arr(3)
    h = bind(K.axpby, addr(out), (addr(a), addr(b)), (1.0, 1.0), N, 0)
    g, (step,) = record([(h, (addr(out), (addr(a), addr(b)), (1.0, 1.0), N, 0))])
    before = FAKE.calls["set_kernel_params"]
    g.replay({step: {"ins": (addr(a), addr(c)), "scales": [0.5, -2.0]}})
    ref = np.zeros_like(out)
    eager([(h, (addr(ref), (addr(a), addr(c)), (0.5, -2.0), N, 0))])
    assert out.tobytes() == ref.tobytes() and FAKE.calls["set_kernel_params"] == before + 1
    g.close()


def test_updates_as_whole_argument_lists():
    handles = _chain_handles()
    args = _chain_args(((0, 1.0, N), (1.0, N), (1.0, N)))
    g, steps = record(list(zip(handles, args)))
    new = _chain_args(((2, -1.5, 40), (0.25, 33), (3.0, N)))
    _reset()
    g.replay({s: a for s, a in zip(steps, new)})
    replayed = _snapshot()
    _reset()
    eager(list(zip(handles, new)))
    assert all(x.tobytes() == y.tobytes() for x, y in zip(replayed, _snapshot()))
    with pytest.raises(cute_bind.LaunchArgumentError):
        g.replay({steps[0]: new[0][:2]})  # too few arguments: the handle's own CB201
    g.close()


def test_rerecord_after_another_step_was_updated_in_place():
    """A re-record finds every step in the new graph, also one updated in place since it was mapped."""
    o1, i1, o2, i2 = arr(300), arr(301), arr(302), arr(303)
    a = bind(K.scale, addr(o1), addr(i1), 1.0, N, 0)
    b = bind(K.scale_grid, addr(o2), addr(i2), 1.0, N, 0)
    g, (sa, sb) = record([(a, (addr(o1), addr(i1), 2.0, N, 0)), (b, (addr(o2), addr(i2), 2.0, N, 0))], derived="rerecord")
    g.replay({sa: {"alpha": 3.0}})  # in place
    FAKE.synchronize()
    o1[:], o2[:] = 0, 0
    g.replay({sb: {"n": 32}})  # derived: re-records, with step 0 at alpha 3
    FAKE.synchronize()
    assert g.stats.rerecords == 1
    got = (o1.copy(), o2.copy())
    o1[:], o2[:] = 0, 0
    eager([(a, (addr(o1), addr(i1), 3.0, N, 0)), (b, (addr(o2), addr(i2), 2.0, 32, 0))])
    assert got[0].tobytes() == o1.tobytes() and got[1].tobytes() == o2.tobytes()
    g.close()


def test_a_failed_rerecord_leaves_no_captured_graph_behind(monkeypatch):
    o, i = arr(310), arr(311)
    h = bind(K.scale_grid, addr(o), addr(i), 1.0, N, 0)
    g, (s,) = record([(h, (addr(o), addr(i), 2.0, N, 0))], derived="rerecord")
    calls = dict(FAKE.calls)

    def no_match():
        raise cute_bind.error(cute_bind.CATALOG["CB805"], kernel="scale_grid", detail="injected", expected="a match", got="none")

    monkeypatch.setattr(g, "_match", no_match)
    with pytest.raises(cute_bind.CuteBindError):
        g.replay({s: {"n": 32}})
    ended = FAKE.calls["end_capture"] - calls.get("end_capture", 0)
    destroyed = FAKE.calls["destroy_graph"] - calls.get("destroy_graph", 0)
    assert ended == destroyed  # every capture of the failed re-record was destroyed
    monkeypatch.undo()
    g.replay()  # the step is still pending: this replay re-records for real
    assert g.stats.rerecords == 1
    g.close()


def test_a_pointer_updater_for_several_nodes_follows_rerecords():
    out, tmp, inp, other = arr(320), arr(321), arr(322), arr(323)
    h = bind(K.scale_then_add_grid, addr(out), addr(tmp), addr(inp), 1.5, N, 0)
    g, (s,) = record([(h, (addr(out), addr(tmp), addr(inp), 1.5, N, 0))], derived="rerecord")
    set_inp = g.updater(s, "inp")  # inp reaches both kernel nodes
    g.replay({s: {"n": 32}})  # re-record: new nodes, new parameter buffers
    FAKE.synchronize()
    set_inp(addr(other))
    g.replay()
    FAKE.synchronize()
    got = out.copy()
    ref_o, ref_t = arr(320), arr(321)
    eager([(h, (addr(ref_o), addr(ref_t), addr(other), 1.5, 32, 0))])
    assert got.tobytes() == ref_o.tobytes()
    g.close()


def test_close_inside_the_block_ends_the_capture_and_stays_closed():
    o, i = arr(330), arr(331)
    args = (addr(o), addr(i), 2.0, N, 0)
    h = bind(K.scale, *args)
    g = cute_bind.graph(0, driver=FAKE)
    g.__enter__()
    g.launch(h, *args)
    g.close()
    assert not FAKE._capturing  # the stream is not left capturing
    with cute_bind.graph(0, driver=FAKE) as g2:  # so the next graph records
        g2.launch(h, *args)
    g2.close()
    with cute_bind.graph(0, driver=FAKE) as g3:
        s = g3.launch(h, *args)
        g3.close()
    assert "closed" in repr(g3)
    with pytest.raises(cute_bind.CuteBindError) as info:
        g3.replay({s: {"alpha": 5.0}})
    assert info.value.code == "CB806"


@pytest.mark.parametrize(
    "misuse",
    [
        lambda g, s, saved: g.replay([(s, {"alpha": 1.0})]),  # a list of pairs, not a mapping
        lambda g, s, saved: g.replay({s: 5}),
        lambda g, s, saved: g.replay({s: None}),
    ],
    ids=["updates_not_a_mapping", "update_an_int", "update_none"],
)
def test_malformed_updates_are_cb806(misuse):
    o, i = arr(340), arr(341)
    h = bind(K.scale, addr(o), addr(i), 1.0, N, 0)
    g, (s,) = record([(h, (addr(o), addr(i), 2.0, N, 0))])
    with pytest.raises(cute_bind.CuteBindError) as info:
        misuse(g, s, None)
    assert info.value.code == "CB806"
    g.close()


def test_updaters_and_policies_need_a_recorded_open_graph():
    o, i = arr(350), arr(351)
    args = (addr(o), addr(i), 2.0, N, 0)
    h = bind(K.scale, *args)
    with cute_bind.graph(0, driver=FAKE) as g:
        s = g.launch(h, *args)
        with pytest.raises(cute_bind.CuteBindError) as info:
            g.updater(s, "out")  # inside the block: nothing is mapped yet
        assert info.value.code == "CB806"
    saved = g.updater(s, "out")
    g.close()
    before = o.copy()
    for misuse in (
        lambda: g.set_policy(s, "n", "fixed"),
        lambda: g.updater(s, "out"),
        lambda: saved(addr(i)),
        lambda: g.update(s, alpha=3.0),
    ):
        with pytest.raises(cute_bind.CuteBindError) as info:
            misuse()
        assert info.value.code == "CB806"
    assert o.tobytes() == before.tobytes()


def test_a_graph_is_neither_copied_nor_pickled_and_stays_usable(replay_loop):
    """copy.copy shared the executable graph and its release: collecting the copy destroyed the original's
    driver objects while it still reported itself ready (CB804 INVALID_HANDLE at the next replay)."""
    import copy
    import gc
    import pickle

    handles = _chain_handles()
    g, steps = record(list(zip(handles, _chain_args(((0, 2.0, N), (1.0, N), (1.0, N))))))
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(cute_bind.CuteBindError) as info:
            attempt(g)
        assert info.value.code == "CB806" and "cannot be" in str(info.value)
    gc.collect()
    g.replay({steps[0]: {"alpha": 3.0}})  # the original is whole
    assert np.array_equal(OUTS[0], INS[0] * np.float32(3.0))
    # a step names a recorded launch: its copy is the step itself; pickling it means nothing elsewhere
    assert copy.copy(steps[0]) is steps[0] and copy.deepcopy(steps[0]) is steps[0]
    with pytest.raises(cute_bind.CuteBindError) as info:
        pickle.dumps(steps[0])
    assert info.value.code == "CB806"
    g.close()


def test_a_stream_is_not_an_updatable_parameter(replay_loop):
    """g.update(step, stream=s) and g.updater(step, "stream") were accepted and did nothing."""
    handles = _chain_handles()
    args = _chain_args(((0, 2.0, N), (1.0, N), (1.0, N)))
    g, steps = record(list(zip(handles, args)))
    for attempt in (
        lambda: g.update(steps[0], stream=5),
        lambda: g.updater(steps[0], "stream"),
        lambda: g.replay({steps[0]: {"stream": 5}}),
    ):
        with pytest.raises(cute_bind.CuteBindError) as info:
            attempt()
        assert info.value.code == "CB806" and "replay's stream" in str(info.value)
    g.replay({steps[0]: args[0]})  # the whole argument list, its stream included, still replays
    g.close()


def test_misuse_of_an_empty_graph_does_not_name_a_kernel_graph():
    g = cute_bind.graph(0, driver=FAKE)
    with pytest.raises(cute_bind.CuteBindError) as info:
        g.replay()
    assert "kernel 'graph'" not in str(info.value) and "none recorded yet" in str(info.value)
    g.close()


# ------------------------------------------------------------------ issue 39 row 2: staged values are held
@pytest.mark.parametrize("door", ["update", "replay_by_name", "replay_whole", "updater"])
def test_a_value_staged_by_update_or_replay_lives_until_the_next_update(door, replay_loop):
    """An array given to g.update(...), g.replay({step: {...}}) or an updater, then dropped by the
    caller, stays alive while the nodes hold its address (before: freed, the next replay read it)."""
    import gc
    import weakref

    handles = _chain_handles()
    g, steps = record(list(zip(handles, _chain_args(((0, 2.0, N), (1.0, N), (1.0, N))))))
    temp = INS[3].copy()
    gone = weakref.ref(temp)
    if door == "update":
        g.update(steps[0], inp=temp)
    elif door == "replay_by_name":
        g.replay({steps[0]: {"inp": temp}})
    elif door == "replay_whole":
        g.replay({steps[0]: (addr(OUTS[0]), temp, 2.0, N, 0)})
    else:
        g.updater(steps[0], "inp")(temp)
    del temp
    gc.collect()
    assert gone() is not None  # held by the graph
    g.replay()
    assert np.array_equal(OUTS[0], INS[3] * np.float32(2.0))
    g.update(steps[0], inp=addr(INS[1]))  # replaced: let go
    gc.collect()
    assert gone() is None
    g.close()


def test_a_batched_updater_reads_a_snapshot_of_a_list_a_setter_changes(setter_path):
    """A value's conversion that empties the value list no longer raises a plain RuntimeError: the
    batch reads the list as given (issue 39 row 15)."""
    o, i, other, i2 = arr(370), arr(371), arr(372), arr(373)
    h = bind(K.scale, addr(o), addr(i), 2.0, N, 0)
    g, (s,) = record([(h, (addr(o), addr(i), 2.0, N, 0))])
    set_both = g.updaters([(s, "out"), (s, "inp")])

    class Shrinks:
        """An array-like whose address is read through the checked path, which empties the list."""

        def __init__(self, a):
            self.a = a

        @property
        def __array_interface__(self):
            values.clear()
            return self.a.__array_interface__

    values = [Shrinks(other), addr(i2)]
    set_both(values)
    g.replay()
    assert np.array_equal(other, i2 * np.float32(2.0))  # both values of the call staged
    g.close()
