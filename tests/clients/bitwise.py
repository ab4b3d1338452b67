"""On a CUDA GPU: every compile the clients make, through cute_bind's doors, bit for bit against the client's call.

Run as ``python -m tests.clients.bitwise --json OUT [--markdown] [cases...]``
from the repository root, on a machine with a CUDA GPU and the client
packages (``tests/clients/requirements.txt``; on the device machine
``bash benchmarks/device_job.sh clients`` installs them). It drives each case
of :mod:`tests.clients.recorder` on the GPU (``record(..., gpu=True)``: the
client's own Python entry on CUDA tensors, every compiled function it calls
really called), which keeps a copy of each call's tensors from just before
and just after the client's own call. Then, per recorded compile and per call
the client made, each door runs on fresh copies of the "before" tensors (same
bytes, strides and storage offsets) and every tensor argument afterwards must
equal the client's "after" bit for bit (NaNs included: the bytes are compared):

- ``prepare``: ``h = cute_bind.prepare(compiled, *A)``, then
  ``h.launch(*B)`` and ``h.launch(*C)`` (B and C: two more fresh copies; a
  handle that kept A's addresses leaves B and C unchanged);
- ``kernel``: ``k = cute_bind.kernel(host, compile_options=the client's)``,
  ``k.compile(*the client's compile arguments)``, then ``k(*A)`` and ``k(*B)``;
- ``kernel-bind``: the same kernel, ``h = k.bind(*A)`` then ``h.launch(*B)``;
- ``kernel-stream``: the same kernel called with an explicit stream (torch's current one; the
  client's call leaves it out where it compiled the TVM-FFI environment stream): ``k(*A, stream=s)``,
  then ``h = k.bind(*B, stream=s)`` and ``h.launch(*C, stream=s)`` (issue 40: a compile from the
  client's fakes serves them, its sibling compiled from the same fakes for the stream's form);
- ``hook`` (issue 41): with ``cute_bind.cache.installed()``, the client's own ``cute.compile`` call made
  twice as the client made it (same callable, options form, fakes): the first compiles and stores
  the entry, the second is served from the disk cache (a ``cute_bind.cache.CachedFunction``), which is
  then called exactly as the client called its compiled function, on ``A`` and ``B``. A compile the key
  cannot spell is compiled each time (CB608): the door says "not served" and still compares.

A compile whose client call is not deterministic itself (the client's call
made again on a fresh copy differs from its first result: FlashAttention-4's
backward accumulates dQ with atomics) has the differing tensors compared with
a tolerance instead, and the result says so.

The JSON holds, per compile label (the recorder's), each door's outcome:
``{"ok", "code", "step", "error"}``; ``code`` is the catalog code of a
cute_bind refusal, ``"BITWISE"`` for a result that differs, ``None`` for
another exception.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

from tests.clients.recorder import CASES, ENV, Call, Recorded, record, snapshot

DOORS = ("prepare", "kernel", "kernel-bind", "kernel-stream", "hook")
#: tolerance for tensors the client's own call does not reproduce bit for bit
RTOL = ATOL = 1e-3


class Mismatch(AssertionError):
    """A door's result differs from the client's own call."""


def _tensors(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every torch tensor in ``value`` (args, kwargs, containers) with where it sits."""
    import torch

    if isinstance(value, torch.Tensor):
        return [(path, value)]
    out: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _tensors(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (tuple, list)):
        fields = getattr(type(value), "_fields", None)
        for i, v in enumerate(value):
            name = fields[i] if fields else f"[{i}]"
            out += _tensors(v, f"{path}.{name}" if fields else f"{path}{name}")
    return out


def _bits(t: Any) -> Any:
    """The tensor's elements as integers of the same width (NaN payloads and -0.0 compared exactly)."""
    import torch

    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.view(ints[t.element_size()])


def _names(record: Recorded, call: Call) -> list[str]:
    wrapper = getattr(record.compiled, "_kwargs_wrapper", None)
    names: list[str] = []
    if wrapper is not None:
        try:
            names = list(inspect.signature(wrapper).parameters)
        except (TypeError, ValueError):
            names = []
    return names


def _label(path: str, names: list[str]) -> str:
    # "[0][3]" (args, position 3) -> the parameter's name where the compiled function says it
    if path.startswith("[0][") and names:
        pos = path[4:].split("]", 1)
        if pos[0].isdigit() and int(pos[0]) < len(names):
            return names[int(pos[0])] + pos[1]
    return path


