"""The pointer workload: the 5-argument scale kernel launched by every path, side by side.

Paths (all launch the same compiled function with the same values):

- ``direct call, args reused``: ``compiled(p_out, p_in, Float32(a), Int32(n), CUstream(s))``
  with the argument objects built once;
- ``direct call, args rebuilt``: the same with ``make_ptr``/``Float32``/``Int32``/
  ``CUstream`` objects built on every call (what a wrapper given fresh
  tensors does);
- ``PreparedLaunch.launch``: ``handle.launch(out_addr, in_addr, a, n, s)``;
- ``kernel(...) call``: ``k(out_addr, in_addr, a, n, s)``, the annotate-and-call
  path (its specialization found without rebuilding anything, then the
  thread's handle launched);
- ``bare engine call``: the DSL's own ctypes entry point called on a packed
  array the DSL populated once, nothing rewritten: the floor of this design
  (reported for the array argument the DSL passes and for a precomputed
  integer address; the lower one is the floor the targets are measured to);
- optional, where available: the DSL's TVM-FFI path, a cuda-bindings
  ``cuLaunchKernel`` of the same kernel, torch eager ``torch.mul(x, a, out=o)``.


Timing and the table columns: :mod:`cute_bind.bench.timing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .. import diagnostics as D
from .timing import (
    Checks,
    Report,
    TimedPath,
    checks_line,
    event_cell,
    fast_path_words,
    fixed_loop,
    legend,
    machine,
    on_gpu,
    table_head,
    time_rows,
)

__all__ = ["run", "format_table"]


def run(*, host_only: bool | None = None, repeats: int = 21, iters: int = 20000) -> Report:
    """Build every path, check they agree, time them interleaved and return the report."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import numpy as np
    from cutlass.cute.runtime import make_ptr

    from .. import dsl
    from .kernels import scale, scale_host, scale_host_left_out, scale_left_out
    from ..jit import kernel

    gpu = on_gpu(host_only)
    checks: Checks = {}
    alpha, stream_handle = 2.0, 0
    torch_stream = None
    if gpu:
        torch = dsl.import_torch()
        n = 4096
        x = torch.randn(n, device="cuda", dtype=torch.float32)
        out = torch.empty_like(x)
        torch_stream = torch.cuda.Stream()
        stream_handle = torch_stream.cuda_stream
        out_addr, in_addr = out.data_ptr(), x.data_ptr()
        space, fn = cute.AddressSpace.gmem, scale

        def expected() -> object:
            return x * alpha

        def reset() -> None:
            out.fill_(float("nan"))

        def result() -> object:
            torch.cuda.synchronize()
            return out.clone()
    else:
        n = 64
        x_np = np.random.default_rng(0).standard_normal(64).astype(np.float32)
        out_np = np.zeros(64, np.float32)
        out_addr, in_addr = out_np.ctypes.data, x_np.ctypes.data
        space, fn = cute.AddressSpace.generic, scale_host

        def expected() -> object:
            return (x_np * np.float32(alpha)).astype(np.float32)

        def reset() -> None:
            out_np.fill(np.nan)

        def result() -> object:
            return out_np.copy()

    p_out = make_ptr(cutlass.Float32, out_addr, space, assumed_align=16)
    p_in = make_ptr(cutlass.Float32, in_addr, space, assumed_align=16)
    direct_args = (p_out, p_in, cutlass.Float32(alpha), cutlass.Int32(n), cuda.CUstream(stream_handle))
    compiled = cute.compile(fn, *direct_args)

    k = kernel(fn)
    handle = k.bind(out_addr, in_addr, alpha, n, stream_handle)
    launch = handle.launch
    entry, packed, packed_address, raw_entry, raw_arg = dsl.bare_call(compiled, direct_args)

    def rebuilt(o: int, i: int, a: float, m: int, s: int) -> object:
        return compiled(
            make_ptr(cutlass.Float32, o, space, assumed_align=16),
            make_ptr(cutlass.Float32, i, space, assumed_align=16),
            cutlass.Float32(a),
            cutlass.Int32(m),
            cuda.CUstream(s),
        )

    # -- agreement: every path writes the same bytes as the direct call
    reset()
    compiled(*direct_args)
    ref = result()
    if gpu:
        torch = dsl.import_torch()
        checks["direct == torch reference"] = bool(torch.equal(ref, expected()))
        same: Callable[[Any, Any], bool] = torch.equal
    else:
        checks["direct == numpy reference"] = bool(np.array_equal(np.asarray(ref), np.asarray(expected())))
        same = np.array_equal
    agree = _Agreement(reset, result, ref, same, checks)
    agree.check("launch", lambda: launch(out_addr, in_addr, alpha, n, stream_handle))
    agree.check("rebuilt", lambda: rebuilt(out_addr, in_addr, alpha, n, stream_handle))
    agree.check("bare", lambda: entry(packed))
    agree.check("kernel call", lambda: k(out_addr, in_addr, alpha, n, stream_handle))

    rows_spec: list[_Path] = [
        ("direct", "direct call, args reused", compiled, direct_args, ""),
        ("rebuilt", "direct call, args rebuilt", rebuilt, (out_addr, in_addr, alpha, n, stream_handle), ""),
        ("launch", "PreparedLaunch.launch", launch, (out_addr, in_addr, alpha, n, stream_handle), "int addresses, float, int, int stream"),
        ("call", "kernel(...) call", k, (out_addr, in_addr, alpha, n, stream_handle), "annotate and call: same arguments, no bind()"),
        ("bare", "bare engine call", entry, (packed,), "the DSL's ctypes entry on its packed array, as the DSL calls it"),
        ("bare_int", "bare engine call, int address", entry, (packed_address,), "same, array address precomputed"),
        ("floor", "bare entry call, cheapest ctypes form", raw_entry, (raw_arg,), "no argtypes, prebuilt c_void_p: the form launch uses"),
    ]
    rows_spec += _form_paths(gpu, launch, k, (out, x) if gpu else (out_np, x_np), alpha, n, stream_handle, agree, torch_stream)
    left_out = kernel(scale_left_out if gpu else scale_host_left_out)
    rows_spec += _left_out_paths(left_out, (out_addr, in_addr), (out, x) if gpu else None, alpha, n, stream_handle, agree)
    rows_spec += _extra_paths(fn, direct_args, out_addr, in_addr, alpha, n, stream_handle, agree)
    if gpu:
        rows_spec += _gpu_extra_paths(compiled, out_addr, in_addr, alpha, n, stream_handle, agree)
        rows_spec += _tvm_tensor_path(out, x, alpha, torch_stream, agree)
    loops = [
        TimedPath(key, label, fixed_loop(f, a) if isinstance(a, tuple) else fixed_loop(f, (), a), note)
        for key, label, f, a, note in rows_spec
    ]
    rows = time_rows(loops, repeats, iters, torch_stream if gpu else None, label="pointer workload")
    handle.close()
    from ..launch.prepared import fast_path

    mode = "GPU: scale kernel, 4096 f32, non-default stream" if gpu else "CPU: host-only function, same 5-argument shape"
    from ..jit.dispatch import call_path

    mode += f"; launch fast path: {fast_path_words(fast_path())}; call path: {call_path()}"
    return Report(machine=machine(), mode=mode, dsl_version=dsl.dsl_version(), repeats=repeats, iters=iters, rows=rows, checks=checks)


