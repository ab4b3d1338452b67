"""``python -m cute_bind bench``, tensor workload: a 2-tensor dynamic-layout scale kernel.

Every step launches with *new* tensors: a pool of 8 tensor pairs of different
addresses and extents is cycled through (allocation is not part of a launch,
so the pool is built once; each launch still sees other tensor objects).

Paths:

- ``direct call, dlpack tensors reused``: ``compiled(t_out, t_in, Float32(a), CUstream(s))``
  with ``from_dlpack(...).mark_layout_dynamic()`` tensors built once and reused
  (the same tensors every call, the DSL's cheapest tensor call);
- ``direct call, dlpack tensors rebuilt``: the tensors converted with
  ``from_dlpack(...).mark_layout_dynamic()`` on every call, as a step that gets
  new tensors must;
- ``PreparedLaunch.launch, new tensors each step``: ``handle.launch(out, inp, a, s)``
  with the pool's torch tensors;
- ``PreparedLaunch.launch, same tensors``;
- ``kernel(out, inp, a) call, stream left out``: the annotate-and-call path with
  the pool's tensors, the stream taken from torch's current stream (the
  default stream on the CPU);
- ``kernel(out, inp, a, stream) call, stream passed``: the same call with that
  stream given (the difference is what finding the current stream costs);
- ``pointer kernel launch, data_ptr()/numel() each step``: the pointer-only
  equivalent bound with cute_bind, its arguments taken from the same tensors;
  on the CPU also with precomputed integer arguments;
- on the GPU: the DSL's TVM-FFI path with torch tensors and the stream from
  torch's current stream, the bare engine call of the tensor kernel, and
  (where Triton is installed) a Triton scale kernel launched ``kernel[grid](...)``.

Each path is checked bitwise against the direct call on every pool entry
before it is timed.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from .. import diagnostics as D
from .timing import (
    Report,
    Row,
    TimedPath,
    checks_line,
    event_cell,
    fast_path_words,
    legend,
    machine,
    on_gpu,
    table_head,
    time_rows,
    torch_or_none,
)

__all__ = ["run_tensors", "format_tensor_table"]

POOL = 8


def _cycle_loop(fn: Callable[..., Any], pool: list[tuple[Any, ...]]) -> Callable[[int], float]:
    def loop(iters: int) -> float:
        seq = [pool[i % len(pool)] for i in range(iters)]
        t0 = time.perf_counter()
        for a in seq:
            fn(*a)
        return (time.perf_counter() - t0) / iters * 1e6

    return loop


def _agrees(
    call: Callable[[Any, Any], object], pool: list[Any], refs: list[bytes], poison: Callable[[Any], None], out_bytes: Callable[[Any], bytes]
) -> bool:
    """Whether ``call(out, inp)`` writes the direct call's bytes ``refs`` for every pair of the pool, each out
    poisoned first (after the first difference the rest only run)."""
    ok = True
    for (o, i), ref in zip(pool, refs):
        poison(o)
        call(o, i)
        ok = ok and out_bytes(o) == ref
    return ok


def _on_stream(stream: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` with ``stream`` as torch's current stream (as the timed loops run); plain call without one."""
    if stream is None:
        return fn(*args)
    from .. import dsl

    torch = dsl.import_torch()

    with torch.cuda.stream(stream):
        return fn(*args)


