"""kernel(*args): specialization per call, a handle per key and thread, the left-out stream, counts and limits.

Host-only functions run on the CPU, so every call really launches and writes
memory; each result is compared with NumPy/torch arithmetic or with the DSL's
own call (``Kernel.call_dsl``). Every test runs on the C call path (the
kernel's ``CallBase`` base) and on the Python one (``Kernel._python_call``).
"""

from __future__ import annotations

import ctypes
import logging
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cute_bind
from cute_bind.jit import dispatch as dispatch_mod
from tests.child import child_env
from tests.kernels.host import (
    add_constexpr_stream,
    fill_kwonly,
    scale,
    scale_ptr,
    scale_stream_default,
    tscale,
    tscale_stream_default,
    with_constexpr,
    with_default,
)
from tests.optional import torch_or_skip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["c", "python"])
def make(request):
    """A kernel factory on the C call path or on the Python one."""
    if request.param == "c":
        if dispatch_mod.call_path() != "c":
            pytest.skip("the C call path is not built")
        return cute_bind.kernel

    cls = cute_bind.Kernel
    if dispatch_mod.call_path() == "c":

        class PyCallKernel(cute_bind.Kernel):  # type: ignore[type-arg]
            __call__ = cute_bind.Kernel._python_call  # type: ignore[attr-defined]

        cls = PyCallKernel

    def factory(fn=None, /, **options):
        if fn is None:
            return lambda f: cls(f, **options)
        return cls(fn, **options)

    return factory