@dataclass
class _Agreement:
    """How a comparison path is checked against the direct call before it is timed."""

    reset: Callable[[], None]  # poison the output
    result: Callable[[], object]  # the output, after synchronising
    ref: object  # the direct call's output
    same: Callable[[Any, Any], bool]  # bitwise equality
    checks: Checks  # name -> True/False, or why a path was skipped

    def check(self, name: str, call: Callable[[], object]) -> bool:
        self.reset()
        call()
        ok = bool(self.same(self.result(), self.ref))
        self.checks[f"{name} == direct (bitwise)"] = ok
        return ok


#: key, label, function, arguments (a dict: every argument by keyword), note
_Path = tuple[str, str, Callable[..., object], "tuple[object, ...] | dict[str, object]", str]


def _form_paths(
    gpu: bool,
    launch: Callable[..., object],
    k: Callable[..., object],
    arrays: tuple[Any, Any],
    alpha: float,
    n: int,
    stream: int,
    agree: _Agreement,
    stream_object: object = None,
) -> list[_Path]:
    """The same launch and kernel(...) call given the arrays themselves, in every form a pointer slot takes
    (issue 24: each within 2x of the int-address launch): torch tensors, NumPy arrays (CPU), ctypes pointers;
    then int addresses with the stream as an object (``stream_object``, torch's on a GPU, else a
    ``cuda.CUstream``), as tutorial 7 and code holding torch's stream pass it."""
    import ctypes

    from .. import dsl

    forms: list[tuple[str, str, tuple[Any, Any]]] = []
    try:
        torch = dsl.import_torch()
    except ImportError:
        torch = None
    if gpu:
        forms.append(("torch", "torch tensors", arrays))
    else:
        out, x = arrays
        if torch is not None:
            forms.append(("torch", "torch tensors", (torch.from_numpy(out), torch.from_numpy(x))))
        forms.append(("numpy", "NumPy arrays", (out, x)))
    addr = [int(a.data_ptr()) if hasattr(a, "data_ptr") else int(a.ctypes.data) for a in arrays]
    forms.append(("ctypes", "ctypes c_void_p", (ctypes.c_void_p(addr[0]), ctypes.c_void_p(addr[1]))))
    if stream_object is None:
        import cuda.bindings.driver as cuda

        stream_object = cuda.CUstream(stream)
    rows: list[_Path] = []
    for key, words, (o, i) in forms:
        for path, label, fn in (("launch", "PreparedLaunch.launch", launch), ("call", "kernel(...) call", k)):
            args: tuple[object, ...] = (o, i, alpha, n, stream)

            def call(fn: Callable[..., object] = fn, args: tuple[object, ...] = args) -> object:
                return fn(*args)

            if agree.check(f"{path} with {words}", call):
                rows.append((f"{path}_{key}", f"{label}, {words}", fn, args, f"the {words} themselves on the pointer slots"))
    words = f"{type(stream_object).__module__.split('.')[0]} stream object"
    for path, label, fn in (("launch", "PreparedLaunch.launch", launch), ("call", "kernel(...) call", k)):
        args = (addr[0], addr[1], alpha, n, stream_object)

        def call(fn: Callable[..., object] = fn, args: tuple[object, ...] = args) -> object:
            return fn(*args)

        if agree.check(f"{path} with a {words}", call):
            rows.append((f"{path}_stream", f"{label}, {words}", fn, args, f"int addresses, the stream as a {words}"))
    # every argument by keyword: placed by parameter name on the fast path
    named: dict[str, object] = {"out": addr[0], "inp": addr[1], "alpha": alpha, "n": n, "stream": stream}
    for path, label, fn in (("launch", "PreparedLaunch.launch", launch), ("call", "kernel(...) call", k)):

        def by_name(fn: Callable[..., object] = fn) -> object:
            return fn(**named)

        if agree.check(f"{path} by keyword", by_name):
            rows.append((f"{path}_keywords", f"{label}, by keyword", fn, named, "int addresses, every argument by keyword"))
    return rows


