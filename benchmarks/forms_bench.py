"""Host cost of each argument form a pointer or tensor slot takes, host-only kernels (CPU).

Usage: python benchmarks/forms_bench.py [--iters 20000] [--repeats 5]
       (CUTE_BIND_PURE_PYTHON=1 for the pure-Python fast path)

One ``handle.launch`` per call, two arrays per launch, the minimum over the
repeats of the mean time per call in microseconds. Each form is first checked
to write the same output as the int-address launch. Rows:

- pointer slot (``tests.kernels.host.scale``): int addresses, torch tensors,
  NumPy arrays, ctypes ``c_void_p``, int subclasses and ``make_ptr`` pointers,
  then two forms the slow path reads: ``memoryview`` (the buffer protocol) and
  an object offering only ``__dlpack__``;
- scalar slots (the same kernel, int addresses): NumPy scalars and ``cutlass``
  numerics for ``alpha`` and ``n``;
- stream slot (the same kernel, int addresses): a ``cuda.CUstream``, an object
  with ``cuda_stream`` that is not torch's, a ``__cuda_stream__`` object;
- keywords (the same kernel, int addresses): every argument by keyword, the
  last two by keyword;
- tensor slot (``tests.kernels.host.tscale_stream_default``): torch tensors,
  NumPy arrays, a ``__cuda_array_interface__`` stand-in over host memory whose
  interface dict is made once (CuPy makes it per access: that cost is CuPy's),
  an object with only ``__dlpack__`` (an export per launch) and ``from_dlpack``
  tensors (their capsule read per launch).

torch rows are left out when torch is not installed.
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


class _Dlpack:
    """An array that offers only ``__dlpack__`` (as JAX arrays do)."""

    def __init__(self, a: Any) -> None:
        self.a = a

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.a.__dlpack__()

    def __dlpack_device__(self) -> Any:
        return self.a.__dlpack_device__()


class _TorchLikeStream:
    """What a stream object offers through ``cuda_stream`` (torch's own class is read in C; this one is not torch's)."""

    cuda_stream = 0


class _CoreStream:
    """A cuda.core-style stream: ``__cuda_stream__`` gives ``(version, handle)``."""

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, 0)


class _Address(int):
    """An int subclass (an ``IntEnum`` member is one): read for its own value."""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()

    import cutlass
    import cutlass.cute as cute
    import numpy as np
    from cutlass.cute.runtime import from_dlpack, make_ptr

    import cute_bind
    from cute_bind.bench.tensors import _InterfaceArray
    from cute_bind.launch.prepared import fast_path
    from tests.kernels.host import scale, tscale_stream_default

    try:
        import torch
    except ImportError:
        torch = None
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    expected = x * np.float32(2.0)
    ph = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    th = cute_bind.kernel(tscale_stream_default).bind(out, x, 2.0, 0)
    oa, ia = out.ctypes.data, x.ctypes.data
    rows: list[tuple[str, str, Callable[[], Any]]] = [("pointer", "int addresses", lambda: ph.launch(oa, ia, 2.0, 64, 0))]
    if torch is not None:
        to, ti = torch.from_numpy(out), torch.from_numpy(x)
        rows.append(("pointer", "torch tensors", lambda: ph.launch(to, ti, 2.0, 64, 0)))
    import ctypes

    co, ci = ctypes.c_void_p(oa), ctypes.c_void_p(ia)
    ao, ai = _Address(oa), _Address(ia)  # made once, as every other form (making an int subclass costs ~70 ns)
    po, pi = make_ptr(cutlass.Float32, oa, cute.AddressSpace.generic), make_ptr(cutlass.Float32, ia, cute.AddressSpace.generic)
    import cuda.bindings.driver as cuda

    cs, ts, ps = cuda.CUstream(0), _TorchLikeStream(), _CoreStream()
    mo, mi = memoryview(out), memoryview(x)
    dlo, dli = _Dlpack(out), _Dlpack(x)
    f32, i64, dsl_f, dsl_i = np.float32(2.0), np.int64(64), cutlass.Float32(2.0), cutlass.Int32(64)
    rows += [
        ("pointer", "NumPy arrays", lambda: ph.launch(out, x, 2.0, 64, 0)),
        ("pointer", "ctypes c_void_p", lambda: ph.launch(co, ci, 2.0, 64, 0)),
        ("pointer", "int subclasses (IntEnum...)", lambda: ph.launch(ao, ai, 2.0, 64, 0)),
        ("pointer", "make_ptr pointers", lambda: ph.launch(po, pi, 2.0, 64, 0)),
        ("pointer", "memoryviews (buffer protocol; slow path)", lambda: ph.launch(mo, mi, 2.0, 64, 0)),
        ("pointer", "only __dlpack__ (an export per launch; slow path)", lambda: ph.launch(dlo, dli, 2.0, 64, 0)),
        ("scalar", "NumPy scalars: np.float32 alpha, np.int64 n", lambda: ph.launch(oa, ia, f32, i64, 0)),
        ("scalar", "DSL numerics: cutlass.Float32 alpha, cutlass.Int32 n", lambda: ph.launch(oa, ia, dsl_f, dsl_i, 0)),
        ("stream", "cuda.CUstream (int addresses)", lambda: ph.launch(oa, ia, 2.0, 64, cs)),
        ("stream", "object with .cuda_stream, not torch's (int addresses)", lambda: ph.launch(oa, ia, 2.0, 64, ts)),
        ("stream", "__cuda_stream__ object (int addresses)", lambda: ph.launch(oa, ia, 2.0, 64, ps)),
        ("keyword", "every argument by keyword (int addresses)", lambda: ph.launch(out=oa, inp=ia, alpha=2.0, n=64, stream=0)),
        ("keyword", "the last two by keyword (int addresses)", lambda: ph.launch(oa, ia, 2.0, n=64, stream=0)),
    ]
    if torch is not None:
        rows.append(("tensor", "torch tensors", lambda: th.launch(to, ti, 2.0, 0)))
    fo, fi = from_dlpack(out), from_dlpack(x)
    cao, cai = _InterfaceArray.of(out, False), _InterfaceArray.of(x, False)  # the bench's stand-in: it says it is on the CPU
    rows += [
        ("tensor", "NumPy arrays", lambda: th.launch(out, x, 2.0, 0)),
        ("tensor", "__cuda_array_interface__ (stand-in, dict made once)", lambda: th.launch(cao, cai, 2.0, 0)),
        ("tensor", "only __dlpack__ (an export per launch)", lambda: th.launch(dlo, dli, 2.0, 0)),
        ("tensor", "from_dlpack tensors", lambda: th.launch(fo, fi, 2.0, 0)),
    ]
    print(f"# host us per launch (min of {a.repeats} interleaved rounds x {a.iters}), 2 arrays per launch; launch fast path: {fast_path()}")
    print(f"{'slot':<8} {'us':>8}  value given")
    same = []
    for _slot, _name, call in rows:
        out[:] = np.nan
        call()
        same.append(bool((out == expected).all()))
    best = [float("inf")] * len(rows)
    for _ in range(a.repeats):  # interleaved: a slow moment of the machine touches every row alike
        for i, (_slot, _name, call) in enumerate(rows):
            best[i] = min(best[i], timeit.timeit(call, number=a.iters) / a.iters * 1e6)
    for (slot, name, _call), t, ok in zip(rows, best, same):
        print(f"{slot:<8} {t:>8.2f}  {name}{'' if ok else '  (WRONG OUTPUT)'}")
    ph.close()
    th.close()
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
