"""Launch overhead per device on a machine with two or more GPUs.

Usage: python benchmarks/multi_gpu.py [--repeats 21] [--iters 2000] [--json PATH]

For every device d, a handle of the benchmark's scale kernel bound with
tensors on d (``kernel.bind``: cute_bind picks the executor for d) and one
from ``cute_bind.prepare(compiled.to(d), ...)``, each launched on a stream of
d with d current, and the direct call of d's executor. Host time per launch
(median over rounds, microseconds; the queue is drained between rounds,
outside the timing) is printed side by side for:

- ``cuda:d alone``: each device on its own (the single-device figures);
- ``all devices, one thread``: one launch per device in turn, switching the
  current device each time (per launch);
- ``thread per device``: every device's thread launching at the same time,
  each with its device current (per launch, the median thread).

Before timing, every path's output is checked bitwise against the direct call
on its device. Exits 1 when a check fails, 2 with fewer than two devices.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N = 4096


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()

    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    import cute_bind
    from cute_bind import dsl
    from cute_bind.bench.kernels import scale

    torch = dsl.import_torch()
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        print(f"multi-GPU benchmark: needs two CUDA devices, found {count}")
        return 2
    devices = list(range(count))
    gmem = cute.AddressSpace.gmem

    def ptr(t: Any) -> Any:
        return make_ptr(cutlass.Float32, t.data_ptr(), gmem, assumed_align=16)

    k = cute_bind.kernel(scale)
    per: dict[int, dict[str, Any]] = {}
    checks: dict[str, bool] = {}
    for d in devices:
        with torch.cuda.device(d):
            x = torch.randn(N, device=f"cuda:{d}")
            out, ref = torch.empty_like(x), torch.full_like(x, float("nan"))
            s = torch.cuda.Stream(device=d)
            bound = k.bind(out, x, 2.0, N, s)
            executor = k.compile(out, x, 2.0, N, s).to(d)
            prepared = cute_bind.prepare(executor, out, x, 2.0, N, s)
            o, i, sh = out.data_ptr(), x.data_ptr(), s.cuda_stream
            direct_args = (ptr(out), ptr(x), cutlass.Float32(2.0), cutlass.Int32(N), cuda.CUstream(sh))
            executor(ptr(ref), ptr(x), cutlass.Float32(2.0), cutlass.Int32(N), cuda.CUstream(sh))
            for name, h in (("kernel.bind", bound), ("prepare(compiled.to(d))", prepared)):
                out.fill_(float("nan"))
                h.launch(o, i, 2.0, N, sh)
                s.synchronize()
                checks[f"cuda:{d} {name} == direct call"] = bool(torch.equal(out.view(torch.int32), ref.view(torch.int32)))
            per[d] = dict(
                stream=s,
                paths={
                    "PreparedLaunch.launch (kernel.bind)": (bound.launch, (o, i, 2.0, N, sh)),
                    "PreparedLaunch.launch (prepare(compiled.to(d)))": (prepared.launch, (o, i, 2.0, N, sh)),
                    "direct call of compiled.to(d)": (executor, direct_args),
                },
            )

    def loop(fn: Callable[..., Any], args: tuple[Any, ...], iters: int) -> float:
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            fn(*args)
        return (time.perf_counter_ns() - t0) / iters / 1e3

    def drain() -> None:
        for d in devices:
            torch.cuda.synchronize(d)

    rows: dict[str, dict[str, float]] = {}
    path_names = list(per[0]["paths"])
    for path in path_names:
        samples: dict[str, list[float]] = {}
        for _ in range(a.repeats):
            for d in devices:  # each device on its own: the single-device figures
                fn, args = per[d]["paths"][path]
                with torch.cuda.device(d):
                    samples.setdefault(f"cuda:{d} alone", []).append(loop(fn, args, a.iters))
                drain()
            # all devices from one thread: one launch per device in turn
            calls = [(per[d]["paths"][path], d) for d in devices]
            t0 = time.perf_counter_ns()
            for _ in range(a.iters):
                for (fn, args), d in calls:
                    with torch.cuda.device(d):
                        fn(*args)
            samples.setdefault("all devices, one thread", []).append((time.perf_counter_ns() - t0) / (a.iters * len(devices)) / 1e3)
            drain()
            # one thread per device, all at once
            results: dict[int, float] = {}
            barrier = threading.Barrier(len(devices))

            def work(d: int) -> None:
                torch.cuda.set_device(d)
                fn, args = per[d]["paths"][path]
                fn(*args)  # warm
                barrier.wait(timeout=120)
                results[d] = loop(fn, args, a.iters)

            threads = [threading.Thread(target=work, args=(d,)) for d in devices]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=600)
            drain()
            if len(results) != len(devices):
                raise RuntimeError(f"thread per device: only devices {sorted(results)} finished")
            samples.setdefault("thread per device", []).append(statistics.median(results.values()))
        rows[path] = {label: statistics.median(v) for label, v in samples.items()}

    labels = [*(f"cuda:{d} alone" for d in devices), "all devices, one thread", "thread per device"]
    print(f"## launch overhead per device: host us/launch (median of {a.repeats} rounds x {a.iters} launches), {count} GPUs: "
          + ", ".join(torch.cuda.get_device_name(d) for d in devices))  # fmt: skip
    print("| path | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for path, r in rows.items():
        print(f"| {path} | " + " | ".join(f"{r.get(label, float('nan')):.2f}" for label in labels) + " |")
    print()
    for name, ok in checks.items():
        print(f"check {name}: {'ok' if ok else 'FAILED'}")
    if a.json:
        a.json.write_text(json.dumps({"devices": count, "repeats": a.repeats, "iters": a.iters, "rows": rows, "checks": checks}, indent=2))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
