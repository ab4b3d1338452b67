"""Hit, miss and invalidation: every input of a compile is in its key, and an unchanged kernel hits.

Each row writes the kernel module (and a helper module) from a template,
imports it afresh, binds and launches once into a warm cache holding the
baseline's entry, and checks the outcome (loaded from disk, or compiled) and
the output: a row that must recompile also gets the new behaviour, so a stale
entry can never have been loaded.
"""

from __future__ import annotations

import ctypes
import struct
import subprocess
import sys

import pytest

import cute_bind
from cute_bind import dsl
from cute_bind.cache import key as cache_key_module
from tests.child import child_env


KERNEL = """\
import cutlass
import cutlass.cute as cute
import cute_bind
import cb_helpers

OFFSET = {offset}


@cute.jit
def add_inc(x):
    return x + {inc}


@cute_bind.kernel(compile_options={options!r}, cache_key={cache_key!r})
@cute.jit
def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32, bias: cutlass.Constexpr[int]):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = add_inc(value) + OFFSET + bias + cb_helpers.times(value){extra}
"""

HELPERS = """\
import cutlass.cute as cute


@cute.jit
def times(x):
    return x * {factor}
"""

BASE = {"offset": 3, "inc": 1, "options": None, "cache_key": None, "extra": "", "factor": 2, "bias": 10}


def expected(p, value):
    extra = 100 if p["extra"] else 0
    return value + p["inc"] + p["offset"] + p["bias"] + value * p["factor"] + extra


# (row, changes to the template/bind, environment patch, expected outcome)
ROWS = [
    ("unchanged source, fresh import", {}, None, "hit"),
    ("kernel body edited", {"extra": " + 100"}, None, "compiled"),
    ("helper in the same module edited", {"inc": 2}, None, "compiled"),
    ("helper in another module edited", {"factor": 3}, None, "compiled"),
    ("module constant changed", {"offset": 4}, None, "compiled"),
    ("Constexpr value changed", {"bias": 11}, None, "compiled"),
    ("compile options changed", {"options": "--opt-level 2"}, None, "compiled"),
    ("cache_key changed", {"cache_key": "v2"}, None, "compiled"),
    ("target arch changed", {}, "arch", "compiled"),
    ("DSL version changed", {}, "dsl", "compiled"),
    ("cute_bind version changed", {}, "cute_bind", "compiled"),
    ("Python version changed", {}, "python", "compiled"),
    ("CUTE_DSL_* setting changed", {}, "dsl_env", "compiled"),
    # where the DSL keeps its own caches or what it logs: not what it compiles (flashinfer points
    # CUTE_DSL_CACHE_DIR into each user's home folder: every workspace missed)
    ("CUTE_DSL_CACHE_DIR changed", {}, "dsl_cache_dir", "hit"),
    ("CUTE_DSL_LOG_LEVEL changed", {}, "dsl_log_level", "hit"),
    ("machine changed", {}, "machine", "compiled"),
    ("entry format changed", {}, "format", "compiled"),
]


def _patch(monkeypatch, what):
    if what == "arch":
        monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    elif what == "dsl":
        monkeypatch.setattr(dsl, "compiler_identity", lambda: ("9.9.9", "cu99"))
    elif what == "cute_bind":
        monkeypatch.setattr(cache_key_module, "_cute_bind_sources", lambda: "9.9.9+edited")
    elif what == "python":
        monkeypatch.setattr(sys, "version", "3.99.0 (edited)")
    elif what == "dsl_env":
        monkeypatch.setenv("CUTE_DSL_CACHE_TEST_SETTING", "1")
    elif what == "dsl_cache_dir":
        monkeypatch.setenv("CUTE_DSL_CACHE_DIR", "/elsewhere/.cache/cute_dsl")
    elif what == "dsl_log_level":
        monkeypatch.setenv("CUTE_DSL_LOG_LEVEL", "40")
    elif what == "machine":
        monkeypatch.setattr(cache_key_module, "_cpu_model", lambda: "Another CPU @ 1.0GHz")
    elif what == "format":
        monkeypatch.setattr(cache_key_module, "FORMAT", cache_key_module.FORMAT + 100)


def _run(modules, p):
    mod = modules.load("cb_kernel", KERNEL.format(**p), cb_helpers=HELPERS.format(**p))
    buf = (ctypes.c_int32 * 1)()
    before = cute_bind.cache.mark()
    handle = mod.k.bind(ctypes.addressof(buf), 5, p["bias"])
    handle.launch(ctypes.addressof(buf), 5)
    events = cute_bind.cache.history(since=before)
    return buf[0], [e.outcome for e in events], events[-1].key if events else None


