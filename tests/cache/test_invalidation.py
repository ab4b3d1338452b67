"""Hit, miss and invalidation: every input of a compile is in its key, and an unchanged kernel hits.

Each row writes the kernel module (and a helper module) from a template,
imports it afresh, binds and launches once into a warm cache holding the
baseline's entry, and checks the outcome (loaded from disk, or compiled) and
the output: a row that must recompile also gets the new behaviour, so a stale
entry can never have been loaded.
"""

from __future__ import annotations

import ctypes
import sys

import pytest

import cute_bind
from cute_bind import _dsl
from cute_bind.cache import key as cache_key_module

from .conftest import outcomes_since

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
]


def _patch(monkeypatch, what):
    if what == "arch":
        monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    elif what == "dsl":
        monkeypatch.setattr(_dsl, "compiler_identity", lambda: ("9.9.9", "cu99"))
    elif what == "cute_bind":
        monkeypatch.setattr(cache_key_module, "_cute_bind_sources", lambda: "9.9.9+edited")
    elif what == "python":
        monkeypatch.setattr(sys, "version", "3.99.0 (edited)")
    elif what == "dsl_env":
        monkeypatch.setenv("CUTE_DSL_CACHE_TEST_SETTING", "1")


def _run(modules, p):
    mod = modules.load("cb_kernel", KERNEL.format(**p), cb_helpers=HELPERS.format(**p))
    buf = (ctypes.c_int32 * 1)()
    before = len(cute_bind.cache.history())
    handle = mod.k.bind(ctypes.addressof(buf), 5, p["bias"])
    handle.launch(ctypes.addressof(buf), 5)
    events = cute_bind.cache.history()[before:]
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
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    os_env = __import__("os").environ
    env = {**os_env, "PYTHONPATH": __import__("os").pathsep.join(p for p in (root, os_env.get("PYTHONPATH", "")) if p)}
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
    before = len(cute_bind.cache.history())
    mod.k.bind(ctypes.addressof(buf), 5, BASE["bias"])
    first = cute_bind.cache.history()[before:]
    mod.k.clear_cache()  # the next bind computes the key again, over the rewritten functions
    again = len(cute_bind.cache.history())
    handle = mod.k.bind(ctypes.addressof(buf), 5, BASE["bias"])
    handle.launch(ctypes.addressof(buf), 5)
    second = cute_bind.cache.history()[again:]
    assert [e.outcome for e in first] == ["compiled"] and [e.outcome for e in second] == ["hit"]
    assert first[0].key == second[0].key
    assert buf[0] == expected(BASE, 5)
