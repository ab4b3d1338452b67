"""What a cute_bind.torch op adds to the kernel call it makes, measured alone.

The op's eager call is a few checks, the current-stream lookup, the kernel
call and the version bump; through torch's dispatcher (the path a compiled
graph takes) the dispatcher comes on top. To time those pieces without the
kernel's own call in them, this script swaps the kernel the generated call
invokes for a no-op function (through the generated call's globals: a
measurement device, not an API) and times, interleaved, medians of rounds:

- the eager op, ``op(y, x, a)``: its C call (when the extension is built;
  an op object of the same kind as the real one, a ``functools.partial`` of
  it, with the no-op kernel) and its Python call (also a partial);
- the same op through the dispatcher, ``op.overload(y, x, a)``;
- a hand-written ``torch.library.custom_op`` calling the same no-op (the
  pattern users write by hand);
- the bare no-op call with the kernel's arguments.

Then each C call the generated eager call makes, alone (``--pieces``): torch's
mode checks, the tensor class and ``requires_grad`` tests, ``get_device``,
the current raw stream and device, the capture test and the version bump.

Run from the repository root: ``python benchmarks/torch_op_overhead.py [--repeats 21 --iters 20000] [--device cuda]``.
With ``--device cuda`` (the device job) the tensors are CUDA tensors, so the stream and device lookups
are in the numbers; on the CPU they are host tensors (stream 0, no lookup).
"""

from __future__ import annotations

import argparse
import functools
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
    parser.add_argument("--device", default="cpu", help="cpu or cuda: where the op's tensors live")
    args = parser.parse_args()

    import torch

    import cute_bind
    import cute_bind.torch as cbt
    from cute_bind.torch import eager
    from cute_bind.torch.eager import _ceager
    from cute_bind.bench.kernels import scale_tensors_host

    def noop(*a: Any) -> None:
        return None

    k = cute_bind.kernel(scale_tensors_host)
    op = cbt.op("cbpieces::scale_", k, mutates_args=("out",))
    g = op._python_call.__globals__  # the generated call's own entry points, each timed alone
    g["_cb_kernel"] = noop  # the measurement device (see the docstring)
    c_call = None
    if op.func is not op._python_call:  # the op's C eager call: another one, whose kernel is the no-op
        spec = eager.call_spec(op.plan, noop, g["_cb_check"].__self__, g["_cb_bump"], op._python_call)
        c_call = functools.partial(_ceager.EagerCall(spec).call)
    hand = torch.library.custom_op(
        "cbpieces::hand",
        lambda out, inp, alpha: noop(out, inp, alpha, 0),
        mutates_args=("out",),
        schema="(Tensor(a!) out, Tensor inp, float alpha) -> ()",
    )
    x, y = torch.randn(64, device=args.device), torch.empty(64, device=args.device)
    dev = x.get_device()
    paths: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("eager op (its Python call), no-op kernel", functools.partial(op._python_call), (y, x, 2.0)),
        ("op through the dispatcher, no-op kernel", op.overload, (y, x, 2.0)),
        ("hand-written torch.library.custom_op, no-op body", hand, (y, x, 2.0)),
        ("bare no-op call", noop, (y, x, 2.0, 0)),
        ("piece: is_dynamo_compiling()", g["_cb_compiling"], ()),
        ("piece: _len_torch_dispatch_stack()", g["_cb_dispatch_modes"], ()),
        ("piece: _is_torch_function_mode_enabled()", g["_cb_function_modes"], ()),
        ("piece: _are_functorch_transforms_active()", g["_cb_functorch"], ()),
        ("piece: is_grad_enabled()", g["_cb_grad_enabled"], ()),
        ("piece: x.get_device()", x.get_device, ()),
        ("piece: x.requires_grad", lambda: x.requires_grad, ()),
        ("piece: lambda (the cost of the wrapper above)", lambda: None, ()),
        ("piece: _increment_version((y,))", g["_cb_bump"], ((y,),)),
    ]
    if c_call is not None:
        paths.insert(0, ("eager op (its C call), no-op kernel", c_call, (y, x, 2.0)))
        paths.append(("piece: the C checks, EagerCheck.check(y, x)", g["_cb_check"], (y, x)))
    if dev >= 0:
        paths += [
            ("piece: current raw stream", g["_cb_raw_stream"], (dev,)),
            ("piece: current device", g["_cb_current_device"], ()),
            ("piece: is the current stream capturing", g["_cb_capturing"], ()),
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
