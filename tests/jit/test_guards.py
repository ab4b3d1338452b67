"""Specializations as guards (issue 40 item 1, cute_bind/jit/guards.py): a kernel compiled with
``kernel.compile(*fakes)`` from the client's fake tensors serves real calls its compiled function
takes, through ``bind()`` and ``kernel(...)``, with the stream given; a call no compile takes
compiles for its own values, and where that fails the error names the guards (CB315).

Host-only functions on the CPU (their fake tensors describe host memory here); the TVM-FFI forms,
whose entries take CUDA tensors only, run in tests/gpu/test_guards_gpu.py.
"""

from __future__ import annotations

from typing import Any

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import from_dlpack, make_fake_stream, make_fake_tensor

import cute_bind
from tests.kernels.guards import rows4, rows4_default_stream, rows4_weighted, scaled_rows
from tests.optional import torch_or_skip

torch = torch_or_skip()


def _fakes(n: int = 4, align: int = 16, dtype: Any = cutlass.Float32, shared: bool = False) -> tuple[Any, Any]:
    rows = cute.sym_int()
    return (
        make_fake_tensor(dtype, (rows, n), stride=(n, 1), assumed_align=align),
        make_fake_tensor(dtype, (rows if shared else cute.sym_int(), n), stride=(n, 1), assumed_align=align),
    )


def _kernel(host: Any = rows4) -> Any:
    k = cute_bind.kernel(host, cache=False)
    k.compile(*_fakes(), cutlass.Float32(0.5), make_fake_stream())
    assert k.cache_info()["compiled"] == 1
    return k


def _expected(x: Any, eps: float) -> bytes:
    return (x.numpy() * np.float32(2.0) + np.float32(eps)).tobytes()


STREAMS = [("int", lambda: 0), ("CUstream", lambda: cuda.CUstream(0))]


@pytest.mark.parametrize("form, stream", STREAMS, ids=[s[0] for s in STREAMS])
def test_bind_with_a_stream_takes_the_compile_from_fakes(path: str, form: str, stream: Any) -> None:
    """Before: bind() compiled again from the real tensors (a dynamic N) and the client's
    const_expr(N == 4) failed inside the DSL (CB310)."""
    k = _kernel()
    x, out = torch.randn(3, 4), torch.zeros(3, 4)
    h = k.bind(x, out, 0.25, stream())
    for rows in (3, 7):  # new tensors, another row count: the fakes' SymInt
        x, out = torch.randn(rows, 4), torch.zeros(rows, 4)
        h.launch(x, out, 0.25, stream())
        assert out.numpy().tobytes() == _expected(x, 0.25)
    assert k.cache_info()["compiled"] == 1  # nothing compiled from the real tensors


def test_calls_with_a_stream_take_the_compile_from_fakes(path: str) -> None:
    k = _kernel()
    for rows, eps in ((3, 0.5), (5, -1.0), (5, 2.0)):
        x, out = torch.randn(rows, 4), torch.zeros(rows, 4)
        k(x, out, eps, 0)
        assert out.numpy().tobytes() == _expected(x, eps)
    x, out = torch.randn(2, 4), torch.zeros(2, 4)
    k(mO=out, mX=x, eps=1.5, stream=cuda.CUstream(0))  # by keyword
    assert out.numpy().tobytes() == _expected(x, 1.5)
    assert k.cache_info()["compiled"] == 1
    spec = k.specializations()[-1]
    assert "served by a compile() of the kernel" in spec.reason


def test_a_stream_left_out_takes_the_compile_from_fakes(path: str) -> None:
    k = _kernel(rows4_default_stream)
    x, out = torch.randn(3, 4), torch.zeros(3, 4)
    k(x, out, 0.5)
    assert out.numpy().tobytes() == _expected(x, 0.5)
    assert k.cache_info()["compiled"] == 1


def test_numpy_arrays_are_served_too(path: str) -> None:
    k = _kernel()
    x, out = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32), np.zeros((3, 4), np.float32)
    k(x, out, 0.5, 0)
    assert out.tobytes() == (x * np.float32(2.0) + np.float32(0.5)).tobytes()


