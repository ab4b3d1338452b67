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
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from .._generated import compile_source

__all__ = [
    "Row",
    "Report",
    "TimedPath",
    "checks_line",
    "event_cell",
    "fast_path_words",
    "fixed_loop",
    "legend",
    "machine",
    "on_gpu",
    "progress",
    "table_head",
    "time_rows",
    "torch_or_none",
]


def progress(message: str, end: str = "\n") -> None:
    """A progress line on stderr, at once (the tables go to stdout): a run would otherwise print nothing
    for its first seconds, while the DSL imports and compiles."""
    sys.stderr.write(message + end)
    sys.stderr.flush()


@dataclass
class Row:
    """One timed path. ``key`` names it in code (tables, JSON readers); ``path`` is its display label."""

    path: str
    median_us: float
    min_us: float
    event_us: float | None = None
    note: str = ""
    samples: list[float] = field(default_factory=list, repr=False)
    key: str = ""


#: a report's checks: what was checked -> whether it held (bool), a count (int), or why a path was skipped (str)
Checks = dict[str, bool | int | str]


@dataclass
class Report:
    machine: str
    mode: str
    dsl_version: str
    repeats: int
    iters: int
    rows: list[Row]
    checks: Checks
    notes: list[str] = field(default_factory=list)  # plain-words remarks printed under the table

    def row(self, key: str) -> Row | None:
        """The row of path ``key`` (``None`` when the path was not timed on this machine)."""
        return next((r for r in self.rows if r.key == key), None)

    def median(self, key: str) -> float:
        """Median microseconds of path ``key``, which every run times."""
        found = self.row(key)
        if found is None:
            raise KeyError(f"no row {key!r} in the report")
        return found.median_us


def _loop(fn: Callable[..., object], args: tuple[object, ...], iters: int) -> float:
    # the loop body is the same shape for every path: one call with its arguments
    it = range(iters)
    t0 = time.perf_counter()
    for _ in it:
        fn(*args)
    return (time.perf_counter() - t0) / iters * 1e6


def _keyword_loop(names: tuple[str, ...]) -> Callable[..., float]:
    """_loop's body with these keyword names written in the call (a ``**kwargs`` call would time
    the dict's unpacking too, which a call written with its keywords does not pay)."""
    if not all(n.isidentifier() for n in names):
        raise ValueError(f"keyword names must be identifiers: {names!r}")
    call = ", ".join(f"{n}=v{i}" for i, n in enumerate(names))
    unpack = "".join(f"v{i}, " for i in range(len(names)))
    src = (
        "def loop(fn, args, values, iters):\n"
        f"    {unpack}= values\n"
        "    it = range(iters)\n"
        "    t0 = perf_counter()\n"
        "    for _ in it:\n"
        f"        fn(*args, {call})\n"
        "    return (perf_counter() - t0) / iters * 1e6\n"
    )
    namespace: dict[str, Any] = {"perf_counter": time.perf_counter}  # exec's globals
    exec(compile_source(src, "bench keyword loop"), namespace)  # noqa: S102 - generated from identifiers only
    loop: Callable[[Callable[..., object], tuple[object, ...], tuple[object, ...], int], float] = namespace["loop"]
    return loop


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


