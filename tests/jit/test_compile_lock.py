"""Compiles of different kernels in several threads at once: the DSL's compiler is not thread-safe
across functions (process-wide session data, fd 2 redirected while it compiles), so cute_bind
compiles one at a time in the process (dsl.hooks._COMPILE_LOCK)."""

from __future__ import annotations

import os
import threading

import numpy as np

from tests.kernels.wrapped import make_constant_writer

THREADS = 6


def test_first_calls_of_different_kernels_in_threads_compile_cleanly():
    kernels = [make_constant_writer() for _ in range(THREADS)]
    bufs = [np.zeros(1, np.int32) for _ in kernels]
    errors: list[BaseException] = []
    fd2 = os.readlink("/proc/self/fd/2") if os.path.exists("/proc/self/fd/2") else None
    barrier = threading.Barrier(THREADS)

    def work(i: int) -> None:
        barrier.wait()
        for c in range(3):  # each value of the Constexpr is a compile of its own
            try:
                kernels[i](bufs[i].ctypes.data, c + i)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [int(b[0]) for b in bufs] == [2 + i for i in range(THREADS)]
    assert all(k.cache_info()["compiled"] == 3 for k in kernels)
    if fd2 is not None:  # the DSL's redirection of stderr was undone, not left on a temporary file
        assert os.readlink("/proc/self/fd/2") == fd2