@pytest.mark.parametrize("row, changes, env, outcome", ROWS, ids=[r[0] for r in ROWS])
def test_invalidation_table(cache_dir, modules, monkeypatch, row, changes, env, outcome):
    base_value, base_outcomes, base_key = _run(modules, BASE)
    assert base_outcomes == ["compiled"] and base_value == expected(BASE, 5)
    p = {**BASE, **changes}
    _patch(monkeypatch, env)
    value, outcomes, key = _run(modules, p)
    assert outcomes == [outcome], row
    assert value == expected(p, 5), row
    assert (key == base_key) == (outcome == "hit"), row


# (baseline arch, changed arch): the target architecture alone, every other input of the key the same
ARCHS = [("sm_90a", "sm_100a"), ("sm_90", "sm_90a"), (None, "sm_80")]


@pytest.mark.parametrize("first, then", ARCHS, ids=[f"{a}-{b}" for a, b in ARCHS])
def test_the_target_arch_alone_changes_the_disk_key(modules, monkeypatch, first, then):
    """The arch as the device gives it (no CUTE_DSL_ARCH, which is in the key by itself as a CUTE_DSL_* setting):
    left out of the key, an sm_90a entry would load for an sm_100a device (issue 39). On the CPU the arch is None,
    so each side is set explicitly, where ``bind()`` reads it."""
    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    mod = modules.load("cb_arch", KERNEL.format(**BASE), cb_helpers=HELPERS.format(**BASE))
    env = cache_key_module.environment()

    def key(arch):
        monkeypatch.setattr(dsl, "target_arch", lambda: arch)
        compile_key = mod.k._bind_values((0x1000, 5, BASE["bias"]), {})[0]
        assert compile_key.arch == arch
        assert cache_key_module.environment() == env  # nothing else of the key changed
        return cache_key_module.entry_key(mod.k, mod.k.compiler.cache_form(compile_key))[0]

    assert key(first) != key(then)
    assert key(first) == key(first)  # and stable


def test_an_entry_of_another_device_arch_is_not_loaded(cache_dir, modules, monkeypatch):
    """The same through the disk cache: compiled for sm_90a, then a device reporting sm_100a compiles (never
    loads the sm_90a entry), then sm_90a again loads its own."""
    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    outcomes = {}
    for arch in ("sm_90a", "sm_100a", "sm_90a"):
        monkeypatch.setattr(dsl, "target_arch", lambda arch=arch: arch)
        value, seen, key = _run(modules, BASE)
        assert value == expected(BASE, 5)
        outcomes.setdefault(arch, []).append((seen, key))
    (first, again), (other,) = outcomes["sm_90a"], outcomes["sm_100a"]
    assert first[0] == ["compiled"] and other[0] == ["compiled"] and again == (["hit"], first[1])
    assert other[1] != first[1]


def test_a_warm_cache_survives_a_process_restart(cache_dir, tmp_path):
    """Two fresh processes: the first compiles and stores, the second loads (same key, same output)."""
    import subprocess

    script = tmp_path / "once.py"
    script.write_text(
        "import ctypes, cute_bind\n"
        "from tests.kernels import cached\n"
        "b = (ctypes.c_int32 * 1)()\n"
        "h = cached.affine.bind(ctypes.addressof(b), 4, 1)\n"
        "h.launch(ctypes.addressof(b), 4)\n"
        "(e,) = cute_bind.cache.history()\n"
        "print(b[0], e.outcome, e.key)\n"
    )
    env = child_env()
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (v1, o1, k1), (v2, o2, k2) = (r.stdout.split() for r in runs)
    assert (v1, o1) == ("16", "compiled") and (v2, o2) == ("16", "hit") and k1 == k2


def test_the_key_is_the_same_after_the_dsl_rewrote_the_functions(cache_dir, modules):
    """The DSL replaces the code of a function it compiles and of the helpers it calls (4.5-4.7 keep no
    original): a second bind in the same process, after clear_cache(), still finds the stored entry."""
    mod = modules.load("cb_kernel", KERNEL.format(**BASE), cb_helpers=HELPERS.format(**BASE))
    buf = (ctypes.c_int32 * 1)()
    before = cute_bind.cache.mark()
    mod.k.bind(ctypes.addressof(buf), 5, BASE["bias"])
    first = cute_bind.cache.history(since=before)
    mod.k.clear_cache()  # the next bind computes the key again, over the rewritten functions
    again = cute_bind.cache.mark()
    handle = mod.k.bind(ctypes.addressof(buf), 5, BASE["bias"])
    handle.launch(ctypes.addressof(buf), 5)
    second = cute_bind.cache.history(since=again)
    assert [e.outcome for e in first] == ["compiled"] and [e.outcome for e in second] == ["hit"]
    assert first[0].key == second[0].key
    assert buf[0] == expected(BASE, 5)


