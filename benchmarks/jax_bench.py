"""cute_bind.jax against the DSL's cutlass_call and jax.numpy: host cost inside jitted programs, compile and warm start.

Usage (GPU machine; benchmarks/jax_device.sh runs every part):

    python benchmarks/jax_bench.py host  [--chains 1,10,100] [--iters 200] [--repeats 7] [--json out.json]
    python benchmarks/jax_bench.py start --bridge cute_bind|cutlass_call   # one process: its first call, as JSON
    python benchmarks/jax_bench.py host --cpu --n 16   # no GPU: host-only twins through XLA's CPU client

``host``: for chains of K kernels in ONE jitted program (the elementwise scale
kernel of tests/jax/gpu_kernels.py over 4096 floats, each reading the previous
one's output), the median over the repeats of the time per program call,
issued back to back (``iters`` calls, then one block_until_ready), and the
same with a block after every call (latency). Bridges: ``cute_bind.jax``
(tscale), ``cutlass_call`` (cc_scale, the same device kernel), ``jnp``
(``x * alpha`` K times: XLA fuses the chain into one kernel) and ``jnp+barrier``
(an optimization_barrier after each multiply: one kernel per op, as the
custom calls are). The per-kernel cost is the slope ``(t(K) - t(1)) / (K -
1)``. Then the per-call cost of a jitted single kernel. Every chain's output is
checked bitwise against the jnp chain first.

``start``: in a fresh process, the time from the first call of a jitted
single-kernel function to its result (trace, lowering: cute_bind's compile or
disk-cache load, or cutlass_call's compile; XLA's compile; the run), and the
second call. Run it twice with one CUTE_BIND_CACHE_DIR for cold and warm start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N = 4096
ALPHAS = (1.0009765625, 0.9990234375)  # exact in float32; the chain alternates them, so values stay in range


def alpha(i: int) -> float:
    return ALPHAS[i % 2]


def _chains(op, k: int, **between) -> dict:
    """The jitted chains every machine times, in table order: ``k`` calls of the cute_bind.jax ``op``,
    then ``between`` (named chains of another bridge), then jax.numpy's multiply with and without a barrier."""
    import jax
    import jax.numpy as jnp

    def cute_bind_chain(x):
        for i in range(k):
            x = op(x, alpha(i))
        return x

    def jnp_chain(x):
        for i in range(k):
            x = x * jnp.float32(alpha(i))
        return x

    def jnp_barrier_chain(x):
        for i in range(k):
            x = jax.lax.optimization_barrier(x * jnp.float32(alpha(i)))
        return x

    chains = {"cute_bind.jax": cute_bind_chain, **between, "jnp": jnp_chain, "jnp+barrier": jnp_barrier_chain}
    return {name: jax.jit(chain) for name, chain in chains.items()}


def cpu_programs(k: int):
    """The host-only twins through XLA's CPU client (no GPU): cute_bind.jax and jnp only (cutlass_call is CUDA-only)."""
    import cute_bind.jax as cj
    from tests.jax import kernels as K

    return _chains(cj.op(K.scale_stream, outputs={"out": "x"}), k)


def programs(k: int):
    import jax
    import jax.numpy as jnp
    from cutlass.jax import cutlass_call

    import cute_bind.jax as cj
    from tests.jax import gpu_kernels as G

    op = cj.op(G.tscale, outputs={"out": "x"})
    shape = jax.ShapeDtypeStruct((N,), jnp.float32)
    # compile_key: the lowering skips cutlass_call's per-call IR generation (its cache key), as a tuned user would
    cc = [cutlass_call(G.cc_scale, output_shape_dtype=shape, compile_key=("cc_scale", i), alpha=alpha(i)) for i in range(2)]

    def cutlass_chain(x):
        for i in range(k):
            x = cc[i % 2](x)
        return x

    return _chains(op, k, cutlass_call=cutlass_chain)


