"""cute_bind.torch.eager: which ops take the C eager call, the path each call takes, the C checks alone (with
stand-in torch entry points, so the device branches run on the CPU), the specs, and torch.compile's stand-in."""

from __future__ import annotations

import copy
import ctypes
import functools
import pickle
import subprocess
import sys
import textwrap
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from cute_bind.torch import eager  # noqa: E402
from tests.kernels import host  # noqa: E402
from tests.torch.conftest import Sub, dispatcher_calls, in_dispatch_mode, in_function_mode, no_grad  # noqa: E402

needs_c = pytest.mark.skipif(eager.unavailable() is not None, reason=f"no C eager call: {eager.unavailable()}")
try:
    from cute_bind.torch import _ceager
except ImportError:  # not built
    _ceager = None


def arange(n, dtype=torch.float32):
    return torch.arange(n, dtype=dtype) - n / 3


def c_call(op):
    """The op's EagerCall, or None when its function is the Python call."""
    owner = getattr(op.func, "__self__", None)
    return owner if _ceager is not None and isinstance(owner, _ceager.EagerCall) else None


def python_checks(op):
    """Whether the op's Python call asks the C checks first."""
    return op._python_call.__globals__["_cb_check"] is not None


# ------------------------------------------------------------------ which ops
#: (case, make, takes the C call, its Python call asks the C checks)
SHAPES = [
    ("tensors and a stream", lambda n: cbt.op(n, host.tscale_stream_default, mutates_args=("out",)), True, True),
    ("pointers, a scalar and a stream", lambda n: cbt.op(n, host.scale, mutates_args=("out",)), True, True),
    ("no stream parameter", lambda n: cbt.op(n, host.tscale, mutates_args=("out",)), False, False),
    ("outputs to allocate", lambda n: cbt.op(n, host.tscale_stream_default, outputs={"out": "inp"}), False, True),
    ("a sequence of tensors", lambda n: cbt.op(n, host.tsum_list, mutates_args=("out",)), False, False),
    ("keyword-only input, no stream", lambda n: cbt.op(n, host.tsplit, outputs={"lo": "inp", "hi": "inp"}), False, False),
]


@needs_c
@pytest.mark.parametrize(("case", "make", "c", "checks"), SHAPES, ids=[s[0] for s in SHAPES])
def test_which_ops_take_the_c_call(opname, case, make, c, checks):
    op = make(opname("shape"))
    assert isinstance(op, functools.partial) and op.args == () and op.keywords == {}
    assert (c_call(op) is not None) is c, case
    assert (op.func is op._python_call) is (not c), case
    assert python_checks(op) is checks, case


def test_pure_python_keeps_the_python_call_and_checks(opname, monkeypatch):
    monkeypatch.setenv("CUTE_BIND_PURE_PYTHON", "1")
    assert eager.unavailable() == "CUTE_BIND_PURE_PYTHON=1"
    op = cbt.op(opname("pure"), host.tscale_stream_default, mutates_args=("out",))
    assert op.func is op._python_call and not python_checks(op)
    y, x = torch.zeros(9), arange(9)
    op(y, x, 3.0)
    assert torch.equal(y, x * 3.0)


# ------------------------------------------------------------------ the path a call takes
@pytest.fixture(scope="module")
def c_op():
    if eager.unavailable() is not None:
        pytest.skip(f"no C eager call: {eager.unavailable()}")
    op = cbt.op("cbtest::eager_c", host.tscale_stream_default, mutates_args=("out",))
    assert c_call(op) is not None
    return op


@needs_c
def test_a_plain_call_launches_from_c_as_the_python_call_would(opname):
    k = cute_bind.kernel(host.scale)
    op = cbt.op(opname("scale"), k, mutates_args=("out",))
    call = c_call(op)
    for n in (1, 17, 64):
        x = arange(64)
        a, b = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
        before = call.counts()
        assert op(a, x, -1.25, n) is None
        assert call.counts() == (before[0] + 1, before[1])
        op._python_call(b, x, -1.25, n)
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))
        assert torch.equal(a[:n], x[:n] * -1.25)


