"""Prepared TVM-FFI launch vs calling the TVM-FFI compiled function directly (same run, same values).

Two workloads, each compiled with ``--enable-tvm-ffi`` as TVM-FFI users compile:

- tensors: the scale kernel on ``cute.Tensor`` arguments, fake tensors and the
  environment stream at compile time, called with torch tensors (a pool of
  tensor pairs cycled) on torch's current stream;
- pointers: the seed's 5-argument pointer kernel, called with int addresses,
  a float, an int and an int stream.

Checks first (every output bitwise equal to the direct call's, on every pool
entry, outputs poisoned before each launch), then interleaved rounds; prints
one line per row (median host microseconds per launch, CUDA-event time on a
GPU) and the prepared/direct ratio. On a machine without a GPU the host-only
twins of both kernels run instead (CPU tensors, explicit stream argument).

    python benchmarks/tvm_ffi_prepared.py [--repeats 21] [--iters 5000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--iters", type=int, default=5000)
    parser.add_argument("--json", default=None)
    opts = parser.parse_args()

    import torch
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream, make_ptr

    import cute_bind
    from cute_bind.bench.kernels import scale, scale_host, scale_tensors, scale_tensors_host
    from cute_bind.bench.timing import machine, time_rows

    gpu = torch.cuda.is_available()
    dev = "cuda" if gpu else "cpu"
    n = 4096 if gpu else 64
    pool_size = 8
    alpha = 1.7
    stream = torch.cuda.current_stream() if gpu else None
    checks: dict[str, object] = {}
    rows_json = []

    def pool_of(k: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        g = torch.Generator(device=dev).manual_seed(k)
        return [(torch.empty(n, device=dev), torch.randn(n, device=dev, generator=g)) for _ in range(pool_size)]

    def bitwise(a: torch.Tensor, b: torch.Tensor) -> bool:
        return bool(torch.equal(a.view(torch.int32), b.view(torch.int32)))

    # ---------------------------------------------------------------- tensors + env stream
    if gpu:
        fake = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),), assumed_align=16)
        tfn = cute.compile(
            scale_tensors, fake, fake, cutlass.Float32(alpha), make_fake_stream(use_tvm_ffi_env_stream=True), options="--enable-tvm-ffi"
        )
        targs = lambda o, i: (o, i, alpha)  # noqa: E731 - the stream is the environment's
    else:
        mark = lambda t: from_dlpack(t).mark_layout_dynamic()  # noqa: E731
        tfn = cute.compile(
            scale_tensors_host,
            mark(torch.zeros(n)),
            mark(torch.zeros(n)),
            cutlass.Float32(alpha),
            make_fake_stream(),
            options="--enable-tvm-ffi",
        )
        targs = lambda o, i: (o, i, alpha, 0)  # noqa: E731
    pool = pool_of(1)
    th = cute_bind.prepare(tfn, *targs(*pool[0]))
    ok = True
    for o, i in pool:
        ref = torch.full_like(o, float("nan"))
        tfn(*targs(ref, i))
        o.fill_(float("nan"))
        th.launch(*targs(o, i))
        if gpu:
            torch.cuda.synchronize()
        ok = ok and bitwise(o, ref)
    checks["tensors: prepared == direct (bitwise, %d tensor pairs)" % pool_size] = ok
    checks["tensors: fast path"] = th.fast_path

    # ---------------------------------------------------------------- pointers (int addresses)
    space = cute.AddressSpace.gmem if gpu else cute.AddressSpace.generic
    o0, i0 = pool_of(2)[0]
    fn_p = scale if gpu else scale_host
    pargs0 = (
        make_ptr(cutlass.Float32, o0.data_ptr(), space, assumed_align=16),
        make_ptr(cutlass.Float32, i0.data_ptr(), space, assumed_align=16),
        cutlass.Float32(alpha),
        cutlass.Int32(n),
        0,
    )
    import cuda.bindings.driver as cuda

    pfn = cute.compile(fn_p, *pargs0[:4], cuda.CUstream(0), options="--enable-tvm-ffi")
    sint = int(stream.cuda_stream) if gpu else 0
    pargs = lambda o, i: (o.data_ptr(), i.data_ptr(), alpha, n, sint)  # noqa: E731
    ph = cute_bind.prepare(pfn, *pargs(o0, i0))
    ppool = pool_of(3)
    ok = True
    for o, i in ppool:
        ref = torch.full_like(o, float("nan"))
        pfn(*pargs(ref, i))
        o.fill_(float("nan"))
        ph.launch(*pargs(o, i))
        if gpu:
            torch.cuda.synchronize()
        ok = ok and bitwise(o, ref)
    checks["pointers: prepared == direct (bitwise, %d pairs)" % pool_size] = ok

    def cycle(fn, argsets):  # type: ignore[no-untyped-def]
        import time

        def loop(iters: int) -> float:
            seq = [argsets[k % len(argsets)] for k in range(iters)]
            t0 = time.perf_counter()
            for a in seq:
                fn(*a)
            return (time.perf_counter() - t0) / iters * 1e6

        return loop

    t_sets = [targs(o, i) for o, i in pool]
    p_sets = [pargs(o, i) for o, i in ppool]
    ints = [tuple(a) for a in p_sets]
    paths = [
        ("tensors: TVM-FFI call (direct)", cycle(tfn, t_sets), "torch tensors" + (" + env stream" if gpu else "")),
        ("tensors: prepared launch", cycle(th.launch, t_sets), "cute_bind.prepare(TVM-FFI function)"),
        ("pointers: TVM-FFI call (direct)", cycle(pfn, ints), "int addresses"),
        ("pointers: prepared launch", cycle(ph.launch, ints), "cute_bind.prepare(TVM-FFI function)"),
    ]
    rows = time_rows(paths, opts.repeats, opts.iters, stream)
    print(f"machine: {machine()}")
    print(f"{'GPU' if gpu else 'CPU (host twins)'}; {opts.repeats} interleaved rounds x {opts.iters} launches; medians")
    for k, v in checks.items():
        print(f"check  {k}: {v}")
    by = {r.path: r for r in rows}
    for r in rows:
        ev = f"  events {r.event_us:7.2f} us" if r.event_us is not None else ""
        print(f"{r.path:36s} {r.median_us:7.2f} us (min {r.min_us:6.2f}){ev}  {r.note}")
        rows_json.append({"path": r.path, "median_us": r.median_us, "min_us": r.min_us, "event_us": r.event_us})
    for w in ("tensors", "pointers"):
        d, p = by[f"{w}: TVM-FFI call (direct)"].median_us, by[f"{w}: prepared launch"].median_us
        print(f"{w}: prepared / direct = {p / d:.2f} ({d - p:+.2f} us per launch saved)")
    if opts.json:
        Path(opts.json).write_text(json.dumps({"machine": machine(), "gpu": gpu, "checks": checks, "rows": rows_json}, indent=1))
    return 0 if all(v is True or isinstance(v, str) for v in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
