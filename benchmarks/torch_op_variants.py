"""The eager torch op's call, built each way cute_bind has built it, side by side with the real kernel.

One 2-tensor scale kernel as a ``cute_bind.torch`` op (on a GPU the tensors
are CUDA tensors on a side stream, as in ``bench --workload torch``), timed
interleaved, medians of rounds:

- ``kernel(y, x, a, s)``, and the same followed by the version bump the op
  makes (``torch._C._increment_version``);
- the op's generated Python call without the C checks, called as an object
  whose class's ``__call__`` it is (how ops were built before the C call);
- the same Python call as a ``functools.partial`` (the op object's kind now);
- the op's Python call with the C checks (``EagerCheck``), as a partial;
- the op itself: a partial of its C call (``EagerCall``) where built;
- the op's C call in pieces: its checks alone, the version bump alone, an
  empty C call;
- the same C call with the device and stream read through Python calls
  (``get_device``, the raw stream) and grad mode through ``is_grad_enabled``,
  then through the DLPack exchange API, then with libtorch's grad-mode function
  too (the op's own spec has each look-up this torch offers).

The first variants are rebuilt from the op's plan through the module's own
generator (``custom_op._generate``): a measurement device, not an API.

Run from the repository root: ``python benchmarks/torch_op_variants.py [--repeats 21 --iters 2000]``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _c_call_variants(op: Any, rt: Any, k: Any, args: tuple[Any, ...]) -> dict[str, Callable[[], Any]]:
    """The op's C call with each optional C look-up of its checks left out (the op's own spec has
    those it found), each a partial of a partial as the op is; empty where the op has no C call."""
    import dataclasses

    from cute_bind.torch import eager

    if op.func is op._python_call or eager._ceager is None:
        return {}
    spec = eager.make_spec(rt, rt.several_devices())
    if spec is None:
        return {}

    class OpLike(functools.partial):  # type: ignore[type-arg] # the op's own shape: a partial subclass
        pass

    variants = {
        "C call, device and stream through Python calls, grad mode through Python": dataclasses.replace(
            spec, reader=0, work_stream=0, exchange=None, grad_mode=0
        ),
        "C call, device and stream through the DLPack exchange API": dataclasses.replace(spec, grad_mode=0),
        "C call, exchange API and grad mode through libtorch's C function": spec,
    }
    out: dict[str, Callable[[], Any]] = {}
    for name, variant in variants.items():
        if variant.reader == spec.reader and variant.grad_mode == spec.grad_mode and variant is not spec:
            continue  # this torch offers no such look-up: the same as another row
        call_spec = eager.call_spec(op.plan, k, eager._ceager.EagerCheck(variant), rt.bump, op._python_call)
        if call_spec is not None:
            out[name] = functools.partial(OpLike(eager._ceager.EagerCall(call_spec).call), *args)
    return out


def _pieces(rt: Any, y: Any, x: Any, bump: Callable[[Any], Any]) -> dict[str, Callable[[], Any]]:
    """The op's C call in pieces, each called alone: its checks (``EagerCheck.check``, which return
    the stream), the version bump, and an empty C call (what calling anything costs here)."""
    from cute_bind.torch import eager

    out: dict[str, Callable[[], Any]] = {"piece: an empty C call, len(())": functools.partial(len, ())}
    checker = eager.checker(rt, rt.several_devices())  # the op's own kind of checks (None: not built)
    if checker is not None:
        out["piece: the checks, EagerCheck.check(y, x)"] = functools.partial(checker.check, y, x)
    out["piece: the version bump, _increment_version((y,))"] = functools.partial(bump, (y,))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--iters", type=int, default=2000)
    args = parser.parse_args()

    import torch

    import cute_bind
    import cute_bind.torch as cbt
    from cute_bind.bench.kernels import scale_tensors, scale_tensors_host
    from cute_bind.torch import custom_op

    gpu = torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    k = cute_bind.kernel(scale_tensors if gpu else scale_tensors_host)
    op = cbt.op("cbvariants::scale_", k, mutates_args=("out",))
    rt = custom_op._runtime()
    python_call, _, namespace = custom_op._generate(op.plan, rt, k, {}, rt.several_devices(), None)
    namespace["_cb_overload"] = op.overload
    # the object form: the generated call with the op object as its first parameter, as a class's __call__
    source = python_call.__cute_bind_source__.split("\ndef _cb_impl")[0].replace("def __call__(", "def __call__(_cb_self, ", 1)
    method_namespace = dict(namespace)
    exec(compile(source, "<torch_op_variants>", "exec"), method_namespace)  # noqa: S102 - the module's own generated source
    object_form = type("ObjectForm", (), {"__call__": method_namespace["__call__"]})()

    side = torch.cuda.Stream() if gpu else None
    y, x = torch.zeros(4096, device=device), torch.ones(4096, device=device)
    with torch.cuda.stream(side) if gpu else contextlib.nullcontext():
        s = int(torch.cuda.current_stream().cuda_stream) if gpu else 0
        bump = torch._C._increment_version
        paths: dict[str, Callable[[], Any]] = {
            "kernel(y, x, a, s)": functools.partial(k, y, x, 2.0, s),
            "kernel(y, x, a, s) + version bump": lambda: (k(y, x, 2.0, s), bump((y,))),
            "object with __call__, Python checks (before)": functools.partial(object_form, y, x, 2.0),
            "partial of the Python call, Python checks": functools.partial(functools.partial(python_call), y, x, 2.0),
            "partial of the Python call, C checks": functools.partial(functools.partial(op._python_call), y, x, 2.0),
            "the op: partial of its C call" if op.func is not op._python_call else "the op (no C call here)": functools.partial(
                op, y, x, 2.0
            ),
        }
        paths.update(_c_call_variants(op, rt, k, (y, x, 2.0)))
        paths.update(_pieces(rt, y, x, bump))
        for call in paths.values():
            call()
        ref = torch.empty_like(y)
        k(ref, x, 2.0, s)
        samples: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(args.repeats):
            for name, call in paths.items():
                if gpu:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    call()
                samples[name].append((time.perf_counter() - t0) / args.iters * 1e6)
        if gpu:
            torch.cuda.synchronize()
    base = statistics.median(samples["kernel(y, x, a, s)"])
    print(f"Python {sys.version.split()[0]}, torch {torch.__version__}, {device}; {args.repeats} interleaved rounds x {args.iters} calls")
    print(f"the op's result == kernel(...)'s (bitwise): {bool(torch.equal(y, ref))}")
    print("| path | us/call (median) | - kernel(...) | min |")
    print("|---|---:|---:|---:|")
    for name, values in samples.items():
        m = statistics.median(values)
        print(f"| {name} | {m:.3f} | {m - base:+.3f} | {min(values):.3f} |")


if __name__ == "__main__":
    main()
