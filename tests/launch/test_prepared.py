"""PreparedLaunch end to end on host-only functions: real outputs, errors, lifetime, threads, memory."""

import ctypes
import gc
import threading

import cutlass
import numpy as np
import pytest
from cutlass.cute.runtime import make_ptr

import cute_bind
from cute_bind import dsl
from tests.kernels.host import fill_i32, scale, with_constexpr, with_default

SCALE = cute_bind.kernel(scale)


def arrays(seed=0):
    x = np.random.default_rng(seed).standard_normal(64).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    return x, y


def test_launch_matches_direct_call_outputs():
    x, y = arrays()
    h = SCALE.bind(y, x, 1.0, 64, 0)
    for seed, alpha, n in [(1, 2.0, 64), (2, -0.5, 17), (3, 3.25, 1), (4, 0.0, 0)]:
        x[:] = np.random.default_rng(seed).standard_normal(64).astype(np.float32)
        y_direct = np.full(64, np.nan, np.float32)
        SCALE.call_dsl(y_direct, x, alpha, n, 0)
        y.fill(np.nan)
        assert h.launch(y.ctypes.data, x.ctypes.data, alpha, n, 0) == 0  # same return contract as the compiled call
        assert y.tobytes() == y_direct.tobytes()


@pytest.mark.parametrize(
    "form",
    [
        lambda a: a.ctypes.data,
        lambda a: a,
        lambda a: make_ptr(cutlass.Float32, a.ctypes.data),
        lambda a: ctypes.c_void_p(a.ctypes.data),
        lambda a: np.uint64(a.ctypes.data),
    ],
    ids=["int", "ndarray", "make_ptr", "c_void_p", "np.uint64"],
)
def test_pointer_value_forms(form):
    x, y = arrays(5)
    h = SCALE.bind(y, x, 1.0, 64, 0)
    h.launch(form(y), form(x), 2.0, 64, 0)
    assert np.array_equal(y, x * np.float32(2.0))


def test_keywords_and_mixed():
    x, y = arrays(6)
    h = SCALE.bind(y, x, 1.0, 64, 0)
    h.launch(y, x, n=64, alpha=3.0, stream=0)
    assert np.array_equal(y, x * np.float32(3.0))
    h.launch(out=y, inp=x, alpha=4.0, n=64, stream=0)
    assert np.array_equal(y, x * np.float32(4.0))


def test_runtime_default_used_and_overridden():
    out = np.zeros(1, np.int32)
    k = cute_bind.kernel(with_default)
    h = k.bind(out, 1)
    h.launch(out, 10)
    assert out[0] == 15
    h.launch(out, 10, 7)
    assert out[0] == 17
    h.launch(out, 10, extra=1)
    assert out[0] == 11


def test_constexpr_fixed_at_bind_and_cached():
    out = np.zeros(1, np.int32)
    k = cute_bind.kernel(with_constexpr)
    h100 = k.bind(out, 1, 100)
    h7 = k.bind(out, 1, 7)
    again = k.bind(out, 2, 100)
    assert k.cache_info()["compiled"] == 2
    assert again.compiled is h100.compiled
    h100.launch(out, 5)
    assert out[0] == 105
    h7.launch(out, 5)
    assert out[0] == 12
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        h7.launch(out, 5, offset=3)
    assert info.value.code == "CB202" and "Constexpr" in str(info.value)


# ------------------------------------------------------------------ argument errors, nothing corrupted
ERRORS = [
    ("missing", lambda h, y, x: h.launch(y, x, 2.0, 64), "CB201", "stream"),
    ("missing-kw", lambda h, y, x: h.launch(y, x, alpha=2.0, stream=0), "CB201", "n"),
    ("extra", lambda h, y, x: h.launch(y, x, 2.0, 64, 0, 1), "CB202", "#6"),
    ("unknown-kw", lambda h, y, x: h.launch(y, x, 2.0, 64, 0, bogus=1), "CB202", "bogus"),
    ("duplicate", lambda h, y, x: h.launch(y, x, 2.0, 64, 0, n=3), "CB203", "n"),
    ("float-for-int", lambda h, y, x: h.launch(y, x, 2.0, 64.0, 0), "CB204", "n"),
    ("str-for-float", lambda h, y, x: h.launch(y, x, "2", 64, 0), "CB204", "alpha"),
    ("bool-for-pointer", lambda h, y, x: h.launch(True, x, 2.0, 64, 0), "CB204", "out"),
    ("float-for-stream", lambda h, y, x: h.launch(y, x, 2.0, 64, 0.0), "CB204", "stream"),
    ("out-of-range", lambda h, y, x: h.launch(y, x, 2.0, 2**31, 0), "CB205", "n"),
    ("negative-address", lambda h, y, x: h.launch(-64, x, 2.0, 64, 0), "CB206", "out"),
    ("huge-address", lambda h, y, x: h.launch(2**64, x, 2.0, 64, 0), "CB206", "out"),
    ("dtype-mismatch", lambda h, y, x: h.launch(y.view(np.int32), x, 2.0, 64, 0), "CB210", "out"),
    ("make_ptr-mismatch", lambda h, y, x: h.launch(make_ptr(cutlass.Int32, y.ctypes.data), x, 2.0, 64, 0), "CB210", "out"),
]