@needs_c
def test_a_c_call_bumps_each_mutated_version_once(c_op):
    y, x = torch.zeros(5), arange(5)
    v0, vx = y._version, x._version
    for i in range(1, 4):
        c_op(y, x, 2.0)
        assert (y._version, x._version) == (v0 + i, vx)


def _vmapped(op, y, x):
    def body(t):
        op(y, x, 2.0)  # unbatched tensors, a functorch transform active
        return t * 1.0

    torch.func.vmap(body)(torch.ones(3, 2))


#: (case, call, taken in C, goes through torch's dispatcher)
ROUTES = [
    ("plain", lambda op, y, x: op(y, x, 2.0), True, False),
    ("nn.Parameter without grad", lambda op, y, x: op(y, torch.nn.Parameter(x, requires_grad=False), 2.0), True, False),
    ("no_grad with an input requiring grad", lambda op, y, x: no_grad(op, y, x.requires_grad_()), True, False),
    ("keywords", lambda op, y, x: op(y, x, alpha=2.0), False, False),
    ("all keywords", lambda op, y, x: op(out=y, inp=x, alpha=2.0), False, False),
    ("an input requiring grad", lambda op, y, x: op(y, x.requires_grad_(), 2.0), False, True),
    ("a tensor subclass", lambda op, y, x: op(y, x.as_subclass(Sub), 2.0), False, True),
    ("a dispatch mode", in_dispatch_mode, False, True),
    ("a torch function mode", in_function_mode, False, True),
    ("a functorch transform", _vmapped, False, True),
]


@needs_c
@pytest.mark.parametrize(("case", "call", "taken", "dispatched"), ROUTES, ids=[r[0] for r in ROUTES])
def test_each_call_takes_the_c_call_or_the_python_call(c_op, case, call, taken, dispatched):
    y, x = torch.zeros(16), arange(16)
    before = c_call(c_op).counts()
    _, calls = dispatcher_calls("cbtest::eager_c", call, c_op, y, x)
    after = c_call(c_op).counts()
    assert (after[0] - before[0], after[1] - before[1]) == ((1, 0) if taken else (0, 1)), case
    assert (calls >= 1) if dispatched else (calls == 0), case
    assert torch.equal(y, arange(16) * 2.0), case


@needs_c
def test_meta_tensors_leave_the_c_call_for_the_registered_op(c_op):
    y, x = torch.empty(8, device="meta"), torch.empty(8, device="meta")
    before = c_call(c_op).counts()
    assert c_op(y, x, 2.0) is None
    assert c_call(c_op).counts() == (before[0], before[1] + 1)


#: (case, args, kwargs, the code kernel(...) raises for the same mistake)
MISTAKES = [
    ("a missing argument", (torch.zeros(4),), {}, "CB201"),
    ("an extra argument", (torch.zeros(4), arange(4), 2.0, 0, 7), {}, "CB202"),
    ("an unknown keyword", (torch.zeros(4), arange(4), 2.0), {"beta": 1}, "CB202"),
    ("a repeated argument", (torch.zeros(4), arange(4), 2.0), {"alpha": 1.0}, "CB203"),
    ("a number for a tensor", (torch.zeros(4), 3, 2.0), {}, "CB204"),
]


