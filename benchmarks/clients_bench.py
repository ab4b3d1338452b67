"""FlashAttention-4 and quack at decode and small shapes: each package's own function vs cute_bind's doors (issue 23).

On a CUDA GPU (the H200 of the device job), per workload, interleaved rounds,
host microseconds per call (medians):

- the package's own public function: ``flash_attn.cute.flash_attn_func(q, k, v)``,
  ``quack.rmsnorm(x, w)``, ``quack.softmax(x)`` (it allocates its outputs);
- the compiled TVM-FFI function the package made, called directly with the
  arguments the package passes it (outputs preallocated);
- ``cute_bind.prepare(compiled, *args)`` then ``handle.launch(*args)``;
- ``cute_bind.kernel(host, compile_options=the package's)`` compiled with the
  package's own compile arguments, then ``kernel(*args)``;
- a ``cute_bind.torch`` op over that kernel which allocates ``mO`` as the
  package does (``outputs={"mO": <its input>}``), called with the inputs.

A path cute_bind cannot build today prints ``n/a: <error>`` (below the table)
and the rest goes on. Before timing, every path's output is checked bit for
bit (NaN payloads included) against the package's own call on the same
inputs (outputs poisoned with NaN first). The compiles and the arguments are
the package's own, recorded while its function runs (``tests/clients/recorder.py``:
``cute.compile`` and every compiled function the package calls are intercepted;
the interception is removed before anything is timed).

Workloads: FlashAttention-4 forward at decode (batch 1, 4, 8; one query token;
512, 4096, 32768 keys; 16 heads; head dim 128; bf16), quack rmsnorm (bf16 x,
fp32 weight) and softmax at 1x4096 and 8x4096 bf16, quack's GEMM at
M = N = K = 256, 512, 1024 bf16 with its default config (``tuned=False``; its
compiled function takes NamedTuple epilogue and scheduler arguments).
FlashAttention-4's split-KV decode is not in the table: flash-attn-4
4.0.0b36 refuses ``num_splits > 1`` on sm90 ("SplitKV not supported on SM 9.0").

    python benchmarks/clients_bench.py [--repeats 11] [--iters 300] [--only fa4,rmsnorm,softmax,gemm] [--json OUT]
    python benchmarks/clients_bench.py --check-only      # CPU: structure, imports, and (with the clients
                                                         # installed) every path built without launching

Needs quack-kernels and flash-attn-4 (``tests/clients/requirements.txt``; on
the device machine ``bash benchmarks/device_job.sh clients`` installs them).
``--iters`` stays a few hundred: a round's launches must not fill the GPU's
launch queue (the longest decode kernels take ~100 us), or the host waits and
the numbers are the GPU's.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import os
import statistics
import sys
import traceback
import zlib
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FA4_BATCHES = (1, 4, 8)
FA4_KEYS = (512, 4096, 32768)
HEADS, HEAD_DIM = 16, 128
SMALL_ROWS = (1, 8)
SMALL_N = 4096
#: quack GEMM at small square shapes (M = N = K): the host-bound regime
GEMM_SIZES = (256, 512, 1024)
CLIENTS = ("quack-kernels", "flash-attn-4")

PACKAGE, DIRECT, LAUNCH, KERNEL, OP = "package", "direct", "launch", "kernel", "op"
#: column header of each path, in table order
COLUMNS = {
    PACKAGE: "package's function",
    DIRECT: "compiled TVM-FFI call",
    LAUNCH: "`handle.launch`",
    KERNEL: "`kernel(...)`",
    OP: "`cute_bind.torch` op",
}


@dataclasses.dataclass(frozen=True)
class Workload:
    family: str  # fa4 | rmsnorm | softmax | gemm
    label: str  # the table's workload cell
    shape: tuple[int, ...]  # fa4: (batch, keys); gemm: (M, N, K); others: (rows, N)
    host: str  # the class of the host function the package compiles

    @property
    def case(self) -> str:
        return f"bench.{self.family}.{'x'.join(map(str, self.shape))}"


def workloads(only: set[str] | None = None) -> list[Workload]:
    out = [Workload("fa4", f"FA4 fwd decode b={b} keys={k}", (b, k), "FlashAttentionForwardSm90") for b in FA4_BATCHES for k in FA4_KEYS]
    out += [Workload("rmsnorm", f"quack rmsnorm {m}x{SMALL_N}", (m, SMALL_N), "RMSNorm") for m in SMALL_ROWS]
    out += [Workload("softmax", f"quack softmax {m}x{SMALL_N}", (m, SMALL_N), "Softmax") for m in SMALL_ROWS]
    out += [Workload("gemm", f"quack GEMM M=N=K={n} bf16", (n, n, n), "GemmDefaultSm90") for n in GEMM_SIZES]
    return [w for w in out if only is None or w.family in only]


# ------------------------------------------------------------------ the packages' own calls
def make_inputs(w: Workload, device: str) -> dict[str, Any]:
    import torch

    dev = "cpu" if device == "meta-cuda" else device
    g = torch.Generator(device=dev).manual_seed(zlib.crc32(w.case.encode()))  # the same inputs in every run

    def randn(*shape: int, dtype: Any = torch.bfloat16) -> Any:
        return torch.randn(*shape, generator=g, dtype=dtype, device=dev)

    if w.family == "fa4":
        b, keys = w.shape
        if device == "meta-cuda":  # FlashAttention-4's CPU compile mode: fake CUDA tensors, nothing allocated
            mk = lambda s: torch.empty(b, s, HEADS, HEAD_DIM, dtype=torch.bfloat16, device="cuda")  # noqa: E731
            return {"q": mk(1), "k": mk(keys), "v": mk(keys)}
        return {"q": randn(b, 1, HEADS, HEAD_DIM), "k": randn(b, keys, HEADS, HEAD_DIM), "v": randn(b, keys, HEADS, HEAD_DIM)}
    if w.family == "gemm":
        m, n, k = w.shape
        return {"A": randn(m, k), "B": randn(k, n)}
    m, n = w.shape
    if w.family == "rmsnorm":
        return {"x": randn(m, n), "weight": randn(n, dtype=torch.float32)}
    return {"x": randn(m, n)}


def package_function(w: Workload) -> Callable[[dict[str, Any]], Any]:
    """The package's public function for the workload, returning its output tensor."""
    if w.family == "fa4":
        from flash_attn.cute import flash_attn_func

        def fa4(i: dict[str, Any]) -> Any:
            out = flash_attn_func(i["q"], i["k"], i["v"])
            return out[0] if isinstance(out, tuple) else out

        return fa4
    import quack

    if w.family == "gemm":
        from quack.gemm_interface import gemm

        return lambda i: gemm(i["A"], i["B"], tuned=False)  # its default config: no autotuning in the timed loop
    if w.family == "rmsnorm":
        return lambda i: quack.rmsnorm(i["x"], i["weight"])
    return lambda i: quack.softmax(i["x"])