@pytest.mark.parametrize("name, call, code, param", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_input_typed_error_and_handle_still_correct(name, call, code, param):
    x, y = arrays(7)
    h = SCALE.bind(y, x, 1.0, 64, 0)
    y.fill(np.nan)
    with pytest.raises(cute_bind.PreparedLaunchError) as info:
        call(h, y, x)
    err = info.value
    assert (err.code, err.kernel, err.parameter) == (code, "scale", param)
    assert np.isnan(y).all(), "a rejected launch must not run"
    h.launch(y.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    assert np.array_equal(y, x * np.float32(2.0))


def test_checked_mode_alignment_of_raw_addresses():
    buf = (ctypes.c_int32 * 8)()
    base = (ctypes.addressof(buf) + 15) // 16 * 16
    k = cute_bind.kernel(fill_i32)
    h = k.bind(base, 1)
    h.launch(base + 4, 2)  # default mode: raw ints are not alignment-checked (documented)
    checked = h.with_checks()
    assert checked.checked
    with pytest.raises(cute_bind.LaunchValueError) as info:
        checked.launch(base + 4, 3)
    assert info.value.code == "CB207"
    checked.launch(base, 9)
    assert buf[(base - ctypes.addressof(buf)) // 4] == 9


def test_checked_env_var(monkeypatch):
    monkeypatch.setenv("CUTE_BIND_CHECKED", "1")
    x, y = arrays()
    assert SCALE.bind(y, x, 1.0, 64, 0).checked


def test_bind_time_misaligned_pointer():
    buf = (ctypes.c_int32 * 8)()
    base = (ctypes.addressof(buf) + 15) // 16 * 16
    with pytest.raises(cute_bind.LaunchValueError) as info:
        cute_bind.kernel(fill_i32).bind(base + 4, 1)
    assert info.value.code == "CB207"


# ------------------------------------------------------------------ lifetime
def test_unload_then_launch_raises_and_recompile_needs_new_handle():
    x, y = arrays(8)
    k = cute_bind.kernel(scale)
    h = k.bind(y, x, 1.0, 64, 0)
    saved = h.launch  # a reference kept by a hot loop must also see the unload
    old = h.compiled
    dsl.unload(old)
    for fn in (h.launch, saved):
        with pytest.raises(cute_bind.LaunchRuntimeError) as info:
            fn(y.ctypes.data, x.ctypes.data, 2.0, 64, 0)
        assert info.value.code == "CB402"
    k.clear_cache()
    fresh = k.bind(y, x, 1.0, 64, 0)
    assert fresh.compiled is not old and h.state is cute_bind.launch.HandleState.UNLOADED
    fresh.launch(y.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    assert np.array_equal(y, x * np.float32(2.0))


def test_handle_pins_module():
    x, y = arrays(9)
    k = cute_bind.kernel(scale)
    h = k.bind(y, x, 1.0, 64, 0)
    k.clear_cache()
    gc.collect()
    h.launch(y.ctypes.data, x.ctypes.data, 5.0, 64, 0)  # compiled function dropped by the kernel, kept by the handle
    assert np.array_equal(y, x * np.float32(5.0))


def test_close():
    x, y = arrays()
    with SCALE.bind(y, x, 1.0, 64, 0) as h:
        h.launch(y, x, 1.0, 64, 0)
    assert h.closed
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        h.launch(y, x, 1.0, 64, 0)
    assert info.value.code == "CB404"


def test_clone_has_own_storage():
    x, y = arrays(10)
    h = SCALE.bind(y, x, 1.0, 64, 0)
    c = h.clone()
    assert c.compiled is h.compiled
    c.launch(y.ctypes.data, x.ctypes.data, 6.0, 64, 0)
    assert h.slot_bytes("alpha") != c.slot_bytes("alpha")
    assert np.array_equal(y, x * np.float32(6.0))


# ------------------------------------------------------------------ threads
def test_sequential_handoff_between_threads():
    x, y = arrays(11)
    h = SCALE.bind(y, x, 1.0, 64, 0)
    results = []

    def work(alpha):
        h.launch(y.ctypes.data, x.ctypes.data, alpha, 64, 0)
        results.append(np.array_equal(y, x * np.float32(alpha)))

    for alpha in (1.5, 2.5, 3.5):
        t = threading.Thread(target=work, args=(alpha,))
        t.start()
        t.join()
    assert results == [True, True, True]


def test_concurrent_threads_with_own_handles():
    n_threads, iters = 4, 300
    k = cute_bind.kernel(scale)
    x0, y0 = arrays()
    base = k.bind(y0, x0, 1.0, 64, 0)
    failures = []
    barrier = threading.Barrier(n_threads)

    def work(tid):
        h = base.clone()
        x = np.random.default_rng(tid).standard_normal(64).astype(np.float32)
        y = np.zeros(64, np.float32)
        barrier.wait()
        for i in range(iters):
            alpha = float(tid * 1000 + i)
            h.launch(y.ctypes.data, x.ctypes.data, alpha, 64, 0)
            if not np.array_equal(y, x * np.float32(alpha)):
                failures.append((tid, i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def _patch_entry(monkeypatch, body):
    """Route the handle's entry-point call through a C-callable Python function (keeps everything else real)."""
    fake = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(body)
    real = dsl.entry_point

    def patched(compiled, kernel=None):
        e = real(compiled, kernel)
        return dsl.EntryPoint(ctypes.cast(fake, ctypes.c_void_p).value, e.result_ctype, e.extra_pointers, e.module, (e.keepalive, fake))

    monkeypatch.setattr(dsl, "entry_point", patched)


def test_checked_mode_detects_concurrent_use_of_one_handle(monkeypatch):
    inside, release = threading.Event(), threading.Event()

    def slow_entry(argv):  # stands in for a long launch: the first caller stays inside
        if not inside.is_set():
            inside.set()
            release.wait(10)

    _patch_entry(monkeypatch, slow_entry)
    x, y = arrays()
    h = cute_bind.kernel(scale).bind(y, x, 1.0, 64, 0).with_checks()
    t = threading.Thread(target=h.launch, args=(y, x, 1.0, 64, 0), name="first-launcher")
    t.start()
    assert inside.wait(10)
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        h.launch(y, x, 1.0, 64, 0)
    release.set()
    t.join()
    assert info.value.code == "CB403" and "first-launcher" in str(info.value)
    h.launch(y, x, 1.0, 64, 0)  # once the first launch returned, the handle is free again


# ------------------------------------------------------------------ failure paths that need a GPU or a broken DSL, forced here
def test_cuda_error_raised_from_result_slot(monkeypatch):
    """The result slot the entry point writes is checked on every launch (CB401)."""
    x, y = arrays()
    writes = []

    def fake_entry(argv):
        slots = ctypes.cast(argv, ctypes.POINTER(ctypes.c_void_p))
        ctypes.c_int32.from_address(slots[5]).value = 700  # cudaErrorIllegalAddress
        writes.append(1)

    _patch_entry(monkeypatch, fake_entry)
    h = cute_bind.kernel(scale).bind(y, x, 1.0, 64, 0)
    with pytest.raises(cute_bind.CudaLaunchError) as info:
        h.launch(y.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    err = info.value
    assert err.code == "CB401" and err.cuda_error == 700 and "IllegalAddress" in err.cuda_error_name
    assert isinstance(err, RuntimeError) and writes == [1]


def test_snapshot_mismatch_detected(monkeypatch):
    """If cute_bind's packing of a kind ever differed from the DSL's bytes, bind refuses (CB305)."""
    from cute_bind import _whitelist as W

    monkeypatch.setitem(W.SCALAR_FORMATS, "Int32", "f")  # float bits for an Int32 slot
    k = cute_bind.kernel(scale)
    x, y = arrays()
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        k.bind(y, x, 1.0, 5, 0)
    assert (info.value.code, info.value.parameter) == ("CB305", "n")


def test_marshalling_shape_checked(monkeypatch):
    real = dsl.marshal
    monkeypatch.setattr(dsl, "marshal", lambda c, a, k: (lambda r: (r[0] + [r[0][-1]], r[1]))(real(c, a, k)))
    x, y = arrays()
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        cute_bind.kernel(scale).bind(y, x, 1.0, 64, 0)
    assert info.value.code == "CB302"


def test_workspace_arguments_refused(monkeypatch):
    monkeypatch.setattr(dsl, "workspace_argument_count", lambda c: 2)
    x, y = arrays()
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.kernel(scale).bind(y, x, 1.0, 64, 0)
    assert info.value.code == "CB303"


# ------------------------------------------------------------------ memory
def test_rss_flat_over_a_million_launches():
    import psutil

    x, y = arrays(12)
    h = SCALE.bind(y, x, 1.0, 4, 0)
    launch = h.launch
    o, i = y.ctypes.data, x.ctypes.data
    for _ in range(100_000):  # warm up allocator pools
        launch(o, i, 2.0, 4, 0)
    gc.collect()
    before = psutil.Process().memory_info().rss
    for _ in range(1_000_000):
        launch(o, i, 2.0, 4, 0)
    gc.collect()
    after = psutil.Process().memory_info().rss
    assert after - before < 1 << 20, f"RSS grew by {(after - before) / 1024:.0f} KiB over 10^6 launches"
    assert np.array_equal(y[:4], x[:4] * np.float32(2.0))


def test_repr():
    x, y = arrays()
    h = SCALE.bind(y, x, 1.0, 64, 0)
    assert "PreparedLaunch scale(out: Pointer[Float32" in repr(h) and "stream: cuda.CUstream" in repr(h)