def _left_out_paths(
    k: Callable[..., object],
    addresses: tuple[int, int],
    tensors: tuple[object, object] | None,
    alpha: float,
    n: int,
    stream: int,
    agree: _Agreement,
) -> list[_Path]:
    """``kernel(...)`` of the same kernel with its stream declared ``= None``, the stream given and left out
    (issue 44 item 7: finding torch's current stream should cost at most 0.3 us over an explicit stream):
    with int addresses, and on a GPU with the torch tensors too. The timed rounds run with the bench
    stream made torch's current one, so a left-out stream is the very stream the given rows pass."""
    forms: list[tuple[str, str, tuple[object, object]]] = [("", "int addresses", addresses)]
    if tensors is not None:
        forms.append(("_torch", "torch tensors", tensors))
    rows: list[_Path] = []
    for key, words, (o, i) in forms:
        for suffix, label, args in (("given", "stream given", (o, i, alpha, n, stream)), ("left_out", "stream left out", (o, i, alpha, n))):

            def call(args: tuple[object, ...] = args) -> object:
                return k(*args)

            if agree.check(f"kernel(...) with {words}, {label}", call):
                rows.append((f"call{key}_{suffix}", f"kernel(...) call, {words}, {label}", k, args, f"stream declared = None, {label}"))
    return rows