@needs_c
@pytest.mark.parametrize(("case", "args", "kwargs", "code"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistakes_raise_the_python_calls_error(c_op, case, args, kwargs, code):
    with pytest.raises(cute_bind.CuteBindError) as c_err:
        c_op(*args, **kwargs)
    with pytest.raises(cute_bind.CuteBindError) as py_err:
        c_op._python_call(*args, **kwargs)
    assert c_err.value.code == py_err.value.code, case
    assert c_err.value.code == code or code == "CB204", (case, c_err.value.code)


# ------------------------------------------------------------------ EagerCheck alone, with stand-in entry points
class FakeTensor:
    """What EagerCheck reads of a tensor, settable: requires_grad, is_meta, the device."""

    def __init__(self, device=-1, requires_grad=False, is_meta=False):
        self.device, self._rg, self._meta = device, requires_grad, is_meta

    @property
    def requires_grad(self):
        if isinstance(self._rg, BaseException):
            raise self._rg
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        self._rg = value

    @property
    def is_meta(self):
        return self._meta

    @is_meta.setter
    def is_meta(self, value):
        self._meta = value


class OtherTensor(FakeTensor):
    pass


def _raise(exc):
    raise exc


def fake_spec(**over):
    fields = dict(
        tensor_types=(FakeTensor,),
        modes=(lambda: False, lambda: 0),
        grad_enabled=lambda: True,
        requires_grad=FakeTensor.__dict__["requires_grad"],
        is_meta=FakeTensor.__dict__["is_meta"],
        get_device=lambda t: t.device if not isinstance(t.device, BaseException) else _raise(t.device),
        raw_stream=lambda d: 0x1000 + d,
        current_device=None,
    )
    fields.update(over)
    return eager.EagerSpec(**fields)


#: (case, spec overrides, tensors, expected: a stream, None, or an exception type that propagates)
CHECKS = [
    ("host tensors: stream 0", {}, [FakeTensor(), FakeTensor()], 0),
    ("device 2: its current stream", {}, [FakeTensor(2), FakeTensor(2)], 0x1002),
    ("the first tensor gives the device", {}, [FakeTensor(1), FakeTensor(-1)], 0x1001),
    ("a meta tensor", {}, [FakeTensor(is_meta=True)], None),
    ("another type", {}, [FakeTensor(), OtherTensor()], None),
    ("a subclass is another type", {}, [OtherTensor()], None),
    ("a mode on", {"modes": (lambda: False, lambda: 1)}, [FakeTensor()], None),
    ("a mode returns a non-bool truthy value", {"modes": (lambda: [0],)}, [FakeTensor()], None),
    ("no modes to check", {"modes": ()}, [FakeTensor()], 0),
    ("grad on, an input requiring grad", {}, [FakeTensor(), FakeTensor(requires_grad=True)], None),
    ("grad off, an input requiring grad", {"grad_enabled": lambda: False}, [FakeTensor(requires_grad=True)], 0),
    ("several devices, the current one", {"current_device": lambda: 3}, [FakeTensor(3)], 0x1003),
    ("several devices, another current one", {"current_device": lambda: 0}, [FakeTensor(3)], None),
    ("several devices, host tensors", {"current_device": lambda: 5}, [FakeTensor()], 0),
    ("a device index below -1", {}, [FakeTensor(-7)], None),
    ("a device that is not an int", {}, [FakeTensor("cuda:0")], None),
    ("a bool device is an int", {}, [FakeTensor(True)], 0x1001),
    ("a stream that is not an int", {"raw_stream": lambda d: "s"}, [FakeTensor(0)], None),
    ("a huge stream", {"raw_stream": lambda d: 2**64 - 1}, [FakeTensor(0)], 2**64 - 1),
    ("a mode raises an Exception", {"modes": (lambda: _raise(ValueError("x")),)}, [FakeTensor()], None),
    ("grad_enabled raises", {"grad_enabled": lambda: _raise(RuntimeError("x"))}, [FakeTensor()], None),
    ("requires_grad raises", {}, [FakeTensor(requires_grad=RuntimeError("x"))], None),
    ("get_device raises", {}, [FakeTensor(ValueError("x"))], None),
    ("raw_stream raises", {"raw_stream": lambda d: _raise(RuntimeError("no CUDA"))}, [FakeTensor(0)], None),
    ("current_device raises", {"current_device": lambda: _raise(RuntimeError("x"))}, [FakeTensor(0)], None),
    ("a KeyboardInterrupt propagates", {"modes": (lambda: _raise(KeyboardInterrupt()),)}, [FakeTensor()], KeyboardInterrupt),
    ("a SystemExit in raw_stream propagates", {"raw_stream": lambda d: _raise(SystemExit(3))}, [FakeTensor(0)], SystemExit),
]


@needs_c
@pytest.mark.parametrize(("case", "over", "tensors", "expected"), CHECKS, ids=[c[0] for c in CHECKS])
def test_eager_check_decides_as_the_python_call(case, over, tensors, expected):
    assert_decides(_ceager.EagerCheck(fake_spec(**over)), tensors, expected, case)


def assert_decides(check, tensors, expected, case):
    """``check.check(*tensors)`` gives ``expected`` (a stream, None, or a BaseException type that propagates), counted."""
    if isinstance(expected, type) and issubclass(expected, BaseException):
        with pytest.raises(expected):
            check.check(*tensors)
        return
    got = check.check(*tensors)
    assert got == expected and (expected is None or type(got) is int), case
    assert check.counts() == ((1, 0) if expected is not None else (0, 1)), case


@needs_c
def test_eager_check_takes_at_least_one_tensor():
    with pytest.raises(TypeError, match="at least one"):
        _ceager.EagerCheck(fake_spec()).check()


# ------------------------------------------------------------------ the exchange API and grad-mode look-ups, with stand-in C functions
class _DL(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32), ("rest", ctypes.c_byte * 32)]


_READER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(_DL))
_WORK_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))
_GRAD_MODE = ctypes.CFUNCTYPE(ctypes.c_bool)