def _f32(n=64, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _counts(k):
    info = k.cache_info()
    return info["hits"], info["misses"], info["specializations"]


# ------------------------------------------------------------------ results and counts
def test_pointer_calls_launch_and_count(make):
    k = make(scale)
    x, y = _f32(), np.zeros(64, np.float32)
    for step, alpha in enumerate((2.0, 3.0, -1.5, 0.25)):
        k(y.ctypes.data, x.ctypes.data, alpha, 64 - step, 0)
        expected = x[: 64 - step] * np.float32(alpha)
        assert y[: 64 - step].tobytes() == expected.tobytes()
    assert _counts(k) == (3, 1, 1)
    assert k.cache_info()["compiled"] == 1


def test_call_matches_the_dsl_call_bitwise(make):
    k = make(scale)
    x = _f32(seed=1)
    y_call, y_dsl = np.full(64, np.nan, np.float32), np.full(64, np.nan, np.float32)
    k(y_call, x, 1.7, 50, 0)
    k.call_dsl(y_dsl, x, 1.7, 50, 0)
    assert y_call.tobytes() == y_dsl.tobytes()


@pytest.mark.parametrize(
    "dtypes, misses",
    [
        ((np.float32,), 1),
        ((np.float32, np.float64), 2),
        ((np.float32, np.float64, np.float32, np.float64, np.float32), 2),
        ((np.float64, np.float64, np.float32), 2),
    ],
)
def test_a_new_pointer_dtype_specializes_once(make, dtypes, misses):
    k = make(scale_ptr)
    for i, dt in enumerate(dtypes):
        x = np.arange(64).astype(dt)
        y = np.zeros(64, dt)
        k(y, x, 2.0, 64, 0)
        assert np.array_equal(y, (x * 2).astype(dt)), (i, dt)
    hits, got_misses, specs = _counts(k)
    assert (got_misses, specs, hits) == (misses, misses, len(dtypes) - misses)


def test_recompile_reason_names_parameter_and_values(make, caplog):
    k = make(scale_ptr)
    caplog.set_level(logging.INFO, logger="cute_bind.jit.dispatch")
    k(np.zeros(64, np.float32), np.ones(64, np.float32), 1.0, 64, 0)
    k(np.zeros(64, np.float64), np.ones(64, np.float64), 1.0, 64, 0)
    first, second = k.specializations()
    assert first.reason == "first call" and first.index == 1 and first.source in ("compiled", "disk")
    assert "parameter 'inp'" in second.reason and "parameter 'out'" in second.reason
    assert "Float32" in second.reason and "Float64" in second.reason
    assert second.reason.index("Float32") < second.reason.index("Float64")  # from -> to
    logged = [r.getMessage() for r in caplog.records if r.name == "cute_bind.jit.dispatch"]
    assert len(logged) == 2 and second.reason in logged[1] and "specialization #2" in logged[1]


def test_constexpr_values_specialize_and_are_checked(make):
    k = make(with_constexpr)
    buf = (ctypes.c_int32 * 1)()
    addr = ctypes.addressof(buf)
    for value, offset in [(1, 0), (1, 5), (2, 0), (7, 5), (7, 5), (3, 0)]:
        k(addr, value, offset)
        assert buf[0] == value + offset
    assert _counts(k) == (4, 2, 2)
    assert "parameter 'offset': 0 -> 5" in k.specializations()[1].reason
    # a Constexpr of another type is another key (True == 1, but not the same compile)
    k(addr, 1, True)
    assert k.cache_info()["specializations"] == 3


def test_defaults_and_keywords(make):
    k = make(with_default)
    buf = (ctypes.c_int32 * 1)()
    addr = ctypes.addressof(buf)
    for args, kwargs, expected in [
        ((addr, 1), {}, 6),
        ((addr, 1, 2), {}, 3),
        ((addr,), {"value": 4}, 9),
        ((), {"out": addr, "value": 4, "extra": 0}, 4),
    ]:
        k(*args, **kwargs)
        assert buf[0] == expected
    assert k.cache_info()["specializations"] == 1
    kw = make(fill_kwonly)
    kw(addr, value=11)
    assert buf[0] == 11
    kw(addr, value=12)
    assert buf[0] == 12 and _counts(kw) == (1, 1, 1)


@pytest.mark.parametrize(
    "call, code",
    [
        (lambda k, y, x: k("nope", x, 1.0, 64, 0), "CB204"),
        (lambda k, y, x: k(y, x, 1.0, 2**40, 0), "CB205"),
        (lambda k, y, x: k(y, x, 1.0, 64), "CB201"),
        (lambda k, y, x: k(y, x, 1.0, 64, 0, 9), "CB202"),
        (lambda k, y, x: k(y, x, 1.0, 64, 0, alpha=1.0), "CB203"),
        (lambda k, y, x: k(y, x.astype(np.float64), 1.0, 64, 0), "CB210"),
    ],
)
def test_bad_calls_raise_catalog_errors_after_a_good_one(make, call, code):
    k = make(scale)
    x, y = _f32(), np.zeros(64, np.float32)
    k(y, x, 1.0, 64, 0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        call(k, y, x)
    assert info.value.code == code, str(info.value)
    k(y, x, 3.0, 64, 0)  # the kernel still works after the error
    assert y.tobytes() == (x * np.float32(3.0)).tobytes()


# ------------------------------------------------------------------ tensors
def test_tensor_calls_new_extents_do_not_specialize(make):
    torch = torch_or_skip()
    k = make(tscale)
    for n in (64, 17, 1000, 3):
        x = torch.randn(n)
        y = torch.empty(n)
        k(y, x, 2.5)
        assert torch.equal(y, x * 2.5)
    assert _counts(k) == (3, 1, 1)
    x64 = torch.randn(8, dtype=torch.float64)
    y64 = torch.empty(8, dtype=torch.float64)
    k(y64, x64, 2.0)
    assert torch.equal(y64, x64 * 2) and k.cache_info()["specializations"] == 2
    assert "Float64" in k.specializations()[1].reason
    # a strided view has no unit stride: another layout, so another specialization or a catalog error
    try:
        k(torch.empty(8), torch.randn(16)[::2], 1.0)
    except cute_bind.CuteBindError as exc:
        assert exc.code.startswith("CB2")


def test_tensor_call_with_numpy_arrays(make):
    k = make(tscale)
    x = _f32(33)
    y = np.zeros(33, np.float32)
    k(y, x, 2.0)
    assert y.tobytes() == (x * np.float32(2.0)).tobytes()


# ------------------------------------------------------------------ streams
def test_left_out_stream_is_the_default_stream_without_cuda(make):
    k = make(scale_stream_default)
    x, y = _f32(), np.zeros(64, np.float32)
    k(y, x, 2.0, 64)  # stream left out
    assert y.tobytes() == (x * np.float32(2.0)).tobytes()
    k(y, x, 3.0, 64, None)  # None: the same
    assert y.tobytes() == (x * np.float32(3.0)).tobytes()
    k(y, x, 4.0, 64, 0)  # given
    assert y.tobytes() == (x * np.float32(4.0)).tobytes()
    assert _counts(k) == (2, 1, 1)
    assert dispatch_mod.current_stream(None) == 0


class _FakeTorchStreams:
    def __init__(self, stream: int) -> None:
        self.stream = stream
        self.devices: list[int] = []

    def raw(self, device: int) -> int:
        self.devices.append(device)
        return self.stream

    def device(self) -> int:
        return 3


@pytest.mark.parametrize("kernel_fn, args", [(scale_stream_default, "pointers"), (add_constexpr_stream, "constexpr")])
def test_left_out_stream_is_torchs_current_stream(make, monkeypatch, kernel_fn, args):
    fake = _FakeTorchStreams(0xABC0)
    monkeypatch.setattr(dispatch_mod._TORCH, "raw", fake.raw)
    monkeypatch.setattr(dispatch_mod._TORCH, "device", fake.device)
    k = make(kernel_fn)
    if args == "pointers":
        x, y = _f32(), np.zeros(64, np.float32)
        call = lambda: k(y, x, 2.0, 64)  # noqa: E731
    else:
        buf = (ctypes.c_int32 * 1)()
        call = lambda: k(ctypes.addressof(buf), 1, 2)  # noqa: E731
    for _ in range(3):
        call()
    # the thread's handle holds the stream of the last launch: torch's current stream
    ((launch, caller, handle, fill),) = k._calls.local.handles.values()
    assert int.from_bytes(handle.slot_bytes("stream"), sys.byteorder) == 0xABC0
    assert fake.devices == [3, 3, 3]  # no tensor slot: torch's current device


def test_left_out_stream_uses_the_tensor_device(make, monkeypatch):
    torch = torch_or_skip()
    fake = _FakeTorchStreams(0x5150)
    monkeypatch.setattr(dispatch_mod._TORCH, "raw", fake.raw)
    monkeypatch.setattr(dispatch_mod._TORCH, "device", fake.device)
    k = make(tscale_stream_default)
    x = torch.randn(16)
    y = torch.empty(16)
    k(y, x, 2.0)
    assert torch.equal(y, x * 2)
    assert fake.devices == [3]  # CPU tensors are on no CUDA device: torch's current device


def test_torch_failing_to_give_the_stream_is_cb221(make, monkeypatch):
    def broken(device: int) -> int:
        raise RuntimeError("invalid device ordinal")

    monkeypatch.setattr(dispatch_mod._TORCH, "raw", broken)
    monkeypatch.setattr(dispatch_mod._TORCH, "device", lambda: 7)
    k = make(scale_stream_default)
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        k(np.zeros(64, np.float32), _f32(), 2.0, 64)
    assert info.value.code == "CB221" and "invalid device ordinal" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_bind_with_a_none_default_stream_needs_the_stream_at_launch():
    k = cute_bind.kernel(scale_stream_default)
    x, y = _f32(), np.zeros(64, np.float32)
    handle = k.bind(y, x, 2.0, 64)  # the stream left out at bind: compiled all the same
    handle.launch(y.ctypes.data, x.ctypes.data, 3.0, 64, 0)
    assert y.tobytes() == (x * np.float32(3.0)).tobytes()
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        handle.launch(y.ctypes.data, x.ctypes.data, 3.0, 64)
    assert info.value.code == "CB201"


# ------------------------------------------------------------------ limits and options
def test_limit_raises_cb601(make):
    k = make(with_constexpr, max_specializations=2)
    buf = (ctypes.c_int32 * 1)()
    addr = ctypes.addressof(buf)
    k(addr, 1, 0)
    k(addr, 1, 1)
    with pytest.raises(cute_bind.SpecializationError) as info:
        k(addr, 1, 2)
    assert info.value.code == "CB601" and "offset" in str(info.value) and "1 -> 2" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    k(addr, 1, 0)  # known keys still run
    assert buf[0] == 1 and k.cache_info()["specializations"] == 2


def test_limit_warns_cb602(make):
    k = make(with_constexpr, max_specializations=1, on_limit="warn")
    buf = (ctypes.c_int32 * 1)()
    addr = ctypes.addressof(buf)
    k(addr, 1, 0)
    with pytest.warns(cute_bind.SpecializationWarning) as record:
        k(addr, 1, 4)
    assert buf[0] == 5
    assert record[0].message.code == "CB602"  # type: ignore[union-attr]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k(addr, 1, 4)  # known: no warning


@pytest.mark.parametrize(
    "options, parameter",
    [
        ({"max_specializations": 0}, "max_specializations"),
        ({"max_specializations": True}, "max_specializations"),
        ({"max_specializations": "8"}, "max_specializations"),
        ({"on_limit": "ignore"}, "on_limit"),
        ({"on_limit": 1}, "on_limit"),
    ],
)
def test_invalid_dispatch_options_are_cb110(options, parameter):
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(**options)(scale)
    assert info.value.code == "CB110" and info.value.parameter == parameter


def test_no_limit(make):
    k = make(with_constexpr, max_specializations=None)
    buf = (ctypes.c_int32 * 1)()
    for offset in range(10):
        k(ctypes.addressof(buf), 0, offset)
        assert buf[0] == offset
    assert k.cache_info()["max_specializations"] is None and k.cache_info()["specializations"] == 10


def test_clear_cache_resets_calls(make):
    k = make(scale)
    x, y = _f32(), np.zeros(64, np.float32)
    k(y, x, 1.0, 64, 0)
    k(y, x, 1.0, 64, 0)
    k.clear_cache()
    assert _counts(k) == (0, 0, 0) and k.specializations() == ()
    k(y, x, 5.0, 64, 0)
    assert y.tobytes() == (x * np.float32(5.0)).tobytes() and _counts(k) == (0, 1, 1)


def test_a_miss_with_a_cached_compile_is_not_a_cold_compile(make):
    k = make(scale)
    x, y = _f32(), np.zeros(64, np.float32)
    k.bind(y, x, 1.0, 64, 0)  # compiles
    k(y, x, 1.0, 64, 0)
    (spec,) = k.specializations()
    assert spec.compiled is False and k.cache_info()["misses"] == 1


def test_checked_kernels_call_through_checked_handles(make):
    k = make(scale, checked=True)
    x, y = _f32(), np.zeros(64, np.float32)
    k(y, x, 2.0, 64, 0)
    assert y.tobytes() == (x * np.float32(2.0)).tobytes()
    with pytest.raises(cute_bind.LaunchValueError) as info:
        k(y.ctypes.data + 1, x, 2.0, 64, 0)  # checked mode: a misaligned raw address
    assert info.value.code == "CB207"


# ------------------------------------------------------------------ threads
def test_concurrent_first_calls_compile_once_and_use_one_handle_per_thread(make, monkeypatch):
    k = make(scale)
    compiles = []
    original = k.compiler.compiled

    def counting(binding):
        if not k.compiler.holds(binding.key):
            compiles.append(binding.key)
        return original(binding)

    monkeypatch.setattr(k.compiler, "compiled", counting)
    n_threads = 6
    barrier = threading.Barrier(n_threads)
    handles: dict[int, int] = {}
    errors: list[BaseException] = []
    x = _f32(seed=3)

    def work(i: int) -> None:
        try:
            y = np.zeros(64, np.float32)
            barrier.wait()
            for step in range(20):
                k(y, x, float(i + step), 64, 0)
                assert y.tobytes() == (x * np.float32(i + step)).tobytes()
            ((_, _, handle, _),) = k._calls.local.handles.values()
            handles[i] = id(handle)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(compiles) == 1
    assert len(set(handles.values())) == n_threads  # one handle per thread
    hits, misses, specs = _counts(k)
    assert (misses, specs, hits) == (1, 1, n_threads * 20 - 1)


# ------------------------------------------------------------------ property: counts and results
@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["f32", "f64"]), st.integers(1, 64), st.floats(-4, 4, width=32)), min_size=1, max_size=12))
def test_counts_and_results_for_any_call_sequence(calls):
    k = cute_bind.kernel(scale_ptr)
    dtypes = {"f32": np.float32, "f64": np.float64}
    for name, n, alpha in calls:
        dt = dtypes[name]
        x = np.arange(64).astype(dt)
        y = np.zeros(64, dt)
        k(y, x, alpha, n, 0)
        assert np.array_equal(y[:n], x[:n] * dt(np.float32(alpha))), (name, n, alpha)
        assert not y[n:].any()
    distinct = len({name for name, _, _ in calls})
    assert _counts(k) == (len(calls) - distinct, distinct, distinct)


