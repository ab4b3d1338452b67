"""cute_bind.torch.op eagerly on CPU tensors: results, the eager/dispatcher split, outputs, autograd, opcheck."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from pathlib import Path  # noqa: E402

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from cute_bind.torch import generate, runtime  # noqa: E402
from tests.kernels import host  # noqa: E402
from tests.torch.conftest import Sub, dispatcher_calls, in_dispatch_mode, in_function_mode, no_grad  # noqa: E402


def arange(n, dtype=torch.float32):
    return torch.arange(n, dtype=dtype) - n / 3


# ------------------------------------------------------------------ eager results
def test_mutating_op_eagerly_writes_what_the_kernel_writes(opname):
    k = cute_bind.kernel(host.tscale)
    scale = cbt.op(opname("tscale"), k, mutates_args=("out",))
    for n in (1, 7, 64, 333):
        x = arange(n)
        y, ref = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
        assert scale(y, x, 1.5) is None
        k(ref, x, 1.5)
        assert torch.equal(y, ref) and torch.equal(y, x * 1.5)
    assert k.cache_info()["compiled"] == 1  # one dynamic-layout compile for every extent


def test_dispatcher_path_gives_the_same_bytes(opname):
    name = opname("tscale")
    scale = cbt.op(name, host.tscale, mutates_args=("out",))
    x = arange(50)
    a, b = torch.zeros_like(x), torch.zeros_like(x)
    scale(a, x, -0.3)
    getattr(getattr(torch.ops, name.split("::")[0]), name.split("::")[1])(b, x, -0.3)
    assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_pointer_kernel_with_stream_gets_stream_zero_on_cpu(opname, monkeypatch):
    """host.scale takes pointers, an Int32 and a stream: the op passes tensors, n and stream 0."""
    k = cute_bind.kernel(host.scale)
    seen = []
    real_call = type(k).__call__

    def spy(self, *args, **kwargs):
        seen.append(args)
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(type(k), "__call__", spy)
    op = cbt.op(opname("scale"), k, mutates_args=("out",))
    x = arange(64)
    y = torch.zeros_like(x)
    op(y, x, 2.0, 40)
    assert torch.equal(y[:40], x[:40] * 2) and not y[40:].any()
    assert len(seen) == 1 and seen[0][-1] == 0 and seen[0][0] is y


def test_defaults_keywords_constexpr_and_sequences(opname):
    split = cbt.op(opname("tsplit"), host.tsplit, outputs={"lo": "inp", "hi": cbt.like("inp")})
    x = arange(20)
    lo, hi = split(x)
    assert torch.equal(lo, x.clamp(max=0.0)) and torch.equal(hi, x.clamp(min=0.0))
    lo, hi = split(x, cut=1.0)
    assert torch.equal(lo, x.clamp(max=1.0)) and torch.equal(hi, x.clamp(min=1.0))

    axpy = cbt.op(opname("axpy"), host.taxpy_inplace, mutates_args=("y",))
    y = torch.ones(9)
    axpy(y, arange(9), 2.0, 3)
    assert torch.equal(y, 1 + 2 * arange(9) + 3)

    total = cbt.op(opname("tsum"), host.tsum_list, mutates_args=("out",))
    out = torch.zeros(5)
    total(out, [torch.ones(5), arange(5)], (2.0, 0.5))
    assert torch.equal(out, 2 + 0.5 * arange(5))


def test_functional_outputs_like_with_dtype_and_function(opname):
    k = cute_bind.kernel(host.tcopy_any)
    x = arange(12)
    same = cbt.op(opname("copy"), k, outputs={"out": cbt.like("inp")})
    assert torch.equal(same(x, 1.0), x + 1)
    to64 = cbt.op(opname("copy64"), k, outputs={"out": cbt.like("inp", dtype=torch.float64)})
    y = to64(x, 1.0)
    assert y.dtype == torch.float64 and torch.equal(y, (x + 1).double())
    half_len = cbt.op(opname("head"), k, outputs={"out": lambda inp, beta: inp.new_empty(inp.shape[0] // 2)})
    y = half_len(x, 0.0)
    assert y.shape == (6,) and torch.equal(y, x[:6])
    # a fresh tensor each call, never an input
    assert same(x, 0.0).data_ptr() != x.data_ptr()


def test_output_function_returning_no_tensor_is_cb706(opname):
    op = cbt.op(opname("bad"), host.tscale, outputs={"out": lambda inp, alpha: inp.shape})
    with pytest.raises(cute_bind.LaunchArgumentError, match=r"\[CB706\]") as info:
        op(torch.ones(3), 2.0)
    assert info.value.parameter == "out" and "torch.Size" in info.value.got
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode, pytest.raises(cute_bind.LaunchArgumentError, match=r"\[CB706\]"):
        op(mode.from_tensor(torch.ones(3)), 2.0)


def test_mutated_tensors_get_their_version_bumped(opname):
    """As torch's in-place ops do, so autograd notices a tensor it saved was overwritten."""
    scale = cbt.op(opname("tscale"), host.tscale, mutates_args=("out",))
    w = torch.ones(4, requires_grad=True)
    y = torch.ones(4)
    z = (w * y).sum()  # saves y for backward
    before = y._version
    scale(y, torch.ones(4), 3.0)
    assert y._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# ------------------------------------------------------------------ eager vs dispatcher