#: the op's allocated output and the input it is shaped like (the package's ``torch.empty_like``)
OP_OUTPUTS = {"fa4": {"mO": "mQ"}, "rmsnorm": {"mO": "mX"}, "softmax": {"mO": "mX"}, "gemm": {"mD": "mA"}}  # square GEMMs: D is A's shape


# ------------------------------------------------------------------ capture: the compile and the call the package makes
@dataclasses.dataclass
class Captured:
    workload: Workload
    inputs: dict[str, Any]
    record: Any  # tests.clients.recorder.Recorded
    call: Any  # tests.clients.recorder.Call
    names: list[str]  # the compiled function's parameter names (its call's order)


def capture(ws: list[Workload], gpu: bool) -> tuple[list[Captured], dict[str, str]]:
    """Run each package function once under the recorder; the compile and call it made, per workload."""
    import contextlib

    from tests.clients import recorder as R
    from tests.clients.bitwise import _names

    rec = R.Recorder(gpu=gpu, snapshots=False)
    R._GPU = gpu
    problems: dict[str, str] = {}
    captured = []
    for w in ws:
        try:
            fn = package_function(w)
            if w.family != "fa4" and not gpu:
                R._quack_shims()  # the H200's SM count and CPU kernels for quack's CUDA-only ops
            fake = w.family == "fa4" and not gpu
            ctx = R._fa4_fake_calls() if fake else contextlib.nullcontext()
            with ctx:
                inputs = make_inputs(w, "meta-cuda" if fake else ("cuda" if gpu else "cpu"))
                with rec.active(w.case):
                    fn(inputs)
            found = [(r, c) for r in rec.records for c in r.calls if c.case == w.case and type(r.host).__name__ == w.host]
            if not found:
                raise RuntimeError(f"the package made no call of a {w.host} compile (recorded: {[r.label for r in rec.records]})")
            r, c = found[-1]
            captured.append(Captured(w, inputs, r, c, _names(r, c)))
        except Exception as exc:
            problems[w.label] = _first_line(exc)
            traceback.print_exc()
    if gpu:
        unproxy()
        # from here on the packages call their compiled functions themselves: check that nothing still
        # goes through the recorder (the package's timings would include it)
        still = []
        for cap in captured:
            before = sum(len(r.calls) for r in rec.records)
            package_function(cap.workload)(cap.inputs)
            if sum(len(r.calls) for r in rec.records) != before:
                still.append(cap.workload.label)
        if still:
            raise RuntimeError(
                f"{', '.join(still)}: the package still calls the recorder's proxy after unproxy(): its timings would include it"
            )
    return captured, problems


