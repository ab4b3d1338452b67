"""Client host functions as written (issue 23, Build item 2): ``cute_bind.kernel(host, compile_options=...)``.

quack and FlashAttention-4 compile callable objects (``__call__`` is
``@cute.jit``) with ``options="--enable-tvm-ffi"``, from fake tensors, fake
streams (the TVM-FFI environment stream) and numbers. The kernel door takes
exactly that, and:

- ``.compile(*client_args)`` is the client's ``cute.compile``: the same kind
  of function, the same entry name and TVM-FFI signature, the same IR;
- the compile key separates what the compile reads (shared SymInts, the
  environment stream, the options);
- ``bind()`` gives the TVM-FFI handle ``cute_bind.prepare`` gives, and calls
  launch through it, bitwise equal to the compiled function's own call;
- a TVM-FFI function is never written to the disk cache (it loads back only
  as a bare ``tvm_ffi.Function``).

The tests/clients suite runs the real packages; these hosts are our own, in
the clients' style, so this runs wherever the DSL does (on the CPU).
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

import cute_bind
from cute_bind.launch.tvm_ffi import PreparedTvmFfiLaunch
from tests.optional import torch_or_skip

torch = torch_or_skip()
pytest.importorskip("tvm_ffi")

TVM = "--enable-tvm-ffi"


class RowScale:
    """quack style: configuration on the instance, ``__call__`` jitted, a Constexpr-like attribute read at trace."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    @cute.jit
    def __call__(
        self,
        mO: cute.Tensor,
        mX: cute.Tensor,
        mB: Optional[cute.Tensor],
        scale: cutlass.Float32,
        n_sm: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        for i in range(cute.size(mO, mode=[0])):
            for j in range(cute.size(mO, mode=[1])):
                v = mX[i, j] * scale + self.offset + cutlass.Float32(n_sm)
                if cutlass.const_expr(mB is not None):
                    v = v + mB[i, j]
                mO[i, j] = v


def _fake(sym: Any = None, space: Any = cute.AddressSpace.gmem) -> Any:
    sym = cute.sym_int() if sym is None else sym
    return make_fake_tensor(cutlass.Float32, (sym, 64), (cute.sym_int64(divisibility=4), 1), assumed_align=16, memspace=space)


def _client_args(env: bool = True) -> tuple[Any, ...]:
    """What quack gives cute.compile: one SymInt for the batch of all tensors, numbers of the compile."""
    batch = cute.sym_int()
    return (_fake(batch), _fake(batch), None, cutlass.Float32(0), 0, make_fake_stream(use_tvm_ffi_env_stream=env))


def _same_function(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    assert ours.function_name == theirs.function_name
    assert str(inspect.signature(ours._kwargs_wrapper)) == str(inspect.signature(theirs._kwargs_wrapper))
    assert str(ours.ir_module) == str(theirs.ir_module)


@pytest.mark.parametrize("env", [True, False], ids=["env_stream", "stream_argument"])
def test_compile_is_the_clients_cute_compile(env: bool) -> None:
    host = RowScale(0.5)
    args = _client_args(env)
    theirs = cute.compile(host, *args, options=TVM)
    ours = cute_bind.kernel(host, compile_options=TVM).compile(*args)
    _same_function(ours, theirs)
    params = list(inspect.signature(ours._kwargs_wrapper).parameters)
    assert params == ["mO", "mX", "mB", "scale", "n_sm"] + ([] if env else ["stream"])


def test_numbers_are_compiled_as_given() -> None:
    """The DSL names the entry after the values it gets: a Python 7 and cutlass.Int32(7) are two names."""
    host = RowScale(0.5)
    batch = cute.sym_int()
    args = (_fake(batch), _fake(batch), None, 0.25, 7, make_fake_stream(use_tvm_ffi_env_stream=True))
    _same_function(cute_bind.kernel(host, compile_options=TVM).compile(*args), cute.compile(host, *args, options=TVM))


def test_the_compile_key_holds_what_the_compile_reads() -> None:
    k = cute_bind.kernel(RowScale(0.5), compile_options=TVM)
    first = k.compile(*_client_args())
    assert k.compile(*_client_args()) is first  # fresh fakes of the same spelling: the same compile
    separate = (_fake(), _fake(), None, cutlass.Float32(0), 0, make_fake_stream(use_tvm_ffi_env_stream=True))
    assert k.compile(*separate) is not first  # two SymInts: two runtime extents the entry checks apart
    assert k.compile(*_client_args(env=False)) is not first  # the stream is an argument of the entry
    plain = cute_bind.kernel(RowScale(0.5)).compile(*_client_args(env=False))
    assert type(plain) is not type(first)  # the options are in the key as well
    assert k.cache_info()["compiled"] == 3


def test_a_tvm_ffi_kernel_never_touches_the_disk_cache() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", cute_bind.CacheWarning)  # an attempted export would warn (CB6xx)
        k = cute_bind.kernel(RowScale(0.25), compile_options=TVM, name="row_scale_no_disk")
        k.compile(*_client_args())
    events = [e for e in cute_bind.cache.history() if e.kernel == "row_scale_no_disk"]
    assert events == []


# ------------------------------------------------------------------ launching a TVM-FFI kernel (CPU tensors)
def _cpu(rows: int, seed: int) -> tuple[Any, Any, Any]:
    g = torch.Generator().manual_seed(seed)
    return torch.zeros(rows, 64), torch.randn(rows, 64, generator=g), torch.randn(rows, 64, generator=g)


@pytest.mark.parametrize("with_bias", [False, True])
def test_bind_is_the_prepared_tvm_ffi_handle(with_bias: bool) -> None:
    host = RowScale(0.5)
    k = cute_bind.kernel(host, compile_options=TVM)
    out, x, b = _cpu(3, 1)
    h = k.bind(out, x, b if with_bias else None, 2.0, 3, 0)
    assert isinstance(h, PreparedTvmFfiLaunch) and h.parameters == ("mO", "mX", "mB", "scale", "n_sm", "stream")
    compiled = k.compile(out, x, b if with_bias else None, 2.0, 3, 0)
    for rows, seed in ((5, 2), (1, 3)):
        out, x, b = _cpu(rows, seed)
        expected = out.clone()
        compiled(expected, x, b if with_bias else None, 1.5, 2, 0)
        h.launch(out, x, b if with_bias else None, 1.5, 2, 0)
        assert torch.equal(out, expected) and not torch.equal(out, torch.zeros_like(out))


def test_calls_launch_through_the_handle_and_specialize() -> None:
    k = cute_bind.kernel(RowScale(0.5), compile_options=TVM)
    for rows, seed in ((2, 1), (7, 2), (3, 3)):
        out, x, b = _cpu(rows, seed)
        expected = out.clone()
        k.compile(out, x, None, 2.0, 1, 0)(expected, x, None, 2.0, 1, 0)
        k(out, x, None, 2.0, 1, 0)
        assert torch.equal(out, expected)
    info = k.cache_info()
    assert (info["specializations"], info["hits"]) == (1, 2)
    out, x, b = _cpu(2, 4)
    expected = out.clone()
    k.compile(out, x, b, 2.0, 1, 0)(expected, x, b, 2.0, 1, 0)
    k(out, x, b, 2.0, 1, 0)  # a tensor for the None bias: the handle refuses it, the call specializes anew
    assert torch.equal(out, expected) and k.cache_info()["specializations"] == 2
    out2 = torch.zeros_like(out)
    k.call_dsl(out2, x, b, 2.0, 1, 0)  # the compiled function's own TVM-FFI call
    assert torch.equal(out2, expected)


def test_values_prepare_does_not_take_give_the_compiled_call() -> None:
    """NumPy arrays have no DLPack exchange API: the handle's launches are the compiled function's own call."""
    np = pytest.importorskip("numpy")
    k = cute_bind.kernel(RowScale(0.0), compile_options=TVM)
    out, x = np.zeros((2, 64), np.float32), np.ones((2, 64), np.float32)
    h = k.bind(out, x, None, 3.0, 0, 0)
    assert h.fast_path == "direct"
    h.launch(out, x, None, 3.0, 0, 0)
    assert (out == 3.0).all()
    with pytest.raises(cute_bind.LaunchValueError) as info:
        h.launch(out, x.astype(np.float64), None, 3.0, 0, 0)
    assert info.value.code == "CB309"


def test_a_launch_with_fakes_is_cb226() -> None:
    k = cute_bind.kernel(RowScale(0.5), compile_options=TVM)
    for how in (k.bind, k):
        with pytest.raises(cute_bind.LaunchArgumentError) as info:
            how(*_client_args())
        assert (info.value.code, info.value.parameter) == ("CB226", "mO")


# ------------------------------------------------------------------ the TVM-FFI environment stream left out of calls
class Affine:
    """A client host (quack's ``Softmax.__call__(self, mX, mO, stream)`` shape); ``stream`` as declared."""

    @cute.jit
    def __call__(self, out: cute.Tensor, inp: cute.Tensor, stream: cuda.CUstream):
        for i in range(cute.size(out, mode=[0])):
            for j in range(cute.size(out, mode=[1])):
                out[i, j] = inp[i, j] * 2.0 + 1.0


class AffineDefaultStream:
    @cute.jit
    def __call__(self, out: cute.Tensor, inp: cute.Tensor, stream: cuda.CUstream = None):
        for i in range(cute.size(out, mode=[0])):
            for j in range(cute.size(out, mode=[1])):
                out[i, j] = inp[i, j] * 2.0 + 1.0


def _env_compile(host: Any) -> tuple[Any, Any]:
    """The client's compile and ours, of fakes and the environment stream."""
    batch = cute.sym_int()
    args = (_fake(batch), _fake(batch), make_fake_stream(use_tvm_ffi_env_stream=True))
    k = cute_bind.kernel(host, compile_options=TVM)
    return k, (k.compile(*args), cute.compile(host, *args, options=TVM))


def _entry_error(fn: Any, *args: Any) -> str:
    with pytest.raises(Exception) as info:
        fn(*args)
    err = info.value
    return str(err.__cause__ if isinstance(err, cute_bind.CuteBindError) else err)


def test_an_env_stream_compile_takes_the_compiled_calls_arguments() -> None:
    """``k(x, o)`` is ``compiled(x, o)``: the stream left out, as the entry takes it from the environment.

    On the CPU the entry refuses CPU tensors (it is compiled for CUDA ones): the call reaches the
    entry and reports its own refusal, word for word, where it used to be CB201 for ``stream``."""
    k, (ours, theirs) = _env_compile(Affine())
    out, x = torch.zeros(3, 64), torch.randn(3, 64)
    expected = _entry_error(theirs, out, x)
    assert "device_type=cuda" in expected
    with pytest.raises(cute_bind.LaunchValueError) as info:
        k(out, x)
    assert info.value.code == "CB309" and str(info.value.__cause__) == expected
    assert _entry_error(k.call_dsl, out, x) == expected
    h = k.bind(out, x)
    assert h.parameters == ("out", "inp")  # the entry's own, no stream
    assert k.cache_info()["compiled"] == 1 and torch.equal(out, torch.zeros(3, 64))


def test_a_stream_given_or_no_env_compile_keeps_the_normal_path() -> None:
    k, _ = _env_compile(Affine())
    out, x = torch.zeros(2, 64), torch.randn(2, 64)
    k(out, x, 0)  # a stream given: the stream-argument compile of these values, as before
    assert torch.equal(out, x * 2 + 1)
    assert k.cache_info()["compiled"] == 2
    with pytest.raises(TypeError):
        k.compile(_fake(), _fake(), make_fake_stream(use_tvm_ffi_env_stream=True))(out, x, 0)  # the entry refuses a stream
    with pytest.raises(cute_bind.LaunchValueError) as refused:
        k(out, x)  # left out: the env-stream compile's entry (which refuses CPU tensors), not the stream-argument one
    assert refused.value.code == "CB309" and "device_type=cuda" in str(refused.value)
    k.clear_cache()  # no env-stream compile left: a required stream left out is CB201 again
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        k(out, x)
    assert (info.value.code, info.value.parameter) == ("CB201", "stream")


def test_a_default_none_stream_prefers_the_env_compile_and_falls_back() -> None:
    """``stream=None`` left out: the env-stream compile when its entry takes the values, else the current stream."""
    k, (ours, theirs) = _env_compile(AffineDefaultStream())
    calls: list[tuple[Any, ...]] = []
    entry = next(iter(k.compiler.env.values()))
    real = entry.call.launch

    def spy(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    entry.call.launch = spy  # type: ignore[method-assign]
    out, x = torch.zeros(2, 64), torch.randn(2, 64)
    k(out, x)  # the entry refuses CPU tensors: the current-stream path launches them
    assert torch.equal(out, x * 2 + 1) and len(calls) == 1 and calls[0][0] is out and len(calls[0]) == 2


def test_a_second_env_stream_call_takes_the_installed_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a call the env-stream compile took, the thread's caller is its prepared handle's launch:
    the next call of the same shape never enters the dispatch path; one the handle refuses still does.

    The CPU entry refuses CPU tensors, so the compile's function is replaced by one that takes them
    (the handle is then its direct call, as prepare() gives for a function it cannot read)."""
    k, _ = _env_compile(Affine())
    entry = next(iter(k.compiler.env.values()))
    taken: list[int] = []

    def entry_fn(out: Any, inp: Any) -> None:  # the entry's own parameters: the stream left out
        taken.append(len(taken))
        out.copy_(inp * 2 + 1)

    entry.compiled, entry.call = entry_fn, type(entry.call)(k.name, entry_fn)
    dispatched: list[int] = []
    real = k.compiler.env_find
    monkeypatch.setattr(k.compiler, "env_find", lambda *a: dispatched.append(1) or real(*a))
    for rows in (2, 5, 3):
        out, x = torch.zeros(rows, 64), torch.randn(rows, 64)
        k(out, x)
        assert torch.equal(out, x * 2 + 1)
    assert (len(taken), len(dispatched), k.cache_info()["hits"]) == (3, 1, 3)  # only the first dispatched
    out, x = torch.zeros(2, 64), torch.randn(2, 64)
    k(out, x, 0)  # a stream given: the handle refuses it, the dispatch path compiles the stream-argument compile
    assert torch.equal(out, x * 2 + 1) and len(taken) == 3 and len(dispatched) == 2
    assert k.cache_info()["specializations"] == 1 and k.cache_info()["compiled"] == 2


class ScaleBy:
    """quack's split-k reduce shape: ``alpha`` a Float32 or a pointer to one (``data_ptr()`` at the call)."""

    @cute.jit
    def __call__(self, out: cute.Tensor, inp: cute.Tensor, alpha: Optional[cutlass.Float32 | cute.Pointer], stream: cuda.CUstream):
        a = cutlass.Float32(1.0)
        if cutlass.const_expr(isinstance(alpha, cute.Pointer)):
            a = cute.make_tensor(alpha, cute.make_layout(1))[0]
        elif cutlass.const_expr(alpha is not None):
            a = alpha
        for i in range(cute.size(out, mode=[0])):
            for j in range(cute.size(out, mode=[1])):
                out[i, j] = inp[i, j] * a


def test_bind_of_an_env_compile_takes_an_int_address_for_a_pointer_member() -> None:
    """``k.bind(out, x, alpha.data_ptr())`` after the client's compile with ``make_ptr(...)`` for ``alpha``:
    the handle of that compile (the entry takes the int as the address), where it was CB230 ("a number or
    an address?") as for a value of no member; an int beside a pointer member with no compile stays CB230."""
    from cutlass.cute.runtime import make_ptr

    batch = cute.sym_int()
    args = (
        _fake(batch),
        _fake(batch),
        make_ptr(cutlass.Float32, 0, cute.AddressSpace.gmem, assumed_align=4),
        make_fake_stream(use_tvm_ffi_env_stream=True),
    )
    k = cute_bind.kernel(ScaleBy(), compile_options=TVM)
    k.compile(*args)
    out, x, alpha = torch.zeros(2, 64), torch.randn(2, 64), torch.tensor([3.0])
    h = k.bind(out, x, alpha.data_ptr())
    assert h.parameters == ("out", "inp", "alpha")
    assert k.cache_info()["compiled"] == 1  # the client's compile, no other
    h = k.bind(out, x, alpha.data_ptr(), 0)  # the stream given: the sibling of the same compile, explicit stream
    assert h.parameters == ("out", "inp", "alpha", "stream")
    assert k.cache_info()["compiled"] == 2  # that compile's sibling (same fakes, explicit stream), not the int's
    plain = cute_bind.kernel(ScaleBy())  # no env-stream compile: the value's own kind decides, and an int is none
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        plain.bind(out, x, alpha.data_ptr(), 0)
    assert info.value.code == "CB230"


def test_a_constant_structure_compiles_without_the_dsls_annotate_it_warning() -> None:
    """FlashAttention-4's ``aux_data`` (a NamedTuple of Nones): the DSL warns on every compile that it cannot
    convert it and should be annotated Constexpr; the structure slot took it as the constant it is, so the
    decorator's compile does not pass the warning on (other warnings still reach the user)."""
    from tests.kernels import host

    k = cute_bind.kernel(host.topt)
    out, x = torch.zeros(4), torch.arange(4.0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        k(out, x, None, 2.0)
    assert [str(w.message) for w in seen if "JitArgument" in str(w.message)] == []
    assert torch.equal(out, x * 2)
    with warnings.catch_warnings(record=True) as direct:  # the DSL's own compile does warn: the test can fail
        warnings.simplefilter("always")
        from cutlass.cute.runtime import from_dlpack

        cute.compile(host.topt, from_dlpack(out), from_dlpack(x), None, 2.0)
    assert any("JitArgument" in str(w.message) for w in direct)


class MidStream:
    """A stream declared ``= None`` before other defaulted parameters (FlashAttention-style hosts)."""

    @cute.jit
    def __call__(
        self, out: cute.Tensor, inp: cute.Tensor, stream: cuda.CUstream = None, scale: cutlass.Float32 = 2.0, shift: cutlass.Float32 = 0.0
    ):
        for i in range(cute.size(out, mode=[0])):
            for j in range(cute.size(out, mode=[1])):
                out[i, j] = inp[i, j] * scale + shift


@pytest.mark.parametrize(
    "call, want",
    [
        (lambda k, out, x: k(out, x, shift=1.0), (2.0, 1.0)),
        (lambda k, out, x: k(out, x, scale=3.0), (3.0, 0.0)),
        (lambda k, out, x: k(out, x, None, 4.0), (4.0, 0.0)),
        (lambda k, out, x: k(out, x, stream=None, shift=5.0, scale=6.0), (6.0, 5.0)),
        (lambda k, out, x: k(out, x), (2.0, 0.0)),
    ],
)
def test_an_env_stream_handle_gets_the_entrys_own_parameters(call: Any, want: tuple[float, float]) -> None:
    """The environment-stream entry leaves the stream out: a call holding it at its position (None, or
    a keyword call placed by name) reaches the entry without it, every later value in its own place."""
    batch = cute.sym_int()
    k = cute_bind.kernel(MidStream(), compile_options=TVM)
    k.compile(_fake(batch), _fake(batch), make_fake_stream(use_tvm_ffi_env_stream=True), cutlass.Float32(2.0), cutlass.Float32(0.0))
    entry = next(iter(k.compiler.env.values()))
    seen: list[tuple[Any, ...]] = []

    def entry_fn(out: Any, inp: Any, scale: Any, shift: Any) -> None:  # the entry's own parameters: the stream left out
        seen.append((scale, shift))

    entry.compiled, entry.call = entry_fn, type(entry.call)(k.name, entry_fn)
    out, x = torch.zeros(2, 64), torch.randn(2, 64)
    for _ in range(3):  # the first call installs the handle; the next ones take it
        call(k, out, x)
    assert seen == [want] * 3


class UnannotatedStream:
    """flashinfer's norms: a class kernel whose ``stream`` has no annotation, compiled with a fake stream."""

    @cute.jit
    def __call__(self, x: cute.Tensor, stream):  # noqa: ANN001 - the client's spelling
        for i in range(cute.size(x)):
            x[i] = x[i] + cutlass.Float32(1.0)


class AnnotatedStream:
    @cute.jit
    def __call__(self, x: cute.Tensor, stream: cuda.CUstream):
        for i in range(cute.size(x)):
            x[i] = x[i] + cutlass.Float32(1.0)


@pytest.mark.parametrize("env", [True, False], ids=["env-stream", "explicit-stream"])
def test_an_unannotated_stream_takes_the_clients_fake_stream(env: bool) -> None:
    """Before: CB204 at compile() ("a JitArgument object ... is marshalled by its own code"): the kind
    read from a fake stream was none; cute.compile takes it. The kind read from it is a stream."""
    x = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),))
    k = cute_bind.kernel(UnannotatedStream(), compile_options=TVM, cache=False)
    compiled = k.compile(x, make_fake_stream(use_tvm_ffi_env_stream=env))
    reference = cute.compile(UnannotatedStream(), x, make_fake_stream(use_tvm_ffi_env_stream=env), options=TVM)
    assert list(inspect.signature(compiled).parameters) == list(inspect.signature(reference).parameters)
    # the kind read from the compile's value is a stream's from then on, as annotated: the compile from
    # fakes serves every stream form (an int handle was read as an Int32 and compiled its own values)
    assert "stream: CUstream" in repr(k) or "stream: cuda" in repr(k), repr(k)
    twin = cute_bind.kernel(AnnotatedStream(), compile_options=TVM, cache=False)  # the same class, annotated
    twin.compile(x, make_fake_stream(use_tvm_ffi_env_stream=env))
    for kernel in (k, twin):
        for call in (lambda t: kernel(t, 0), lambda t: kernel(t, cuda.CUstream(0)), lambda t: kernel.bind(t, 0).launch(t, 0)):
            t = torch.zeros(4)
            call(t)
            assert t.tolist() == [1.0] * 4
    assert k.cache_info()["compiled"] == twin.cache_info()["compiled"] == 2  # the compile and its sibling, no more