def _reader(tensor, out):
    """A stand-in dltensor_from_py_object_no_sync: FakeTensor.device is ``(DLPack device type, id)``, or "refuse"."""
    if tensor.device == "refuse":
        return -1
    out.contents.device_type, out.contents.device_id = tensor.device
    return 0


def _work_stream(device_type, device_id, out):
    if device_id == 9:
        return -1  # a device without a stream
    out[0] = None if device_id == 0 else 0x2000 + device_id  # device 0: the default stream, NULL
    return 0


#: the stand-ins' ctypes objects (kept alive: the C checks call them by address)
STANDINS = (_READER(_reader), _WORK_STREAM(_work_stream), _GRAD_MODE(lambda: True), _GRAD_MODE(lambda: False))


def _address(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value


def exchange_spec(grad=None, **over):
    fields = dict(reader=_address(STANDINS[0]), work_stream=_address(STANDINS[1]), exchange=STANDINS)
    if grad is not None:
        fields["grad_mode"] = _address(STANDINS[2] if grad else STANDINS[3])
    fields.update(over)
    return fake_spec(**fields)


#: (case, spec overrides, tensors, expected). The devices are DLPack's: (1, 0) host, (2, n) CUDA device n.
EXCHANGE_CHECKS = [
    ("host: stream 0", {}, [FakeTensor((1, 0))], 0),
    ("CUDA device 3: its current stream", {}, [FakeTensor((2, 3)), FakeTensor((2, 3))], 0x2003),
    ("CUDA device 0's default stream (NULL) is 0", {}, [FakeTensor((2, 0))], 0),
    ("the first tensor gives the device", {}, [FakeTensor((2, 5)), FakeTensor((1, 0))], 0x2005),
    ("another device type (ROCm)", {}, [FakeTensor((10, 0))], None),
    ("pinned host memory (kDLCUDAHost)", {}, [FakeTensor((3, 0))], None),
    ("a negative device id", {}, [FakeTensor((2, -1))], None),
    ("the reader refuses (a meta tensor)", {}, [FakeTensor("refuse")], None),
    ("no stream for the device", {}, [FakeTensor((2, 9))], None),
    ("several devices, the current one", {"current_device": lambda: 4}, [FakeTensor((2, 4))], 0x2004),
    ("several devices, another current one", {"current_device": lambda: 0}, [FakeTensor((2, 4))], None),
    ("several devices, a current device that is no int", {"current_device": lambda: "cuda:4"}, [FakeTensor((2, 4))], None),
    ("several devices, current_device raises", {"current_device": lambda: _raise(RuntimeError("x"))}, [FakeTensor((2, 1))], None),
    (
        "current_device raises a KeyboardInterrupt",
        {"current_device": lambda: _raise(KeyboardInterrupt())},
        [FakeTensor((2, 1))],
        KeyboardInterrupt,
    ),
    ("grad mode on (C), an input requiring grad", {"grad": True}, [FakeTensor((1, 0), requires_grad=True)], None),
    ("grad mode off (C), an input requiring grad", {"grad": False}, [FakeTensor((1, 0), requires_grad=True)], 0),
    (
        "grad mode off (C) wins over grad_enabled",
        {"grad": False, "grad_enabled": lambda: _raise(AssertionError("called"))},
        [FakeTensor((2, 2), requires_grad=True)],
        0x2002,
    ),
    ("grad mode on (C), no input requiring grad", {"grad": True}, [FakeTensor((2, 1))], 0x2001),
]


@needs_c
@pytest.mark.parametrize(("case", "over", "tensors", "expected"), EXCHANGE_CHECKS, ids=[c[0] for c in EXCHANGE_CHECKS])
def test_the_exchange_api_and_grad_mode_functions_decide_as_the_python_calls(case, over, tensors, expected):
    assert_decides(_ceager.EagerCheck(exchange_spec(**over)), tensors, expected, case)


def _error_pending():
    occurred = ctypes.pythonapi.PyErr_Occurred
    occurred.restype = ctypes.c_void_p
    return bool(occurred())


def test_the_op_reads_device_stream_and_grad_mode_from_torchs_c_functions_where_torch_has_them():
    from cute_bind.torch import runtime

    rt = runtime.runtime()
    spec = eager.make_spec(rt, False)
    assert spec is not None
    if type(getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)).__name__ == "PyCapsule":
        assert spec.reader and spec.work_stream and spec.exchange is torch.Tensor.__dlpack_c_exchange_api__
    if sys.platform.startswith("linux") and tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 6):
        assert spec.grad_mode, "libtorch_cpu.so's aoti_torch_grad_mode_is_enabled was not found"
    if eager.unavailable() is None:
        check = _ceager.EagerCheck(spec)
        x = torch.ones(3)
        assert check.check(x, x) == 0
        assert check.check(torch.empty(3, device="meta")) is None  # torch's reader raises: declined, nothing left pending
        assert not _error_pending()
        assert check.check(torch.ones(3, requires_grad=True)) is None
        with torch.no_grad():
            assert check.check(torch.ones(3, requires_grad=True)) == 0
        assert check.counts() == (2, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@needs_c
def test_on_a_gpu_the_c_checks_give_torchs_current_stream():
    from cute_bind.torch import runtime

    rt = runtime.runtime()
    check = _ceager.EagerCheck(eager.make_spec(rt, rt.several_devices()))
    x = torch.ones(8, device="cuda")
    assert check.check(x) == rt.raw_stream(x.get_device()) == torch.cuda.current_stream().cuda_stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert check.check(x, x) == side.cuda_stream != 0
    assert check.check(torch.ones(2)) == 0


# ------------------------------------------------------------------ specs: refused in Python and in C
#: (case, overrides) of an EagerSpec that must be refused
BAD_SPECS = [
    ("no tensor types", {"tensor_types": ()}),
    ("too many tensor types", {"tensor_types": (int,) * 9}),
    ("a tensor type that is no type", {"tensor_types": (3,)}),
    ("too many modes", {"modes": (lambda: 0,) * 9}),
    ("a mode that is not callable", {"modes": (1,)}),
    ("grad_enabled not callable", {"grad_enabled": None}),
    ("raw_stream not callable", {"raw_stream": 5}),
    ("current_device not callable", {"current_device": 1}),
    ("requires_grad not a data descriptor", {"requires_grad": staticmethod(len)}),
    ("is_meta a plain value", {"is_meta": True}),
    ("a reader without a work stream", {"reader": 1, "exchange": ()}),
    ("a work stream without a reader", {"work_stream": 1, "exchange": ()}),
    ("a reader with nothing keeping it alive", {"reader": 1, "work_stream": 1}),
    ("something kept alive without a reader", {"exchange": ()}),
    ("a negative address", {"grad_mode": -1}),
    ("an address beyond 64 bits", {"grad_mode": 1 << 64}),
    ("a bool address", {"grad_mode": True}),
    ("an address that is no int", {"reader": 1.0, "work_stream": 1, "exchange": ()}),
]


@pytest.mark.parametrize(("case", "over"), BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
def test_bad_eager_specs_are_refused_in_python(case, over):
    with pytest.raises(ValueError, match="EagerSpec"):
        fake_spec(**over)


@needs_c
@pytest.mark.parametrize(("case", "over"), BAD_SPECS, ids=[b[0] for b in BAD_SPECS])
def test_bad_eager_specs_are_refused_in_c(case, over):
    good = fake_spec()
    raw = types.SimpleNamespace(**{**good.__dict__, **over})
    with pytest.raises((TypeError, ValueError)):
        _ceager.EagerCheck(raw)


def _noop(*a, **k):
    return None


def call_spec(**over):
    fields = dict(
        n=3,
        tensors=(0, 1),
        mutated=(0,),
        kernel_args=(0, 1, 2, eager.STREAM),
        fixed=(),
        check=_ceager.EagerCheck(fake_spec()) if _ceager is not None else None,
        kernel=_noop,
        bump=_noop,
        fallback=_noop,
    )
    fields.update(over)
    return eager.EagerCallSpec(**fields)


BAD_CALL_SPECS = [
    ("no inputs", {"n": 0, "tensors": (), "mutated": (), "kernel_args": (eager.STREAM,)}),
    ("too many inputs", {"n": eager.MAX_ARGS + 1}),
    ("no tensor input", {"tensors": (), "mutated": ()}),
    ("a tensor index out of range", {"tensors": (0, 3)}),
    ("a bool index", {"tensors": (True,)}),
    ("a mutated input that is no tensor input", {"mutated": (2,)}),
    ("a kernel argument out of range", {"kernel_args": (0, 1, 5, eager.STREAM)}),
    ("a fixed value that is not there", {"kernel_args": (0, 1, -2, eager.STREAM)}),
    ("no stream", {"kernel_args": (0, 1, 2)}),
    ("the stream twice", {"kernel_args": (0, eager.STREAM, 2, eager.STREAM)}),
    ("too many kernel arguments", {"kernel_args": (0,) * eager.MAX_ARGS + (eager.STREAM,)}),
    ("a kernel that is not callable", {"kernel": 1}),
    ("a fallback that is not callable", {"fallback": None}),
]


@needs_c
@pytest.mark.parametrize(("case", "over"), BAD_CALL_SPECS, ids=[b[0] for b in BAD_CALL_SPECS])
def test_bad_call_specs_are_refused_in_python_and_in_c(case, over):
    with pytest.raises(ValueError, match="EagerCallSpec"):
        call_spec(**over)
    good = call_spec()
    raw = types.SimpleNamespace(**{**good.__dict__, **over})
    with pytest.raises((TypeError, ValueError)):
        _ceager.EagerCall(raw)


@needs_c
@pytest.mark.parametrize(
    "over",
    [
        {"check": None},
        {"check": object()},
        {"check": _ceager.EagerCheck.__new__(_ceager.EagerCheck)} if _ceager else {},
        {"fixed": [1]},
        {"n": True},
    ],
    ids=["no check", "not an EagerCheck", "an uninitialised EagerCheck", "fixed not a tuple", "n a bool"],
)
def test_the_c_call_refuses_what_the_python_spec_would_not_make(over):
    raw = types.SimpleNamespace(**{**call_spec().__dict__, **over})
    with pytest.raises((TypeError, ValueError)):
        _ceager.EagerCall(raw)


@needs_c
def test_uninitialised_or_reinitialised_objects_raise_instead_of_crashing():
    with pytest.raises(RuntimeError, match="not initialised"):
        _ceager.EagerCall.__new__(_ceager.EagerCall).call(1, 2, 3)
    with pytest.raises(RuntimeError, match="not initialised"):
        _ceager.EagerCheck.__new__(_ceager.EagerCheck).check(1)
    call = _ceager.EagerCall(call_spec())
    with pytest.raises(TypeError, match="twice"):
        call.__init__(call_spec())
    check = _ceager.EagerCheck(fake_spec())
    with pytest.raises(TypeError, match="twice"):
        check.__init__(fake_spec())
    with pytest.raises(TypeError):
        _ceager.EagerCall(call_spec(), extra=1)


# ------------------------------------------------------------------ EagerCall: what reaches the kernel, the bump, the fallback
@st.composite
def call_layouts(draw):
    n = draw(st.integers(1, 8))
    tensors = tuple(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True)))
    mutated = tuple(draw(st.lists(st.sampled_from(tensors), max_size=len(tensors), unique=True)))
    fixed = tuple(draw(st.lists(st.integers(), max_size=3)))
    sources = list(range(n)) + [-2 - j for j in range(len(fixed))]
    args = draw(st.lists(st.sampled_from(sources), max_size=10)) if sources else []
    args.insert(draw(st.integers(0, len(args))), eager.STREAM)
    return n, tensors, mutated, fixed, tuple(args)