def unproxy() -> int:
    """Put each compiled function back where the package keeps it (its compile caches hold the recorder's
    proxies): in a dict or list, and in a tuple (quack's GEMM plans are NamedTuples in a plan dict), which
    is rebuilt with the function and put back in its own holders."""
    from tests.clients.recorder import _Proxy

    swapped = 0
    for proxy in [o for o in gc.get_objects() if type(o) is _Proxy]:
        swapped += _swap(proxy, object.__getattribute__(proxy, "_record").compiled, depth=3)
    return swapped


def _swap(old: Any, new: Any, depth: int) -> int:
    """Replace ``old`` by ``new`` in every dict, list and (rebuilt, to ``depth`` levels) tuple holding it."""
    swapped = 0
    for holder in gc.get_referrers(old):
        if isinstance(holder, dict):
            for key, value in list(holder.items()):
                if value is old:
                    holder[key] = new
                    swapped += 1
        elif isinstance(holder, list) and holder is not gc.garbage:
            for i, value in enumerate(holder):
                if value is old:
                    holder[i] = new
                    swapped += 1
        elif isinstance(holder, tuple) and depth > 0:
            items = [new if v is old else v for v in holder]
            make = getattr(type(holder), "_make", None)
            try:
                rebuilt = make(items) if make is not None else type(holder)(items)
            except Exception:  # noqa: BLE001 - a tuple type that cannot be rebuilt so: left as it is
                continue
            swapped += _swap(holder, rebuilt, depth - 1)
    return swapped


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


# ------------------------------------------------------------------ the paths
@dataclasses.dataclass
class Path_:
    key: str
    call: Callable[[], Any] | None  # None: n/a
    output: Callable[[Any], Any]  # the output tensor, from the call's result
    why: str = ""


