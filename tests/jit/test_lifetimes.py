"""What a kernel's calls keep alive, and for how long (issue 22, row 7).

Each thread that calls a kernel gets a handle of its own (a clone pinning the
compiled module). That per-thread state must go with the kernel (dropped, or
reset by ``clear_cache()``) and with the thread, on the C call path
(``jit/_cdispatch.c``, whose entries live in the thread-state dict) as on the
Python one (a ``threading.local`` per kernel). Host-only kernels: no GPU.
"""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cute_bind
from cute_bind.jit import dispatch as dispatch_mod
from tests.child import child_env
from tests.kernels.host import scale

ROOT = Path(__file__).resolve().parents[2]
KERNELS = 60


@pytest.fixture(params=["c", "python"])
def make(request: Any) -> Any:
    """A kernel factory on the C call path or on the Python one (as tests/jit/test_dispatch.py's)."""
    if request.param == "c":
        if dispatch_mod.call_path() != "c":
            pytest.skip("the C call path is not built")
        return cute_bind.kernel
    if dispatch_mod.call_path() != "c":
        return cute_bind.kernel

    class PyCallKernel(cute_bind.Kernel):  # type: ignore[type-arg]
        __call__ = cute_bind.Kernel._python_call  # type: ignore[attr-defined]

    return PyCallKernel


def _values() -> tuple[np.ndarray, np.ndarray]:
    return np.arange(64, dtype=np.float32), np.zeros(64, np.float32)


def _watch(k: Any) -> list[weakref.ref[Any]]:
    """Weak references to what ``k``'s calls made: its compiled functions, prototype handles, this thread's handles."""
    refs = [weakref.ref(c) for c in k.compiler.table.values()]
    refs += [weakref.ref(s.proto) for s in k._calls._specs.values() if s.proto is not None]
    refs += [weakref.ref(pair[2]) for pair in k._calls.local.handles.values() if pair[2] is not None]
    return refs


def _alive(refs: list[weakref.ref[Any]]) -> int:
    gc.collect()
    return sum(r() is not None for r in refs)


def _dispatch_entries() -> int:
    """Entries of the C call path in this thread's thread-state dict (0 on the Python path)."""
    get = ctypes.pythonapi.PyThreadState_GetDict
    get.restype = ctypes.c_void_p  # a borrowed reference: restype py_object would release one it does not own
    get.argtypes = []
    tsd = ctypes.cast(get(), ctypes.py_object).value
    return sum(type(v).__module__ == "cute_bind.jit._cdispatch" for v in list(tsd.values()))


def _call_once(make: Any) -> list[weakref.ref[Any]]:
    k = make(scale)
    x, y = _values()
    k(y, x, 2.0, 64, 0)
    assert y.tobytes() == (x * np.float32(2.0)).tobytes()
    refs = _watch(k)
    assert len(refs) == 3 and _alive(refs) == 3  # compiled function, prototype handle, this thread's clone
    return refs


def test_dropped_kernels_release_their_handles_and_modules(make: Any) -> None:
    before = _dispatch_entries()
    refs: list[weakref.ref[Any]] = []
    for _ in range(KERNELS):
        refs += _call_once(make)  # the kernel is dropped on return
    assert _alive(refs) == 0
    # the entries the dropped kernels left in this thread's dict go by its next new call state
    keep = make(scale)
    x, y = _values()
    keep(y, x, 3.0, 64, 0)
    assert _dispatch_entries() - before <= 1


def test_clear_cache_leaves_nothing_behind(make: Any) -> None:
    k = make(scale)
    x, y = _values()
    k(y, x, 2.0, 64, 0)
    before = _dispatch_entries()
    refs: list[weakref.ref[Any]] = []
    for i in range(20):
        refs += _watch(k)
        k.clear_cache()
        k(y, x, float(i), 64, 0)
        assert y.tobytes() == (x * np.float32(i)).tobytes()
    assert _alive(refs) == 0  # the current ones are watched after the loop, not in refs
    assert _alive(_watch(k)) == 3
    assert _dispatch_entries() <= before  # one entry for the kernel, not one per reset
    assert k.cache_info()["hits"] == 0 and k.cache_info()["misses"] == 1


