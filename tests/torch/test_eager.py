"""cute_bind.torch.eager: the C eager call of an op, its place under torch.compile, its spec."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from cute_bind.torch import eager  # noqa: E402
from tests.kernels import host  # noqa: E402
from tests.torch.conftest import dispatcher_calls  # noqa: E402
from tests.torch.test_op import ROUTES, Sub, arange  # noqa: E402

EagerOp = eager.c_eager_class()
needs_c = pytest.mark.skipif(EagerOp is None, reason="cute_bind.torch._ceager is not built (or CUTE_BIND_PURE_PYTHON=1)")


#: (case, kernel, op options, sample args): which ops take the C call
ELIGIBLE = [
    ("tensors, no stream parameter", host.tscale, {"mutates_args": ("out",)}, lambda: (torch.zeros(8), arange(8), 2.0)),
    ("pointers, an int and a stream", host.scale, {"mutates_args": ("out",)}, lambda: (torch.zeros(64), arange(64), 2.0, 64)),
    ("stream = None", host.tscale_stream, {"mutates_args": ("out",)}, lambda: (torch.zeros(8), arange(8), 2.0)),
    ("a Constexpr input", host.taxpy_inplace, {"mutates_args": ("y",)}, lambda: (torch.zeros(8), arange(8), 2.0, 4)),
    ("a Parameter written", host.tscale, {"mutates_args": ("out",)}, lambda: (torch.nn.Parameter(torch.zeros(8), False), arange(8), 2.0)),
]
#: ops that keep the Python call
INELIGIBLE = [
    ("an output to allocate", host.tscale, {"outputs": {"out": "inp"}}),
    ("a keyword-only input", host.tsplit, {"mutates_args": ("lo", "hi")}),
    ("a sequence of tensors", host.tsum_list, {"mutates_args": ("out",)}),
]


@needs_c
@pytest.mark.parametrize(("case", "fn", "options", "args"), ELIGIBLE, ids=[c[0] for c in ELIGIBLE])
def test_plain_ops_take_the_c_call_and_write_what_the_python_call_writes(opname, case, fn, options, args):
    op = cbt.op(opname("eligible"), fn, **options)
    assert op._eager_spec is not None and isinstance(type(op).__call__, types.BuiltinFunctionType), case
    a, b = args(), args()
    va = a[0]._version
    assert op(*a) is None
    op._python_call(None, *b)
    assert torch.equal(a[0].view(torch.int32), b[0].view(torch.int32)), case
    assert a[0]._version - va == 1, case  # the version bump


@pytest.mark.parametrize(("case", "fn", "options"), INELIGIBLE, ids=[c[0] for c in INELIGIBLE])
def test_other_ops_keep_the_python_call(opname, case, fn, options):
    op = cbt.op(opname("ineligible"), fn, **options)
    assert op._eager_spec is None and type(op).__call__ is op._python_call, case


def test_pure_python_setting_keeps_the_python_call(opname, monkeypatch):
    monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    op = cbt.op(opname("pure"), host.tscale, mutates_args=("out",))
    assert op._eager_spec is None and type(op).__call__ is op._python_call


# ------------------------------------------------------------------ the path each call takes
def _spied(op):
    """A C call over op's spec whose Python call records its arguments (then runs the real one)."""
    seen = []
    real = op._python_call

    def fallback(*args, **kwargs):
        seen.append((args[1:], kwargs))
        return real(*args, **kwargs)

    return EagerOp(dataclasses.replace(op._eager_spec, fallback=fallback)).call, seen


@needs_c
@pytest.mark.parametrize(("case", "call", "dispatched"), ROUTES, ids=[r[0] for r in ROUTES])
def test_the_c_call_hands_the_python_call_exactly_what_it_does_not_take(opname, case, call, dispatched):
    """The plain call never reaches Python; keywords, autograd, a subclass or a mode go to the Python
    call (which then routes as before: the dispatcher count is the Python call's)."""
    name = opname("routed")
    op = cbt.op(name, host.tscale, mutates_args=("out",))
    c_call, seen = _spied(op)

    class Spied:  # an object whose call is the spied C call, called as the op is
        def __call__(self, *args, **kwargs):
            return c_call(*args, **kwargs)

    x, y = arange(16), torch.zeros(16)
    _, calls = dispatcher_calls(name, call, Spied(), y, x)
    assert (calls >= 1) if dispatched else (calls == 0), case
    assert torch.equal(y, arange(16) * 2.0), case
    plain = case in ("plain tensors", "under no_grad with requires_grad input", "inference_mode", "nn.Parameter without grad")
    assert (seen == []) if plain else (len(seen) == 1), (case, seen)