@needs_c
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=call_layouts(), device=st.integers(-1, 3), nargs_delta=st.integers(-2, 2), kw=st.booleans())
def test_the_c_call_hands_each_argument_where_the_spec_says(layout, device, nargs_delta, kw):
    n, tensors, mutated, fixed, kernel_args = layout
    seen = {}
    spec = call_spec(
        n=n,
        tensors=tensors,
        mutated=mutated,
        fixed=fixed,
        kernel_args=kernel_args,
        kernel=lambda *a: seen.update(kernel=a),
        bump=lambda t: seen.update(bump=t),
        fallback=lambda *a, **k: seen.update(fallback=(a, k)),
    )
    call = _ceager.EagerCall(spec)
    values = [FakeTensor(device) if i in tensors else ("value", i) for i in range(max(n + nargs_delta, 0))]
    kwargs = {"extra": 1} if kw else {}
    assert call.call(*values, **kwargs) is None
    if nargs_delta or kw or mutated:
        # a written tensor is checked for overlaps (CB708) through torch's DLPack reader, which these
        # stand-in tensors and this stand-in check have not: the Python call decides
        assert seen == {"fallback": (tuple(values), kwargs)}
        assert call.counts() == (0, 1)
        return
    stream = 0 if device < 0 else 0x1000 + device
    expected = tuple(values[k] if k >= 0 else stream if k == eager.STREAM else fixed[-2 - k] for k in kernel_args)
    assert seen["kernel"] == expected
    assert all(a is b for a, b, k in zip(seen["kernel"], expected, kernel_args) if k != eager.STREAM)  # the caller's objects
    assert seen.get("bump") == (tuple(values[i] for i in mutated) if mutated else None)
    assert "fallback" not in seen and call.counts() == (1, 0)


