"""Reloaded handles are the same handles: same launch bytes, bitwise-same outputs; many processes; warm-up; turning it off."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cute_bind
from cute_bind import dsl
from tests.child import child_env
from tests.kernels import cached

from .conftest import outcomes_since

N = 256


def _buffers(values):
    x = (ctypes.c_float * N)(*values)
    y = (ctypes.c_float * N)(*reversed(values))
    return x, y


@pytest.fixture
def pair(cache_dir):
    """A handle bound from a fresh in-process compile and one from the entry reloaded from disk."""
    x, y = _buffers([float(i) * 0.37 for i in range(N)])
    o1, o2 = (ctypes.c_float * N)(), (ctypes.c_float * N)()
    fresh = cute_bind.kernel(cached.saxpy.fn, cache=False, name="saxpy")
    before = cute_bind.cache.mark()
    h_fresh = fresh.bind(ctypes.addressof(o1), ctypes.addressof(x), ctypes.addressof(y), 1.5, N)
    assert outcomes_since(before) == []  # cache=False: the disk is not consulted
    cached.saxpy.clear_cache()
    cached.saxpy.bind(ctypes.addressof(o2), ctypes.addressof(x), ctypes.addressof(y), 1.5, N)  # stores the entry
    cached.saxpy.clear_cache()
    before = cute_bind.cache.mark()
    h_loaded = cached.saxpy.bind(ctypes.addressof(o2), ctypes.addressof(x), ctypes.addressof(y), 1.5, N)
    assert outcomes_since(before) == ["hit"]
    assert dsl.is_loaded_from_binary(h_loaded.compiled) and not dsl.is_loaded_from_binary(h_fresh.compiled)
    yield h_fresh, h_loaded, (x, y, o1, o2)
    cached.saxpy.clear_cache()


def test_reloaded_handle_has_the_same_launch_bytes(pair):
    h_fresh, h_loaded, (x, y, o1, o2) = pair
    assert h_fresh.parameters == h_loaded.parameters
    assert h_fresh.slots.keys() == h_loaded.slots.keys()
    h_fresh.launch(ctypes.addressof(o1), ctypes.addressof(x), ctypes.addressof(y), -2.25, 100)
    h_loaded.launch(ctypes.addressof(o1), ctypes.addressof(x), ctypes.addressof(y), -2.25, 100)
    assert h_fresh.storage_bytes() == h_loaded.storage_bytes()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the pair is read-only
@given(
    a=st.floats(width=32, allow_nan=False, allow_infinity=False),
    n=st.integers(0, N),
    xs=st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=32),
)
def test_reloaded_handle_outputs_are_bitwise_identical(pair, a, n, xs):
    h_fresh, h_loaded, _ = pair
    x, y = _buffers((xs * (N // len(xs) + 1))[:N])  # a short drawn list, tiled (a 256-float draw overruns hypothesis)
    o1, o2 = (ctypes.c_float * N)(*([7.0] * N)), (ctypes.c_float * N)(*([7.0] * N))
    h_fresh.launch(ctypes.addressof(o1), ctypes.addressof(x), ctypes.addressof(y), a, n)
    h_loaded.launch(ctypes.addressof(o2), ctypes.addressof(x), ctypes.addressof(y), a, n)
    assert bytes(o1) == bytes(o2)


def test_direct_call_of_a_reloaded_function(pair):
    """Calling the kernel (the DSL's own call path) works on a reloaded function too."""
    _, _, (x, y, o1, o2) = pair
    cached.saxpy(ctypes.addressof(o2), ctypes.addressof(x), ctypes.addressof(y), 2.0, N)
    f32 = lambda v: ctypes.c_float(v).value  # noqa: E731 - float32 rounding of the expected sum
    assert [o2[k] for k in (0, 5, 200)] == [f32(2.0 * x[k] + y[k]) for k in (0, 5, 200)]


CONCURRENT = """\
import ctypes, sys, cute_bind
from tests.kernels import cached
x = (ctypes.c_float * 256)(*[float(i) for i in range(256)])
y = (ctypes.c_float * 256)(*[1.0] * 256)
o = (ctypes.c_float * 256)()
sys.stdin.readline()  # start together
h = cached.saxpy.bind(ctypes.addressof(o), ctypes.addressof(x), ctypes.addressof(y), 3.0, 256)
h.launch(ctypes.addressof(o), ctypes.addressof(x), ctypes.addressof(y), 3.0, 256)
ok = all(o[k] == 3.0 * k + 1.0 for k in range(256))
(e,) = cute_bind.cache.history()
print(ok, e.outcome, e.key)
"""


def test_eight_processes_from_a_cold_cache(cache_dir, tmp_path):
    script = tmp_path / "bind.py"
    script.write_text(CONCURRENT)
    env = child_env(CUTE_BIND_CACHE_DIR=str(cache_dir))
    procs = [
        subprocess.Popen(
            [sys.executable, str(script)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    import time

    time.sleep(1.0)  # let every process import before the start line
    results = [p.communicate("go\n", timeout=600) for p in procs]
    lines = []
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        lines.append(out.split())
    assert all(ok == "True" for ok, _, _ in lines), lines
    assert len({key for _, _, key in lines}) == 1
    outcomes = sorted(o for _, o, _ in lines)
    # the file lock: one process compiles, the others wait and load its entry
    assert outcomes.count("compiled") == 1 and outcomes.count("hit") == 7, outcomes
    (entry,) = cute_bind.cache.info(cache_dir)
    assert entry.status == "ok" and entry.hits == 7
    assert [n for n in os.listdir(cache_dir / "v1" / "entries") if n.endswith(".tmp")] == []


def test_warm_fills_the_cache_for_argument_examples(cache_dir):
    cached.affine.clear_cache()
    examples = [(0, 0, bias) for bias in range(3)] + [cute_bind.cache.Args(0, 0, bias=1)]
    results = cute_bind.cache.warm(cached.affine, examples)
    assert [r.outcome for r in results] == ["compiled", "compiled", "compiled", "memory"]
    assert len(cute_bind.cache.info()) == 3
    cached.affine.clear_cache()
    assert [r.outcome for r in cute_bind.cache.warm(cached.affine, examples[:3])] == ["hit"] * 3
    cached.affine.clear_cache()


def test_warm_in_worker_processes(cache_dir):
    cached.affine.clear_cache()
    results = cute_bind.cache.warm(cached.affine, [(0, 0, 20 + b) for b in range(3)], workers=2)
    assert [r.example for r in results] == [0, 1, 2]
    assert [r.outcome for r in results] == ["compiled"] * 3
    assert len({r.key for r in results}) == 3
    before = cute_bind.cache.mark()
    buf = (ctypes.c_int32 * 1)()
    cached.affine.bind(ctypes.addressof(buf), 5, 21).launch(ctypes.addressof(buf), 5)
    assert buf[0] == 10 + 21 + cached.STEP and outcomes_since(before) == ["hit"]
    cached.affine.clear_cache()


def test_warm_in_workers_needs_an_importable_kernel(cache_dir):
    local = cute_bind.kernel(cached.affine.fn, name="local")
    with pytest.raises(cute_bind.CacheSettingError, match=r"\[CB609\].*workers"):
        cute_bind.cache.warm(local, [(0, 0, 1), (0, 0, 2)], workers=2)


@pytest.mark.parametrize("how", ["env", "option"])
def test_turning_the_cache_off(cache_dir, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("CUTE_BIND_CACHE", "0")
        k = cute_bind.kernel(cached.affine.fn, name="affine_off")
    else:
        k = cute_bind.kernel(cached.affine.fn, name="affine_off", cache=False)
    before = cute_bind.cache.mark()
    buf = (ctypes.c_int32 * 1)()
    k.bind(ctypes.addressof(buf), 1, 2).launch(ctypes.addressof(buf), 1)
    assert buf[0] == 2 + 2 + cached.STEP
    assert outcomes_since(before) == [] and not cache_dir.exists()


OPAQUE = """\
import cutlass
import cutlass.cute as cute
import cute_bind


import types

SETTINGS = types.SimpleNamespace(offset=3)  # an extension type's object: not spelled


@cute_bind.kernel(cache_key={cache_key!r})
@cute.jit
def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value + SETTINGS.offset
"""


@pytest.mark.parametrize("cache_key, outcome, code", [(None, "uncached", "CB608"), ("settings-v1", "compiled", None)])
def test_a_value_the_key_cannot_spell(cache_dir, modules, cache_key, outcome, code):
    mod = modules.load("cb_opaque", OPAQUE.format(cache_key=cache_key))
    buf = (ctypes.c_int32 * 1)()
    before = cute_bind.cache.mark()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod.k.bind(ctypes.addressof(buf), 1).launch(ctypes.addressof(buf), 1)
    assert buf[0] == 4
    assert outcomes_since(before) == [outcome]
    codes = [w.message.code for w in record if isinstance(w.message, cute_bind.CacheWarning)]
    assert codes == ([code] if code else [])
    assert len(cute_bind.cache.info()) == (0 if code else 1)


@pytest.mark.parametrize("option, value", [("cache", "yes"), ("cache_key", 1.5), ("cache_key", True)])
def test_invalid_decorator_options(option, value):
    with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB110\]"):
        cute_bind.kernel(**{option: value})


def _f32(n, start=0.0):
    return (ctypes.c_float * n)(*[start + 0.25 * i for i in range(n)])


def _slot_cases():
    import numpy as np

    from tests.kernels import host

    a64 = (ctypes.c_double * 16)()
    f64 = _f32(64)
    o64 = (ctypes.c_float * 64)()
    t_in = np.arange(9, dtype=np.float32) * 0.5
    t_out = np.zeros(9, np.float32)
    i32 = (ctypes.c_int32 * 1)()
    return {
        # name: (function, bind args, launch args, output buffer)
        "scalars": (host.all_scalars, (ctypes.addressof(a64), True, -3, 300, -70000, 2**40, 200, 60000, 2**31, 2**63, 1.5, -2.25, 0.75, True, 7, 0.5),
                    (ctypes.addressof(a64), False, 3, -300, 70000, -(2**40), 20, 6000, 2**30, 2**62, -1.5, 2.25, -0.75, False, -7, -0.5), a64),
        "tensors": (host.tscale, (t_out, t_in, 2.0), (t_out, t_in, -1.5), t_out),
        "sequences": (host.seq_sum, (ctypes.addressof(o64), (ctypes.addressof(f64), ctypes.addressof(f64)), (1.0, 2.0), 64),
                      (ctypes.addressof(o64), (ctypes.addressof(f64), ctypes.addressof(f64)), (0.5, -1.0), 33), o64),
        "halves": (host.halves, (ctypes.addressof(o64), 1.5, 2.5, 3.5), (ctypes.addressof(o64), -0.5, 0.25, 9.0), o64),
        "default": (host.with_default, (ctypes.addressof(i32), 1), (ctypes.addressof(i32), 4), i32),
    }  # fmt: skip


@pytest.mark.parametrize("case", ["scalars", "tensors", "sequences", "halves", "default"])
def test_every_slot_kind_round_trips(cache_dir, case):
    fn, bind_args, launch_args, out = _slot_cases()[case]
    fresh = cute_bind.kernel(fn, cache=False).bind(*bind_args)
    k = cute_bind.kernel(fn)
    k.bind(*bind_args)
    k.clear_cache()
    before = cute_bind.cache.mark()
    loaded = k.bind(*bind_args)
    assert outcomes_since(before) == ["hit"]
    results = []
    for h in (fresh, loaded):
        ctypes.memset(
            out.ctypes.data if hasattr(out, "ctypes") else ctypes.addressof(out),
            0x5A,
            ctypes.sizeof(out) if not hasattr(out, "nbytes") else out.nbytes,
        )
        h.launch(*launch_args)
        results.append((bytes(out) if not hasattr(out, "tobytes") else out.tobytes(), h.storage_bytes()))
    (out_fresh, bytes_fresh), (out_loaded, bytes_loaded) = results
    assert out_fresh == out_loaded
    assert bytes_fresh == bytes_loaded


def test_tvm_ffi_options_never_reach_the_cache(cache_dir):
    """TVM-FFI compiled functions load back as another kind of function, so they must never be stored:
    a kernel compiled with ``--enable-tvm-ffi`` compiles in-process and writes no entry."""
    pytest.importorskip("tvm_ffi")  # the DSL's TVM-FFI support needs apache-tvm-ffi (absent from the DSL matrix)
    k = cute_bind.kernel(cached.affine.fn, compile_options="--enable-tvm-ffi", name="affine_tvm")
    compiled = k.compile(0, 5, 21)
    assert cute_bind.dsl.is_tvm_ffi_compiled(compiled)
    assert cute_bind.cache.info() == []