# ------------------------------------------------------------------ the Python call path in a process of its own
def test_pure_python_process_uses_the_python_call_path():
    script = (
        "import numpy as np, cute_bind\n"
        "from cute_bind.jit import dispatch\n"
        "from tests.kernels.host import scale\n"
        "assert dispatch.call_path() == 'python'\n"
        "k = cute_bind.kernel(scale)\n"
        "x = np.arange(64, dtype=np.float32); y = np.zeros(64, np.float32)\n"
        "for a in (1.0, 2.0, 3.0): k(y, x, a, 64, 0)\n"
        "assert np.array_equal(y, x * 3) and k.cache_info()['hits'] == 2, k.cache_info()\n"
        "print('ok')\n"
    )
    env = child_env(CUTE_BIND_PURE_PYTHON="1", CUTE_DSL_ARCH="sm_90a", PATH="/usr/bin:/bin")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_alternating_keys_dispatch_directly_then_settle(make):
    k = make(scale_ptr)
    if k._calls._c:
        pytest.skip("the C call path switches keys through the thread's routes (test_alternating_keys_never_dispatch_on_the_c_path)")
    arrays = {dt: (np.arange(64).astype(dt), np.zeros(64, dt)) for dt in (np.float32, np.float64)}
    for step in range(12):
        dt = (np.float32, np.float64)[step % 2]
        x, y = arrays[dt]
        k(y, x, float(step), 64, 0)
        assert np.array_equal(y, x * dt(step))
    assert k._calls.local.switches >= dispatch_mod._SWITCHING  # alternating: each call dispatches at once
    x, y = arrays[np.float32]
    for step in range(dispatch_mod._SETTLED + 2):
        k(y, x, 1.5, 64, 0)
    assert k._calls.local.switches == 0  # settled: back on the fast path
    assert np.array_equal(y, x * np.float32(1.5))
    hits, misses, specs = _counts(k)
    assert (misses, specs, hits) == (2, 2, 12 + dispatch_mod._SETTLED + 2 - 2)


