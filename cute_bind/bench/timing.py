"""Shared timing for the bench workloads: interleaved rounds, medians, CUDA events on a GPU.

Timing: the paths run interleaved, ``repeats`` rounds of ``iters`` launches
each; a row gives the median (and minimum) microseconds per launch over
rounds. On a GPU each round is also timed with CUDA events on the stream and
the stream is synchronised between rounds, so the launch queue never fills.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Row", "Report", "TimedPath", "fixed_loop", "machine", "time_rows"]


@dataclass
class Row:
    path: str
    median_us: float
    min_us: float
    event_us: float | None = None
    note: str = ""
    samples: list[float] = field(default_factory=list, repr=False)


@dataclass
class Report:
    machine: str
    mode: str
    dsl_version: str
    repeats: int
    iters: int
    rows: list[Row]
    checks: dict[str, Any]



def _loop(fn: Callable[..., Any], args: tuple[Any, ...], iters: int) -> float:
    # the loop body is the same shape for every path: one call with its arguments
    it = range(iters)
    t0 = time.perf_counter()
    for _ in it:
        fn(*args)
    return (time.perf_counter() - t0) / iters * 1e6


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.node()} / {cpu} / {os.cpu_count()} cores / Python {platform.python_version()}"


#: A timed path: (name, loop(iters) -> host microseconds per launch, note).
TimedPath = tuple[str, Callable[[int], float], str]


def fixed_loop(fn: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[int], float]:
    return lambda iters: _loop(fn, args, iters)


def time_rows(paths: list[TimedPath], repeats: int, iters: int, torch_stream: Any = None) -> list[Row]:
    """Time every path interleaved: ``repeats`` rounds of ``iters`` launches each (CUDA events too on a stream)."""
    import contextlib

    gpu = torch_stream is not None
    stream_ctx: Any = contextlib.nullcontext()
    if gpu:
        from .. import _dsl

        torch = _dsl.import_torch()
        stream_ctx = torch.cuda.stream(torch_stream)
    gc.collect()
    gc_was = gc.isenabled()
    gc.disable()
    stream_ctx.__enter__()
    samples: dict[str, list[float]] = {r[0]: [] for r in paths}
    events: dict[str, list[float]] = {r[0]: [] for r in paths}
    try:
        for _, loop, _ in paths:  # warm-up
            loop(max(100, iters // 20))
        if gpu:
            torch.cuda.synchronize()
        for _ in range(repeats):
            for path, loop, _ in paths:
                if gpu:
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record(torch_stream)
                    samples[path].append(loop(iters))
                    end.record(torch_stream)
                    end.synchronize()
                    events[path].append(start.elapsed_time(end) * 1e3 / iters)
                    torch.cuda.synchronize()
                else:
                    samples[path].append(loop(iters))
    finally:
        stream_ctx.__exit__(None, None, None)
        if gc_was:
            gc.enable()
    return [
        Row(
            path=path,
            median_us=statistics.median(samples[path]),
            min_us=min(samples[path]),
            event_us=statistics.median(events[path]) if events[path] else None,
            note=note,
            samples=samples[path],
        )
        for path, _, note in paths
    ]