GUARDS = [
    # (what differs, the call's tensors, the parameter the refusal names, the catalog code in it)
    ("static extent", lambda: (torch.zeros(3, 8), torch.zeros(3, 8)), "mX", "CB213"),
    ("element type", lambda: (torch.zeros(3, 4, dtype=torch.float64), torch.zeros(3, 4, dtype=torch.float64)), "mX", "CB211"),
    ("rank", lambda: (torch.zeros(3, 4, 1), torch.zeros(3, 4, 1)), "mX", "CB212"),
    ("alignment", lambda: (torch.zeros(13)[1:].view(3, 4), torch.zeros(3, 4)), "mX", "CB207"),
    ("static stride", lambda: (torch.zeros(3, 8)[:, :4], torch.zeros(3, 4)), "mX", "CB213"),
]


@pytest.mark.parametrize("name, make, parameter, code", GUARDS, ids=[g[0] for g in GUARDS])
def test_a_call_no_compile_takes_names_the_guard(path: str, name: str, make: Any, parameter: str, code: str) -> None:
    """The call's own compile (a dynamic N) fails in the client's code: CB315 names the compile()
    and the guard that refused the call, chained to the DSL's error (CB310), never CB310 alone."""
    k = _kernel()
    x, out = make()
    for call in (lambda: k(x, out, 0.5, 0), lambda: k.bind(x, out, 0.5, 0)):
        with pytest.raises(cute_bind.CuteBindError) as info:
            call()
        err = info.value
        if err.code == "CB315":
            assert f"parameter '{parameter}'" in str(err) and f"[{code}]" in str(err)
            assert isinstance(err.__cause__, cute_bind.CuteBindError) and err.__cause__.code == "CB310"
            assert "fake Float32 tensor of shape (?, 4)" in str(err)
        else:  # the call's own values are refused before any compile (its own binding)
            assert err.code in ("CB211", "CB212"), err
    assert k.cache_info()["compiled"] == 1


def test_a_call_its_own_compile_takes_is_compiled_as_before(path: str) -> None:
    """A call no compile() takes but whose own values compile (no const_expr on N here) compiles."""
    k = cute_bind.kernel(scaled_rows, cache=False)
    a, b = _fakes(n=4)
    k.compile(a, b, 3)
    x, out = torch.randn(2, 8), torch.zeros(2, 8)  # N = 8: not the fakes' static 4
    k(x, out, 3)
    assert out.numpy().tobytes() == (x.numpy() * np.float32(3)).tobytes()
    assert k.cache_info()["compiled"] == 2
    x, out = torch.randn(2, 4), torch.zeros(2, 4)
    k(x, out, 5)  # another Constexpr value: that compile() does not hold it
    assert out.numpy().tobytes() == (x.numpy() * np.float32(5)).tobytes()
    assert k.cache_info()["compiled"] == 3


def test_the_newest_compile_that_takes_the_call_serves_it(path: str) -> None:
    k = cute_bind.kernel(scaled_rows, cache=False)
    k.compile(*_fakes(n=4), 3)
    k.compile(*_fakes(n=8), 3)
    for n in (4, 8):
        x, out = torch.randn(2, n), torch.zeros(2, n)
        k(x, out, 3)
        assert out.numpy().tobytes() == (x.numpy() * np.float32(3)).tobytes()
    assert k.cache_info()["compiled"] == 2


def test_clear_cache_forgets_the_compiles(path: str) -> None:
    k = _kernel()
    k.clear_cache()
    x, out = torch.randn(3, 4), torch.zeros(3, 4)
    with pytest.raises(cute_bind.CuteBindError) as info:
        k(x, out, 0.5, 0)
    assert info.value.code == "CB310"  # no compile() left: the call's own compile, as before


def test_fakes_sharing_a_symint_serve_no_plain_call(path: str) -> None:
    """Two modes compiled from one SymInt are one value to the compiled code (it may index one tensor
    by the other's extent): a TVM-FFI entry checks them at every call, a plain launch cannot, so such
    a compile serves no call of a plain kernel, and a call whose own compile fails is CB315 naming it
    (a served handle took 4000 rows into a 3-row output before)."""
    k = cute_bind.kernel(rows4, cache=False)
    k.compile(*_fakes(shared=True), cutlass.Float32(0.5), make_fake_stream())
    x, out = torch.randn(3, 4), torch.zeros(3, 4)
    with pytest.raises(cute_bind.CuteBindError) as info:
        k(x, out, 0.5, 0)
    assert info.value.code == "CB315" and "share a SymInt" in str(info.value)
    assert k.cache_info()["compiled"] == 1