# ------------------------------------------------------------------ issue 24 section 3: key switches in C
def _counting_dispatch(monkeypatch):
    """Every call of the dispatch path and of a handle's slow path (patched before the kernel is made)."""
    from cute_bind.launch import prepared as prepared_mod

    calls = {"dispatch": 0, "slow": 0}
    dispatch, slow = dispatch_mod.Dispatcher.dispatch, prepared_mod.PreparedLaunch._slow

    def counted_dispatch(self, *args, **kwargs):
        calls["dispatch"] += 1
        return dispatch(self, *args, **kwargs)

    def counted_slow(self, *args, **kwargs):
        calls["slow"] += 1
        return slow(self, *args, **kwargs)

    monkeypatch.setattr(dispatch_mod.Dispatcher, "dispatch", counted_dispatch)
    monkeypatch.setattr(prepared_mod.PreparedLaunch, "_slow", counted_slow)
    return calls


@pytest.mark.parametrize(
    "kernel_name,calls",
    [
        # float32 and float64 pointers alternating (arrays on the pointer slots)
        ("scale_ptr", lambda a: [((a["y32"], a["x32"], 2.0, 64, 0), "y32"), ((a["y64"], a["x64"], 3.0, 64, 0), "y64")]),
        # two Constexpr values alternating
        ("with_constexpr", lambda a: [((a["p"], 1, 3), None), ((a["p"], 1, 4), None)]),
        # two Constexpr values with the stream left out
        ("add_constexpr_stream", lambda a: [((a["p"], 1, 3), None), ((a["p"], 1, 4), None)]),
    ],
    ids=["dtypes", "constexpr", "constexpr-stream-left-out"],
)
def test_alternating_keys_never_dispatch_on_the_c_path(monkeypatch, kernel_name, calls):
    """A thread switching between compiled keys finds each key's handle in C (its routes): after the
    first call of each key, no call reaches the dispatch path or a handle's slow path."""
    if dispatch_mod.call_path() != "c":
        pytest.skip("the C call path is not built")
    from tests.kernels import host

    counts = _counting_dispatch(monkeypatch)
    k = cute_bind.kernel(max_specializations=None)(getattr(host, kernel_name))
    out = np.zeros(4, np.int32)
    a = {"p": out.ctypes.data, "x32": _f32(), "y32": np.zeros(64, np.float32), "x64": _f32().astype(np.float64), "y64": np.zeros(64)}
    plan = calls(a)
    for args, _ in plan:  # each key once: compiled, prepared, a route for this thread
        k(*args)
    counts.update(dispatch=0, slow=0)
    for step in range(20):
        args, result = plan[step % 2]
        k(*args)
        if result is not None:
            assert np.array_equal(a[result], a["x" + result[1:]] * args[2])
    assert counts == {"dispatch": 0, "slow": 0}
    hits, misses, specs = _counts(k)
    assert (misses, specs) == (2, 2) and hits == 20


