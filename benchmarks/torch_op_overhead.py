"""What a cute_bind.torch op adds to the kernel call it makes, measured alone.

The op's eager call is a few checks, the current-stream lookup, the kernel
call and the version bump; through torch's dispatcher (the path a compiled
graph takes) the dispatcher comes on top. To time those pieces without the
kernel's own call in them, this script swaps the kernel the generated call
invokes for a no-op function (through the generated call's globals: a
measurement device, not an API) and times, interleaved, medians of rounds:

- the eager op, ``op(y, x, a)``;
- the same op through the dispatcher, ``op.overload(y, x, a)``;
- a hand-written ``torch.library.custom_op`` calling the same no-op (the
  pattern users write by hand);
- the bare no-op call with the kernel's arguments.

Run from the repository root: ``python benchmarks/torch_op_overhead.py [--repeats 21 --iters 20000]``.
CPU tensors; the stream lookup of CUDA tensors is not in these numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--iters", type=int, default=20000)
    args = parser.parse_args()

    import torch

    import cute_bind
    import cute_bind.torch as cbt
    from cute_bind.bench.kernels import scale_tensors_host

    def noop(*a: Any) -> None:
        return None

    k = cute_bind.kernel(scale_tensors_host)
    op = cbt.op("cbpieces::scale_", k, mutates_args=("out",))
    type(op).__call__.__globals__["_cb_kernel"] = noop  # the measurement device (see the docstring)
    hand = torch.library.custom_op(
        "cbpieces::hand", lambda out, inp, alpha: noop(out, inp, alpha, 0), mutates_args=("out",), schema="(Tensor(a!) out, Tensor inp, float alpha) -> ()"
    )
    x, y = torch.randn(64), torch.empty(64)
    paths: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("eager op, no-op kernel", op, (y, x, 2.0)),
        ("op through the dispatcher, no-op kernel", op.overload, (y, x, 2.0)),
        ("hand-written torch.library.custom_op, no-op body", hand, (y, x, 2.0)),
        ("bare no-op call", noop, (y, x, 2.0, 0)),
    ]
    samples: dict[str, list[float]] = {name: [] for name, _, _ in paths}
    for _ in range(args.repeats):
        for name, fn, fargs in paths:
            t0 = time.perf_counter()
            for _ in range(args.iters):
                fn(*fargs)
            samples[name].append((time.perf_counter() - t0) / args.iters * 1e6)
    print(f"torch {torch.__version__}; {args.repeats} interleaved rounds x {args.iters} calls; medians (min)")
    for name, _, _ in paths:
        print(f"  {name:52s} {statistics.median(samples[name]):8.3f} us  ({min(samples[name]):.3f})")


if __name__ == "__main__":
    main()