def test_a_torch_op_over_the_kernel_is_served_by_the_compile_from_fakes(path: str) -> None:
    """The op's eager call launches through the kernel: a call the fakes' compile takes is served by it
    (before: compiled again from the real tensors, and the client's const_expr(N == 4) failed)."""
    import cute_bind.torch as cbt

    k = _kernel(rows4_default_stream)
    op = cbt.op(f"cbtest_guards::rows4_from_fakes_{path}", k, outputs={"mO": "mX"})
    for rows, eps in ((3, 0.5), (6, -1.0)):
        x = torch.randn(rows, 4)
        out = op(x, eps)
        out = out[0] if isinstance(out, tuple) else out
        assert out.numpy().tobytes() == _expected(x, eps)
    assert k.cache_info()["compiled"] == 1  # nothing compiled from the real tensors


@cute.jit
def copy8(mX: cute.Tensor, mO: cute.Tensor):
    for i in range(cute.size(mX)):
        mO[i] = mX[i]


@pytest.mark.parametrize("dtype", [cutlass.Float8E4M3FN, cutlass.Float8E5M2], ids=["e4m3fn", "e5m2"])
def test_fp8_data_as_uint8_views_is_served_by_the_fp8_compile(path: str, dtype: Any) -> None:
    """A client compiles from FP8 fakes and passes uint8 views of the data: the same bytes, served by
    that compile (not a Uint8 specialization); a uint8 tensor for a 16-bit fake is still refused."""
    k = cute_bind.kernel(copy8, cache=False)
    fake = make_fake_tensor(dtype, (cute.sym_int(),), stride=(1,), memspace=cute.AddressSpace.generic)
    k.compile(fake, make_fake_tensor(dtype, (cute.sym_int(),), stride=(1,), memspace=cute.AddressSpace.generic))
    x = torch.randint(0, 255, (8,), dtype=torch.uint8)
    out = torch.zeros(8, dtype=torch.uint8)
    k(x, out)
    assert torch.equal(out, x) and k.cache_info()["compiled"] == 1
    h = k.bind(x, out)
    y, out2 = torch.randint(0, 255, (5,), dtype=torch.uint8), torch.zeros(5, dtype=torch.uint8)
    h.launch(y, out2)
    assert torch.equal(out2, y)
    k16 = cute_bind.kernel(copy8, cache=False)
    k16.compile(*(make_fake_tensor(cutlass.Float16, (cute.sym_int(),), stride=(1,), memspace=cute.AddressSpace.generic) for _ in range(2)))
    values = {"mX": x, "mO": out}
    served, refusals = k16.compiler.serve(values, k16.compiler.bind_values(values))
    assert served is None and refusals[0].parameter == "mX"


# ------------------------------------------------------------------ compile() from real tensors
REAL_COMPILES = [
    # (how the example compiles: from_dlpack of a real array, as the CUTLASS examples do)
    ("from_dlpack", lambda a: from_dlpack(a)),
    ("from_dlpack aligned", lambda a: from_dlpack(a, assumed_align=16)),
]


@pytest.mark.parametrize("name, wrap", REAL_COMPILES, ids=[r[0] for r in REAL_COMPILES])
def test_a_compile_from_real_tensors_serves_plain_tensors_with_its_layout(path: str, name: str, wrap: Any) -> None:
    """Before: compile(from_dlpack(x)) gave a static (3, 4) specialization, and a call with the
    plain (3, 4) arrays bound them with the default dynamic layout, compiled that, and the
    client's const_expr(N == 4) failed inside the DSL (CB315 naming an internal key tuple)."""
    k = cute_bind.kernel(rows4, cache=False)
    x0, o0 = np.ones((3, 4), np.float32), np.zeros((3, 4), np.float32)
    k.compile(wrap(x0), wrap(o0), cutlass.Float32(0.5), 0)
    for make in (lambda: np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32), lambda: torch.randn(3, 4)):
        x = make()
        out = np.zeros((3, 4), np.float32) if isinstance(x, np.ndarray) else torch.zeros(3, 4)
        k(x, out, 0.25, 0)
        got = out if isinstance(out, np.ndarray) else out.numpy()
        xs = x if isinstance(x, np.ndarray) else x.numpy()
        assert got.tobytes() == (xs * np.float32(2.0) + np.float32(0.25)).tobytes()
        h = k.bind(x, out, 0.5, 0)
        h.launch(x, out, 1.5, 0)
        got = out if isinstance(out, np.ndarray) else out.numpy()
        assert got.tobytes() == (xs * np.float32(2.0) + np.float32(1.5)).tobytes()
    assert k.cache_info()["compiled"] == 1  # no compile for the plain tensors' own (dynamic) layout
    # the compile's static extents are its guards: another row count is refused, naming them
    with pytest.raises(cute_bind.CuteBindError) as info:
        k(torch.zeros(5, 4), torch.zeros(5, 4), 0.5, 0)
    assert info.value.code == "CB315" and "[CB213]" in str(info.value) and "parameter 'mX'" in str(info.value)
    assert "<class" not in str(info.value)  # the values described, not the compile key's tuples


