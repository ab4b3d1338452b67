"""What leaving the stream out of ``kernel(...)`` costs (issue 44 item 7), for one tree (PYTHONPATH).

GPU (the default where torch sees a CUDA device): the bench's 5-argument pointer kernel with its
stream declared ``= None``, launched on a non-default torch stream made current, every path
interleaved (``repeats`` rounds of ``iters`` calls, medians, host us per call):

- ``handle.launch(ints, stream)``: the prepared launch, int addresses, the stream handle given;
- ``kernel(ints, stream)`` / ``kernel(ints)``: the kernel called with int addresses, the stream
  given / left out (torch's current stream found by cute_bind);
- ``kernel(tensors, stream)`` / ``kernel(tensors)``: the same given the torch tensors themselves.

Each path is first checked to write the expected bytes on the current stream.

``--callgrind N``: the CPU form for ``valgrind --tool=callgrind --toggle-collect=CallBase_call``:
a host-only kernel of the same shape called N times with the stream left out (``--given``: with
it), torch's readers replaced by stand-ins (``int`` for the current device, ``abs`` for the raw
stream reader, and, where the tree has :class:`cute_bind.jit.streams.StreamReader`, the CPU torch's
own ``current_work_stream`` from its DLPack exchange table, which answers NULL without CUDA).

    python benchmarks/stream_left_out.py --repeats 11 --iters 2000 --json out.json
"""

import argparse
import json
import statistics
import sys
import time
from typing import Any, Callable


def _gpu(repeats: int, iters: int) -> dict[str, Any]:
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import torch

    import cute_bind
    from cute_bind.bench.kernels import _scale_kernel, THREADS
    from cute_bind.jit import dispatch

    ptr = cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]

    @cute_bind.kernel
    @cute.jit
    def scale_left_out(out: ptr, inp: ptr, alpha: cutlass.Float32, n: cutlass.Int32, stream: cuda.CUstream = None) -> None:
        _scale_kernel(out, inp, alpha, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream)

    n = 4096
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    s = torch.cuda.Stream()
    xi, yi, si = x.data_ptr(), y.data_ptr(), s.cuda_stream
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    with torch.cuda.stream(s):
        handle = scale_left_out.bind(yi, xi, 2.0, n, si)
        paths: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
            "handle.launch(ints, stream)": (handle.launch, (yi, xi, 2.0, n, si)),
            "kernel(ints, stream)": (scale_left_out, (yi, xi, 2.0, n, si)),
            "kernel(ints), stream left out": (scale_left_out, (yi, xi, 2.0, n)),
            "kernel(tensors, stream)": (scale_left_out, (y, x, 2.0, n, si)),
            "kernel(tensors), stream left out": (scale_left_out, (y, x, 2.0, n)),
        }
        checks = {}
        for name, (fn, args) in paths.items():
            y.fill_(float("nan"))
            fn(*args)
            s.synchronize()
            checks[name] = bool(torch.equal(y, x * 2.0))
        getter = dispatch._TORCH.getter(None)
        results["getter"] = type(getter).__name__
        results["left-out stream == torch's current"] = dispatch.current_stream(None) == torch.cuda.current_stream().cuda_stream == si
        samples: dict[str, list[float]] = {name: [] for name in paths}
        for name, (fn, args) in paths.items():  # warm-up
            for _ in range(max(100, iters // 10)):
                fn(*args)
        s.synchronize()
        for _ in range(repeats):
            for name, (fn, args) in paths.items():
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn(*args)
                samples[name].append((time.perf_counter() - t0) / iters * 1e6)
                s.synchronize()
    results["checks"] = checks
    results["median_us"] = {k: statistics.median(v) for k, v in samples.items()}
    results["min_us"] = {k: min(v) for k, v in samples.items()}
    return results


def _callgrind(count: int, given: bool) -> None:
    import ctypes

    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import numpy as np

    import cute_bind
    from cute_bind.jit import dispatch, streams

    @cute_bind.kernel
    def scale_host(
        out: cute_bind.Pointer[cutlass.Float32],
        inp: cute_bind.Pointer[cutlass.Float32],
        alpha: cutlass.Float32,
        n: cutlass.Int32,
        stream: cuda.CUstream = None,
    ) -> None:
        o, i = cute.make_tensor(out, cute.make_layout(n)), cute.make_tensor(inp, cute.make_layout(n))
        for k in range(n):
            o[k] = i[k] * alpha

    torch_streams = dispatch._TORCH
    torch_streams.raw, torch_streams.device = abs, int  # stand-ins for torch's C readers
    if hasattr(streams, "StreamReader"):
        import torch

        from cute_bind.slots import dlpack

        found = dlpack.exchange_table(torch.Tensor)
        assert found is not None and found.work_stream
        torch_streams.work_stream, torch_streams.capsule = found.work_stream, found.capsule
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    xi, yi = x.ctypes.data, y.ctypes.data
    scale_host(yi, xi, 2.0, 8)
    scale_host(yi, xi, 2.0, 8, 0)
    if given:
        for _ in range(count):
            scale_host(yi, xi, 2.0, 8, 0)
    else:
        for _ in range(count):
            scale_host(yi, xi, 2.0, 8)
    assert np.array_equal(y, x * 2), y
    print(
        "getter:",
        type(torch_streams.getter(None)).__name__,
        "calls:",
        count,
        "given" if given else "left out",
        ctypes.sizeof(ctypes.c_void_p),
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--callgrind", type=int, metavar="N", help="CPU: N host-only calls for callgrind")
    p.add_argument("--given", action="store_true", help="with --callgrind: the stream given, not left out")
    a = p.parse_args()
    if a.callgrind:
        _callgrind(a.callgrind, a.given)
        return 0
    r = _gpu(a.repeats, a.iters)
    base = r["median_us"]["handle.launch(ints, stream)"]
    for name, us in r["median_us"].items():
        print(f"{name:36s} {us:7.3f} us (min {r['min_us'][name]:.3f})  {us - base:+.3f} over handle.launch")
    m = r["median_us"]
    print(f"left out - given: ints {m['kernel(ints), stream left out'] - m['kernel(ints, stream)']:+.3f} us, "
          f"tensors {m['kernel(tensors), stream left out'] - m['kernel(tensors, stream)']:+.3f} us")  # fmt: skip
    print("checks:", r["checks"], "getter:", r["getter"], "left-out stream is torch's current:", r["left-out stream == torch's current"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0 if all(r["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
