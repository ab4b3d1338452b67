"""Where the pure-Python fast path's time goes: each piece of `launch` timed on its own.

Usage: python benchmarks/pieces.py [--repeats 41] [--iters 20000]

Builds the same 5-slot handle as the benchmark (host-only function on a machine
without a GPU, the seed's scale kernel with one) on the pure-Python fast path,
then times, interleaved, medians over rounds in nanoseconds per call:

- the entry call alone (cheapest ctypes form, as launch makes it),
- an empty function with launch's signature (positional-only defaults, *args, **kwargs),
- the extra-arguments/keywords test, the three pointer/stream type guards,
- `struct.pack_into` of the five values into the storage block,
- the result-slot read,
- the whole generated `launch`, and the C fast path's `launch` for comparison.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from typing import Any, Callable


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=41)
    ap.add_argument("--iters", type=int, default=20000)
    a = ap.parse_args()

    import numpy as np

    from cute_bind import dsl
    from cute_bind.bench.kernels import scale, scale_host
    from cute_bind import kernel

    gpu = dsl.cuda_device_count() > 0
    if gpu:
        import torch

        x = torch.randn(4096, device="cuda")
        out = torch.empty_like(x)
        fn, n, o, i = scale, 4096, out.data_ptr(), x.data_ptr()
    else:
        xa, oa = np.zeros(64, np.float32), np.zeros(64, np.float32)
        fn, n, o, i = scale_host, 4, oa.ctypes.data, xa.ctypes.data
    args = (o, i, 2.0, n, 0)
    os.environ["CUTE_BIND_PURE_PYTHON"] = "1"
    h = kernel(fn).bind(*args)
    del os.environ["CUTE_BIND_PURE_PYTHON"]
    hc = kernel(fn).bind(*args)  # C fast path (when built)
    pack, buf, call, argv, res = h._shared.layout.struct.pack_into, h._storage, h._gate[0], h._argv_address, h._result_view
    m = object()

    def sig(a0: Any = m, a1: Any = m, a2: Any = m, a3: Any = m, a4: Any = m, /, *x: Any, **k: Any) -> None:
        pass

    def extra_test(*x: Any, **k: Any) -> None:
        if x or k:
            return

    def guards(a0: Any, a1: Any, a2: Any, a3: Any, a4: Any) -> None:
        if a0.__class__ is not int or a1.__class__ is not int or a4.__class__ is not int:
            return

    def packing(a0: Any, a1: Any, a2: Any, a3: Any, a4: Any) -> None:
        pack(buf, 0, a0, a1, a2, a3, a4)

    def read_result(*_: Any) -> None:
        if res[0]:
            return

    def empty(a0: Any, a1: Any, a2: Any, a3: Any, a4: Any) -> None:
        pass

    pieces: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("empty 5-argument function (loop baseline)", empty, args),
        ("entry call alone (ctypes, prebuilt c_void_p)", call, (argv,)),
        ("launch signature (pos-only defaults, *args, **kwargs)", sig, args),
        ("extra/keyword test", extra_test, ()),
        ("3 pointer/stream type guards", guards, args),
        ("struct.pack_into, 5 values", packing, args),
        ("result-slot read", read_result, ()),
        ("whole launch, pure-Python fast path", h.launch, args),
        ("whole launch, C fast path" if hc._launcher is not None else "whole launch (C path not built)", hc.launch, args),
    ]
    samples: dict[str, list[float]] = {p[0]: [] for p in pieces}
    gc.disable()
    for _ in range(a.repeats):
        for name, f, fa in pieces:
            t0 = time.perf_counter()
            for _ in range(a.iters):
                f(*fa)
            samples[name].append((time.perf_counter() - t0) / a.iters * 1e9)
        if gpu:
            torch.cuda.synchronize()
    gc.enable()
    base = statistics.median(samples[pieces[0][0]])
    print(f"{'GPU' if gpu else 'CPU'}; {a.repeats} interleaved rounds x {a.iters} calls; median ns/call (and minus the loop baseline)")
    for name, _, _ in pieces:
        med = statistics.median(samples[name])
        print(f"{name:58s} {med:8.0f} {med - base:+8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