def time_calls(fn, x, iters: int, repeats: int) -> tuple[float, float]:
    """(median us per call issued back to back, median us per call with a block after each)."""
    fn(x).block_until_ready()
    issued, blocked = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            y = fn(x)
        y.block_until_ready()
        issued.append((time.perf_counter() - t0) / iters * 1e6)
        t0 = time.perf_counter()
        for _ in range(max(1, iters // 4)):
            fn(x).block_until_ready()
        blocked.append((time.perf_counter() - t0) / max(1, iters // 4) * 1e6)
    return statistics.median(issued), statistics.median(blocked)


def host(args: argparse.Namespace) -> dict:
    import jax
    import numpy as np

    n = args.n or N
    x = jax.device_put(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    chains = [int(c) for c in args.chains.split(",")]
    out: dict = {"device": str(jax.devices()[0].device_kind), "jax": jax.__version__, "n": n, "chains": {}}
    make = cpu_programs if args.cpu else programs
    for k in chains:
        progs = make(k)
        ref = np.asarray(progs["jnp+barrier"](x)).tobytes()
        row = {}
        for name, fn in progs.items():
            same = np.asarray(fn(x)).tobytes() == ref
            if name != "jnp" and not same:
                raise SystemExit(f"{name} chain of {k}: output differs from the jnp chain")
            issued, blocked = time_calls(fn, x, args.iters, args.repeats)
            row[name] = {"issued_us": issued, "blocked_us": blocked, "bitwise_vs_jnp": same}
        out["chains"][k] = row
        print(f"chain {k:4d}: " + "  ".join(f"{n} {r['issued_us']:.1f}/{r['blocked_us']:.1f} us" for n, r in row.items()), flush=True)
    if len(chains) > 1:
        lo, hi = chains[0], chains[-1]
        out["per_kernel_us"] = {
            name: {
                what: (out["chains"][hi][name][what] - out["chains"][lo][name][what]) / (hi - lo) for what in ("issued_us", "blocked_us")
            }
            for name in out["chains"][lo]
        }
    return out


def start(args: argparse.Namespace) -> dict:
    t_import = time.perf_counter()
    import jax
    import jax.numpy as jnp
    import numpy as np

    import cute_bind.jax as cj
    from tests.jax import gpu_kernels as G

    x = jax.device_put(np.ones(N, np.float32))
    x.block_until_ready()
    folder = os.environ.get("CUTE_BIND_CACHE_DIR")
    cached = sum(1 for _ in Path(folder).rglob("*") if _.is_file()) if folder and Path(folder).is_dir() else None
    imported = time.perf_counter() - t_import
    t0 = time.perf_counter()
    if args.bridge == "cute_bind":
        f = jax.jit(lambda a: cj.op(G.tscale, outputs={"out": "x"})(a, 2.0))
    else:
        from cutlass.jax import cutlass_call

        f = jax.jit(cutlass_call(G.cc_scale, output_shape_dtype=jax.ShapeDtypeStruct((N,), jnp.float32), alpha=2.0))
    first = f(x)
    first.block_until_ready()
    t1 = time.perf_counter()
    f(x).block_until_ready()
    t2 = time.perf_counter()
    ok = np.asarray(first).tobytes() == np.full(N, 2, np.float32).tobytes()
    return {
        "bridge": args.bridge,
        "import_s": imported,
        "first_call_s": t1 - t0,
        "second_call_s": t2 - t1,
        "bitwise": ok,
        "cache_entries_before": cached,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["host", "start"])
    p.add_argument("--chains", default="1,10,100")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--bridge", default="cute_bind", choices=["cute_bind", "cutlass_call"])
    p.add_argument("--json")
    p.add_argument("--cpu", action="store_true", help="host: the host-only twins on XLA's CPU client (no GPU, no cutlass_call)")
    p.add_argument("--n", type=int, default=0, help="host: elements per array (default 4096)")
    args = p.parse_args()
    result = host(args) if args.part == "host" else start(args)
    text = json.dumps(result, indent=1, default=str)
    if args.json:
        Path(args.json).write_text(text)
    print(text if args.part == "start" else json.dumps(result.get("per_kernel_us", {}), indent=1))


if __name__ == "__main__":
    main()