def test_a_compile_from_fake_mode_tensors_serves_real_ones(path: str) -> None:
    """FlashAttention-4's CPU compile mode: from_dlpack of FakeTensorMode tensors at compile(). The record
    is read again as compile() read it (no data behind it) and serves real tensors of that layout."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    k = cute_bind.kernel(rows4, cache=False)
    with FakeTensorMode():
        x, o = torch.empty(3, 4), torch.empty(3, 4)
    k.compile(from_dlpack(x), from_dlpack(o), cutlass.Float32(0.5), 0)
    t, out = torch.randn(3, 4), torch.zeros(3, 4)
    k(t, out, 0.5, 0)
    assert out.numpy().tobytes() == _expected(t, 0.5)
    assert k.cache_info()["compiled"] == 1


# ------------------------------------------------------------------ Optional[cute.Tensor] parameters
def _weighted_expected(x: Any, w: Any, eps: float) -> bytes:
    return (x.numpy() * np.float32(2.0) * w.numpy() + np.float32(eps)).tobytes()


WEIGHT_COMPILES = [
    # (how the weight reaches compile(): a fake tensor as quack's norms compile, from_dlpack of a real one)
    ("fake", lambda: make_fake_tensor(cutlass.Float32, (4,), stride=(1,), assumed_align=16)),
    ("from_dlpack", lambda: from_dlpack(torch.ones(4), assumed_align=16)),
]


@pytest.mark.parametrize("name, weight", WEIGHT_COMPILES, ids=[w[0] for w in WEIGHT_COMPILES])
def test_an_optional_tensor_compiled_from_a_tensor_is_guarded_as_one(path: str, name: str, weight: Any) -> None:
    """quack's RMSNorm (``mW: Optional[cute.Tensor]``) compiled from fakes, then called with a stream:
    before, the guards took only ``cute.Tensor`` slots, refused the weight (CB213 "the slot takes a
    cute.Tensor parameter, got Optional[cute.Tensor]") and the call's own compile failed (CB315)."""
    k = cute_bind.kernel(rows4_weighted, cache=False)
    x0, o0 = _fakes()
    k.compile(x0, weight(), o0, cutlass.Float32(0.5), make_fake_stream())
    for rows, eps in ((3, 0.5), (6, -1.25)):
        x, w, out = torch.randn(rows, 4), torch.randn(4), torch.zeros(rows, 4)
        k(x, w, out, eps, 0)
        assert out.numpy().tobytes() == _weighted_expected(x, w, eps)
    h = k.bind(x, w, out, 0.5, cuda.CUstream(0))
    x, w, out = torch.randn(2, 4), torch.randn(4), torch.zeros(2, 4)
    h.launch(x, w, out, 0.75, 0)
    assert out.numpy().tobytes() == _weighted_expected(x, w, 0.75)
    assert k.cache_info()["compiled"] == 1
    # the compile read a tensor there: None, or a tensor of another length, is refused naming the weight
    for bad, code in ((None, "CB213"), (torch.randn(8), "CB213"), (torch.randn(4, dtype=torch.float64), "CB211")):
        with pytest.raises(cute_bind.KernelCompileError) as info:
            k(x, bad, out, 0.5, 0)
        assert info.value.code == "CB315" and f"[{code}]" in str(info.value) and "parameter 'mW'" in str(info.value)


def test_an_optional_tensor_compiled_as_none_serves_calls_without_it(path: str) -> None:
    k = cute_bind.kernel(rows4_weighted, cache=False)
    x0, o0 = _fakes()
    k.compile(x0, None, o0, cutlass.Float32(0.5), make_fake_stream())
    x, out = torch.randn(3, 4), torch.zeros(3, 4)
    k(x, None, out, 0.5, 0)
    assert out.numpy().tobytes() == _expected(x, 0.5)
    assert k.cache_info()["compiled"] == 1