@dataclass(frozen=True)
class TimedPath:
    """A path to time: ``loop(iters)`` returns host microseconds per launch."""

    key: str  # stable name used in code and JSON
    label: str  # what the table shows
    loop: Callable[[int], float]
    note: str = ""

    @classmethod
    def of(cls, label: str, loop: Callable[[int], float], note: str = "") -> TimedPath:
        """A path keyed by its label (for workloads whose rows are read by label)."""
        return cls(re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_"), label, loop, note)


def fixed_loop(fn: Callable[..., object], args: tuple[object, ...], kwargs: dict[str, object] | None = None) -> Callable[[int], float]:
    """A loop of ``fn(*args)`` (or, with keywords, ``fn(*args, name=value, ...)`` written out as user code
    writes it) that returns us per call."""
    if kwargs:
        loop = _keyword_loop(tuple(kwargs))
        values = tuple(kwargs.values())
        return lambda iters: loop(fn, args, values, iters)
    return lambda iters: _loop(fn, args, iters)


def time_rows(
    given: Sequence[TimedPath | tuple[str, Callable[[int], float], str]],
    repeats: int,
    iters: int,
    torch_stream: object = None,  # a torch.cuda.Stream
    label: str = "",
) -> list[Row]:
    """Time every path interleaved: ``repeats`` rounds of ``iters`` launches each (CUDA events too on a stream).

    A path may be given as a ``(label, loop, note)`` tuple (benchmark scripts do): it is keyed by its label.
    With a ``label`` the rounds are counted on stderr as they finish (:func:`progress`).
    """
    import contextlib

    paths = [p if isinstance(p, TimedPath) else TimedPath.of(*p) for p in given]

    gpu = torch_stream is not None
    stream_ctx: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if gpu:
        from .. import dsl

        torch = dsl.import_torch()
        stream_ctx = torch.cuda.stream(torch_stream)
    gc.collect()
    gc_was = gc.isenabled()
    gc.disable()
    stream_ctx.__enter__()
    samples: dict[str, list[float]] = {p.key: [] for p in paths}
    events: dict[str, list[float]] = {p.key: [] for p in paths}
    if len(samples) != len(paths):
        raise ValueError("two timed paths share a key")
    try:
        for p in paths:  # warm-up
            p.loop(max(100, iters // 20))
        if gpu:
            torch.cuda.synchronize()
        if label:
            progress(f"  {label}: timing {len(paths)} paths, {repeats} rounds x {iters} calls: round ", end="")
        for done in range(repeats):
            if label:
                progress(f"{done + 1}{'' if done + 1 == repeats else ','}", end="")
            for p in paths:
                if gpu:
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record(torch_stream)
                    samples[p.key].append(p.loop(iters))
                    end.record(torch_stream)
                    end.synchronize()
                    events[p.key].append(start.elapsed_time(end) * 1e3 / iters)
                    torch.cuda.synchronize()
                else:
                    samples[p.key].append(p.loop(iters))
        if label:
            progress("")
    finally:
        stream_ctx.__exit__(None, None, None)
        if gc_was:
            gc.enable()
    return [
        Row(
            path=p.label,
            median_us=statistics.median(samples[p.key]),
            min_us=min(samples[p.key]),
            event_us=statistics.median(events[p.key]) if events[p.key] else None,
            note=p.note,
            samples=samples[p.key],
            key=p.key,
        )
        for p in paths
    ]


def legend(report: Report, meanings: dict[str, str]) -> list[str]:
    """``- label: meaning`` for every row of the report, in table order."""
    return [f"- {r.path}: {meanings[r.key]}" for r in report.rows if r.key in meanings]


def fast_path_words(name: str) -> str:
    """The launch fast path in words: "c" -> "C extension"."""
    return {"c": "C extension", "python": "generated Python (no C compiler at install)"}.get(name, name)


def on_gpu(host_only: bool | None) -> bool:
    """Whether a workload runs on the GPU: not where ``host_only`` says so, else where a CUDA device is present."""
    from .. import dsl

    return dsl.cuda_device_count() > 0 if host_only is None else not host_only


def torch_or_none() -> Any:
    """torch where it imports, else ``None`` (a host-only run then uses NumPy arrays)."""
    from .. import dsl

    try:
        return dsl.import_torch()
    except ImportError:
        return None


class _Described(Protocol):
    """What a table's first lines name: a :class:`Report` or the coldstart workload's own report."""

    machine: str
    mode: str
    dsl_version: str


def table_head(report: _Described, timed: str, header: str, align: str, *, events: str = "") -> list[str]:
    """A table's first lines: the machine; the mode and DSL release, then ``timed`` (how often each path ran, or
    ""); a blank line; the ``header`` row and its ``align`` row. With ``events`` (the unit: "launch", "call") a
    last column of CUDA-event microseconds per that unit (:func:`event_cell` fills it)."""
    return [
        f"machine: {report.machine}",
        f"mode: {report.mode}; nvidia-cutlass-dsl {report.dsl_version}{timed}",
        "",
        header + (f" CUDA-event us/{events} |" if events else ""),
        align + ("---:|" if events else ""),
    ]


def event_cell(row: Row, shown: bool) -> str:
    """The CUDA-event cell of ``row`` ("-" where it has none), or "" where the table has no such column."""
    if not shown:
        return ""
    return f" {row.event_us:.2f} |" if row.event_us is not None else " - |"


def checks_line(checks: Checks) -> str:
    """The ``checks:`` line under a table; a check whose name starts with "_" is the workload's own, not shown."""
    return "checks: " + ", ".join(f"{k}: {v}" for k, v in checks.items() if not k.startswith("_"))