@needs_c
def test_meta_and_missing_arguments_go_to_the_python_call(opname):
    op = cbt.op(opname("meta"), host.tscale, mutates_args=("out",))
    c_call, seen = _spied(op)
    c_call(torch.empty(4, device="meta"), torch.empty(4, device="meta"), 1.0)  # the registered op's fake: nothing written
    with pytest.raises(cute_bind.CuteBindError) as info:
        c_call(torch.zeros(4), arange(4))
    assert info.value.code == "CB201"
    with pytest.raises(cute_bind.CuteBindError) as info:
        c_call(torch.zeros(4), arange(4), 1.0, 2.0)
    assert info.value.code == "CB202"
    assert len(seen) == 3


@needs_c
def test_errors_from_the_kernel_and_from_torch_propagate(opname):
    op = cbt.op(opname("raising"), host.tscale, mutates_args=("out",))
    with pytest.raises(cute_bind.CuteBindError) as info:
        op(torch.zeros(4), arange(4), "x")  # the kernel's own check of a number parameter
    assert (info.value.code, info.value.parameter) == ("CB204", "alpha")

    def boom() -> bool:
        raise KeyboardInterrupt

    call = EagerOp(dataclasses.replace(op._eager_spec, grad_enabled=boom)).call
    with pytest.raises(KeyboardInterrupt):
        call(torch.zeros(4), arange(4), 1.0)

    def device_boom(t):
        raise ValueError("no device")

    call = EagerOp(dataclasses.replace(op._eager_spec, get_device=device_boom)).call
    with pytest.raises(ValueError, match="no device"):
        call(torch.zeros(4), arange(4), 1.0)


@needs_c
def test_a_kernel_without_a_stream_parameter_checks_the_stream_on_a_device(opname):
    """On a device, a stream-less kernel's op calls the Python call's CB705 check with the device."""
    op = cbt.op(opname("nostream"), host.tscale, mutates_args=("out",))
    seen = []

    def check(device):
        seen.append(device)
        raise ValueError("stand-in for CB705")

    call = EagerOp(dataclasses.replace(op._eager_spec, default_stream_only=check, get_device=lambda t: 3)).call
    with pytest.raises(ValueError, match="stand-in"):
        call(torch.zeros(4), arange(4), 1.0)
    assert seen == [3]


@needs_c
def test_several_devices_check_the_capture_device(opname):
    """With several visible devices: a capture on another current device goes to the Python call
    (which raises CB705); no capture, or the same device, launches."""
    op = cbt.op(opname("several"), host.scale, mutates_args=("out",))
    for current, capturing, goes_python in ((0, True, True), (0, False, False), (5, True, False)):
        c_call, seen = _spied(op)
        spec = dataclasses.replace(
            op._eager_spec,
            fallback=lambda *a, **k: seen.append(a),
            several_devices=True,
            get_device=lambda t: 5,
            raw_stream=lambda d: 0,
            current_device=lambda c=current: c,
            capturing=lambda c=capturing: c,
        )
        y = torch.zeros(64)
        EagerOp(spec).call(y, arange(64), 2.0, 64)
        assert bool(seen) == goes_python and (goes_python or torch.equal(y, arange(64) * 2.0)), (current, capturing)