# ------------------------------------------------------------------ values a source hash cannot see, in a new process
FACTORY = """\
import cutlass
import cutlass.cute as cute
import cute_bind


def make_closure(factor):
    @cute_bind.kernel
    @cute.jit
    def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = value * factor  # a closure variable: one source, a value per factory call

    return k


def make_default(factor):
    @cute.jit
    def times(x, f=factor):  # a default value: one source, a value per factory call
        return x * f

    @cute_bind.kernel
    @cute.jit
    def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = times(value)

    return k
"""

ONCE = """\
import ctypes, sys
import cute_bind
import cb_factory

k = getattr(cb_factory, "make_" + sys.argv[1])(int(sys.argv[2]))
b = (ctypes.c_int32 * 1)()
k.bind(ctypes.addressof(b), 5).launch(ctypes.addressof(b), 5)
(e,) = cute_bind.cache.history()
print(b[0], e.outcome, e.key)
"""


@pytest.mark.parametrize("feed", ["closure", "default"], ids=["closure value changed", "default value changed"])
def test_a_factory_kernel_is_keyed_by_its_values_in_a_new_process(cache_dir, tmp_path, feed):
    """make(2) then make(3) then make(2), each in a fresh process: make(3) must not load make(2)'s entry.

    The source of ``k`` is the same for every factor; only the value (a closure
    cell, a helper's default) tells the kernels apart.
    """
    src = tmp_path / "factory"
    src.mkdir()
    (src / "cb_factory.py").write_text(FACTORY)
    (src / "once.py").write_text(ONCE)
    env = child_env(src)
    env.pop("CUTE_BIND_CACHE", None)
    runs = []
    for factor in (2, 3, 2):
        r = subprocess.run([sys.executable, str(src / "once.py"), feed, str(factor)], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(r.stdout.split())
    (v2, o2, k2), (v3, o3, k3), (v2b, o2b, k2b) = runs
    assert (v2, o2) == ("10", "compiled")
    assert (v3, o3) == ("15", "compiled") and k3 != k2  # never 10: factor=2's entry
    assert (v2b, o2b, k2b) == ("10", "hit", k2)  # and the cache still works


# ------------------------------------------------------------------ arrays and floats, after a fresh import
ARRAY = """\
import numpy as np
import cutlass
import cutlass.cute as cute
import cute_bind

TABLE = np.linspace(0.0, 1.0, 2000)
TABLE[1234] += {eps}


@cute_bind.kernel
@cute.jit
def k(out: cute_bind.Pointer[cutlass.Float64]):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = cutlass.Float64(TABLE[1234])  # read while tracing: a constant of the compile
"""


def _bind_and_launch(mod, buf, *args):
    before = cute_bind.cache.mark()
    mod.k.bind(ctypes.addressof(buf), *args).launch(ctypes.addressof(buf))
    events = cute_bind.cache.history(since=before)
    return [e.outcome for e in events], events[-1].key


def test_an_array_global_edited_in_one_element_recompiles(cache_dir, modules):
    """A 2000-element array (its repr elides the middle and rounds to 8 digits) edited by 1e-9."""
    np = pytest.importorskip("numpy")
    out = (ctypes.c_double * 1)()
    runs = []
    for eps in (0.0, 1e-9, 0.0):
        mod = modules.load("cb_array", ARRAY.format(eps=eps))
        outcomes, key = _bind_and_launch(mod, out)
        runs.append((outcomes, key, out[0], float(mod.TABLE[1234])))
    (o1, k1, v1, t1), (o2, k2, v2, t2), (o3, k3, v3, t3) = runs
    assert repr(np.linspace(0.0, 1.0, 2000)) == repr(mod.TABLE + np.eye(1, 2000, 1234)[0] * 1e-9)
    assert o1 == ["compiled"] and v1 == t1
    assert o2 == ["compiled"] and k2 != k1 and v2 == t2 != t1
    assert o3 == ["hit"] and k3 == k1 and v3 == t1


CONSTEXPR_FLOAT = """\
import struct
import cutlass
import cutlass.cute as cute
import cute_bind


@cute_bind.kernel
@cute.jit
def k(out: cute_bind.Pointer[cutlass.Int64], c: cutlass.Constexpr[float]):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = cutlass.Int64(struct.unpack("<q", struct.pack("<d", c))[0])  # the bits of c
"""


def _f64(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


@pytest.mark.parametrize(
    "first, then, outcome",
    [
        (0.0, -0.0, "compiled"),
        (-0.0, 0.0, "compiled"),
        (_f64(0x7FF8000000000000), _f64(0x7FF8000000000001), "compiled"),  # NaNs of two payloads
        (_f64(0x7FF8000000000000), _f64(0xFFF8000000000000), "compiled"),  # and of two signs
        (float("nan"), float("nan"), "hit"),  # one payload, two objects
        (1.5, 1.5, "hit"),
    ],
    ids=["0.0 then -0.0", "-0.0 then 0.0", "nan payloads", "nan signs", "same nan", "same float"],
)
def test_constexpr_floats_are_keyed_by_their_bits_on_disk(cache_dir, modules, first, then, outcome):
    out = (ctypes.c_int64 * 1)()
    results = []
    for c in (first, then):
        mod = modules.load("cb_float", CONSTEXPR_FLOAT)  # a fresh import: only the disk remembers
        outcomes, key = _bind_and_launch(mod, out, c)
        results.append((outcomes, key, out[0] & (2**64 - 1)))
    (o1, k1, bits1), (o2, k2, bits2) = results
    assert o1 == ["compiled"] and bits1 == struct.unpack("<Q", struct.pack("<d", first))[0]
    assert o2 == [outcome] and (k1 == k2) == (outcome == "hit")
    assert bits2 == struct.unpack("<Q", struct.pack("<d", then))[0]


# ------------------------------------------------------------------ inputs of the key, one at a time
# Each row: a module template, its base parameters and a change that only the named input of the key
# can see (the kernel's own source is the same). The keys of the two must differ; the same module
# imported again must give the same key.
CLASS = """\
import cutlass
import cutlass.cute as cute
import cute_bind


def _scale(factor):
    def scale(x):
        return x * factor

    return staticmethod(scale)


class Tiles:
    N = {n}


Tiles.scale = _scale({factor})  # a method whose source is not in the class's


@cute_bind.kernel
@cute.jit
def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = Tiles.scale(value) + Tiles.N
"""

ANNOTATION = """\
import cutlass
import cutlass.cute as cute
import cute_bind


def _helper(T):
    @cute.jit
    def helper(x: T):
        return x + 1

    return helper


helper = _helper({T})


@cute_bind.kernel
@cute.jit
def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = helper(value)
"""

NO_SOURCE = """\
import cutlass
import cutlass.cute as cute
import cute_bind

exec("def helper(x):\\n    return x * {factor}\\n")  # no source file: hashed by its bytecode


@cute_bind.kernel
@cute.jit
def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = helper(value)  # noqa: F821
"""

CALLABLE = """\
import cutlass
import cutlass.cute as cute
import cute_bind


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    @cute.jit
    def __call__(self, out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = value * self.factor


k = cute_bind.kernel(Scaler({factor}))
"""

KEY_ROWS = [
    ("class attribute changed", CLASS, {"n": 1, "factor": 2}, {"n": 2}),
    ("method of a user class changed (same source)", CLASS, {"n": 1, "factor": 2}, {"factor": 3}),
    ("helper's annotation changed", ANNOTATION, {"T": "cutlass.Int32"}, {"T": "cutlass.Int64"}),
    ("function without source changed", NO_SOURCE, {"factor": 2}, {"factor": 3}),
    ("callable object's attribute changed", CALLABLE, {"factor": 2}, {"factor": 3}),
]


def _entry_key(mod):
    compile_key = mod.k._bind_values((0x1000, 5), {})[0]  # a stand-in address: nothing is compiled
    return cache_key_module.entry_key(mod.k, compile_key)[0]


@pytest.mark.parametrize("row, template, base, change", KEY_ROWS, ids=[r[0] for r in KEY_ROWS])
def test_each_input_of_the_key_changes_it(modules, row, template, base, change):
    key = _entry_key(modules.load("cb_input", template.format(**base)))
    assert _entry_key(modules.load("cb_input", template.format(**base))) == key, row  # stable over a fresh import
    assert _entry_key(modules.load("cb_input", template.format(**{**base, **change}))) != key, row