def build_paths(cap: Captured, gpu: bool, kernels: dict[Any, Any] | None = None) -> list[Path_]:
    """Every path of one workload, each a no-argument call (n/a with the reason where cute_bind cannot build it).

    ``kernels`` keeps one decorated kernel (and its op) per recorded compile:
    FlashAttention-4's decode shapes share one compile, so they share one
    kernel, as they share the package's compiled function.
    """
    kernels = {} if kernels is None else kernels
    import cute_bind
    import cute_bind.torch as cbt
    from tests.clients.recorder import _real

    w, r, call = cap.workload, cap.record, cap.call
    args = tuple(call.args) if gpu else tuple(_real(call.args))
    kwargs = dict(call.kwargs) if gpu else dict(_real(call.kwargs))
    out_name = next(iter(OP_OUTPUTS[w.family]))
    out_pos = cap.names.index(out_name) if out_name in cap.names else None
    fixed_out = (lambda _result: args[out_pos]) if out_pos is not None else (lambda result: result)
    package = package_function(w)
    paths = [Path_(PACKAGE, lambda: package(cap.inputs), lambda result: result)]
    compiled = r.compiled
    paths.append(Path_(DIRECT, lambda: compiled(*args, **kwargs), fixed_out))
    try:
        handle = cute_bind.prepare(compiled, *args, **kwargs)
        paths.append(Path_(LAUNCH, lambda: handle.launch(*args, **kwargs), fixed_out))
    except Exception as exc:
        paths.append(Path_(LAUNCH, None, fixed_out, _first_line(exc)))
    spec = OP_OUTPUTS[w.family]

    def make_kernel() -> Any:
        made = cute_bind.kernel(r.host, compile_options=r.options, cache=False)
        made.compile(*r.args, **r.kwargs)  # the package's own specialization (its fake tensors)
        return made

    kernel = None
    try:
        kernel = _once(kernels, ("kernel", id(r)), make_kernel)
        k = kernel
        paths.append(Path_(KERNEL, lambda: k(*args, **kwargs), fixed_out))
    except Exception as exc:
        paths.append(Path_(KERNEL, None, fixed_out, _first_line(exc)))
    try:
        if kernel is None:
            raise RuntimeError("no kernel (see the kernel(...) column)")
        op = _once(kernels, ("op", id(r)), lambda: cbt.op(f"cbclients::{w.family}_{len(kernels)}", kernel, outputs=spec))
        takes = {p.name for p in op.plan.inputs}  # not the outputs it allocates, nor a structure it passes as fixed (aux_data)
        op_args = tuple(v for name, v in zip(cap.names, args) if name in takes)
        if kwargs:
            raise RuntimeError("the package passes keywords; the op takes positional inputs here")
        paths.append(Path_(OP, lambda: op(*op_args), lambda result: result[0] if isinstance(result, tuple) else result))
    except Exception as exc:
        paths.append(Path_(OP, None, lambda result: result, _first_line(exc)))
    return paths


