"""A cute_bind.torch op's doors agree: its eager call, the same call taking the dispatcher (an input that
requires grad), ``torch.ops.<ns>.<name>`` and ``torch.compile`` bump the same versions, accept and refuse
the same values with the same codes, and refuse the same written tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from tests.kernels import host  # noqa: E402
from tests.torch.conftest import dispatcher_calls  # noqa: E402


@pytest.fixture(scope="module")
def bump_ops():
    """The same kernel as an op with its Python call (no stream) and with its C call (a stream)."""
    return {
        "python call": cbt.op("cbtest::door_bump_py", host.tscale, mutates_args=("out",)),
        "C call": cbt.op("cbtest::door_bump_c", host.tscale_stream_default, mutates_args=("out",)),
    }


def _ops_namespace(op):
    ns, name = op.name.split("::")
    return getattr(getattr(torch.ops, ns), name)


#: (door, how it calls the op, goes through the dispatcher)
BUMP_DOORS = [
    ("eager", lambda op, y, x: op(y, x, 3.0), False),
    ("torch.ops packet", lambda op, y, x: _ops_namespace(op)(y, x, 3.0), True),
    ("torch.ops overload", lambda op, y, x: op.overload(y, x, 3.0), True),
    ("an input requires grad", lambda op, y, x: op(y, x.requires_grad_(), 3.0), True),
    ("torch.ops under enable_grad, input requires grad", lambda op, y, x: _ops_namespace(op)(y, x.requires_grad_(), 3.0), True),
]


@pytest.mark.parametrize("which", ["python call", "C call"])
@pytest.mark.parametrize(("door", "call", "dispatched"), BUMP_DOORS, ids=[d[0] for d in BUMP_DOORS])
def test_every_door_bumps_the_written_tensors_version_once(bump_ops, which, door, call, dispatched):
    """A tensor autograd saved and the op then overwrote: backward() must refuse (torch's own in-place rule),
    never give the gradient of the new values (3 instead of 1). The dispatcher's implementation bumps
    the version itself (the op has no ADInplaceOrView kernel): without it every dispatched row here fails."""
    op = bump_ops[which]
    w = torch.ones(4, requires_grad=True)
    y = torch.ones(4)
    z = (w * y).sum()  # saves y for backward
    before = y._version
    with torch.enable_grad():
        _, calls = dispatcher_calls(op.name, call, op, y, torch.ones(4))
    assert (calls >= 1) == dispatched, door
    assert torch.equal(y, torch.full((4,), 3.0))
    assert y._version == before + 1, (door, y._version - before)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    assert w.grad is None  # no gradient of 3 came back


def test_the_compiled_op_bumps_the_written_tensors_version():
    """torch.compile's graph writes the caller's tensor back (functionalization): autograd still sees it."""
    op = cbt.op("cbtest::door_bump_compiled", host.tscale_stream_default, mutates_args=("out",))
    torch._dynamo.reset()
    compiled = torch.compile(lambda y, x: op(y, x, 3.0), fullgraph=True, backend="aot_eager")
    w = torch.ones(4, requires_grad=True)
    y = torch.ones(4)
    z = (w * y).sum()
    before = y._version
    compiled(y, torch.ones(4))
    assert torch.equal(y, torch.full((4,), 3.0)) and y._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    torch._dynamo.reset()


# ------------------------------------------------------------------ values: every door takes what the eager call takes
@cute.jit
def numbers(
    out: cute.Tensor,
    inp: cute.Tensor,
    b: cutlass.Boolean,
    i8: cutlass.Int8,
    i32: cutlass.Int32,
    u64: cutlass.Uint64,
    f32: cutlass.Float32,
    f16: cutlass.Float16,
    pb: bool,
    pi: int,
    pf: float,
):
    """out[k] = the k-th number as Float64 (plus inp[0], 0 in the tests): what the kernel received."""
    out[0] = cutlass.Float64(1.0) if b else cutlass.Float64(0.0)
    out[1] = cutlass.Float64(i8)
    out[2] = cutlass.Float64(i32)
    out[3] = cutlass.Float64(u64)
    out[4] = cutlass.Float64(f32)
    out[5] = cutlass.Float64(f16)
    out[6] = cutlass.Float64(1.0) if pb else cutlass.Float64(0.0)
    out[7] = cutlass.Float64(pi)
    out[8] = cutlass.Float64(pf) + inp[0]


_BASE = {"b": True, "i8": 1, "i32": 3, "u64": 4, "f32": 1.5, "f16": 0.5, "pb": False, "pi": 7, "pf": 1.25}

#: values of every kind a caller may pass for a number: plain numbers in and out of range, the wrong kind,
#: NumPy scalars, 0-d and one-element tensors, nonsense
VALUES = [
    ("2", lambda: 2),
    ("2.5", lambda: 2.5),
    ("2.0", lambda: 2.0),
    ("True", lambda: True),
    ("-1", lambda: -1),
    ("300", lambda: 300),
    ("2**31", lambda: 2**31),
    ("2**64-1", lambda: 2**64 - 1),
    ("2**64", lambda: 2**64),
    ("1+2j", lambda: 1 + 2j),
    ("nan", lambda: math.nan),
    ("tensor(2.5)", lambda: torch.tensor(2.5)),
    ("tensor(2)", lambda: torch.tensor(2)),
    ("tensor(2.0)", lambda: torch.tensor(2.0)),
    ("tensor([2])", lambda: torch.tensor([2])),
    ("tensor(True)", lambda: torch.tensor(True)),
    ("np.int32(2)", lambda: np.int32(2)),
    ("np.float32(2.5)", lambda: np.float32(2.5)),
    ("'x'", lambda: "x"),
    ("None", lambda: None),
]


@pytest.fixture(scope="module")
def numbers_op():
    return cbt.op("cbtest::door_numbers", numbers, mutates_args=("out",))


def _passthrough_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passthrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return Passthrough()


def _through(op, door, out, inp, values):
    if door == "eager":
        return op(out, inp, **values)
    if door == "an input requires grad":
        return op(out, inp.requires_grad_(), **values)
    if door == "a dispatch mode":
        with _passthrough_mode():
            return op(out, inp, **values)
    if door == "torch.ops":
        ns, name = op.name.split("::")
        return getattr(getattr(torch.ops, ns), name)(out, inp, *values.values())
    raise AssertionError(door)


def _outcome(op, door, param, make):
    """("ok", what the kernel received), ("code", CB code), or ("torch", exception type) for torch's own refusal."""
    out = torch.zeros(9, dtype=torch.float64)
    values = dict(_BASE, **{param: make()})
    try:
        with torch.enable_grad():
            _through(op, door, out, torch.zeros(1, dtype=torch.float64), values)
    except cute_bind.CuteBindError as err:
        return ("code", err.code)
    except (RuntimeError, OverflowError, TypeError) as err:
        return ("torch", type(err).__name__)
    return ("ok", tuple(map(repr, out.tolist())))  # NaN equals NaN


def _plain_number(value):
    """What torch's ``Scalar`` parser hands over unconverted: a Python number of at most 64 bits."""
    if type(value) in (bool, float, complex):
        return True
    return type(value) is int and -(2**63) <= value < 2**64


@pytest.mark.parametrize("param", list(_BASE))
@pytest.mark.parametrize(("label", "make"), VALUES, ids=[v[0] for v in VALUES])
def test_every_door_takes_and_refuses_what_the_eager_call_does(numbers_op, param, label, make):
    """Before the number slots were ``Scalar``, torch's parser converted silently (a tensor 2.5 for an Int32
    became 2, 2 or None for a Boolean became True/False) on every door but the eager one."""
    eager = _outcome(numbers_op, "eager", param, make)
    assert eager[0] in ("ok", "code"), (param, label, eager)  # the eager call's own verdict: a value or a catalog code
    # the op's call taking torch's dispatcher: the same verdict, the same code, the same values received
    for door in ("an input requires grad", "a dispatch mode"):
        assert _outcome(numbers_op, door, param, make) == eager, (door, param, label)
    # torch.ops: a plain number reaches the implementation unconverted (the same verdict and code); what torch's
    # Scalar parser refuses itself is refused there with torch's own error, never taken as another value
    ops = _outcome(numbers_op, "torch.ops", param, make)
    if _plain_number(make()):
        assert ops == eager, ("torch.ops", param, label)
    else:
        assert ops[0] == "torch", ("torch.ops", param, label, ops, eager)


#: (param, value, the eager call's verdict): the issue's rows through torch.compile (aot_eager: dynamo, AOTAutograd)
COMPILED = [
    ("i32", 2.5, "CB204"),
    ("i32", 2**31, "CB205"),
    ("i8", 300, "CB205"),
    ("b", 2, "CB205"),
    ("pb", 2, "CB205"),
    ("u64", -1, "CB205"),
    ("f32", 1 + 2j, "CB204"),
    ("i32", 5, None),
]


@pytest.mark.parametrize(("param", "value", "code"), COMPILED, ids=[f"{c[0]}={c[1]!r}" for c in COMPILED])
def test_the_compiled_op_refuses_what_the_eager_call_refuses(numbers_op, param, value, code):
    torch._dynamo.reset()
    values = dict(_BASE, **{param: value})
    assert _outcome(numbers_op, "eager", param, lambda: value)[0] == ("code" if code else "ok")
    compiled = torch.compile(lambda out, inp: numbers_op(out, inp, **values), fullgraph=True, backend="aot_eager")
    out = torch.zeros(9, dtype=torch.float64)
    try:
        if code is None:
            compiled(out, torch.zeros(1, dtype=torch.float64))
            ref = torch.zeros(9, dtype=torch.float64)
            numbers_op(ref, torch.zeros(1, dtype=torch.float64), **values)
            assert torch.equal(out, ref)
        else:
            with pytest.raises(cute_bind.CuteBindError) as info:
                compiled(out, torch.zeros(1, dtype=torch.float64))
            assert info.value.code == code and info.value.parameter == param
    finally:
        torch._dynamo.reset()


def test_the_compiled_op_refuses_a_tensor_for_a_number(numbers_op):
    """A tensor for a number inside a compiled function: refused at the trace (torch's Scalar), not converted."""
    torch._dynamo.reset()
    values = dict(_BASE, i32=torch.tensor(2.5))
    compiled = torch.compile(lambda out, inp: numbers_op(out, inp, **values), fullgraph=True, backend="aot_eager")
    out = torch.zeros(9, dtype=torch.float64)
    with pytest.raises(Exception) as info:
        compiled(out, torch.zeros(1, dtype=torch.float64))
    assert "number" in str(info.value) and out[2].item() == 0.0
    torch._dynamo.reset()


# ------------------------------------------------------------------ written tensors: torch's in-place rules on every door
@pytest.fixture(scope="module")
def write_ops():
    return {
        "C call": cbt.op("cbtest::door_write_c", host.tscale_stream_default, mutates_args=("out",)),
        "python call": cbt.op("cbtest::door_write_py", host.tscale, mutates_args=("out",)),
        "two written": cbt.op("cbtest::door_write_two", host.tsplit, mutates_args=("lo", "hi")),
    }


def _buf(n=12):
    return torch.arange(n, dtype=torch.float32)


#: (case, op, makes (the tensors the call takes, the buffer(s) to compare), parameter refused or None)
WRITES = [
    ("out expanded (stride 0)", "scale", lambda b: ((torch.zeros(1).expand(4), b[:4]), ()), "out"),
    ("out expanded in 2-D", "scale", lambda b: ((b[:3].unsqueeze(1).expand(3, 2).t(), b[4:10].view(2, 3)), (b,)), "out"),
    ("out overlaps part of the input", "scale", lambda b: ((b[1:5], b[0:4]), (b,)), "out"),
    ("the input overlaps part of out", "scale", lambda b: ((b[0:6], b[3:9]), (b,)), "out"),
    ("two written tensors the same", "two", lambda b: ((b[:4], b[:4], b[4:8]), (b,)), "lo"),
    ("two written tensors overlapping", "two", lambda b: ((b[0:4], b[2:6], b[6:10]), (b,)), "lo"),
    ("a written tensor overlaps the input", "two", lambda b: ((b[0:4], b[4:8], b[6:10]), (b,)), "hi"),
    # allowed, as torch allows them
    ("out is the input (in place)", "scale", lambda b: ((b[:4], b[:4]), (b,)), None),
    ("disjoint slices of one buffer", "scale", lambda b: ((b[:4], b[4:8]), (b,)), None),
    ("interleaved views (too hard to tell)", "scale", lambda b: ((b[0:8:2], b[1:8:2]), (b,)), None),
    ("an expanded input", "scale", lambda b: ((b[:4], torch.ones(1).expand(4)), (b,)), None),
    ("empty tensors", "scale", lambda b: ((b[:0], b[:0]), (b,)), None),
    ("two written, disjoint", "two", lambda b: ((b[0:4], b[4:8], b[8:12]), (b,)), None),
]


def _write_door(ops, which, door, tensors):
    op = ops["two written"] if which == "two" else ops[door[1]]
    args = (*tensors, 2.0) if which == "scale" else tensors
    kwargs = {} if which == "scale" else {"cut": 5.0}
    kind = door[0]
    if kind == "eager":
        return op(*args, **kwargs)
    if kind == "torch.ops":
        return op.overload(*args, **kwargs)
    if kind == "a dispatch mode":
        with _passthrough_mode():
            return op(*args, **kwargs)
    raise AssertionError(kind)


WRITE_DOORS = [
    ("eager", "C call"),
    ("eager", "python call"),
    ("torch.ops", "C call"),
    ("a dispatch mode", "python call"),
]


@pytest.mark.parametrize("door", WRITE_DOORS, ids=[f"{d[0]}-{d[1]}" for d in WRITE_DOORS])
@pytest.mark.parametrize(("case", "which", "make", "parameter"), WRITES, ids=[w[0] for w in WRITES])
def test_written_tensors_follow_torchs_in_place_rules_on_every_door(write_ops, door, case, which, make, parameter):
    if which == "two" and door[1] == "C call" and door[0] == "eager":
        door = ("eager", "python call")  # one op for the two-output kernel (no stream: its Python call)
    buf = _buf()
    tensors, _ = make(buf)
    untouched = buf.clone()
    if parameter is None:
        _write_door(write_ops, which, door, tensors)
        return
    with pytest.raises(cute_bind.CuteBindError) as info:
        _write_door(write_ops, which, door, tensors)
    assert (info.value.code, info.value.parameter) == ("CB708", parameter), case
    assert "fix:" in str(info.value)
    assert torch.equal(buf, untouched)  # refused before the kernel wrote anything


def test_allowed_writes_give_torchs_results(write_ops):
    """The allowed rows write what torch's own ops write for them."""
    op = write_ops["C call"]
    b = _buf()
    op(b[:4], b[:4], 2.0)  # in place
    assert torch.equal(b[:4], torch.arange(4.0) * 2)
    b = _buf()
    op(b[0:8:2], b[1:8:2], 2.0)
    assert torch.equal(b[0:8:2], torch.tensor([1.0, 3.0, 5.0, 7.0]) * 2)


def test_the_c_call_hands_an_overlapping_write_to_the_python_call(write_ops):
    """The C call's own check declines (its Python call raises CB708); a clean call stays in C."""
    from cute_bind.torch import eager

    op = write_ops["C call"]
    owner = getattr(op.func, "__self__", None)
    extension = eager._extension()
    if extension is None or not isinstance(owner, extension.EagerCall):
        pytest.skip("no C eager call")
    b = _buf()
    taken, declined = owner.counts()
    op(b[:4], b[4:8], 2.0)
    assert owner.counts() == (taken + 1, declined)
    with pytest.raises(cute_bind.CuteBindError, match=r"\[CB708\]"):
        op(b[1:5], b[0:4], 2.0)
    assert owner.counts() == (taken + 1, declined + 1)
    check = op._python_call.__globals__["_cb_check"].__self__
    assert check.writes(1, b[:4], b[4:8]) is True
    assert check.writes(1, b[1:5], b[0:4]) is False
    assert check.writes(1, torch.zeros(1).expand(3)) is False
    assert check.writes(0, b[1:5], b[0:4]) is True  # nothing written


def test_the_compiled_op_refuses_an_expanded_written_tensor(write_ops):
    """Under torch.compile, torch's functionalization refuses an expanded written tensor itself (its own
    error, before the op's implementation would raise CB708); a partly overlapping pair may reach the
    implementation as copies there (aot_eager), computed as if out of place: not a refusal."""
    torch._dynamo.reset()
    op = write_ops["C call"]
    compiled = torch.compile(lambda y, x: op(y, x, 2.0), fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception) as info:
        compiled(torch.zeros(1).expand(4), torch.ones(4))
    torch._dynamo.reset()
    assert "CB708" in str(info.value) or "single memory location" in str(info.value)
