"""``python -m cute_bind bench --workload torch``: a kernel as a torch op, eager and compiled.

One 2-tensor scale kernel (``out = inp * alpha``, dynamic layout, a stream
parameter), the same tensors every call, timed per call on the host:

- ``PreparedLaunch.launch(y, x, a, s)``, ``kernel(y, x, a, s)`` (the kernel's
  own call path) and the ``cute_bind.torch`` op called eagerly, ``op(y, x, a)``
  (torch's current stream), then the same op through torch's dispatcher
  (``torch.ops.cbbench.scale_``);
- the pattern users write by hand: a ``torch.library.custom_op`` whose body
  calls ``handle.launch`` and, on a GPU with apache-tvm-ffi, one calling the
  DSL's TVM-FFI compiled function (torch tensors, env stream);
- ``torch.compile(fullgraph=True)`` of a one-line function calling the op
  against the same function with ``torch.mul(x, a, out=y)`` in its place, and
  on a GPU with ``mode="reduce-overhead"`` (CUDA graphs) the functional forms
  (the op allocating its output against ``torch.mul(x, a)``).

Every path's output is checked bit for bit against ``handle.launch`` before
timing. Each round is at most 2000 calls (the slowest paths take ~100 us).
Without a GPU the kernel is a host-only twin on CPU tensors and the compiled
paths use inductor's CPU backend (which compiles C++ first: allow a minute).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from .timing import Checks, Report, Row, TimedPath, checks_line, event_cell, fixed_loop, machine, table_head, time_rows

if TYPE_CHECKING:
    from torch import Tensor

    from ..torch import TorchOp

__all__ = ["run_torch_ops", "format_torch_table"]

ALPHA = 2.0
#: the schema a user writes (or torch infers) for the hand-written ops
HAND_SCHEMA = "(Tensor(a!) out, Tensor inp, float alpha) -> ()"
MAX_ITERS = 2000

LAUNCH = "PreparedLaunch.launch(y, x, a, s)"
KERNEL = "kernel(y, x, a, s)"
EAGER = "cute_bind.torch op, eager: op(y, x, a)"
DISPATCHER = "the same op through the dispatcher: torch.ops.cbbench.scale_(y, x, a)"
HAND_LAUNCH = "hand-written torch.library.custom_op calling handle.launch"
HAND_TVM = "hand-written torch.library.custom_op calling the TVM-FFI function"
COMPILED_OP = "torch.compile(fullgraph): op(y, x, a)"
COMPILED_MUL = "torch.compile(fullgraph): torch.mul(x, a, out=y)"
GRAPHED_OP = "torch.compile(reduce-overhead): op_f(x, a)"
GRAPHED_MUL = "torch.compile(reduce-overhead): torch.mul(x, a)"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}"


def run_torch_ops(*, host_only: bool | None = None, repeats: int = 21, iters: int = 2000) -> Report:
    """Build every path, check each against ``handle.launch`` bit for bit, time them interleaved."""
    from .. import dsl

    torch = dsl.import_torch()

    from .. import dsl
    from .. import torch as cbt
    from ..jit import kernel
    from .kernels import scale_tensors, scale_tensors_host

    gpu = dsl.cuda_device_count() > 0 and torch.cuda.is_available() if host_only is None else not host_only
    iters = min(iters, MAX_ITERS)
    checks: Checks = {}
    if gpu:
        torch_stream = torch.cuda.Stream()
        n, device, fn = 4096, "cuda", scale_tensors
    else:
        torch_stream = None
        n, device, fn = 64, "cpu", scale_tensors_host
    x = torch.randn(n, device=device, generator=torch.Generator(device=device).manual_seed(0))
    y = torch.empty_like(x)

    def stream() -> int:
        return int(torch.cuda.current_stream().cuda_stream) if gpu else 0

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize()

    k = kernel(fn)
    # the op and the hand-written ones are named per run: torch registers a name once per process
    tag = f"{'gpu' if gpu else 'cpu'}_{id(k):x}"
    op = cbt.op(f"cbbench::scale_{tag}", k, mutates_args=("out",))
    op_f = cbt.op(f"cbbench::scaled_{tag}", k, outputs={"out": "inp"})
    dispatch = op.overload

    ctx: Any = torch.cuda.stream(torch_stream) if gpu else _nullcontext()
    with ctx:
        handle = k.bind(y, x, ALPHA, stream())
        launch = handle.launch

        def hand_launch_body(out: Tensor, inp: Tensor, alpha: float) -> None:
            launch(out, inp, alpha, torch.cuda.current_stream().cuda_stream if out.is_cuda else 0)

        hand_launch = torch.library.custom_op(f"cbbench::hand_launch_{tag}", hand_launch_body, mutates_args=("out",), schema=HAND_SCHEMA)

        # reference bytes: handle.launch
        y.fill_(float("nan"))
        launch(y, x, ALPHA, stream())
        sync()
        ref = y.clone()

        def agree(name: str, call: Callable[[], object]) -> bool:
            """Poison y, call; the result (or y, for a mutating call) must be ref's bytes."""
            y.fill_(float("nan"))
            out = call()
            sync()
            got = out if isinstance(out, torch.Tensor) else y
            ok = bool(torch.equal(got.view(torch.int32), ref.view(torch.int32)))
            checks[f"{name} == handle.launch (bitwise)"] = ok
            return ok

        s = stream()
        paths: list[TimedPath] = [
            TimedPath.of(LAUNCH, fixed_loop(launch, (y, x, ALPHA, s)), "torch tensors, the handle's fast path"),
            TimedPath.of(KERNEL, fixed_loop(k, (y, x, ALPHA, s)), "the kernel's own call path"),
            TimedPath.of(EAGER, fixed_loop(op, (y, x, ALPHA)), "torch's current stream"),
            TimedPath.of(DISPATCHER, fixed_loop(dispatch, (y, x, ALPHA)), "torch.library custom op, Python implementation"),
            TimedPath.of(HAND_LAUNCH, fixed_loop(hand_launch, (y, x, ALPHA)), "the pattern users write, over our handle"),
        ]
        agree("kernel(...)", lambda: k(y, x, ALPHA, s))
        agree("eager op", lambda: op(y, x, ALPHA))
        agree("op through the dispatcher", lambda: dispatch(y, x, ALPHA))
        agree("hand-written op (handle.launch)", lambda: hand_launch(y, x, ALPHA))
        if gpu:
            paths += _tvm_path(torch, tag, x, y, agree, checks)
        paths += _compiled_paths(torch, op, op_f, x, y, gpu, agree, checks)
        rows: list[Row] = time_rows(paths, repeats, iters, torch_stream, label="torch workload")
    handle.close()
    from ..launch.prepared import fast_path

    what = "GPU: 2-tensor scale kernel, 4096 f32" if gpu else "CPU: host-only 2-tensor scale function, 64 f32"
    mode = f"{what}, same tensors every call; torch {torch.__version__}; launch fast path: {fast_path()}"
    return Report(machine=machine(), mode=mode, dsl_version=dsl.dsl_version(), repeats=repeats, iters=iters, rows=rows, checks=checks)


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _tvm_path(torch: ModuleType, tag: str, x: Tensor, y: Tensor, agree: Callable[..., bool], checks: Checks) -> list[TimedPath]:
    """The hand-written custom op over the DSL's TVM-FFI function (GPU, apache-tvm-ffi installed)."""
    try:
        import tvm_ffi  # noqa: F401

        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

        from .kernels import scale_tensors

        fake = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),), assumed_align=16)
        fn = cute.compile(
            scale_tensors, fake, fake, cutlass.Float32(ALPHA), make_fake_stream(use_tvm_ffi_env_stream=True), options="--enable-tvm-ffi"
        )

        def hand_tvm_body(out: Tensor, inp: Tensor, alpha: float) -> None:
            fn(out, inp, alpha)

        hand_tvm = torch.library.custom_op(f"cbbench::hand_tvm_{tag}", hand_tvm_body, mutates_args=("out",), schema=HAND_SCHEMA)

        agree("hand-written op (TVM-FFI)", lambda: hand_tvm(y, x, ALPHA))
        return [
            TimedPath.of("DSL TVM-FFI function called directly", fixed_loop(fn, (y, x, ALPHA)), "torch tensors, env stream"),
            TimedPath.of(HAND_TVM, fixed_loop(hand_tvm, (y, x, ALPHA)), "the pattern users write today"),
        ]
    except ImportError:
        checks["tvm-ffi"] = "apache-tvm-ffi not importable: path skipped"
    except Exception as exc:  # report, don't hide
        checks["tvm-ffi"] = f"failed: {_first_line(exc)}"
    return []