@needs_c
def test_errors_of_the_kernel_and_of_the_bump_propagate_from_the_c_call(opname):
    # torch's own checks (a DLPack reader): real tensors written, as an op's C call gets them
    real = cbt.op(opname("errs"), host.tscale_stream_default, mutates_args=("out",))._python_call.__globals__["_cb_check"].__self__
    for where in ("kernel", "bump"):
        spec = call_spec(check=real, **{where: lambda *a: _raise(ZeroDivisionError(where))})
        with pytest.raises(ZeroDivisionError, match=where):
            _ceager.EagerCall(spec).call(torch.zeros(4), torch.ones(4), 1.0)


@needs_c
def test_a_written_tensor_the_c_checks_cannot_read_goes_to_the_python_call():
    """The stand-in check has no DLPack reader: a call writing a tensor is the fallback's, one writing none is C's."""
    seen = []
    for mutated in ((0,), ()):
        spec = call_spec(mutated=mutated, kernel=lambda *a: seen.append("kernel"), fallback=lambda *a, **k: seen.append("fallback"))
        _ceager.EagerCall(spec).call(FakeTensor(), FakeTensor(), 1.0)
    assert seen == ["fallback", "kernel"]


@needs_c
def test_a_declined_check_hands_the_call_to_the_fallback_unchanged():
    seen = []
    spec = call_spec(check=_ceager.EagerCheck(fake_spec(modes=(lambda: True,))), fallback=lambda *a, **k: seen.append((a, k)) or "py")
    call = _ceager.EagerCall(spec)
    t = (FakeTensor(), FakeTensor(), 2.0)
    assert call.call(*t) == "py" and seen == [(t, {})]