def _extra_paths(
    fn: Callable[..., object],
    direct_args: tuple[object, ...],
    out_addr: int,
    in_addr: int,
    alpha: float,
    n: int,
    stream: int,
    agree: _Agreement,
) -> list[_Path]:
    """Comparison paths that need optional packages; each is checked against the direct call."""
    rows: list[_Path] = []
    try:
        import tvm_ffi  # noqa: F401

        import cutlass.cute as cute

        tvm = cute.compile(fn, *direct_args, options="--enable-tvm-ffi")
        agree.check("tvm-ffi", lambda: tvm(out_addr, in_addr, alpha, n, stream))
        rows.append(("tvm_ffi", "DSL TVM-FFI path", tvm, (out_addr, in_addr, alpha, n, stream), "--enable-tvm-ffi, int addresses"))
    except ImportError:
        agree.checks["tvm-ffi"] = "apache-tvm-ffi not importable: path skipped"
    except Exception as exc:  # report, don't hide: the row is missing for this reason
        agree.checks["tvm-ffi"] = f"failed: {D.exception_summary(exc, 200)}"
    return rows


def _gpu_extra_paths(compiled: Any, out_addr: int, in_addr: int, alpha: float, n: int, stream: int, agree: _Agreement) -> list[_Path]:
    import ctypes

    import cuda.bindings.driver as drv

    from .. import dsl

    torch = dsl.import_torch()

    checks = agree.checks
    rows: list[_Path] = []
    # torch eager: the same arithmetic through torch's own launch path (timed on the same stream)
    x = torch.randn(n, device="cuda")
    o = torch.empty_like(x)
    torch.mul(x, alpha, out=o)
    rows.append(
        (
            "torch",
            "torch eager torch.mul(x, a, out=o)",
            lambda x, a, o=o: torch.mul(x, a, out=o),
            (x, alpha),
            "current stream = the bench stream",
        )
    )
    # cuda-bindings cuLaunchKernel of the very kernel the DSL compiled
    try:
        found = dsl.raw_kernel_function(compiled)
        if found is None:
            checks["cuLaunchKernel"] = "no single kernel in the compiled library: path skipped"
        elif found[1] != [8, 8, 4, 4]:
            checks["cuLaunchKernel"] = f"kernel parameter sizes {found[1]} are not (ptr, ptr, f32, i32): path skipped"
        else:
            function = found[0]
            storage = (ctypes.c_void_p(out_addr), ctypes.c_void_p(in_addr), ctypes.c_float(alpha), ctypes.c_int32(n))
            params = (ctypes.c_void_p * 4)(*(ctypes.addressof(v) for v in storage))
            grid, block = (n + 255) // 256, 256
            s = drv.CUstream(stream)
            params_address = ctypes.addressof(params)

            def culaunch(f: Any, s: Any, pp: int, _keep: Any = (storage, params)) -> Any:
                return drv.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, pp, 0)

            if agree.check("cuLaunchKernel", lambda: culaunch(function, s, params_address)):
                rows.append(
                    (
                        "culaunch",
                        "cuda-bindings cuLaunchKernel",
                        culaunch,
                        (function, s, params_address),
                        "same cubin kernel, params pre-built",
                    )
                )
    except Exception as exc:  # report, don't hide
        checks["cuLaunchKernel"] = f"failed: {D.exception_summary(exc, 200)}"
    return rows