def _compiled_paths(
    torch: ModuleType, op: TorchOp, op_f: TorchOp, x: Tensor, y: Tensor, gpu: bool, agree: Callable[..., bool], checks: Checks
) -> list[TimedPath]:
    """torch.compile of one-line functions: the op against the built-in torch.mul in its place."""
    paths: list[TimedPath] = []

    def with_op(out: Tensor, inp: Tensor) -> None:
        op(out, inp, ALPHA)

    def with_mul(out: Tensor, inp: Tensor) -> None:
        torch.mul(inp, ALPHA, out=out)

    def op_functional(inp: Tensor) -> Tensor:
        return op_f(inp, ALPHA)

    def mul_functional(inp: Tensor) -> Tensor:
        return torch.mul(inp, ALPHA)

    variants: list[tuple[str, Callable[..., object], tuple[object, ...], dict[str, object], str]] = [
        (COMPILED_OP, with_op, (y, x), {}, "inductor; the op is an extern call"),
        (COMPILED_MUL, with_mul, (y, x), {}, "inductor generates the multiply"),
    ]
    if gpu:
        variants += [
            (GRAPHED_OP, op_functional, (x,), {"mode": "reduce-overhead"}, "CUDA graph replay"),
            (GRAPHED_MUL, mul_functional, (x,), {"mode": "reduce-overhead"}, "CUDA graph replay"),
        ]
    for name, fn, args, options, note in variants:
        try:
            explained = torch._dynamo.explain(fn)(*args)
            checks[f"{name}: graph breaks"] = int(explained.graph_break_count)
            compiled = torch.compile(fn, fullgraph=True, **options)

            def call(c: Callable[..., Tensor | None] = compiled, a: tuple[object, ...] = args) -> object:
                out = c(*a)
                # reduce-overhead reuses its output buffers: compare a copy
                return None if out is None else out.clone()

            agree(name, call)
            paths.append(TimedPath.of(name, fixed_loop(compiled, args), note))
        except Exception as exc:  # report, don't hide
            checks[name] = f"failed: {_first_line(exc)}"
    return paths