def differing(got: Any, want: Any, names: list[str], loose: frozenset[str] = frozenset()) -> list[str]:
    """Which tensors of ``got`` (a call's (args, kwargs) after a launch) differ from ``want``; loose ones by tolerance."""
    import torch

    a, b = _tensors(got), _tensors(want)
    if [p for p, _ in a] != [p for p, _ in b]:
        return [f"the arguments' structure differs: {[p for p, _ in a]} vs {[p for p, _ in b]}"]
    out = []
    for (path, x), (_, y) in zip(a, b):
        if path in loose:
            if x.is_floating_point() and not torch.allclose(x.float(), y.float(), rtol=RTOL, atol=ATOL, equal_nan=True):
                worst = (x.float() - y.float()).abs().nan_to_num(float("inf")).max().item()
                out.append(f"{_label(path, names)} (nondeterministic in the client: compared within {RTOL}; max |diff| {worst:g})")
            continue
        bx, by = _bits(x), _bits(y)
        if not torch.equal(bx, by):
            n = int((bx != by).sum().item())
            out.append(f"{_label(path, names)} {tuple(x.shape)} {str(x.dtype).replace('torch.', '')}: {n} of {x.numel()} elements differ")
    return out


def _stream_parameter(host: Any) -> tuple[int, str] | None:
    """The position and name of the host function's stream parameter (a ``cuda.CUstream`` annotation,
    else a parameter named ``stream``), or ``None``."""
    try:
        params = [p for p in inspect.signature(host).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(params):
        if "CUstream" in str(p.annotation) or p.name == "stream":
            return i, p.name
    return None


def _with_stream(host: Any, given: tuple[tuple[Any, ...], dict[str, Any]]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call with torch's current stream given explicitly for the host's stream parameter."""
    import torch

    found = _stream_parameter(host)
    if found is None:
        raise LookupError("the host function has no stream parameter")
    position, name = found
    args, kwargs = given
    stream = torch.cuda.current_stream().cuda_stream if torch.cuda.is_available() else 0  # host-only twins: the null stream
    if position < len(args):
        return (*args[:position], stream, *args[position + 1 :]), kwargs
    return args, {**kwargs, name: stream}


def _fresh(call: Call) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A new copy of the call's arguments as they were just before the client's call."""
    args, kwargs = snapshot(call.before)
    return tuple(args), dict(kwargs)


def _outcome(exc: BaseException | None, step: str) -> dict[str, Any]:
    if exc is None:
        return {"ok": True, "code": None, "step": step, "error": ""}
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    code = "BITWISE" if isinstance(exc, Mismatch) else getattr(exc, "code", None)
    return {"ok": False, "code": code, "step": step, "error": f"{type(exc).__name__}: {first}" if not isinstance(exc, Mismatch) else text}


def _check(step: str, got: tuple[tuple[Any, ...], dict[str, Any]], call: Call, names: list[str], loose: frozenset[str]) -> None:
    import torch

    if torch.cuda.is_available():  # (tests/clients/test_bitwise.py runs this with host-only functions)
        torch.cuda.synchronize()
    bad = differing(got, call.after, names, loose)
    if bad:
        raise Mismatch(f"{step}: " + "; ".join(bad))


def _door(record: Recorded, door: str, loose: dict[int, frozenset[str]]) -> dict[str, Any]:
    """One door over every call the client made to this compile: the outcome of the first failure, else ok."""
    import cute_bind

    if door == "hook":
        return _hook_door(record, loose)
    if door != "prepare" and record.host is None:
        return {"ok": False, "code": "n/a", "step": "", "error": "n/a (a loaded function has no host function)"}
    if door == "kernel-stream" and _stream_parameter(record.host) is None:
        return {"ok": False, "code": "n/a", "step": "", "error": "n/a (the host function takes no stream)"}
    step = "kernel()"
    try:
        k = None
        if door != "prepare":
            k = cute_bind.kernel(record.host, compile_options=record.options)
            step = ".compile(the client's compile arguments)"
            k.compile(*record.args, **record.kwargs)
        for i, call in enumerate(record.calls):
            names = _names(record, call)
            where = f"call {i + 1} of {len(record.calls)} (case {call.case})"
            a, b, c = _fresh(call), _fresh(call), _fresh(call)
            if door == "prepare":
                step = f"prepare ({where})"
                h = cute_bind.prepare(record.compiled, *a[0], **a[1])
                step = f"handle.launch ({where})"
                h.launch(*b[0], **b[1])
                _check(step, b, call, names, loose[i])
                step = f"handle.launch again, other tensors ({where})"
                h.launch(*c[0], **c[1])
                _check(step, c, call, names, loose[i])
            elif door == "kernel":
                assert k is not None
                step = f"kernel(...) ({where})"
                k(*a[0], **a[1])
                _check(step, a, call, names, loose[i])
                step = f"kernel(...) again, other tensors ({where})"
                k(*b[0], **b[1])
                _check(step, b, call, names, loose[i])
            elif door == "kernel-bind":
                assert k is not None
                step = f"kernel.bind ({where})"
                h = k.bind(*a[0], **a[1])
                step = f"bound handle.launch, other tensors ({where})"
                h.launch(*b[0], **b[1])
                _check(step, b, call, names, loose[i])
            else:
                assert k is not None
                step = f"kernel(..., stream=s) ({where})"
                sa, sb, sc = _with_stream(record.host, a), _with_stream(record.host, b), _with_stream(record.host, c)
                k(*sa[0], **sa[1])
                _check(step, a, call, names, loose[i])
                step = f"kernel.bind(..., stream=s) ({where})"
                h = k.bind(*sb[0], **sb[1])
                step = f"bound handle.launch(..., stream=s), other tensors ({where})"
                h.launch(*sc[0], **sc[1])
                _check(step, c, call, names, loose[i])
    except Exception as exc:
        if not isinstance(exc, Mismatch) and getattr(exc, "code", None) is None:
            traceback.print_exc()
        return _outcome(exc, step)
    return _outcome(None, step)


def _hook_door(record: Recorded, loose: dict[int, frozenset[str]]) -> dict[str, Any]:
    """The client's ``cute.compile`` made again under the hook, twice; the second (a disk hit) called as the client calls."""
    import cutlass.cute as cute

    import cute_bind

    if record.host is None:
        return {"ok": False, "code": "n/a", "step": "", "error": "n/a (a loaded function is not compiled)"}
    step = "cute.compile under the hook (the miss that stores)"
    served = False
    try:
        with cute_bind.cache.installed():
            options = record.options
            if options is None or isinstance(options, str):
                compile_ = cute.compile
                kwargs = dict(record.kwargs, **({} if options is None else {"options": options}))
            else:  # the cute.compile[...] form
                compile_, kwargs = cute.compile[options], dict(record.kwargs)
            # each compile of its own copy of the object as the client had it before its compile (as a
            # fresh process compiles it once): tracing sets attributes, and the traced object is another key
            miss, hit = _hook_hosts(record)
            t0 = time.perf_counter()
            compile_(miss, *record.args, **kwargs)
            step = "cute.compile under the hook again (the hit)"
            t1 = time.perf_counter()
            compiled = compile_(hit, *record.args, **kwargs)
            t2 = time.perf_counter()
        served = isinstance(compiled, cute_bind.cache.CachedFunction)
        for i, call in enumerate(record.calls):
            names = _names(record, call)
            where = f"call {i + 1} of {len(record.calls)} (case {call.case})"
            for again, copy in enumerate((_fresh(call), _fresh(call))):
                step = f"the {'served' if served else 'compiled'} function{' again' if again else ''} ({where})"
                compiled(*copy[0], **copy[1])
                _check(step, copy, call, names, loose[i])
    except Exception as exc:
        if not isinstance(exc, Mismatch) and getattr(exc, "code", None) is None:
            traceback.print_exc()
        return _outcome(exc, step)
    out = _outcome(None, step)
    # the miss (compile and store) and the hit (key and load) in seconds: the JSON's cold/warm per compile
    out.update(served=served, miss_s=round(t1 - t0, 4), hit_s=round(t2 - t1, 4))
    return out


def _hook_hosts(record: Recorded) -> tuple[Any, Any]:
    """The hook door's two hosts: two copies of the recorded object's state before the client's compile
    (the recorder's ``pristine``), else the client's own host twice."""
    import copy

    if record.pristine is None:
        return record.host, record.host
    try:
        return copy.deepcopy(record.pristine), copy.deepcopy(record.pristine)
    except Exception:  # noqa: BLE001 - copied once already; a second copy that fails: the client's own
        return record.host, record.host


def _nondeterministic(record: Recorded) -> dict[int, frozenset[str]]:
    """Per call: the tensors the client's own call, made again on a fresh copy, does not reproduce bit for bit."""
    import torch

    out: dict[int, frozenset[str]] = {}
    for i, call in enumerate(record.calls):
        again = _fresh(call)
        record.compiled(*again[0], **again[1])
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        a, b = _tensors(again), _tensors(call.after)
        out[i] = frozenset(p for (p, x), (_, y) in zip(a, b) if not torch.equal(_bits(x), _bits(y)))
    return out


def run(cases: list[str], tmp: str, doors: tuple[str, ...] = DOORS, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Record on the GPU, then every door of every compile; the JSON-ready result."""
    import torch

    started = time.perf_counter()
    recorder, problems = record(cases, tmp, gpu=True)
    rows = []
    for r in recorder.records:
        row: dict[str, Any] = {"label": r.label, "case": r.case, "options": r.options, "calls": [c.case for c in r.calls], "doors": {}}
        try:
            loose = _nondeterministic(r)
        except Exception as exc:  # the client's own call, made again, fails: nothing to compare with
            row["client_again"] = _outcome(exc, "the client's call again")
            loose = {i: frozenset() for i in range(len(r.calls))}
        row["nondeterministic"] = sorted({_label(p, _names(r, r.calls[i])) for i, ps in loose.items() for p in ps})
        for door in doors:
            t0 = time.perf_counter()
            row["doors"][door] = _door(r, door, loose)
            row["doors"][door]["seconds"] = round(time.perf_counter() - t0, 2)
            o = row["doors"][door]
            progress(f"{r.label} {door}: {'ok' if o['ok'] else (o['code'] or '') + ' ' + o['error'][:200]}")
        rows.append(row)
    versions = {}
    from importlib.metadata import version

    for dist in ("quack-kernels", "flash-attn-4", "nvidia-cutlass-dsl", "apache-tvm-ffi", "torch"):
        try:
            versions[dist] = version(dist)
        except Exception:
            versions[dist] = None
    return {
        "device": torch.cuda.get_device_name(),
        "env": {k: os.environ.get(k) for k in ENV},
        "versions": versions,
        "seconds": round(time.perf_counter() - started, 1),
        "driver_failures": problems,
        "records": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    """The table: one row per compile, one column per door (ok = bit for bit equal to the client's call)."""

    def cell(o: dict[str, Any] | None) -> str:
        if o is None:
            return ""
        if o["ok"]:
            served = {True: "served", False: "not served: compiled"}.get(o.get("served"))
            timed = f"miss {o['miss_s']:.3f} s, hit {o['hit_s']:.3f} s" if "hit_s" in o else None
            detail = "; ".join(x for x in (served, timed) if x)
            return "ok, bitwise" + (f" ({detail})" if detail else "")
        return f"{o['code'] or ''} {o['error']}".strip().replace("|", "\\|").replace("\n", " ")[:300]

    lines = [
        f"| client kernel ({result['device']}) | calls | `prepare(compiled, *args)` | `kernel(host)(*args)` | `kernel(host).bind(*args).launch` "
        "| `kernel(host)(*args, stream=s)`, `.bind(*args, stream=s)` | `cute.compile` under the hook, a disk hit | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["records"]:
        d = r["doors"]
        note = ("client nondeterministic in: " + ", ".join(r["nondeterministic"])) if r["nondeterministic"] else ""
        lines.append(
            f"| {r['label']} | {len(r['calls'])} | {cell(d.get('prepare'))} | {cell(d.get('kernel'))} | {cell(d.get('kernel-bind'))} "
            f"| {cell(d.get('kernel-stream'))} | {cell(d.get('hook'))} | {note} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the result here (default: stdout)")
    parser.add_argument("--markdown", action="store_true", help="also print the table")
    parser.add_argument("--doors", default=",".join(DOORS), help=f"comma-separated, of {', '.join(DOORS)}")
    parser.add_argument("cases", nargs="*", help=f"cases to run (default: all): {', '.join(CASES)}")
    ns = parser.parse_args(argv)
    for key, value in ENV.items():
        os.environ.setdefault(key, value)
    unknown = [c for c in ns.cases if c not in CASES]
    doors = tuple(d for d in ns.doors.split(",") if d)
    if unknown or any(d not in DOORS for d in doors):
        parser.error(f"unknown case(s) or door(s): {unknown} {doors}")
    import torch

    if not torch.cuda.is_available():
        print("bitwise: torch sees no CUDA device; this check runs on a GPU", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cute_bind_clients_gpu_") as tmp:
        result = run(ns.cases or list(CASES), tmp, doors, progress=lambda s: print(s, file=sys.stderr, flush=True))
    text = json.dumps(result, indent=1, default=str)
    if ns.json:
        with open(ns.json, "w") as fh:
            fh.write(text)
    else:
        print(text)
    if ns.markdown:
        print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