def _plain(x):
    return x


#: (case, how to call, goes through the dispatcher?)
ROUTES = [
    ("plain tensors", lambda op, y, x: op(y, x, 2.0), False),
    ("keyword arguments", lambda op, y, x: op(out=y, inp=x, alpha=2.0), False),
    ("under no_grad with requires_grad input", lambda op, y, x: no_grad(op, y, x.requires_grad_()), False),
    ("inference_mode", lambda op, y, x: _inference(op, y, x), False),
    ("nn.Parameter without grad", lambda op, y, x: op(y, torch.nn.Parameter(x, requires_grad=False), 2.0), False),
    ("input requires grad", lambda op, y, x: op(y, x.requires_grad_(), 2.0), True),
    ("tensor subclass", lambda op, y, x: op(y, x.as_subclass(Sub), 2.0), True),
    ("dispatch mode active", lambda op, y, x: in_dispatch_mode(op, y, x), True),
    ("torch function mode active", lambda op, y, x: in_function_mode(op, y, x), True),
]


def _inference(op, y, x):
    with torch.inference_mode():
        y2, x2 = y.clone(), x.clone()
        op(y2, x2, 2.0)
    y.copy_(y2)


@pytest.fixture(scope="module")
def routed_op():
    return cbt.op("cbtest::routed", host.tscale, mutates_args=("out",))


@pytest.mark.parametrize(("case", "call", "dispatched"), ROUTES, ids=[r[0] for r in ROUTES])
def test_eager_calls_skip_the_dispatcher_everything_else_uses_it(routed_op, case, call, dispatched):
    x = arange(16)
    y = torch.zeros(16)
    _, calls = dispatcher_calls("cbtest::routed", call, routed_op, y, x)
    assert (calls >= 1) if dispatched else (calls == 0), case
    assert torch.equal(y, arange(16) * 2.0), case


def test_fake_tensors_take_the_registered_op(opname):
    from torch._subclasses.fake_tensor import FakeTensorMode

    scale = cbt.op(opname("tscale"), host.tscale, mutates_args=("out",))
    scaled = cbt.op(opname("tscaled"), host.tscale, outputs={"out": "inp"})
    with FakeTensorMode() as mode:
        x = mode.from_tensor(arange(10))
        assert scale(torch.empty_like(x), x, 2.0) is None
        y = scaled(x, 2.0)
        assert type(y).__name__ == "FakeTensor" and y.shape == (10,) and y.dtype == torch.float32


# ------------------------------------------------------------------ autograd
def test_register_autograd_on_a_functional_op(opname):
    scaled = cbt.op(opname("scaled"), host.tscale, outputs={"out": "inp"})

    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[1]

    def backward(ctx, grad):
        return scaled(grad.contiguous(), ctx.alpha), None

    scaled.register_autograd(backward, setup_context=setup_context)
    x = arange(8).requires_grad_()
    y, calls = dispatcher_calls(scaled.name, scaled, x, 3.0)
    assert calls >= 1  # an input requires grad: the dispatcher, so autograd records the op
    (y * torch.arange(8.0)).sum().backward()
    assert torch.equal(x.grad, 3.0 * torch.arange(8.0))
    torch.autograd.gradcheck(lambda t: scaled(t, 0.5), (torch.randn(5, dtype=torch.float32, requires_grad=True),), eps=1e-2, atol=1e-2)