def format_torch_table(report: Report) -> str:
    rows = {r.path: r for r in report.rows}
    events = any(r.event_us is not None for r in report.rows)
    timed = f"; {report.repeats} interleaved rounds x {report.iters} calls"
    lines = table_head(report, timed, "| path | host us/call (median) | min |", "|---|---:|---:|", events="call" if events else "")
    for r in report.rows:
        lines.append(f"| {r.path} | {r.median_us:.2f} | {r.min_us:.2f} |{event_cell(r, events)}")
    summary = []

    def us(name: str) -> float | None:
        return rows[name].median_us if name in rows else None

    eager, kern, launch = us(EAGER), us(KERNEL), us(LAUNCH)
    if eager is not None and kern is not None:
        summary.append(f"eager op - kernel(...) = {eager - kern:+.2f} us")
    if eager is not None and launch is not None:
        summary.append(f"eager op - handle.launch = {eager - launch:+.2f} us")
    for hand in (HAND_TVM, HAND_LAUNCH):
        h = us(hand)
        if eager is not None and h is not None:
            summary.append(
                f"{hand.removeprefix('hand-written torch.library.custom_op calling ')} hand-written op / eager op = {h / eager:.1f}x"
            )
    for ours, builtin in ((COMPILED_OP, COMPILED_MUL), (GRAPHED_OP, GRAPHED_MUL)):
        a, b = us(ours), us(builtin)
        if a is not None and b is not None:
            summary.append(f"{ours.split(':')[0]}: op / torch.mul = {a / b:.2f}x")
    lines += ["", "; ".join(summary), checks_line(report.checks)]
    return "\n".join(lines)