def test_a_kernel_whose_caller_refers_back_to_it_is_collected(make: Any, monkeypatch: Any) -> None:
    """A caller that holds the kernel (the DSL-call fallback's does) makes a cycle the collector must see."""
    k = make(scale)
    x, y = _values()
    k(y, x, 2.0, 64, 0)

    def holding(kernel: Any, launch: Any) -> Any:
        def caller(*args: Any) -> Any:
            assert kernel is not None
            return launch(*args)

        return caller

    monkeypatch.setattr(k._calls, "_caller", lambda spec, launch, kernel=k: (holding(kernel, launch), None))
    k.clear_cache()
    k(y, x, 4.0, 64, 0)
    k(y, x, 4.0, 64, 0)  # a hit: the current caller is the one holding the kernel
    assert y.tobytes() == (x * np.float32(4.0)).tobytes() and k.cache_info()["hits"] == 1
    refs = _watch(k) + [weakref.ref(k)]
    monkeypatch.undo()
    del k
    assert _alive(refs) == 0


def test_a_threads_handles_go_with_the_thread_and_its_hits_stay(make: Any) -> None:
    k = make(scale)
    x, _ = _values()
    refs: list[weakref.ref[Any]] = []
    lock = threading.Lock()

    def work() -> None:
        y = np.zeros(64, np.float32)
        for _ in range(3):
            k(y, x, 2.0, 64, 0)
        with lock:
            refs.extend(weakref.ref(pair[2]) for pair in k._calls.local.handles.values())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(refs) == 4
    assert k.cache_info()["hits"] == 4 * 3 - 1
    if k._calls._c:
        # the C path: a thread's handle goes with the thread (the Python path's registry of thread
        # dicts keeps them until clear_cache() or the kernel goes)
        assert _alive(refs) == 0
    # a new thread's first call compacts the states of the threads gone; their hits stay counted
    y = np.zeros(64, np.float32)
    late = threading.Thread(target=lambda: k(y, x, 2.0, 64, 0))
    late.start()
    late.join()
    k(y, x, 2.0, 64, 0)
    gc.collect()
    assert k.cache_info()["hits"] == 4 * 3 - 1 + 2


def test_the_pure_python_process_releases_dropped_kernels_too() -> None:
    script = (
        "import gc, weakref, numpy as np, cute_bind\n"
        "from cute_bind.jit import dispatch\n"
        "from tests.kernels.host import scale\n"
        "assert dispatch.call_path() == 'python'\n"
        "refs = []\n"
        f"for _ in range({KERNELS}):\n"
        "    k = cute_bind.kernel(scale)\n"
        "    x = np.arange(64, dtype=np.float32); y = np.zeros(64, np.float32)\n"
        "    k(y, x, 2.0, 64, 0)\n"
        "    refs += [weakref.ref(c) for c in k.compiler.table.values()]\n"
        "    refs += [weakref.ref(p[2]) for p in k._calls.local.handles.values()]\n"
        "del k\n"
        "gc.collect()\n"
        "assert len(refs) == 2 * " + str(KERNELS) + ", len(refs)\n"
        "print('alive', sum(r() is not None for r in refs))\n"
    )
    env = child_env(CUTE_BIND_PURE_PYTHON="1")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "alive 0" in proc.stdout, proc.stdout


def test_kernels_reset_and_dropped_while_threads_call_them(make: Any) -> None:
    """Threads calling kernels that another thread resets and replaces meanwhile: every result is right,
    nothing raises, and every kernel dropped is collected with what its calls made."""
    x = np.arange(64, dtype=np.float32)
    kernels = [make(scale) for _ in range(3)]
    dropped: list[weakref.ref[Any]] = []
    errors: list[BaseException] = []
    rounds = 60
    done = threading.Barrier(6)  # the callers stay alive until the check: their thread states too
    checked = threading.Event()

    def call(seed: int) -> None:
        y = np.zeros(64, np.float32)
        try:
            for i in range(rounds * 4):
                k = kernels[(seed + i) % len(kernels)]
                alpha = float(1 + (seed + i) % 3)
                k(y, x, alpha, 64, 0)
                assert y[3] == 3 * alpha
            del k  # this thread's frame outlives the loop (it waits for the check)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        done.wait()
        checked.wait()

    def churn() -> None:
        for i in range(rounds):
            j = i % len(kernels)
            if i % 2:
                kernels[j].clear_cache()
            else:
                dropped.append(weakref.ref(kernels[j]))
                dropped.extend(_watch(kernels[j]))
                kernels[j] = make(scale)
            if i % 10 == 0:
                gc.collect()
        done.wait()

    threads = [threading.Thread(target=call, args=(s,)) for s in range(4)] + [threading.Thread(target=churn)]
    for t in threads:
        t.start()
    done.wait()
    try:
        assert errors == []
        assert len(dropped) >= rounds // 2 and _alive(dropped) == 0
    finally:
        checked.set()
        for t in threads:
            t.join()
