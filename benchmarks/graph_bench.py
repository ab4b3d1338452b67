"""Host cost per kernel of prepared graphs (cute_bind.graph) against individual launches and a torch graph.

Usage: python benchmarks/graph_bench.py [--chains 1,10,100] [--iters 300] [--repeats 5] [--json out.json] [--fake]

For chains of K kernels (the fixed-grid scale kernel of tests/kernels/gpu.py,
one handle per kernel, each reading the previous one's output), medians over
the repeats of the mean host time per kernel, in microseconds:

- ``launch``: K individual ``handle.launch`` calls,
- ``replay``: ``g.replay()`` with no updates,
- ``replay+1 ptr``: one pointer per kernel updated (``g.updater(step, "out")``, one call per
  kernel, in the loop a user writes: ``for set_out, value in zip(setters, values)``), then
  ``g.replay()``,
- ``+1 ptr batched``: the same pointers staged by one batched updater
  (``g.updaters([(step, "out"), ...])``, one call for all K), then ``g.replay()``,
- ``replay+all``: every runtime value of every kernel (out, inp, alpha, n) updated through
  ``g.replay({step: {...}})``, then launched,
- ``torch graph``: ``torch.cuda.CUDAGraph.replay()`` of the same K launches captured by torch.

Then, per chain, the pieces of "replay+1 ptr": staging the K pointers alone
(per-step updaters; batched), and the replay of K nodes already staged (the
driver's node rewrites plus the launch, through the replay loop).

The header names the replay loop measured: "c" (cute_bind/graph/_cgraph.c, the
driver entry points called from C) or "python" (through cuda.bindings, one
call per rewritten node; ``CUTE_BIND_PURE_PYTHON=1``).

Each graph call is timed on its own with the stream drained before it, so
device time never counts. Every configuration ends with a bitwise check of
the replayed chain against the same launches run one by one. Without a GPU
(or with ``--fake``) the same runs go through the fake driver and host-only
functions: a smoke run, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

N = 1024


def _median_per_kernel(samples: list[float], k: int) -> float:
    return statistics.median(samples) / k * 1e6


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chains", default="1,10,100")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default="")
    ap.add_argument("--fake", action="store_true", help="CPU smoke run through the fake driver")
    a = ap.parse_args()

    import cute_bind
    from cute_bind import dsl

    fake = a.fake or dsl.cuda_device_count() == 0
    chains = [int(c) for c in a.chains.split(",") if c]
    rows = []
    env = _Fake() if fake else _Gpu()
    print(f"# cute_bind.graph host cost per kernel (us, median of {a.repeats} repeats x {a.iters} iterations) on {env.name}")
    print(
        f"{'chain':>6} {'launch':>9} {'replay':>9} {'replay+1 ptr':>13} {'+1 ptr batched':>15} {'replay+all':>11} "
        f"{'torch graph':>12} {'record (s)':>11} {'bitwise':>8}"
    )
    for k in chains:
        row = env.run(cute_bind, k, a.iters, a.repeats)
        rows.append(row)
        torch_col = f"{row['torch_graph']:.3f}" if row["torch_graph"] is not None else "n/a"
        print(
            f"{k:>6} {row['launch']:>9.3f} {row['replay']:>9.3f} {row['replay_one_pointer']:>13.3f} "
            f"{row['replay_one_pointer_batched']:>15.3f} {row['replay_all_slots']:>11.3f} "
            f"{torch_col:>12} {row['record_seconds']:>11.3f} {'ok' if row['bitwise'] else 'FAILED':>8}"
        )
    print("# pieces of replay+1 ptr (us per kernel): stage with per-step updaters | stage batched | replay of staged nodes")
    for row in rows:
        p = row["pieces"]
        print(f"{row['chain']:>6} {p['stage_updaters']:>9.3f} {p['stage_batched']:>9.3f} {p['replay_staged']:>9.3f}")
    last = rows[-1]
    if not fake and last["torch_graph"]:
        print(f"# {last['chain']} kernels: replay+1 ptr {last['replay_one_pointer']:.3f} us/kernel, batched "
              f"{last['replay_one_pointer_batched']:.3f} (target <= 0.7); "
              f"replay {last['replay'] / last['torch_graph']:.2f}x a torch graph (target <= 2)")  # fmt: skip
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": env.name, "fake": fake, "rows": rows}, f, indent=1)
    return 0 if all(r["bitwise"] for r in rows) else 1


class _Gpu:
    def __init__(self) -> None:
        import torch

        from cute_bind.graph import CudaDriver

        self.torch = torch
        # which replay loop the rows measure (CUTE_BIND_PURE_PYTHON=1 selects the Python one)
        drv = CudaDriver()
        why = f" ({drv.replay_path_reason})" if drv.replay_path_reason else ""
        self.name = f"{torch.cuda.get_device_name()}, replay loop: {drv.replay_path}{why}"

    def run(self, cute_bind: Any, k: int, iters: int, repeats: int) -> dict[str, Any]:
        torch = self.torch
        from tests.kernels.gpu import scale_fixed_grid

        s = torch.cuda.Stream()
        kern = cute_bind.kernel(scale_fixed_grid)
        bufs = [torch.randn(N, device="cuda") for _ in range(k + 1)]
        spare = [torch.empty(N, device="cuda") for _ in range(k)]
        base = kern.bind(bufs[1], bufs[0], 1.0, N, s)
        hs = [base.clone() for _ in range(k)]
        ptr = [b.data_ptr() for b in bufs]
        sptr = [b.data_ptr() for b in spare]
        stream = s.cuda_stream
        launches = [h.launch for h in hs]
        for i, launch in enumerate(launches):  # warm up outside any capture
            launch(ptr[i + 1], ptr[i], 1.0, N, stream)
        s.synchronize()
        t0 = time.perf_counter()
        with cute_bind.graph(s) as g:
            steps = [g.launch(h, ptr[i + 1], ptr[i], 1.0, N, stream) for i, h in enumerate(hs)]
        record = time.perf_counter() - t0
        tg = torch.cuda.CUDAGraph()
        with torch.cuda.graph(tg, stream=s):
            for i, launch in enumerate(launches):
                launch(ptr[i + 1], ptr[i], 1.0, N, stream)
        setters = [g.updater(st, "out") for st in steps]
        set_all = g.updaters([(st, "out") for st in steps])
        batches = ([ptr[i + 1] for i in range(k)], [sptr[i] for i in range(k)])
        full = [
            {
                st: {"out": (ptr if flip else sptr)[i + 1 if flip else i], "inp": ptr[i], "alpha": 1.0 + flip, "n": N}
                for i, st in enumerate(steps)
            }
            for flip in (0, 1)
        ]
        sync = s.synchronize

        def timed(
            op: Callable[[int], None], before: Callable[[], Any] | None = None, after: Callable[[], Any] | None = None
        ) -> list[float]:
            out = []
            for rep in range(repeats):
                total = 0.0
                for it in range(iters):
                    if before is not None:
                        before()
                    sync()
                    t = time.perf_counter()
                    op(it)
                    total += time.perf_counter() - t
                    if after is not None:
                        after()
                out.append(total / iters)
            return out

        def individual(it: int) -> None:
            for i in range(k):
                launches[i](ptr[i + 1], ptr[i], 1.0, N, stream)

        def one_pointer(it: int) -> None:
            for set_out, value in zip(setters, batches[it & 1]):  # the loop a user writes: one call per kernel
                set_out(value)
            g.replay()

        def one_pointer_batched(it: int) -> None:
            set_all(batches[it & 1])
            g.replay()

        # the pieces: staging alone (each staging replayed outside the timed call, so the
        # executable graph always holds what the node buffers hold), and the replay of nodes
        # staged outside the timed call
        def stage_updaters(it: int) -> None:
            for set_out, value in zip(setters, batches[it & 1]):
                set_out(value)

        def stage_batched(it: int) -> None:
            set_all(batches[it & 1])

        flip = [0]

        def restage() -> None:
            flip[0] ^= 1
            set_all(batches[flip[0]])

        pieces = {
            "stage_updaters": _median_per_kernel(timed(stage_updaters, after=g.replay), k),
            "stage_batched": _median_per_kernel(timed(stage_batched, after=g.replay), k),
            "replay_staged": _median_per_kernel(timed(lambda it: g.replay(), before=restage), k),
        }
        row = {
            "chain": k,
            "launch": _median_per_kernel(timed(individual), k),
            "replay": _median_per_kernel(timed(lambda it: g.replay()), k),
            "replay_one_pointer": _median_per_kernel(timed(one_pointer), k),
            "replay_one_pointer_batched": _median_per_kernel(timed(one_pointer_batched), k),
            "replay_all_slots": _median_per_kernel(timed(lambda it: g.replay(full[it & 1])), k),
            "torch_graph": _median_per_kernel(timed(lambda it: tg.replay()), k),
            "record_seconds": record,
            "rerecords": g.stats.rerecords,
            "pieces": pieces,
        }
        # bitwise: the replayed chain against the same launches one by one, fresh input. The fills run
        # on torch's current stream and the chain on `s` (a non-blocking stream: no implicit order with
        # the default one), so each side waits for the other before it starts
        bufs[0].copy_(torch.randn(N, device="cuda"))
        for i, st in enumerate(steps):
            g.update(st, out=bufs[i + 1], inp=bufs[i], alpha=0.5 + i, n=N)
        for b in bufs[1:]:
            b.fill_(float("nan"))
        torch.cuda.synchronize()
        g.replay()
        s.synchronize()
        replayed = [b.clone() for b in bufs[1:]]
        for b in bufs[1:]:
            b.fill_(float("nan"))
        torch.cuda.synchronize()
        for i, launch in enumerate(launches):
            launch(ptr[i + 1], ptr[i], 0.5 + i, N, stream)
        s.synchronize()
        row["bitwise"] = all(torch.equal(x.view(torch.int32), y.view(torch.int32)) for x, y in zip(replayed, bufs[1:]))
        g.close()
        return row


class _Fake:
    name = "CPU, fake driver (smoke run: no device, numbers are not launch costs)"

    def run(self, cute_bind: Any, k: int, iters: int, repeats: int) -> dict[str, Any]:
        import numpy as np

        from tests.kernels import graph_host as K

        iters = min(iters, 50)
        fake = K.FAKE
        kern = cute_bind.kernel(K.scale)
        bufs = [np.random.default_rng(i).standard_normal(64).astype(np.float32) for i in range(k + 1)]
        spare = [np.zeros(64, np.float32) for _ in range(k)]
        ptr = [b.ctypes.data for b in bufs]
        sptr = [b.ctypes.data for b in spare]
        base = kern.bind(ptr[1], ptr[0], 1.0, 64, 0, K.BOX)
        hs = [base.clone() for _ in range(k)]
        t0 = time.perf_counter()
        with cute_bind.graph(0, driver=fake) as g:
            steps = [g.launch(h, ptr[i + 1], ptr[i], 1.0, 64, 0) for i, h in enumerate(hs)]
        record = time.perf_counter() - t0
        setters = [g.updater(st, "out") for st in steps]
        set_all = g.updaters([(st, "out") for st in steps])
        batches = ([ptr[i + 1] for i in range(k)], [sptr[i] for i in range(k)])
        full = [{st: {"out": sptr[i], "inp": ptr[i], "alpha": 1.0 + flip, "n": 64} for i, st in enumerate(steps)} for flip in (0, 1)]

        def timed(
            op: Callable[[int], None], before: Callable[[], None] | None = None, after: Callable[[], None] | None = None
        ) -> list[float]:
            """Mean seconds per call of op over each repeat; ``before``/``after`` run around each call, untimed."""
            out = []
            for rep in range(repeats):
                total = 0.0
                for it in range(iters):
                    if before is not None:
                        before()
                    t = time.perf_counter()
                    op(it)
                    total += time.perf_counter() - t
                    if after is not None:
                        after()
                    fake.synchronize()  # untimed: the fake driver's mailbox holds 4096 launches
                out.append(total / iters)
            return out

        flip = [0]

        def restage() -> None:
            flip[0] ^= 1
            set_all(batches[flip[0]])

        def stage_updaters(it: int) -> None:
            for set_out, value in zip(setters, batches[it & 1]):
                set_out(value)

        def stage_batched(it: int) -> None:
            set_all(batches[it & 1])

        def individual(it: int) -> None:
            for i in range(k):
                hs[i].launch(ptr[i + 1], ptr[i], 1.0, 64, 0)

        def one_pointer(it: int) -> None:
            for set_out, value in zip(setters, batches[it & 1]):
                set_out(value)
            g.replay()

        def one_pointer_batched(it: int) -> None:
            set_all(batches[it & 1])
            g.replay()

        row = {
            "chain": k,
            "launch": _median_per_kernel(timed(individual), k),
            "replay": _median_per_kernel(timed(lambda it: g.replay()), k),
            "replay_one_pointer": _median_per_kernel(timed(one_pointer), k),
            "replay_one_pointer_batched": _median_per_kernel(timed(one_pointer_batched), k),
            "replay_all_slots": _median_per_kernel(timed(lambda it: g.replay(full[it & 1])), k),
            "torch_graph": None,
            "record_seconds": record,
            "rerecords": g.stats.rerecords,
            "pieces": {  # as the GPU run times them: each staging replayed, the replay's staging done, untimed
                "stage_updaters": _median_per_kernel(timed(stage_updaters, after=g.replay), k),
                "stage_batched": _median_per_kernel(timed(stage_batched, after=g.replay), k),
                "replay_staged": _median_per_kernel(timed(lambda it: g.replay(), before=restage), k),
            },
        }
        for i, st in enumerate(steps):
            g.update(st, out=ptr[i + 1], inp=ptr[i], alpha=0.5 + i, n=64)
        g.replay()
        replayed = [b.copy() for b in bufs[1:]]
        for i, h in enumerate(hs):
            h.launch(ptr[i + 1], ptr[i], 0.5 + i, 64, 0)
        fake.synchronize()
        row["bitwise"] = all(x.tobytes() == y.tobytes() for x, y in zip(replayed, bufs[1:]))
        g.close()
        return row


if __name__ == "__main__":
    sys.exit(main())