def _tvm_tensor_path(out: object, x: object, alpha: float, stream: object, agree: _Agreement) -> list[_Path]:
    """The DSL's TVM-FFI path the way it is meant for torch: tensors in, stream from the caller's context."""
    try:
        from .. import dsl

        torch = dsl.import_torch()
        from .kernels import tvm_ffi_tensor_function

        fn: Any = tvm_ffi_tensor_function()

        def call() -> None:
            with torch.cuda.stream(stream):
                fn(out, x, alpha)

        agree.check("tvm-ffi tensors", call)
        return [
            (
                "tvm_ffi_tensors",
                "DSL TVM-FFI path, torch tensors + env stream",
                fn,
                (out, x, alpha),
                "cute.Tensor kernel, stream from torch's current stream",
            )
        ]
    except ImportError:
        return []
    except Exception as exc:  # report, don't hide
        agree.checks["tvm-ffi tensors"] = f"failed: {D.exception_summary(exc, 200)}"
        return []


#: Each row of the pointer table in plain words (``bench --help`` says what the columns mean).
MEANINGS: dict[str, str] = {
    "direct": "calling the function cute.compile returned, with its argument objects built once and reused (the usual way to call a compiled CuTe DSL function)",
    "rebuilt": "the same call with the argument objects (pointers, scalars, stream) built anew each time, as code that gets new buffers every step must",
    "launch": "cute_bind's prepared launch: handle.launch(...) with plain Python values (addresses, numbers, a stream handle)",
    "launch_torch": "the prepared launch given the torch tensors themselves for the pointer parameters (their data pointers read in C)",
    "launch_numpy": "the prepared launch given the NumPy arrays themselves for the pointer parameters",
    "launch_ctypes": "the prepared launch given ctypes c_void_p pointers",
    "call_torch": "kernel(...) given the torch tensors themselves for the pointer parameters",
    "call_numpy": "kernel(...) given the NumPy arrays themselves for the pointer parameters",
    "call_ctypes": "kernel(...) given ctypes c_void_p pointers",
    "launch_stream": "the prepared launch given int addresses and the stream as an object (torch.cuda.Stream on a GPU, else cuda.CUstream) instead of its handle",
    "call_stream": "kernel(...) given int addresses and the stream as an object",
    "bare": "the compiled code's entry point called directly on argument storage prepared once, the way the DSL itself calls it: no argument handling at all",
    "bare_int": "the same, with the storage's address computed in advance",
    "floor": "the same entry point through the cheapest calling form Python has (the one launch uses): the lowest cost any call into this compiled code can have",
    "tvm_ffi": "the DSL's optional TVM-FFI calling convention (compiled with --enable-tvm-ffi), plain Python values",
    "torch": "the same arithmetic done by PyTorch (torch.mul), for scale",
    "culaunch": "the very same GPU kernel launched with cuda-bindings' cuLaunchKernel, parameters prepared once",
    "tvm_ffi_tensors": "the DSL's TVM-FFI path given torch tensors, the stream taken from torch",
    "call_given": "kernel(...) of the same kernel with its stream declared = None, given int addresses and the stream",
    "call_left_out": "the same kernel(...) call with the stream left out: cute_bind finds torch's current stream (the default stream without torch's CUDA)",
    "call_torch_given": "kernel(...) of the stream = None kernel given the torch tensors and the stream",
    "call_torch_left_out": "the same with the stream left out: the difference to the row above is what finding torch's current stream costs",
}


def cheapest(report: Report) -> float:
    """The cheapest call into the compiled code this run measured: the lowest of the three bare rows."""
    return min(r.median_us for r in report.rows if r.key in ("bare", "bare_int", "floor"))