def test_routes_refuse_a_bad_value_with_the_handles_own_error(monkeypatch):
    """A value no route takes goes to the dispatch path, which raises the catalog error as before."""
    if dispatch_mod.call_path() != "c":
        pytest.skip("the C call path is not built")
    from tests.kernels.host import with_constexpr

    k = cute_bind.kernel(with_constexpr)
    out = np.zeros(4, np.int32)
    k(out.ctypes.data, 1, 3)
    k(out.ctypes.data, 2, 4)
    with pytest.raises(cute_bind.CuteBindError) as info:
        k(out.ctypes.data, 2.5, 4)
    assert info.value.code == "CB204"
    k(out.ctypes.data, 7, 3)
    assert out[0] == 10


def test_torch_lookup_runs_once_when_torch_is_not_imported(monkeypatch):
    """A left-out stream with torch installed but not imported is the default stream, found without
    a file-system search per call (it cost 50 us per kernel(...) call)."""
    from cute_bind.jit import streams as streams_mod  # where the left-out stream is found

    finder = streams_mod.importlib.util.find_spec
    seen = []

    def counting(name, *args):
        seen.append(name)
        return finder(name, *args)

    streams = dispatch_mod._TorchStreams()
    monkeypatch.setattr(streams_mod.importlib.util, "find_spec", counting)
    monkeypatch.setitem(streams_mod.sys.modules, "torch", None)
    monkeypatch.delitem(streams_mod.sys.modules, "torch")
    for _ in range(5):
        assert streams.find() is None
    assert seen.count("torch") <= 1


