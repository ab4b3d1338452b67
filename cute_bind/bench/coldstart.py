"""``bench --workload coldstart``: fresh processes from import to first launch, with the disk cache off, cold and warm.

Each case runs in new Python processes (``python -c``), which time their own
phases: importing cute_bind and the kernel's module (the DSL with it), the
first ``bind()`` (a compile, or a load from the disk cache) and the first
launch (synchronised on a GPU). Modes: ``off`` (``CUTE_BIND_CACHE=0``),
``cold`` (an empty cache folder: compile, export and store), ``warm`` (the
folder a previous process filled). Medians over processes.

Then, in one process, a handle bound from a fresh compile and one bound from
the reloaded entry are checked (same launch bytes, bitwise-same outputs) and
their launches timed interleaved.

Cases: the seed's scale kernel (on the GPU when there is one, else its
host-only twin) and the test suite's largest kernel, ``polynomial`` of
``tests/kernels/cached.py`` at degree 2000 (a fully unrolled loop that takes
one to two seconds to compile on the 2-core CPU machine, so the "100x the
compile" target is evaluated; only from a source checkout, where ``tests/`` is
importable); on a GPU also ``ints`` of ``tests/kernels/gpu.py``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .timing import Checks, Row, TimedPath, checks_line, fixed_loop, machine, on_gpu, table_head, time_rows

__all__ = ["ColdReport", "format_cold_table", "run_coldstart"]

ROOT = Path(__file__).resolve().parents[2]  # a source checkout's root (tests/ lives there)
WARM_BIND_TARGET_MS = 30.0
DEGREE = 2000  # long enough a compile (over a second) for the 100x target to apply


@dataclass
class ColdRow:
    case: str
    mode: str  # off, cold, warm
    import_ms: float
    bind_ms: float
    launch_ms: float
    total_ms: float  # import to first launch, in the process
    wall_ms: float  # the whole process, as its parent sees it
    outcome: str
    processes: int


@dataclass
class ColdReport:
    machine: str
    mode: str
    dsl_version: str
    repeats: int
    iters: int
    rows: list[ColdRow]
    launch_rows: list[Row]
    checks: Checks
    targets: dict[str, bool] = field(default_factory=dict)


# ---------------------------------------------------------------- the child process
def _case(name: str, gpu: bool) -> tuple[Any, tuple[Any, ...], Any, Any]:
    """``(kernel, args, read_output, sync)`` for a case; the imports happen here (timed as import)."""
    import ctypes

    import cute_bind

    sync: Any = lambda: None  # noqa: E731
    if name == "scale":
        from . import kernels

        if gpu:
            from .. import dsl

            torch = dsl.import_torch()

            x = torch.arange(4096, device="cuda", dtype=torch.float32)
            out = torch.zeros_like(x)
            k = cute_bind.kernel(kernels.scale)
            args: tuple[Any, ...] = (out.data_ptr(), x.data_ptr(), 2.0, 4096, 0)
            return k, args, lambda: out.cpu().numpy().tobytes(), torch.cuda.synchronize
        xs = (ctypes.c_float * 64)(*[float(i) for i in range(64)])
        o = (ctypes.c_float * 64)()
        k = cute_bind.kernel(kernels.scale_host)
        return k, (ctypes.addressof(o), ctypes.addressof(xs), 2.0, 64, 0), lambda _keep=xs: bytes(o), sync
    if name == "polynomial":
        cached = importlib.import_module("tests.kernels.cached")  # a source checkout's tests (not type-checked)

        xs = (ctypes.c_float * 256)(*[(i % 17) / 16.0 for i in range(256)])
        o = (ctypes.c_float * 256)()
        return cached.polynomial, (ctypes.addressof(o), ctypes.addressof(xs), 256, DEGREE), lambda _keep=xs: bytes(o), sync
    if name == "gpu_ints":
        from .. import dsl

        torch = dsl.import_torch()

        gk = importlib.import_module("tests.kernels.gpu")

        x = torch.arange(4096, device="cuda", dtype=torch.int64)
        out = torch.zeros_like(x)
        k = cute_bind.kernel(gk.ints)
        args = (out.data_ptr(), x.data_ptr(), 4096, True, 1, 2, 3, 4, 5, 6, 7, 8, 0)
        return k, args, lambda: out.cpu().numpy().tobytes(), torch.cuda.synchronize
    raise ValueError(name)


def _runtime_args(kernel: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    constexpr = {p.name for p in kernel.signature.constexpr}
    return tuple(a for p, a in zip(kernel.signature.params, args) if p.name not in constexpr)


def child(case: str, gpu: bool) -> None:
    """One fresh process: time import, first bind and first launch; print one JSON line."""
    t0 = time.perf_counter()
    kernel, args, read, sync = _case(case, gpu)
    t1 = time.perf_counter()
    handle = kernel.bind(*args)
    t2 = time.perf_counter()
    handle.launch(*_runtime_args(kernel, args))
    sync()
    t3 = time.perf_counter()
    import cute_bind

    events = [e.outcome for e in cute_bind.cache.history()]
    print(
        json.dumps(
            {
                "import": t1 - t0,
                "bind": t2 - t1,
                "launch": t3 - t2,
                "outcome": ",".join(events) or "off",
                "digest": hashlib.sha256(read()).hexdigest(),
            }
        )
    )


def _spawn(case: str, gpu: bool, env: dict[str, str]) -> dict[str, Any]:
    code = f"from cute_bind.bench.coldstart import child; child({case!r}, {gpu!r})"
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"coldstart child {case} failed:\n{proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def _row(case: str, mode: str, runs: list[dict[str, Any]]) -> ColdRow:
    def med(k: str) -> float:
        return float(statistics.median(r[k] for r in runs)) * 1e3

    return ColdRow(
        case=case,
        mode=mode,
        import_ms=med("import"),
        bind_ms=med("bind"),
        launch_ms=med("launch"),
        total_ms=statistics.median((r["import"] + r["bind"] + r["launch"]) for r in runs) * 1e3,
        wall_ms=med("wall"),
        outcome="/".join(sorted({r["outcome"] for r in runs})),
        processes=len(runs),
    )


# ---------------------------------------------------------------- launch: fresh vs reloaded handle
def _launch_compare(case: str, gpu: bool, cache: Path, repeats: int, iters: int, checks: Checks) -> list[Row]:
    import cute_bind

    from ..jit import Kernel

    old = os.environ.get("CUTE_BIND_CACHE_DIR")
    os.environ["CUTE_BIND_CACHE_DIR"] = str(cache)
    try:
        kernel, args, read, sync = _case(case, gpu)
        fresh_kernel = Kernel(kernel.fn, name=f"{kernel.name}_fresh", cache=False, compile_options=kernel.compile_options)
        fresh = fresh_kernel.bind(*args)
        kernel.clear_cache()
        before = len(cute_bind.cache.history())
        loaded = kernel.bind(*args)
        outcomes = [e.outcome for e in cute_bind.cache.history()[before:]]
    finally:
        if old is None:
            os.environ.pop("CUTE_BIND_CACHE_DIR", None)
        else:
            os.environ["CUTE_BIND_CACHE_DIR"] = old
    from .. import dsl

    checks[f"{case}: reloaded handle loaded from disk"] = outcomes == ["hit"] and dsl.is_loaded_from_binary(loaded.compiled)
    run_args = _runtime_args(kernel, args)
    fresh.launch(*run_args)
    sync()
    a = read()
    loaded.launch(*run_args)
    sync()
    b = read()
    checks[f"{case}: reloaded launch bytes == fresh launch bytes"] = fresh.storage_bytes() == loaded.storage_bytes()
    checks[f"{case}: reloaded outputs == fresh outputs (bitwise)"] = a == b
    torch_stream = None
    if gpu:
        from .. import dsl

        torch = dsl.import_torch()

        torch_stream = torch.cuda.current_stream()
    loops = [
        TimedPath.of(
            f"{case}: launch, freshly compiled handle", fixed_loop(fresh.launch, run_args), "compiled in this process (cache=False)"
        ),
        TimedPath.of(f"{case}: launch, reloaded handle", fixed_loop(loaded.launch, run_args), "loaded from the disk cache"),
    ]
    return time_rows(loops, repeats, iters, torch_stream, label="cold start")


def run_coldstart(*, host_only: bool | None = None, repeats: int = 5, iters: int = 2000) -> ColdReport:
    """Run every case in fresh processes (``repeats`` per mode, at most 7) and compare launches."""
    from .. import dsl

    gpu = on_gpu(host_only)
    procs = max(1, min(repeats, 7))
    cases = ["scale"]
    has_tests = (ROOT / "tests" / "kernels" / "cached.py").is_file()
    if has_tests:
        cases.append("polynomial")
        if gpu:
            cases.append("gpu_ints")
    base = dict(os.environ)
    base["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([base["PYTHONPATH"]] if base.get("PYTHONPATH") else []))
    base.pop("CUTE_BIND_CACHE", None)
    rows: list[ColdRow] = []
    checks: Checks = {}
    targets: dict[str, bool] = {}
    launch_rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="cute_bind_coldstart_") as tmp:
        for case in cases:
            digests = set()
            off = [_spawn(case, gpu, {**base, "CUTE_BIND_CACHE": "0"}) for _ in range(procs)]
            cold = []
            for i in range(procs):
                cold.append(_spawn(case, gpu, {**base, "CUTE_BIND_CACHE_DIR": os.path.join(tmp, f"{case}-cold-{i}")}))
            warm_dir = os.path.join(tmp, f"{case}-warm")
            _spawn(case, gpu, {**base, "CUTE_BIND_CACHE_DIR": warm_dir})  # fills it
            warm = [_spawn(case, gpu, {**base, "CUTE_BIND_CACHE_DIR": warm_dir}) for _ in range(procs)]
            for r in off + cold + warm:
                digests.add(r["digest"])
            checks[f"{case}: every process computed the same output"] = len(digests) == 1
            checks[f"{case}: warm processes loaded from disk"] = all(r["outcome"] == "hit" for r in warm)
            checks[f"{case}: cold processes compiled and stored"] = all(r["outcome"] == "compiled" for r in cold)
            rows += [_row(case, "off", off), _row(case, "cold", cold), _row(case, "warm", warm)]
            warm_bind = rows[-1].bind_ms
            targets[f"{case}: warm first bind {warm_bind:.1f} ms <= {WARM_BIND_TARGET_MS:.0f} ms"] = warm_bind <= WARM_BIND_TARGET_MS
            off_bind = rows[-3].bind_ms
            if off_bind >= 1000.0:
                targets[f"{case}: compile {off_bind / 1e3:.2f} s / warm bind = {off_bind / warm_bind:.0f}x >= 100x"] = (
                    off_bind / warm_bind >= 100
                )
            launch_rows += _launch_compare(case, gpu, Path(warm_dir), max(3, repeats), iters, checks)
    mode = ("GPU" if gpu else "CPU (host-only functions)") + f"; {procs} fresh processes per mode; cases: {', '.join(cases)}"
    if not has_tests:
        mode += " (tests/ not found: only the scale kernel)"
    return ColdReport(
        machine=machine(), mode=mode, dsl_version=dsl.dsl_version(), repeats=procs, iters=iters,
        rows=rows, launch_rows=launch_rows, checks=checks, targets=targets,
    )  # fmt: skip


def format_cold_table(report: ColdReport) -> str:
    lines = table_head(
        report,
        "",
        "| kernel | disk cache | import ms | first bind ms | first launch ms | import to first launch ms | process wall ms | outcome |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    )
    for r in report.rows:
        lines.append(
            f"| {r.case} | {r.mode} | {r.import_ms:.1f} | {r.bind_ms:.1f} | {r.launch_ms:.2f} | {r.total_ms:.1f} | {r.wall_ms:.0f} | {r.outcome} |"
        )
    lines += ["", "| launch path | host us/launch (median) | min | note |", "|---|---:|---:|---|"]
    for lr in report.launch_rows:
        lines.append(f"| {lr.path} | {lr.median_us:.3f} | {lr.min_us:.3f} | {lr.note} |")
    lines += [
        "",
        "targets: " + ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in report.targets.items()),
        checks_line(report.checks),
    ]
    return "\n".join(lines)