def format_table(report: Report) -> str:
    floor = cheapest(report)
    direct = report.median("direct")
    launch = report.median("launch")
    rows = report.rows
    events = any(r.event_us is not None for r in rows)
    timed = f"; {report.repeats} interleaved rounds x {report.iters} launches"
    head = "| path | host us/launch (median) | min | over cheapest call | direct reused / path |"
    lines = table_head(report, timed, head, "|---|---:|---:|---:|---:|", events="launch" if events else "")
    below = []
    for r in rows:
        ev = event_cell(r, events)
        over = round(r.median_us - floor, 2) + 0.0  # + 0.0: a -0.004 reads +0.00, as it rounds
        if over < 0:
            below.append(r.path)
        lines.append(f"| {r.path} | {r.median_us:.2f} | {r.min_us:.2f} | {over:+.2f} | {direct / r.median_us:.1f}x |{ev}")
    summary = [
        f"launch - cheapest call = {launch - floor:+.3f} us",
        f"bare engine call (as the DSL calls) - cheapest call = {report.median('bare') - floor:+.3f} us",
        f"direct reused / launch = {direct / launch:.1f}x",
    ]
    call_row = report.row("call")
    if call_row is not None:
        summary.append(f"kernel(...) - launch = {call_row.median_us - launch:+.3f} us")
    for key, words in (("call", "int addresses"), ("call_torch", "torch tensors")):
        given, left = report.row(f"{key}_given"), report.row(f"{key}_left_out")
        if given is not None and left is not None:
            summary.append(f"stream left out - given ({words}) = {left.median_us - given.median_us:+.3f} us")
    lines += [
        "",
        "; ".join(summary),
        checks_line(report.checks),
        "",
        "Columns: host us per launch, the median and the minimum of the rounds (lower is better); 'over cheapest "
        "call': the median minus the cheapest call into the compiled code this run measured (the lowest of the "
        "three 'bare' rows: no argument handling at all), so it is what a path costs beyond calling the compiled "
        "code; 'direct reused / path': how many times cheaper the path is than the direct call with its arguments "
        "reused (1.0x: the same; 0.5x: twice as slow).",
    ]
    if below:
        lines += [
            "",
            f"Below zero ({', '.join(below)}): measured a little under the cheapest call, which no path can really "
            "be: the difference is this run's timing noise (rounds interleaved on a shared machine); read it as 0.",
        ]
    lines += ["", "What each path is:", *legend(report, MEANINGS), "", verdict(report)]
    return "\n".join(lines)


def verdict(report: Report) -> str:
    """One sentence a newcomer can act on, naming the machine the figures are for."""
    from .reference import DEVICE_RUN

    direct, launch = report.median("direct"), report.median("launch")
    floor = cheapest(report)
    extra = launch - floor
    overhead = "no measurable cost of its own" if extra <= 0.05 else f"{extra:.2f} us of its own"
    failed = [k for k, v in report.checks.items() if v is False]
    if failed:
        return f"Verdict: NOT OK: these paths wrote different bytes from the direct call: {', '.join(failed)}."
    gpu = report.mode.startswith("GPU")
    where = "on this machine's GPU" if gpu else "on this machine's CPU alone (a host-only function, no GPU driver in any figure)"
    said = (
        f"Verdict: {where}, a prepared launch took {launch:.2f} us per call, {direct / launch:.0f}x less than calling the "
        f"compiled function directly ({direct:.2f} us), with {overhead} on top of the cheapest possible call ({floor:.2f} us); "
        "every path wrote the same bytes."
    )
    if not gpu:
        d_direct, d_launch = DEVICE_RUN.median("direct call, args reused"), DEVICE_RUN.median("PreparedLaunch.launch")
        said += (
            f" On a GPU the driver's launch is added to every path: the documented H200 run (at the top) has "
            f"{d_launch:.2f} us against {d_direct:.2f} us, {d_direct / d_launch:.1f}x."
        )
    return said