# ------------------------------------------------------------------ under torch.compile
def test_an_op_made_before_dynamo_is_imported_compiles_through_its_python_call():
    """In a fresh interpreter: the op is made before torch._dynamo is imported; importing it (by
    torch.compile) registers the stand-in, so fullgraph compiles with no graph break."""
    code = """
import sys, torch
assert "torch._dynamo" not in sys.modules, "imported by torch already"
import types
import cute_bind.torch as cbt
from cute_bind.torch import eager
from tests.kernels import host
op = cbt.op("cbfresh::scale", host.scale, mutates_args=("out",))
c = isinstance(type(op).__call__, types.BuiltinFunctionType)
assert "torch._dynamo" not in sys.modules
def f(y, x):
    op(y, x, 2.0, 64)
    return y + 1
x = torch.arange(64, dtype=torch.float32)
y = torch.zeros(64)
import torch._dynamo
explained = torch._dynamo.explain(f)(y, x)
out = torch.compile(f, fullgraph=True, backend="eager")(y, x)
assert torch.equal(out, x * 2 + 1) and explained.graph_break_count == 0, explained
assert not any(type(m).__name__ == "_DynamoWatch" for m in sys.meta_path) and not eager._PENDING
print("c" if c else "python")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == ("c" if EagerOp is not None else "python")


@needs_c
def test_an_op_made_after_dynamo_compiles_with_no_graph_break(opname):
    import torch._dynamo

    op = cbt.op(opname("compiled"), host.scale, mutates_args=("out",))
    assert op._eager_spec is not None

    def f(y, x):
        op(y, x, 2.0, 64)
        return y * 3

    x, y = arange(64), torch.zeros(64)
    explained = torch._dynamo.explain(f)(y, x)
    assert explained.graph_break_count == 0
    torch._dynamo.reset()
    assert torch.equal(torch.compile(f, fullgraph=True, backend="eager")(y, x), arange(64) * 6)


@needs_c
def test_a_stand_in_torch_refuses_leaves_the_python_call(opname, monkeypatch):
    import torch._dynamo  # noqa: F401 - registering now, not at import

    def refuse(*args, **kwargs):
        raise TypeError("no")

    monkeypatch.setattr(torch.compiler, "substitute_in_graph", refuse)
    op = cbt.op(opname("refused"), host.scale, mutates_args=("out",))
    assert op._eager_spec is None and type(op).__call__ is op._python_call
    y = torch.zeros(64)
    op(y, arange(64), 2.0, 64)
    assert torch.equal(y, arange(64) * 2.0)


@needs_c
def test_a_pending_op_whose_registration_fails_gets_its_python_call_back(opname, monkeypatch):
    op = cbt.op(opname("pending"), host.scale, mutates_args=("out",))
    cls, call = type(op), EagerOp(op._eager_spec).call
    cls.__call__ = call
    monkeypatch.setattr(eager, "_substitute", lambda c, t: False)
    eager._PENDING.append((cls, call, lambda *a: None, op._python_call))
    eager._register_pending()
    assert cls.__call__ is op._python_call and not eager._PENDING


# ------------------------------------------------------------------ the spec, validated twice
def _spec(op, **change):
    return dataclasses.replace(op._eager_spec, **change)


BAD_SPECS = [
    ("n zero", {"n": 0}),
    ("n too large", {"n": 65}),
    ("no tensors", {"tensors": ()}),
    ("tensor index out of range", {"tensors": (0, 7)}),
    ("negative tensor index", {"tensors": (-1,)}),
    ("mutated not a tensor", {"mutated": (2,)}),
    ("kernel arg out of range", {"kernel_args": (0, 1, 9)}),
    ("kernel arg below the fixed values", {"kernel_args": (0, 1, -5)}),
    ("a bool index", {"tensors": (True,)}),
    ("a stream check and a stream", {"kernel_args": (0, 1, 2, -1)}),
]


@needs_c
@pytest.mark.parametrize(("case", "change"), BAD_SPECS, ids=[c[0] for c in BAD_SPECS])
def test_a_bad_spec_is_refused_in_python_and_in_c(opname, case, change):
    op = cbt.op(opname("spec"), host.tscale, mutates_args=("out",))
    with pytest.raises(ValueError):
        _spec(op, **change)
    fields = {f.name: getattr(op._eager_spec, f.name) for f in dataclasses.fields(op._eager_spec)}
    fields.update(change)
    with pytest.raises((ValueError, TypeError)):
        EagerOp(types.SimpleNamespace(**fields))  # the C side checks what it reads, whoever made it


class _NoTruth:
    def __bool__(self) -> bool:
        raise TypeError("no truth value")


HOSTILE_FIELDS = [
    ("n", "3"),
    ("n", 2**70),
    ("tensors", [0, 1]),
    ("tensors", (0, 2**70)),
    ("mutated", None),
    ("fixed", [1]),
    ("kernel", None),
    ("fallback", 3),
    ("tensor_types", (int,)),
    ("tensor_types", (int, 3)),
    ("get_device", "get_device"),
    ("default_stream_only", 5),
    ("several_devices", _NoTruth()),
]


@needs_c
@pytest.mark.parametrize(("field", "value"), HOSTILE_FIELDS, ids=[f"{f}={v!r}"[:40] for f, v in HOSTILE_FIELDS])
def test_hostile_spec_fields_never_crash(opname, field, value):
    op = cbt.op(opname("hostile"), host.tscale, mutates_args=("out",))
    fields = {f.name: getattr(op._eager_spec, f.name) for f in dataclasses.fields(op._eager_spec)}
    fields[field] = value
    with pytest.raises((ValueError, TypeError, OverflowError)):
        EagerOp(types.SimpleNamespace(**fields))


@needs_c
def test_missing_fields_uninitialised_and_twice_initialised(opname):
    op = cbt.op(opname("lifecycle"), host.tscale, mutates_args=("out",))
    with pytest.raises(AttributeError):
        EagerOp(types.SimpleNamespace(n=3))
    bare = EagerOp.__new__(EagerOp)
    with pytest.raises(RuntimeError, match="not initialised"):
        bare.call(torch.zeros(4), arange(4), 1.0)
    made = EagerOp(op._eager_spec)
    with pytest.raises(TypeError, match="twice"):
        made.__init__(op._eager_spec)
    with pytest.raises(TypeError):
        EagerOp(op._eager_spec, extra=1)
    y = torch.zeros(4)
    made.call(y, arange(4), 1.0)  # still the first spec's call
    assert torch.equal(y, arange(4))


@needs_c
def test_a_subclass_given_where_a_tensor_belongs_is_routed_not_read(opname):
    op = cbt.op(opname("sub"), host.tscale, mutates_args=("out",))
    c_call, seen = _spied(op)
    y = torch.zeros(8)
    c_call(y, arange(8).as_subclass(Sub), 2.0)
    assert len(seen) == 1 and torch.equal(y, arange(8) * 2.0)
