"""``python -m cute_bind bench``: host overhead per launch, side by side, from one run.

One module per workload (``pointers``: the 5-argument scale kernel;
``tensors``: a 2-tensor dynamic-layout kernel with new tensors every step;
``specialize``: what a ``kernel(...)`` call costs on a hit, a key switch, a
miss with a cached compile and a cold compile;
``torch``: that kernel as a ``cute_bind.torch`` op, eager and compiled, run
only when asked for with ``--workload torch``)
over shared timing code (``timing``); ``kernels`` holds the kernels they time.
``coldstart`` (only with ``--workload coldstart``) times fresh processes
from import to first launch with the disk compile cache off, cold and warm.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any


__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    from .pointers import format_table, run
    from .specialize import format_specialize_table, run_specialize
    from .tensors import format_tensor_table, run_tensors

    host_only = True if args.host_only else None
    workload = getattr(args, "workload", "all")
    reports: dict[str, Any] = {}
    if workload == "coldstart":
        from .coldstart import format_cold_table, run_coldstart

        reports["coldstart"] = run_coldstart(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("## cold start: fresh process, import to first launch, disk cache off / cold / warm\n")
        print(format_cold_table(reports["coldstart"]))
    if workload in ("all", "pointers"):
        reports["pointers"] = run(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("## pointer workload (a 5-argument scale kernel: two pointers, a float, an int, a stream)\n")
        print(format_table(reports["pointers"]))
    if workload in ("all", "tensors"):
        reports["tensors"] = run_tensors(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("\n## tensor workload (2-tensor dynamic-layout scale kernel, new tensors each step)\n")
        print(format_tensor_table(reports["tensors"]))
    if workload in ("all", "specialize"):
        reports["specialize"] = run_specialize(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("\n## kernel(...) calls: hit, key switch, miss with a cached compile, cold compile\n")
        print(format_specialize_table(reports["specialize"]))
    if workload == "torch":
        from .torch_ops import format_torch_table, run_torch_ops

        reports["torch"] = run_torch_ops(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("## torch workload (a 2-tensor scale kernel as a cute_bind.torch op, eager and compiled)\n")
        print(format_torch_table(reports["torch"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: asdict(r) for name, r in reports.items()}, f, indent=1)
    failed = [k for r in reports.values() for k, v in r.checks.items() if v is False]
    return 1 if failed else 0