# ------------------------------------------------------------------ the op object
def test_an_op_is_made_only_by_op_is_not_pickled_and_copies_as_itself(opname):
    op = cbt.op(opname("obj"), host.tscale_stream_default, mutates_args=("out",))
    with pytest.raises(TypeError, match="cute_bind.torch.op"):
        cbt.TorchOp(print)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(op)
    assert copy.copy(op) is op and copy.deepcopy({"op": op})["op"] is op  # a model holding it can be deep-copied
    assert repr(op).startswith("<cute_bind.torch op ")
    assert str(__import__("inspect").signature(op)) == "(out, inp, alpha)"


@needs_c
def test_a_refused_stand_in_gives_the_op_its_python_call_back(opname, monkeypatch):
    op = cbt.op(opname("lost"), host.tscale_stream_default, mutates_args=("out",))
    call = op.func
    assert c_call(op) is not None
    monkeypatch.setattr(eager, "_substitute", lambda call, traced: False)
    monkeypatch.setattr(eager, "_PENDING", [(call, op._python_call, lambda: eager.rebind(op, op._python_call))])
    eager._register_pending()
    assert op.func is op._python_call and eager._PENDING == []
    y, x = torch.zeros(6), arange(6)
    op(y, x, 4.0)
    assert torch.equal(y, x * 4.0) and op.name.endswith("lost_" + op.name.rsplit("_", 1)[1])