# ------------------------------------------------------------------ opcheck
def _ops_and_args():
    """(op factory, sample args, sample kwargs) for every kind of op the module makes."""
    x = arange(12)
    return [
        ("mutating", lambda n: cbt.op(n, host.tscale, mutates_args=("out",)), (torch.zeros(12), x, 2.0), {}),
        ("functional like", lambda n: cbt.op(n, host.tscale, outputs={"out": "inp"}), (x, 2.0), {}),
        (
            "functional fn",
            lambda n: cbt.op(n, host.tcopy_any, outputs={"out": lambda inp, beta: torch.empty_like(inp)}),
            (x.reshape(3, 4), 1.0),
            {},
        ),
        ("two outputs, kw-only", lambda n: cbt.op(n, host.tsplit, outputs={"lo": "inp", "hi": "inp"}), (x,), {"cut": 0.5}),
        ("mixed", lambda n: cbt.op(n, host.tsplit, mutates_args=("hi",), outputs={"lo": "inp"}), (torch.zeros(12), x), {}),
        ("sequences", lambda n: cbt.op(n, host.tsum_list, mutates_args=("out",)), (torch.zeros(12), [x, x + 1], [1.0, 2.0]), {}),
        ("constexpr", lambda n: cbt.op(n, host.taxpy_inplace, mutates_args=("y",)), (torch.zeros(12), x, 2.0, 4), {}),
        ("pointers and stream", lambda n: cbt.op(n, host.scale, mutates_args=("out",)), (torch.zeros(64), arange(64), 2.0, 64), {}),
        ("stream default", lambda n: cbt.op(n, host.tscale_stream, mutates_args=("out",)), (torch.zeros(12), x, 2.0), {}),
    ]


@pytest.mark.parametrize(("case", "make", "args", "kwargs"), _ops_and_args(), ids=[c[0] for c in _ops_and_args()])
def test_opcheck_passes_on_every_kind_of_generated_op(opname, case, make, args, kwargs):
    op = make(opname("checked"))
    result = torch.library.opcheck(op.overload, args, kwargs)
    assert set(result.values()) == {"SUCCESS"}, result
    assert len(result) >= 4  # schema, autograd registration, fake tensor, AOT dispatch


# ------------------------------------------------------------------ making ops
def test_decorator_form_and_plain_jit_function(opname):
    name = opname("deco")

    @cbt.op(name, mutates_args=("out",))
    @cute_bind.kernel
    def _unused(out: cute.Tensor, inp: cute.Tensor):  # never compiled
        pass

    assert isinstance(_unused, cbt.TorchOp) and _unused.name == name
    assert _unused.schema == "(Tensor(a0!) out, Tensor inp) -> ()"
    plain = cbt.op(opname("plain"), host.tscale, mutates_args=("out",))  # a @cute.jit function: wrapped
    assert isinstance(plain.kernel, cute_bind.Kernel) and plain.kernel.name == "tscale"
    assert plain.name in repr(plain) and "tscale" in repr(plain)


def test_op_name_taken_is_cb704(opname):
    name = opname("twice")
    cbt.op(name, host.tscale, mutates_args=("out",))
    with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB704\]") as info:
        cbt.op(name, host.tscale, mutates_args=("out",))
    assert "already registered" in info.value.got


@pytest.mark.parametrize("name", ["tscale", "a::b::c", "1x::y", "x::", 7])
def test_malformed_names_are_cb704(name):
    with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB704\]"):
        cbt.op(name, host.tscale, mutates_args=("out",))


def test_like_naming_no_tensor_input_is_cb703(opname):
    for spec in (cbt.like("alpha"), "nope", 3):
        with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB703\]"):
            cbt.op(opname("badlike"), host.tscale, outputs={"out": spec})