def _once(memo: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """``make()`` once per key; a failure is kept and raised again for every later workload of the key."""
    if key not in memo:
        try:
            memo[key] = make()
        except Exception as exc:
            memo[key] = exc
    found = memo[key]
    if isinstance(found, Exception):
        raise found
    return found


def _bits(t: Any) -> Any:
    import torch

    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def check(paths: list[Path_], gpu: bool) -> dict[str, str]:
    """Each path's output against the package's own call (bit for bit); a failing path becomes n/a."""
    import torch

    results: dict[str, str] = {}
    ref = None
    for p in paths:
        if p.call is None:
            continue
        try:
            if p.key != PACKAGE and p.key != OP:
                out_before = p.output(None)
                out_before.fill_(math.nan)  # poisoned: a path that writes nothing cannot pass
            got = p.output(p.call())
            torch.cuda.synchronize()
            got = got.clone()
            if p.key == PACKAGE:
                again = p.output(p.call())
                torch.cuda.synchronize()
                ref = got
                results[p.key] = "bitwise (twice)" if torch.equal(_bits(again), _bits(ref)) else "NOT reproducible"
                continue
            assert ref is not None
            same = got.shape == ref.shape and got.dtype == ref.dtype and torch.equal(_bits(got), _bits(ref))
            results[p.key] = "bitwise" if same else "DIFFERS"
            if not same:
                p.why = "output differs from the package's own call"
                p.call = None
        except Exception as exc:
            p.why, p.call = _first_line(exc), None
            results[p.key] = "error"
    return results


def time_paths(paths: list[Path_], repeats: int, iters: int) -> dict[str, Any]:
    import torch

    from cute_bind.bench.timing import fixed_loop, time_rows

    live = [p for p in paths if p.call is not None]
    rows = time_rows([(p.key, fixed_loop(p.call, ()), "") for p in live], repeats, iters, torch.cuda.current_stream())
    return {p.key: r for p, r in zip(live, rows)}


# ------------------------------------------------------------------ output
def table(results: list[dict[str, Any]]) -> str:
    head = ["workload", *COLUMNS.values(), "stream us/launch (direct)", "package / op", "bitwise"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        med = res["median_us"]
        cells = [res["label"]]
        for key in COLUMNS:
            cells.append(f"{med[key]:.1f}" if key in med else "n/a")
        ev = res.get("direct_event_us")
        cells.append(f"{ev:.1f}" if ev is not None else "")
        cells.append(f"{med[PACKAGE] / med[OP]:.1f}x" if PACKAGE in med and OP in med else "")
        cells.append(
            ", ".join(f"{k}: {v}" for k, v in res["checks"].items() if k != PACKAGE) + (f"; package: {res['checks'].get(PACKAGE, '')}")
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(res: dict[str, Any]) -> str:
    """Issue 23's targets for one workload: each PASS, FAIL or n/a, with the figures."""
    med = res["median_us"]

    def verdict(ok: bool | None, text: str) -> str:
        return f"{'n/a' if ok is None else ('PASS' if ok else 'FAIL')} {text}"

    def at_most(a: str, b: str) -> str:
        if a not in med or b not in med:
            return verdict(None, f"{COLUMNS[a]} <= {COLUMNS[b]}")
        return verdict(med[a] <= med[b], f"{COLUMNS[a]} <= {COLUMNS[b]} ({med[a]:.2f} vs {med[b]:.2f})")

    out = [at_most(LAUNCH, DIRECT), at_most(KERNEL, DIRECT)]
    if res["label"].startswith("FA4"):
        if OP in med and PACKAGE in med:
            out.append(verdict(med[OP] <= 12.0, f"op <= 12 us ({med[OP]:.2f})"))
            out.append(verdict(med[PACKAGE] / med[OP] >= 4.5, f"package / op >= 4.5 ({med[PACKAGE] / med[OP]:.1f}x)"))
        else:
            out.append(verdict(None, "op <= 12 us, package / op >= 4.5"))
    return f"targets, {res['label']}: " + "; ".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11, help="interleaved rounds (medians over them)")
    parser.add_argument("--iters", type=int, default=300, help="calls per path per round")
    parser.add_argument("--only", default="", help="comma-separated families: fa4, rmsnorm, softmax")
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--check-only", "--dry-run", dest="check_only", action="store_true",
                        help="no timing: imports, arguments, and with the clients installed every path built (CPU)")  # fmt: skip
    ns = parser.parse_args(argv)
    only = {f for f in ns.only.split(",") if f} or None
    families = {w.family for w in workloads()}
    if only and only - families:
        parser.error(f"unknown workload families: {sorted(only - families)} (known: {sorted(families)})")
    if ns.repeats < 1 or ns.iters < 1:
        parser.error("--repeats and --iters must be positive")

    from tests.clients.recorder import ENV

    for key, value in ENV.items():  # before the DSL is imported (it reads its environment once)
        os.environ.setdefault(key, value)
    import cute_bind
    from cute_bind.bench.timing import machine

    ws = workloads(only)
    missing = []
    for dist in CLIENTS:
        try:
            metadata.version(dist)
        except metadata.PackageNotFoundError:
            missing.append(dist)
    print(f"machine: {machine()}")
    print(f"cute_bind {cute_bind.__version__}; " + ", ".join(f"{d} {metadata.version(d)}" for d in CLIENTS if d not in missing))
    if missing:
        print(f"the client packages are not installed ({', '.join(missing)}): see tests/clients/requirements.txt")
        if ns.check_only:
            print(f"check-only: {len(ws)} workloads: " + "; ".join(w.label for w in ws))
            print("check-only: ok (structure only)")
            return 0
        return 2
    import torch  # the clients require it: imported only where they are installed (the README's install has neither)

    gpu = torch.cuda.is_available() and not ns.check_only
    if not gpu and not ns.check_only:
        print("no CUDA device: this benchmark runs on a GPU (--check-only builds every path on the CPU)")
        return 2

    if ns.check_only:
        # one shape per family: each path built on the CPU (compiles for sm_90a, nothing launched)
        small = list({w.family: w for w in reversed(ws)}.values())[::-1]  # the first (smallest) of each family
        caps, problems = capture(small, gpu=False)
        for w, why in problems.items():
            print(f"check-only: FAILED to capture {w}: {why}")
        kernels: dict[Any, Any] = {}
        for cap in caps:
            paths = build_paths(cap, gpu=False, kernels=kernels)
            built = ", ".join(p.key if p.call is not None else f"{p.key} n/a: {p.why}" for p in paths)
            print(f"check-only: {cap.workload.label}: compile {cap.record.label} ({len(cap.names)} call arguments); {built}")
        ok = not problems and len(caps) == len(small)
        print(f"check-only: {'ok' if ok else 'FAILED'} ({len(caps)} of {len(small)} workload families captured)")
        return 0 if ok else 1

    caps, problems = capture(ws, gpu=True)
    kernels: dict[Any, Any] = {}
    results: list[dict[str, Any]] = []
    notes: list[str] = [f"{w}: not captured: {why}" for w, why in problems.items()]
    for cap in caps:
        paths = build_paths(cap, gpu=True, kernels=kernels)
        checks = check(paths, gpu=True)
        rows = time_paths(paths, ns.repeats, ns.iters)
        res = {
            "label": cap.workload.label,
            "compile": cap.record.label,
            "median_us": {k: r.median_us for k, r in rows.items()},
            "min_us": {k: r.min_us for k, r in rows.items()},
            "event_us": {k: r.event_us for k, r in rows.items()},
            "direct_event_us": rows[DIRECT].event_us if DIRECT in rows else None,
            "checks": checks,
            "na": {p.key: p.why for p in paths if p.call is None},
        }
        results.append(res)
        for key, why in res["na"].items():
            notes.append(f"{cap.workload.label}: {COLUMNS[key]}: n/a: {why}")
        print(f"# {cap.workload.label}: " + ", ".join(f"{k} {v:.2f} us" for k, v in res["median_us"].items()), file=sys.stderr, flush=True)
        del paths, rows
        cap.inputs.clear()
        cap.call.args = ()
        gc.collect()
        torch.cuda.empty_cache()

    print(f"{torch.cuda.get_device_name()}; {ns.repeats} interleaved rounds x {ns.iters} calls per path; host us per call, medians")
    print()
    print(table(results))
    print()
    for note in dict.fromkeys(notes):
        print(f"- {note}")
    print()
    for res in results:
        print(targets(res))
    fa4 = [r["median_us"] for r in results if r["label"].startswith("FA4") and PACKAGE in r["median_us"]]
    if fa4:
        print(f"FA4 decode, package's function: median over shapes {statistics.median(m[PACKAGE] for m in fa4):.1f} us")
    if ns.json:
        Path(ns.json).write_text(
            json.dumps(
                {
                    "machine": machine(),
                    "device": torch.cuda.get_device_name(),
                    "repeats": ns.repeats,
                    "iters": ns.iters,
                    "results": results,
                    "notes": notes,
                },
                indent=1,
            )
        )
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
