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


__all__ = ["header", "main"]


def header(gpu: bool, machine: str, device: str = "") -> str:
    """What the figures below are for, printed before the first table: this machine, and on a machine without
    a GPU what they become on one (the documented device run, :mod:`cute_bind.bench.reference`)."""
    from .reference import format_device_run

    lines = ["# cute_bind bench: the host time of one launch, every way of launching, side by side", ""]
    if gpu:
        lines += [
            f"The figures below are for this machine: {machine}, GPU {device}. Each includes the CUDA driver's "
            "own launch (the cuLaunchKernel row), which no path can avoid.",
            "",
            "For comparison:",
        ]
    else:
        lines += [
            f"The figures below are for this machine: {machine}, with no CUDA device. The kernels are host-only "
            "functions of the same shapes, so every figure is CPU time with no GPU driver in it, and the ratios "
            "(a prepared launch tens of times cheaper than the direct call) are this machine's, not a GPU's. On a GPU "
            "every path also pays the CUDA driver's launch, a few microseconds: the differences between paths stay, "
            "the ratios shrink.",
            "",
        ]
    lines.append(format_device_run())
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    from .timing import machine, progress

    progress("cute_bind bench: importing the DSL and compiling the benchmark's kernels (several seconds before the first table)")
    from .. import dsl
    from .pointers import format_table, run
    from .specialize import format_specialize_table, run_specialize
    from .tensors import format_tensor_table, run_tensors

    host_only = True if args.host_only else None
    gpu = dsl.cuda_device_count() > 0 if host_only is None else False
    device = dsl.import_torch().cuda.get_device_name() if gpu else ""
    print(header(gpu, machine(), device), flush=True)
    workload = getattr(args, "workload", "all")
    reports: dict[str, Any] = {}
    if workload == "coldstart":
        from .coldstart import format_cold_table, run_coldstart

        progress("cold start: fresh processes, each importing and launching (tens of seconds)")
        reports["coldstart"] = run_coldstart(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("## cold start: fresh process, import to first launch, disk cache off / cold / warm\n")
        print(format_cold_table(reports["coldstart"]))
    if workload in ("all", "pointers"):
        progress("pointer workload: compiling, checking every path's bytes")
        reports["pointers"] = run(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("## pointer workload (a 5-argument scale kernel: two pointers, a float, an int, a stream)\n")
        print(format_table(reports["pointers"]), flush=True)
    if workload in ("all", "tensors"):
        progress("tensor workload: compiling, checking every path's bytes")
        reports["tensors"] = run_tensors(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("\n## tensor workload (2-tensor dynamic-layout scale kernel, new tensors each step)\n")
        print(format_tensor_table(reports["tensors"]), flush=True)
    if workload in ("all", "specialize"):
        progress("kernel(...) calls: compiling two variants")
        reports["specialize"] = run_specialize(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("\n## kernel(...) calls: hit, key switch, miss with a cached compile, cold compile\n")
        print(format_specialize_table(reports["specialize"]), flush=True)
    if workload == "torch":
        from .torch_ops import format_torch_table, run_torch_ops

        progress("torch workload: making the op, compiling with torch.compile")
        reports["torch"] = run_torch_ops(host_only=host_only, repeats=args.repeats, iters=args.iters)
        print("## torch workload (a 2-tensor scale kernel as a cute_bind.torch op, eager and compiled)\n")
        print(format_torch_table(reports["torch"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: asdict(r) for name, r in reports.items()}, f, indent=1)
    failed = [k for r in reports.values() for k, v in r.checks.items() if v is False]
    return 1 if failed else 0