# ------------------------------------------------------------------ keywords: placed by name, no dispatch
# (kernel, first call, keyword calls: (args, kwargs, out[0] or None)); each keyword call is the
# positional call it stands for once placed by name, so it takes the thread's handle
KEYWORD_KERNELS = [
    ("two_defaults", ((0, 0), {}), [((), {"value": 3, "a": 4, "b": 5}, 345), ((3,), {"b": 7}, 317), ((), {"value": 6}, 612)]),
    ("with_constexpr", ((0, 1, 3), {}), [((), {"value": 2, "offset": 3}, 5), ((2,), {"offset": 3}, 5)]),
    ("add_constexpr_stream", ((0, 1, 3), {}), [((2,), {"offset": 3}, 5), ((), {"offset": 3, "value": 4, "stream": None}, 7)]),
    ("scale_stream_default", None, [((), {"inp": "x", "alpha": 2.0, "n": 64}, None), (("x", 3.0), {"n": 64, "stream": 0}, None)]),
    ("scale", None, [((), {"stream": 0, "n": 64, "alpha": 4.0, "inp": "x"}, None)]),
]


@pytest.mark.parametrize("kernel_name,first,calls", KEYWORD_KERNELS, ids=[k[0] for k in KEYWORD_KERNELS])
def test_keyword_calls_take_the_threads_handle(make, monkeypatch, kernel_name, first, calls):
    """kernel(...) with keywords: placed by parameter name, they take the routes and caller a positional
    call takes (they went to the dispatch path: 4.2-4.9 us per call on the CPU machine against 0.28)."""
    from tests.kernels import host

    counts = _counting_dispatch(monkeypatch)
    k = make(getattr(host, kernel_name))
    out = np.zeros(4, np.int32)
    x, y = _f32(), np.zeros(64, np.float32)

    def resolve(args, kwargs):
        if first is None:  # pointer kernels: out is the array y, "x" the input array
            args = tuple(x if a == "x" else a for a in args)
            kwargs = {n: (x if v == "x" else v) for n, v in kwargs.items()}
            return ((y, *args) if "out" not in kwargs else args), kwargs
        return (out.ctypes.data, *args), kwargs

    if first is None:
        k(y, x, 1.0, 64, 0)
    else:
        k(out.ctypes.data, *first[0][1:], **first[1])
    for args, kwargs, want in calls:  # a keyword call once: a route for this thread where it has none
        k(*resolve(args, kwargs)[0], **resolve(args, kwargs)[1])
    counts.update(dispatch=0, slow=0)
    hits = k.cache_info()["hits"]
    for _ in range(3):
        for args, kwargs, want in calls:
            y[:] = np.nan
            a, kw = resolve(args, kwargs)
            k(*a, **kw)
            if want is not None:
                assert out[0] == want, (args, kwargs)
            else:
                alpha = kw.get("alpha", a[2] if len(a) > 2 else None)
                assert np.array_equal(y, x * np.float32(alpha)), (args, kwargs)
    assert counts == {"dispatch": 0, "slow": 0}
    assert k.cache_info()["hits"] == hits + 3 * len(calls) and k.cache_info()["specializations"] == 1


