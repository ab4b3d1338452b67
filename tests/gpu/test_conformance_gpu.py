"""GPU conformance: device kernels in real CuTe DSL styles, prepared and bound, bitwise against the direct call.

The device variants of ``tests/kernels/styles.py`` (a callable object launching
its kernel from a helper method, a Constexpr between the tensors and the
stream, an Optional scalar passed None and not, a stream default; twelve
unannotated tensors; fake tensors and fake streams at compile time), compiled
as such code compiles them, then two argument sets each; and the same kernel
compiled with ``--enable-tvm-ffi`` and the environment stream, prepared and
launched with torch tensors on the current stream and on a side stream.
"""

from __future__ import annotations

import os

from typing import Any

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cuda.bindings.driver as cuda  # noqa: E402
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor, make_fake_stream  # noqa: E402

import cute_bind  # noqa: E402
from tests.kernels import styles as S  # noqa: E402

pytestmark = pytest.mark.gpu


def fresh(seed: int, n: int) -> Any:
    return torch.randn(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed))


def nan_like(x: Any) -> Any:
    return torch.full_like(x, float("nan"))


def dyn(t: Any) -> Any:
    return from_dlpack(t, assumed_align=16).mark_layout_dynamic()


def fake() -> Any:
    return make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),), assumed_align=16)


def stream() -> Any:
    return cuda.CUstream(torch.cuda.current_stream().cuda_stream)


@pytest.mark.parametrize("shift", [None, 0.75], ids=["shift_none", "shift_value"])
@pytest.mark.parametrize("compile_with", ["marked", "fake"])
def test_callable_object_helper_launch(shift: Any, compile_with: str) -> None:
    obj = S.DeviceAxpby()
    x, y = fresh(1, 4096), fresh(2, 4096)
    out = nan_like(x)
    if compile_with == "fake":
        cargs = [fake(), fake(), fake()]
    else:
        cargs = [dyn(x), dyn(y), dyn(out)]
    cshift = None if shift is None else cutlass.Float32(shift)
    compiled = cute.compile(obj, *cargs, True, cshift, make_fake_stream(), cutlass.Float32(2.0))
    handle = cute_bind.prepare(compiled, dyn(x), dyn(y), dyn(out), shift, stream(), 2.0)
    for seed, n in ((3, 4096), (4, 1000)):
        x, y = fresh(seed, n), fresh(seed + 10, n)
        ref, out = nan_like(x), nan_like(x)
        compiled(dyn(x), dyn(y), dyn(ref), shift, stream(), 1.5)
        handle.launch(x, y, out, shift, stream(), 1.5)
        torch.cuda.synchronize()
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32))
        assert not torch.isnan(out).any()


def test_twelve_unannotated_tensors() -> None:
    compiled = cute.compile(S.device_many, *[fake() for _ in range(12)], make_fake_stream())
    assert len(compiled.function_name) == 180  # the entry symbol is cut
    ts = [dyn(fresh(k, 2048)) for k in range(12)]
    handle = cute_bind.prepare(compiled, *ts, stream())
    for seed, n in ((20, 2048), (40, 777)):
        ins = [fresh(seed + k, n) for k in range(11)]
        ref, out = nan_like(ins[0]), nan_like(ins[0])
        compiled(dyn(ref), *[dyn(t) for t in ins], stream())
        handle.launch(out, *ins, stream())
        torch.cuda.synchronize()
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32))


# ------------------------------------------------------------------ TVM-FFI compiled, environment stream
@pytest.fixture(scope="module")
def tvm_axpby() -> Any:
    pytest.importorskip("tvm_ffi")
    return cute.compile(
        S.DeviceAxpby(), fake(), fake(), fake(), False, None, make_fake_stream(use_tvm_ffi_env_stream=True),
        cutlass.Float32(2.0), options="--enable-tvm-ffi",
    )  # fmt: skip


@pytest.mark.parametrize("on", ["current_stream", "side_stream"])
def test_tvm_ffi_prepared_matches_the_tvm_ffi_call(tvm_axpby: Any, on: str) -> None:
    x, y = fresh(50, 4096), fresh(51, 4096)
    handle = cute_bind.prepare(tvm_axpby, x, y, nan_like(x), None)
    # the TVM-FFI fast path is C only: CUTE_BIND_PURE_PYTHON=1 makes the handle call the function itself
    assert handle.fast_path == ("direct" if os.environ.get("CUTE_BIND_PURE_PYTHON", "") not in ("", "0") else "c")
    side = torch.cuda.Stream()
    for seed, n in ((52, 4096), (53, 3000)):
        x, y = fresh(seed, n), fresh(seed + 1, n)
        torch.cuda.synchronize()
        ref, out = nan_like(x), nan_like(x)
        torch.cuda.synchronize()
        if on == "side_stream":
            with torch.cuda.stream(side):
                tvm_axpby(x, y, ref, None, 1.25)
                handle.launch(x, y, out, None, 1.25)
            side.synchronize()  # only the side stream: both launches must have gone there
        else:
            tvm_axpby(x, y, ref, None, 1.25)
            handle.launch(x, y, out, None, 1.25)
            torch.cuda.current_stream().synchronize()
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32))
        assert not torch.isnan(out).any()


def test_tvm_ffi_prepared_keyword_launches_match_the_tvm_ffi_call(tvm_axpby: Any) -> None:
    """Keywords placed by the C launcher (the environment stream left out, alpha by name), on a side stream."""
    x, y = fresh(54, 4096), fresh(55, 4096)
    handle = cute_bind.prepare(tvm_axpby, x, y, nan_like(x), None)
    side = torch.cuda.Stream()
    for alpha in (0.75, -3.0):
        ref, out = nan_like(x), nan_like(x)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            tvm_axpby(x, y, ref, None, alpha)
            handle.launch(x, y, out=out, alpha=alpha, shift=None)
        side.synchronize()
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32))
        assert not torch.isnan(out).any()


def test_tvm_ffi_entry_refusal_is_cb309(tvm_axpby: Any) -> None:
    if os.environ.get("CUTE_BIND_PURE_PYTHON", "") not in ("", "0"):
        pytest.skip("CB309 wraps the C fast path's refusal; the pure-Python handle raises the function's own error")
    x = fresh(60, 1024)
    handle = cute_bind.prepare(tvm_axpby, x, x, nan_like(x), None)
    with pytest.raises(ValueError) as info:
        handle.launch(x, x.double(), nan_like(x), None)
    assert info.value.code == "CB309"  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        handle.launch(x, x.cpu(), nan_like(x), None)  # a host tensor for a device parameter