@needs_c
def test_with_torch_compile_imported_a_refused_stand_in_keeps_the_python_call(opname, monkeypatch):
    import torch._dynamo  # noqa: F401 - the stand-in is registered before the C call is bound

    monkeypatch.setattr(eager, "_substitute", lambda call, traced: False)
    op = cbt.op(opname("refused"), host.tscale_stream_default, mutates_args=("out",))
    assert op.func is op._python_call and python_checks(op)
    y, x = torch.zeros(6), arange(6)
    op(y, x, 0.5)
    assert torch.equal(y, x * 0.5)


_FRESH = textwrap.dedent(
    """
    import sys, torch
    import cute_bind.torch as cbt
    from cute_bind.torch import eager
    from tests.kernels import host
    op = cbt.op("cbfresh::scale_", host.tscale_stream_default, mutates_args=("out",))
    c = op.func is not op._python_call
    assert "torch._dynamo" not in sys.modules and (not c or eager._PENDING)
    y, x = torch.zeros(8), torch.arange(8.0)
    f = torch.compile(lambda a, b: op(a, b, 3.0), fullgraph=True)
    f(y, x)
    assert torch.equal(y, x * 3.0)
    assert (op.func is not op._python_call) == c and not eager._PENDING
    from torch._dynamo.utils import counters
    print("C" if c else "Python", sum(counters["graph_break"].values()))
    """
)


def test_an_op_made_before_torch_compile_was_imported_compiles_in_fullgraph():
    """The C call's stand-in is registered when torch._dynamo is imported (here by torch.compile), in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    kind, breaks = out.stdout.split()
    assert breaks == "0" and kind == ("C" if eager.unavailable() is None else "Python")


@needs_c
def test_an_op_made_after_torch_compile_was_imported_compiles_in_fullgraph(opname):
    import torch._dynamo  # noqa: F401 - the registration happens at once

    op = cbt.op(opname("late"), host.tscale_stream_default, mutates_args=("out",))
    assert c_call(op) is not None
    y, x = torch.zeros(8), arange(8)
    torch.compile(lambda a, b: op(a, b, -2.0), fullgraph=True)(y, x)
    assert torch.equal(y, x * -2.0)