@pytest.mark.parametrize(
    "kwargs, code, parameter",
    [
        ({"value": 1, "ofset": 3}, "CB202", "ofset"),  # misspelt: "did you mean 'offset'?"
        ({"value": 1, "offset": 3, "extra": 2}, "CB202", "extra"),
        ({"offset": 3}, "CB201", "value"),
        ({"value": "1", "offset": 3}, "CB204", "value"),
    ],
)
def test_keyword_calls_that_cannot_be_placed_raise_their_codes(make, kwargs, code, parameter):
    """What cannot be placed by name (or a value the handle refuses) goes to the dispatch path, which
    raises the catalog's code for the parameter."""
    k = make(with_constexpr)
    out = np.zeros(4, np.int32)
    k(out.ctypes.data, 1, 3)
    with pytest.raises(cute_bind.CuteBindError) as info:
        k(out.ctypes.data, **kwargs)
    assert (info.value.code, info.value.parameter) == (code, parameter), str(info.value)
    k(out.ctypes.data, value=5, offset=3)
    assert out[0] == 8


def test_keyword_calls_alternating_constexpr_values_never_dispatch(monkeypatch):
    """Two compiled keys alternating by keyword find their handles in C, as positional calls do."""
    if dispatch_mod.call_path() != "c":
        pytest.skip("the C call path is not built")
    counts = _counting_dispatch(monkeypatch)
    k = cute_bind.kernel(with_constexpr)
    out = np.zeros(4, np.int32)
    k(out.ctypes.data, value=1, offset=3)
    k(out.ctypes.data, value=1, offset=4)
    counts.update(dispatch=0, slow=0)
    for step in range(10):
        k(out.ctypes.data, value=step, offset=3 + step % 2)
        assert out[0] == step + 3 + step % 2
    assert counts == {"dispatch": 0, "slow": 0}


