"""``python -m cute_bind bench``, specialization workload: what a ``kernel(...)`` call costs by case.

Cases, on the tensor workload's kernel (host-only on the CPU) with the stream left out:

- ``hit``: the same key as the thread's last call (the everyday call);
- ``key switch``: float32 and float64 tensors alternating, so every call
  changes key and finds the other specialization on the dispatch path (probe);
- ``miss, compile cached``: a key the kernel compiled before (the dispatch's
  specializations dropped, the compile cache kept): prepare a handle only;
- ``miss, cold compile``: the kernel's caches dropped: compile and prepare.

The first two are timed like the other workloads (``repeats`` rounds of
``iters`` calls for hits, ``iters // 10`` for switches), each apart; the
misses are single calls, ``max(3, repeats // 4)``
of each, medians reported (a cold compile takes a second or more).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

from .timing import Checks, Report, Row, TimedPath, checks_line, machine, on_gpu, progress, table_head, time_rows, torch_or_none

__all__ = ["run_specialize", "format_specialize_table"]


def run_specialize(*, host_only: bool | None = None, repeats: int = 21, iters: int = 20000) -> Report:
    """Time a hit, a key switch, a miss with a cached compile and a cold compile of ``kernel(...)``."""
    from .. import dsl
    from ..jit import kernel
    from ..jit.dispatch import call_path
    from .kernels import scale_tensors, scale_tensors_host, scale_tensors_k, scale_tensors_k_host

    torch = torch_or_none()
    gpu = on_gpu(host_only)
    checks: Checks = {}
    if gpu:
        assert torch is not None
        stream = torch.cuda.Stream()
        fn, fnk = scale_tensors, scale_tensors_k
        x32 = torch.randn(4096, device="cuda")
        x64 = torch.randn(4096, device="cuda", dtype=torch.float64)
    else:
        stream = None
        fn, fnk = scale_tensors_host, scale_tensors_k_host
        if torch is not None:
            x32, x64 = torch.randn(64), torch.randn(64, dtype=torch.float64)
        else:
            import numpy as np

            rng = np.random.default_rng(0)
            x32, x64 = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64)
    y32, y64 = x32 * 0, x64 * 0

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize()

    k = kernel(max_specializations=None, cache=False)(fn)  # the cold row compiles: no disk cache to load from

    def call32() -> object:
        return k(y32, x32, 2.0)

    def switch(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n // 2):
            k(y32, x32, 2.0)
            k(y64, x64, 2.0)
        return (time.perf_counter() - t0) / (n // 2 * 2) * 1e6

    def hit(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            k(y32, x32, 2.0)
        return (time.perf_counter() - t0) / n * 1e6

    kk = kernel(max_specializations=None)(fnk)

    def hit_k(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            kk(y32, x32, 2.0, 1)
        return (time.perf_counter() - t0) / n * 1e6

    def switch_k(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n // 2):
            kk(y32, x32, 2.0, 1)
            kk(y32, x32, 2.0, 2)
        return (time.perf_counter() - t0) / (n // 2 * 2) * 1e6

    def timed(label: str, path: str, loop: Callable[[int], float], note: str, switching: bool = False) -> list[Row]:
        """One path's rows, timed on its own; a switching path has a tenth of the calls (at least 2), each a switch."""
        return time_rows(
            [TimedPath.of(path, loop, note)], repeats, max(2, iters // 10) if switching else iters, stream if gpu else None, label=label
        )

    ctx = torch.cuda.stream(stream) if gpu else None
    if ctx is not None:
        ctx.__enter__()
    try:
        call32()
        k(y64, x64, 2.0)
        sync()
        checks["results == inp * 2 (float32, float64)"] = bool((y32 == x32 * 2).all()) and bool((y64 == x64 * 2).all())
        # timed apart, not interleaved: a switching round would leave the next hit round to settle first
        rows: list[Row] = timed("kernel(...) hits", "kernel(...) hit: same key as the last call", hit, "tensors + 2.0, stream left out")
        rows += timed(
            "kernel(...) key switches",
            "kernel(...) key switch: float32/float64 alternating",
            switch,
            "each call finds the other specialization",
            switching=True,
        )
        kk(y32, x32, 2.0, 2)
        kk(y32, x32, 2.0, 1)
        sync()
        checks["Constexpr results == inp * 2"] = bool((y32 == x32 * 2).all())
        rows += timed("kernel(...) Constexpr hits", "kernel(...) hit, Constexpr parameter", hit_k, "k=1 every call, stream left out")
        rows += timed(
            "kernel(...) Constexpr switches",
            "kernel(...) key switch: two Constexpr values alternating",
            switch_k,
            "k=1/k=2 alternating, both compiled",
            switching=True,
        )
        n_miss = max(3, repeats // 4)
        progress(f"  kernel(...) misses: {n_miss} with a cached compile, then {n_miss} cold compiles (each runs the DSL's compiler)")
        cached, cold = [], []
        for _ in range(n_miss):
            k._calls.clear()  # specializations dropped, compiled functions kept
            t0 = time.perf_counter()
            call32()
            cached.append((time.perf_counter() - t0) * 1e6)
            checks.setdefault("miss with a cached compile did not compile", not k.specializations()[0].compiled)
        for _ in range(n_miss):
            k.clear_cache()  # everything dropped: the next call compiles
            t0 = time.perf_counter()
            call32()
            cold.append((time.perf_counter() - t0) * 1e6)
            checks.setdefault("cold miss compiled", k.specializations()[0].compiled)
        sync()
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
    rows.append(
        Row(
            "kernel(...) miss, compile cached (prepare a handle)",
            statistics.median(cached),
            min(cached),
            note=f"{n_miss} calls",
            samples=cached,
        )
    )
    rows.append(
        Row("kernel(...) miss, cold compile (compile + prepare)", statistics.median(cold), min(cold), note=f"{n_miss} calls", samples=cold)
    )
    what = "GPU: 2-tensor scale kernel, 4096 elements" if gpu else "CPU: host-only 2-tensor function, 64 elements"
    mode = f"{what}; call path: {call_path()}"
    return Report(machine=machine(), mode=mode, dsl_version=dsl.dsl_version(), repeats=repeats, iters=iters, rows=rows, checks=checks)


def per_call(us: float) -> str:
    """A figure with its unit: microseconds below 1 ms, else milliseconds or seconds (a cold compile of
    63253 us reads 63.3 ms)."""
    if us < 1000:
        return f"{us:.2f} us"
    if us < 1_000_000:
        return f"{us / 1000:.1f} ms"
    return f"{us / 1e6:.2f} s"


MISSES_NOTE = (
    "The two misses are one-off prices, paid once per new variant, not per call: a miss whose compile is cached "
    "prepares a new handle for it (a fraction of a millisecond); a cold compile runs the DSL's compiler on the kernel "
    "(tens of milliseconds for this small function, seconds for real kernels). Every later call of that variant is a "
    "hit, and the disk cache gives the compile to other processes (python -m cute_bind bench --workload coldstart)."
)


def format_specialize_table(report: Report) -> str:
    timed = f"; hits: {report.repeats} interleaved rounds x {report.iters} calls"
    lines = table_head(report, timed, "| case | per call (median) | min | note |", "|---|---:|---:|---|")
    for r in report.rows:
        lines.append(f"| {r.path} | {per_call(r.median_us)} | {per_call(r.min_us)} | {r.note} |")
    lines.append("")
    lines.append(checks_line(report.checks))
    lines += ["", MISSES_NOTE]
    return "\n".join(lines)