def test_without_torch_is_cb701(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(runtime, "_RUNTIME", None)
    with pytest.raises(ImportError, match=r"\[CB701\]") as info:
        cbt.op("cbtest::notorch", host.tscale, mutates_args=("out",))
    assert isinstance(info.value, cute_bind.CuteBindError) and info.value.code == "CB701"


def test_import_cute_bind_does_not_import_torch():
    code = "import sys, cute_bind, cute_bind.torch; assert 'torch' not in sys.modules, 'torch imported'; print('ok')"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ------------------------------------------------------------------ CB705 (the GPU suite runs the real thing)
@pytest.mark.parametrize(
    ("raw", "capturing", "raises", "words"),
    [
        (0, False, False, ""),
        (0x1234, False, True, "another stream is current (stream 0x1234)"),
        (0x1234, True, True, "a CUDA graph is being captured"),
    ],
)
def test_kernel_without_stream_parameter_only_on_the_default_stream(raw, capturing, raises, words):
    from types import SimpleNamespace

    from cute_bind.torch.schema import plan_op

    plan = plan_op("cbtest::streamless", cute_bind.kernel(host.tscale).signature, ("out",), ())
    rt = SimpleNamespace(raw_stream=lambda d: raw, current_device=lambda: 0, capturing=lambda: capturing)
    other_device, default_only = generate.stream_errors(rt, plan)
    if not raises:
        default_only(0)
        return
    with pytest.raises(cute_bind.LaunchRuntimeError, match=r"\[CB705\]") as info:
        default_only(0)
    assert words in info.value.got and info.value.kernel == "tscale"
    with pytest.raises(cute_bind.LaunchRuntimeError, match=r"\[CB705\]") as info:
        other_device(1)
    assert "cuda:1" in info.value.got and "cuda:0" in info.value.expected


def test_register_fake_replaces_the_generated_one(opname):
    from torch._subclasses.fake_tensor import FakeTensorMode

    op = cbt.op(opname("refake"), host.tscale, outputs={"out": "inp"})
    with FakeTensorMode() as mode:
        assert op(mode.from_tensor(torch.ones(6)), 2.0).shape == (6,)
    op.register_fake(lambda inp, alpha: inp.new_empty(inp.shape[0] * 2))
    with FakeTensorMode() as mode:
        assert op(mode.from_tensor(torch.ones(6)), 2.0).shape == (12,)


def test_meta_tensors_take_the_registered_op(opname):
    """Meta tensors are plain torch.Tensor objects without data: the fake implementation answers."""
    name = opname("meta")
    scaled = cbt.op(name, host.tscale, outputs={"out": cbt.like("inp", dtype=torch.float64)})
    y, calls = dispatcher_calls(name, scaled, torch.empty(7, device="meta"), 2.0)
    assert calls >= 1 and y.device.type == "meta" and y.shape == (7,) and y.dtype == torch.float64
    scale = cbt.op(opname("meta_"), host.tscale, mutates_args=("out",))
    assert scale(torch.empty(3, device="meta"), torch.empty(3, device="meta"), 2.0) is None


# ------------------------------------------------------------------ bool defaults (the schema spells them True/False)
@cute.jit
def tflag(out: cute.Tensor, inp: cute.Tensor, negate: cutlass.Boolean = 1, twice: cutlass.Constexpr[bool] = False):
    """out = ±inp (negated when ``negate``), doubled when ``twice``."""
    for i in range(cute.size(out)):
        v = inp[i]
        if cutlass.const_expr(twice):
            v = v * 2.0
        if negate:
            v = -v
        out[i] = v


def test_bool_defaults_reach_the_kernel_eagerly_and_through_the_dispatcher(opname):
    op = cbt.op(opname("tflag"), tflag, mutates_args=("out",))
    assert op.schema == "(Tensor(a0!) out, Tensor inp, Scalar negate=True, bool twice=False) -> ()"
    x = arange(6)
    for args, expect in [((), -x), ((False,), x), ((True, True), -2 * x), ((0,), x)]:
        eager, dispatched = torch.zeros(6), torch.zeros(6)
        op(eager, x, *args)
        op.overload(dispatched, x, *args)
        assert torch.equal(eager, expect) and torch.equal(dispatched, expect), args
    result = torch.library.opcheck(op.overload, (torch.zeros(6), x))
    assert set(result.values()) == {"SUCCESS"}, result


# ------------------------------------------------------------------ optional tensors, unions, fixed structures (FlashAttention-4's signature)
def test_optional_tensors_unions_and_a_fixed_structure(opname):
    """``Tensor?`` takes a tensor or None, ``Scalar?`` an int or None, the structure is passed as its default;
    eager, through the dispatcher and ``kernel(...)`` write the same bytes."""
    k = cute_bind.kernel(host.topt)
    name = opname("topt")
    op = cbt.op(name, k, mutates_args=("out", "lse"))
    overload = getattr(getattr(torch.ops, name.split("::")[0]), name.split("::")[1])
    x, b = arange(9), torch.linspace(-1, 1, 9)
    cases = [(None, 2.0, None, None), ("lse", 2.0, None, None), ("lse", -1.5, b, 3), (None, 0.5, b, None), (None, 1.0, None, -2)]
    for lse, alpha, bias, shift in cases:
        results = []
        for call in (op, overload, k):
            out = torch.full_like(x, float("nan"))
            lse_t = torch.full_like(x, float("nan")) if lse else None
            if call is k:
                call(out, x, lse_t, alpha, bias, shift)
            else:
                assert call(out, x, lse_t, alpha, bias, shift) is None
            results.append((out, lse_t))
        expected = x * alpha + (b if bias is not None else 0) + (shift or 0)
        for out, lse_t in results:
            assert torch.equal(out, results[-1][0]) and torch.allclose(out, expected)
            if lse:
                assert torch.equal(lse_t, results[-1][1]) and torch.allclose(lse_t, 2 * expected)


def test_a_mutated_optional_tensor_gets_its_version_bumped_when_given(opname):
    op = cbt.op(opname("topt_v"), host.topt, mutates_args=("out", "lse"))
    x, out, lse = arange(4), torch.zeros(4), torch.zeros(4)
    before = (out._version, lse._version)
    op(out, x, lse, 1.0)
    assert (out._version, lse._version) == (before[0] + 1, before[1] + 1)
    op(out, x, None, 1.0)  # None has no version: only out's moves
    assert (out._version, lse._version) == (before[0] + 2, before[1] + 1)


def test_opcheck_on_optional_inputs_and_outputs(opname):
    x, b = arange(6), torch.ones(6)
    mutating = cbt.op(opname("topt_m"), host.topt, mutates_args=("out", "lse"))
    for args in ((torch.zeros(6), x, None, 2.0), (torch.zeros(6), x, torch.zeros(6), 2.0, b, 4)):
        result = torch.library.opcheck(mutating.overload, args, {})
        assert set(result.values()) == {"SUCCESS"}, result
    functional = cbt.op(opname("topt_f"), host.topt, outputs={"out": "inp", "lse": "inp"})
    result = torch.library.opcheck(functional.overload, (x, 2.0, None, 1), {})
    assert set(result.values()) == {"SUCCESS"}, result
    out, lse = functional(x, 2.0, shift=1)
    assert torch.equal(out, x * 2 + 1) and torch.equal(lse, 2 * out)


def test_an_env_stream_compile_is_called_without_the_stream(opname):
    """A TVM-FFI kernel compiled with the environment stream (quack's softmax): the op leaves the stream out,
    so the call reaches that compile (whose entry refuses CPU tensors here: CB309) instead of compiling the
    real tensors' layout anew with an explicit stream."""
    pytest.importorskip("tvm_ffi")
    from tests.jit.test_client_hosts import Affine, _env_compile

    k, _ = _env_compile(Affine())
    op = cbt.op(opname("env_affine"), k, mutates_args=("out",))
    out, x = torch.zeros(2, 64), torch.randn(2, 64)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        op(out, x)
    assert info.value.code == "CB309" and "device_type=cuda" in str(info.value)
    assert k.cache_info()["compiled"] == 1  # no second compile from the CPU tensors


def test_an_env_stream_compile_made_after_the_op_is_called_without_the_stream(opname):
    """The op reads the kernel's environment-stream compiles as they are at each call, not as at its making."""
    pytest.importorskip("tvm_ffi")
    from cutlass.cute.runtime import make_fake_stream

    from tests.jit.test_client_hosts import TVM, Affine, _fake

    host = Affine()
    k = cute_bind.kernel(host, compile_options=TVM)
    op = cbt.op(opname("env_affine_later"), k, mutates_args=("out",))
    batch = cute.sym_int()
    k.compile(_fake(batch), _fake(batch), make_fake_stream(use_tvm_ffi_env_stream=True))
    with pytest.raises(cute_bind.LaunchValueError) as info:
        op(torch.zeros(2, 64), torch.randn(2, 64))
    assert info.value.code == "CB309"
    assert k.cache_info()["compiled"] == 1


def test_the_generated_call_is_in_linecache_for_tracebacks(opname):
    """A traceback through the op's generated call shows its lines (registered with linecache, as attrs does)."""
    import linecache
    import traceback

    name = opname("lines")
    op = cbt.op(name, host.tscale, mutates_args=("out",))
    (filename,) = [f for f in linecache.cache if f.startswith(f"<cute_bind op {name}-")]
    assert linecache.getline(filename, 1).startswith("def __call__(")
    try:
        op(torch.zeros(3), torch.zeros(3), 1.0, 4, 5)  # an extra argument: CB202 raised from inside the generated call
    except cute_bind.CuteBindError as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
        assert frames and all(f.line for f in frames), frames
    else:
        raise AssertionError("the call was not refused")


def test_one_visible_device_skips_the_capture_device_lookups(opname, monkeypatch):
    """CB705's check (tensors on another device than a capture's) costs two lookups per call on a GPU; with one
    visible device the tensors' device is the current one, so the op is made without them."""
    rt = runtime.runtime()
    for count, expected in ((1, False), (2, True)):
        monkeypatch.setattr(rt.torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(rt.torch.cuda, "device_count", lambda count=count: count)
        op = cbt.op(opname(f"devices{count}"), host.scale, mutates_args=("out",))
        g = op._python_call.__globals__
        assert g["_cb_several_devices"] is expected
        assert "if _cb_several_devices and _cb_device != _cb_current_device() and _cb_capturing()" in op._python_call.__cute_bind_source__