def test_a_kernel_with_keyword_only_parameters_binds_keyword_calls_on_the_dispatch_path(make):
    """Keyword-only parameters: a keyword call is not placed (the dispatch path binds it), as before."""
    k = make(fill_kwonly)
    out = np.zeros(4, np.int32)
    for v in (3, 4, 5):
        k(out.ctypes.data, value=v)
        assert out[0] == v
    with pytest.raises(cute_bind.CuteBindError) as info:
        k(out.ctypes.data, 3)
    assert info.value.code == "CB202"


@pytest.mark.parametrize("params", [(), ("a",), (("out",), "0", ()), ((1,), 0, ()), (("out",), 0, []), [("out",), 0, ()]])
def test_the_c_call_path_refuses_malformed_parameter_records(params):
    """``_set_params`` checks what it is given (it is read on every keyword call); None turns placement off."""
    if dispatch_mod.call_path() != "c":
        pytest.skip("the C call path is not built")
    k = cute_bind.kernel(with_default)
    with pytest.raises(TypeError, match="_set_params"):
        k._set_params(params)
    out = np.zeros(4, np.int32)
    k._set_params(None)  # keyword calls bind on the dispatch path: same results
    k(out.ctypes.data, value=4)
    assert out[0] == 9
    k._set_params((("out", "value", "extra"), 2, (5,)))
    k(out.ctypes.data, value=4, extra=1)
    assert out[0] == 5


_KERNELS: dict[str, object] = {}  # one kernel per call path, kept across the examples


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    npos=st.integers(0, 5),
    named=st.lists(st.sampled_from(("out", "value", "a", "b", "c")), max_size=5, unique=True),
    values=st.lists(st.integers(-9, 9), min_size=6, max_size=6),
)
def test_kernel_calls_with_any_mix_of_keywords_bind_as_python_does(make, request, npos, named, values):
    """kernel(...) with any mix of positionals and keywords writes what Python's own binding gives, or
    raises CB201/CB202/CB203 where that binding raises TypeError, on both call paths."""
    from tests.binding import binds_as_python_does
    from tests.kernels.host import two_defaults

    k = _KERNELS.setdefault(request.node.callspec.id, make(two_defaults))
    binds_as_python_does(k, npos, named, values)


def test_a_keyboard_interrupt_from_the_stream_getter_propagates_on_the_c_path():
    """The thread's caller appends a left-out stream from its getter: an Exception there goes to the
    dispatch path (CB221), a KeyboardInterrupt propagates as it does on the routes."""
    if dispatch_mod.call_path() != "c":
        pytest.skip("the C call path is not built")
    k = cute_bind.kernel(scale_stream_default)
    y, x = np.zeros(64, np.float32), _f32()
    k(y, x, 2.0, 64)
    h = k.bind(y, x, 2.0, 64, 0)

    def interrupted():
        raise KeyboardInterrupt

    k._set_routes(None)
    k._set_call(h.launch, 4, interrupted)
    with pytest.raises(KeyboardInterrupt):
        k(y, x, 3.0, 64)
    k._set_call(h.launch, 4, lambda: 0)
    k(y, x, 3.0, 64)
    assert np.array_equal(y, x * np.float32(3.0))