class _InterfaceArray:
    """A CuPy-style array over a torch tensor's or NumPy array's memory: ``__cuda_array_interface__``
    (its dict made once: CuPy makes it per access, a cost that is CuPy's) and ``__dlpack_device__``.
    On the CPU it says it is on the CPU, as a host-only kernel expects."""

    def __init__(self, iface: dict[str, Any], device: tuple[int, int], owner: Any) -> None:
        self._iface, self._device, self._owner = iface, device, owner

    @classmethod
    def of(cls, t: Any, gpu: bool) -> _InterfaceArray:
        if gpu:
            return cls(dict(t.__cuda_array_interface__), (2, int(t.get_device())), t)
        a = t.numpy() if hasattr(t, "numpy") else t
        iface = {"data": (int(a.ctypes.data), False), "typestr": a.__array_interface__["typestr"], "shape": tuple(a.shape),
                 "strides": None, "version": 3}  # fmt: skip
        return cls(iface, (1, 0), t)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self._iface

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def run_tensors(*, host_only: bool | None = None, repeats: int = 21, iters: int = 20000) -> Report:
    """Build every tensor-workload path, check them against the direct call, time them interleaved."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from .. import dsl
    from .kernels import scale, scale_host, scale_tensors, scale_tensors_host
    from ..jit import kernel

    torch = torch_or_none()
    gpu = on_gpu(host_only)
    checks: dict[str, Any] = {}
    alpha = 2.0
    torch_stream = None
    stream = 0
    if gpu:
        assert torch is not None
        torch_stream = torch.cuda.Stream()
        stream = torch_stream.cuda_stream
        base = 4096
        pool = [(torch.empty(base - 32 * i, device="cuda"), torch.randn(base - 32 * i, device="cuda")) for i in range(POOL)]
        fn, pfn = scale_tensors, scale

        def sync() -> None:
            torch.cuda.synchronize()
    else:
        base = 64
        if torch is not None:
            pool = [(torch.empty(base - 4 * i), torch.randn(base - 4 * i)) for i in range(POOL)]
        else:  # without torch: NumPy arrays, read in C from the ndarray's own fields (slots/dlpack.py)
            import numpy as np

            rng = np.random.default_rng(0)
            pool = [(np.empty(base - 4 * i, np.float32), rng.standard_normal(base - 4 * i).astype(np.float32)) for i in range(POOL)]
        fn, pfn = scale_tensors_host, scale_host

        def sync() -> None:
            pass

    def dl(t: Any) -> Any:
        return from_dlpack(t, assumed_align=16).mark_layout_dynamic()

    def addr(t: Any) -> int:
        return int(t.data_ptr()) if hasattr(t, "data_ptr") else int(t.ctypes.data)

    cute_pool = [(dl(o), dl(i)) for o, i in pool]
    compiled = cute.compile(fn, *cute_pool[0], cutlass.Float32(alpha), cuda.CUstream(stream))
    k = kernel(fn)
    handle = k.bind(*cute_pool[0], alpha, stream)
    launch = handle.launch
    pk = kernel(pfn)
    o0, i0 = pool[0]
    phandle = pk.bind(addr(o0), addr(i0), alpha, len(o0), stream)
    plaunch = phandle.launch

    # -- agreement on every pool entry: bound launches (tensor and pointer) == direct call
    def out_bytes(t: Any) -> bytes:
        sync()
        return bytes(t.cpu().numpy().tobytes()) if hasattr(t, "cpu") else bytes(t.tobytes())

    def poison(t: Any) -> None:
        t.fill_(float("nan")) if hasattr(t, "fill_") else t.fill(float("nan"))

    refs = []
    for (o, _i), (co, ci) in zip(pool, cute_pool):
        poison(o)
        compiled(co, ci, cutlass.Float32(alpha), cuda.CUstream(stream))
        refs.append(out_bytes(o))
    bound_calls: list[tuple[str, Callable[[Any, Any], Any]]] = [
        ("launch, new tensors", lambda o, i: launch(o, i, alpha, stream)),
        ("kernel call, stream left out", lambda o, i: _on_stream(torch_stream, k, o, i, alpha)),
        ("kernel call, stream passed", lambda o, i: k(o, i, alpha, stream)),
        ("pointer kernel launch", lambda o, i: plaunch(addr(o), addr(i), alpha, len(o), stream)),
    ]
    for name, call in bound_calls:
        checks[f"{name} == direct (bitwise, {POOL} tensor pairs)"] = _agrees(call, pool, refs, poison, out_bytes)

    def rebuilt(o: Any, i: Any, a: float, s: int) -> Any:
        return compiled(dl(o), dl(i), cutlass.Float32(a), cuda.CUstream(s))

    direct_args = [(co, ci, cutlass.Float32(alpha), cuda.CUstream(stream)) for co, ci in cute_pool]
    new = [(o, i, alpha, stream) for o, i in pool]
    same = [(o0, i0, alpha, stream)]
    ints = [(addr(o), addr(i), alpha, len(o), stream) for o, i in pool]

    def from_tensors(iters: int) -> float:
        seq = [pool[j % len(pool)] for j in range(iters)]
        t0 = time.perf_counter()
        for o, i in seq:
            plaunch(o.data_ptr(), i.data_ptr(), alpha, o.numel(), stream)
        return (time.perf_counter() - t0) / iters * 1e6

    paths: list[TimedPath] = [
        TimedPath(
            "direct",
            "direct call, dlpack tensors reused",
            _cycle_loop(compiled, direct_args[:1]),
            "from_dlpack(...).mark_layout_dynamic() built once",
        ),
        TimedPath(
            "rebuilt", "direct call, dlpack tensors rebuilt", _cycle_loop(rebuilt, new), "from_dlpack + mark_layout_dynamic per call"
        ),
        TimedPath("launch_new", "PreparedLaunch.launch, new tensors each step", _cycle_loop(launch, new), f"{POOL} pairs cycled"),
        TimedPath("launch_same", "PreparedLaunch.launch, same tensors", _cycle_loop(launch, same)),
        TimedPath(
            "call",
            "kernel(out, inp, a) call, stream left out",
            _cycle_loop(k, [(o, i, alpha) for o, i in pool]),
            "annotate and call, new tensors each step; the current stream",
        ),
        TimedPath(
            "call_stream",
            "kernel(out, inp, a, stream) call, stream passed",
            _cycle_loop(k, [(o, i, alpha, stream) for o, i in pool]),
            "the same call given the stream the row above finds",
        ),
    ]
    if not gpu and torch is not None:
        # the same launches given NumPy arrays (views of the torch pool: same memory, same results)
        np_pool = [(o.numpy(), i.numpy()) for o, i in pool]
        for key, label, fn, args in (
            ("launch_numpy", "PreparedLaunch.launch, NumPy arrays each step", launch, [(o, i, alpha, stream) for o, i in np_pool]),
            ("call_numpy", "kernel(out, inp, a) call, NumPy arrays", k, [(o, i, alpha) for o, i in np_pool]),
        ):
            ok = True
            for (o, i), ref in zip(np_pool, refs):
                poison(o)
                fn(*((o, i, alpha, stream) if fn is launch else (o, i, alpha)))
                ok = ok and out_bytes(o) == ref
            checks[f"{label} == direct (bitwise, {POOL} tensor pairs)"] = ok
            paths.append(TimedPath(key, label, _cycle_loop(fn, args), f"{POOL} pairs cycled, read without a DLPack export"))
    # CuPy-style arrays: the same memory through __cuda_array_interface__ (no DLPack export)
    cai_pool = [(_InterfaceArray.of(o, gpu), _InterfaceArray.of(i, gpu)) for o, i in pool]
    for key, label, fn, args in (
        ("launch_cai", "PreparedLaunch.launch, __cuda_array_interface__ arrays", launch, [(o, i, alpha, stream) for o, i in cai_pool]),
        ("call_cai", "kernel(out, inp, a, stream) call, __cuda_array_interface__ arrays", k, [(o, i, alpha, stream) for o, i in cai_pool]),
    ):
        ok = True
        for (o, i), (to, _ti), ref in zip(cai_pool, pool, refs):
            poison(to)
            fn(o, i, alpha, stream)
            ok = ok and out_bytes(to) == ref
        checks[f"{label} == direct (bitwise, {POOL} tensor pairs)"] = ok
        paths.append(TimedPath(key, label, _cycle_loop(fn, args), "CuPy-style: the interface dict read per launch (made once here)"))
    if torch is not None:
        paths.append(
            TimedPath(
                "pointer_from_tensors",
                "pointer kernel launch, data_ptr()/numel() each step",
                from_tensors,
                "the pointer-only equivalent, fed from the same tensors",
            )
        )
    if not gpu:
        paths.append(
            TimedPath(
                "pointer_ints",
                "pointer kernel launch, precomputed ints",
                _cycle_loop(plaunch, ints),
                "the pointer-only equivalent, int arguments ready",
            )
        )
    if gpu:
        paths += _gpu_paths(compiled, direct_args[0], pool, refs, alpha, torch_stream, poison, out_bytes, checks)
    rows: list[Row] = time_rows(paths, repeats, iters, torch_stream if gpu else None, label="tensor workload")
    handle.close()
    phandle.close()
    from ..launch.prepared import fast_path

    from ..jit.dispatch import call_path

    what = "GPU: 2-tensor dynamic-layout scale kernel, ~4096 f32" if gpu else "CPU: host-only 2-tensor function, ~64 f32"
    mode = f"{what}, {POOL} tensor pairs cycled; launch fast path: {fast_path_words(fast_path())}; call path: {call_path()}"
    notes = [] if torch is not None else [NO_TORCH]
    return Report(
        machine=machine(), mode=mode, dsl_version=dsl.dsl_version(), repeats=repeats, iters=iters, rows=rows, checks=checks, notes=notes
    )


def _gpu_paths(
    compiled: Any,
    direct: tuple[Any, ...],
    pool: list[Any],
    refs: list[bytes],
    alpha: float,
    stream: Any,
    poison: Any,
    out_bytes: Any,
    checks: dict[str, Any],
) -> list[TimedPath]:
    from .. import dsl

    torch = dsl.import_torch()
    paths: list[TimedPath] = []
    entry, packed, _, _, _ = dsl.bare_call(compiled, direct)
    paths.append(
        TimedPath("bare", "bare engine call (tensor kernel)", _cycle_loop(entry, [(packed,)]), "the DSL's ctypes entry on its packed array")
    )
    try:
        from .kernels import tvm_ffi_tensor_function

        fn: Any = tvm_ffi_tensor_function()
        with torch.cuda.stream(stream):
            ok = _agrees(lambda o, i: fn(o, i, alpha), pool, refs, poison, out_bytes)
        checks[f"tvm-ffi tensors == direct (bitwise, {POOL} tensor pairs)"] = ok
        loop = _cycle_loop(fn, [(o, i, alpha) for o, i in pool])
        paths.append(
            TimedPath("tvm_ffi_tensors", "DSL TVM-FFI path, torch tensors + env stream", loop, "stream from torch's current stream")
        )
    except ImportError:
        checks["tvm-ffi tensors"] = "apache-tvm-ffi not importable: path skipped"
    except Exception as exc:  # report, don't hide
        checks["tvm-ffi tensors"] = f"failed: {D.exception_summary(exc, 200)}"
    paths += _triton_path(pool, refs, alpha, stream, poison, out_bytes, checks)
    return paths


def _triton_path(
    pool: list[Any], refs: list[bytes], alpha: float, stream: Any, poison: Any, out_bytes: Any, checks: dict[str, Any]
) -> list[TimedPath]:
    """A Triton scale kernel launched ``kernel[grid](...)`` (where Triton is installed), checked bitwise first."""
    try:
        from .triton_kernels import scale as triton_scale
    except ImportError:
        checks["triton"] = "triton not importable: path skipped"
        return []
    try:
        from .. import dsl

        torch = dsl.import_torch()
        with torch.cuda.stream(stream):
            ok = _agrees(lambda o, i: triton_scale(o, i, alpha), pool, refs, poison, out_bytes)
        checks[f"triton == direct (bitwise, {POOL} tensor pairs)"] = ok
        return [
            TimedPath(
                "triton",
                "Triton kernel[grid](...), torch tensors",
                _cycle_loop(triton_scale, [(o, i, alpha) for o, i in pool]),
                "@triton.jit scale, grid from numel, current stream",
            )
        ]
    except Exception as exc:  # report, don't hide
        checks["triton"] = f"failed: {D.exception_summary(exc, 200)}"
        return []


#: What the tensor rows read without torch.
NO_TORCH = (
    "torch is not installed, so the tensors here are NumPy arrays. They take the same fast path as torch "
    "tensors: each array's address, shape and strides are read straight from the array (no DLPack export "
    "per launch) and checked against the compiled layout."
)

#: Each row of the tensor table in plain words.
MEANINGS: dict[str, str] = {
    "direct": "calling the function cute.compile returned, with tensors converted once (from_dlpack) and reused every call: the cheapest way to call it directly, but it always sees the same tensors",
    "rebuilt": "the same direct call converting the new tensors (from_dlpack + mark_layout_dynamic) each time, as code that gets new tensors every step must",
    "launch_new": "cute_bind's prepared launch given a different tensor pair each step (different addresses and sizes), each checked against the compiled layout",
    "launch_same": "the prepared launch given the same tensors every call",
    "launch_numpy": "the prepared launch given NumPy arrays (new ones each step), read without a DLPack export",
    "call_numpy": "calling the kernel itself with NumPy arrays (new ones each step), the stream left out",
    "launch_cai": "the prepared launch given CuPy-style __cuda_array_interface__ arrays over the same memory, read without a DLPack export",
    "call_cai": "calling the kernel itself with those __cuda_array_interface__ arrays, the stream passed",
    "pointer_from_tensors": "the same work as a pointer kernel, its arguments read from the tensors each step (data_ptr(), numel())",
    "pointer_ints": "the pointer kernel with its integer arguments ready: the cost of a launch with no tensors to read",
    "bare": "the compiled code's entry point called directly on argument storage prepared once: no argument handling at all",
    "tvm_ffi_tensors": "the DSL's optional TVM-FFI calling convention given torch tensors, the stream taken from torch",
    "call": "calling the kernel itself, kernel(out, inp, a), with the stream left out: cute_bind picks the specialization and the current stream",
    "call_stream": "the same kernel(...) call given that stream explicitly: the difference to the row above is what finding the current stream costs",
    "triton": "a Triton kernel doing the same scale, launched kernel[grid](...) (where Triton is installed)",
}


#: what the table's columns mean, printed under it
COLUMNS_TENSORS = (
    "Columns: host us per launch, the median and the minimum of the rounds (lower is better); "
    "'direct reused / path': how many times cheaper the path is than the direct call given the same tensors "
    "every call, its best case (1.0x: the same; 0.5x: twice as slow)."
)


def format_tensor_table(report: Report) -> str:
    direct = report.median("direct")
    events = any(r.event_us is not None for r in report.rows)
    timed = f"; {report.repeats} interleaved rounds x {report.iters} launches"
    lines = table_head(
        report,
        timed,
        "| path | host us/launch (median) | min | direct reused / path |",
        "|---|---:|---:|---:|",
        events="launch" if events else "",
    )
    for r in report.rows:
        lines.append(f"| {r.path} | {r.median_us:.2f} | {r.min_us:.2f} | {direct / r.median_us:.1f}x |{event_cell(r, events)}")
    launch = report.median("launch_new")
    lines.append("")
    summary = [f"direct reused / launch(new tensors) = {direct / launch:.1f}x"]

    def against(key: str, line: Callable[[float], str]) -> None:
        """``line(median of key)`` in the summary, where the run timed ``key``."""
        row = report.row(key)
        if row is not None:
            summary.append(line(row.median_us))

    against("tvm_ffi_tensors", lambda tvm: f"launch(new tensors) - TVM-FFI(torch tensors) = {launch - tvm:+.2f} us")
    call = report.row("call")
    if call is not None:
        kern = call.median_us
        summary.append(f"kernel(...) - launch(new tensors) = {kern - launch:+.2f} us")
        against("call_stream", lambda passed: f"stream left out - stream passed = {kern - passed:+.2f} us")
        against("tvm_ffi_tensors", lambda tvm: f"kernel(...) - TVM-FFI = {kern - tvm:+.2f} us")
        against("triton", lambda triton: f"Triton / kernel(...) = {triton / kern:.1f}x")
    against("launch_cai", lambda cai: f"launch(__cuda_array_interface__) - launch(new tensors) = {cai - launch:+.2f} us")
    for key in ("pointer_from_tensors", "pointer_ints"):
        row = report.row(key)
        if row is not None:
            summary.append(f"launch(new tensors) / {row.path.removeprefix('pointer kernel launch, ')} = {launch / row.median_us:.2f}x")
    lines.append("; ".join(summary))
    lines.append(checks_line(report.checks))
    lines += ["", COLUMNS_TENSORS, "", "What each path is:", *legend(report, MEANINGS)]
    lines += [line for note in report.notes for line in ("", note)]
    lines += ["", tensor_verdict(report)]
    return "\n".join(lines)


def tensor_verdict(report: Report) -> str:
    """One sentence a newcomer can act on."""
    direct, rebuilt, launch = report.median("direct"), report.median("rebuilt"), report.median("launch_new")
    failed = [k for k, v in report.checks.items() if v is False]
    if failed:
        return f"Verdict: NOT OK: these paths wrote different bytes from the direct call: {', '.join(failed)}."
    where = "on this machine's GPU" if report.mode.startswith("GPU") else "on this machine's CPU alone (host-only, no GPU driver)"
    head = f"Verdict: {where}, a prepared launch with new tensors each step took {launch:.2f} us per call"
    if launch <= direct:
        return (
            f"{head}, {direct / launch:.0f}x less than the direct call even when that call reuses its tensors ({direct:.2f} us), "
            f"and {rebuilt / launch:.0f}x less than a direct call given new tensors ({rebuilt:.2f} us); every path wrote the same bytes."
        )
    why = "; see the note above on torch" if report.notes else ""
    return (
        f"{head}: slower than the direct call that reuses tensors ({direct:.2f} us{why}), "
        f"but {rebuilt / launch:.1f}x less than a direct call given new tensors ({rebuilt:.2f} us), which is the fair comparison; "
        "every path wrote the same bytes."
    )
