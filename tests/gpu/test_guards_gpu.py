"""Specializations as guards on a GPU, TVM-FFI forms (issue 40 item 1; the CPU forms are in
tests/jit/test_guards.py): a kernel compiled the way quack compiles it (fake tensors with a static
N and 16-byte alignment, the TVM-FFI environment stream) serves real calls with the stream left out,
with an explicit stream through ``bind()`` and ``kernel(...)`` (the sibling compiled from the same
fakes), bitwise equal to the package's own compiled function; a call none takes is CB315."""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

import cute_bind
from tests.kernels.guards import rows64
from tests.optional import torch_or_skip

torch = torch_or_skip()
pytestmark = pytest.mark.gpu
TVM = "--enable-tvm-ffi"


@pytest.fixture(autouse=True)
def _cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")


def _fakes() -> tuple[Any, ...]:
    rows = cute.sym_int()
    x = make_fake_tensor(cutlass.Float32, (rows, 64), stride=(64, 1), assumed_align=16)
    o = make_fake_tensor(cutlass.Float32, (rows, 64), stride=(64, 1), assumed_align=16)
    return x, o, cutlass.Float32(0.5), make_fake_stream(use_tvm_ffi_env_stream=True)


def _theirs() -> Any:
    """The package's own function: cute.compile of the same fakes (the environment stream)."""
    return cute.compile(rows64, *_fakes(), options=TVM)


def _inputs(rows: int) -> tuple[Any, Any, Any]:
    x = torch.randn(rows, 64, device="cuda", generator=torch.Generator("cuda").manual_seed(rows))
    return x, torch.zeros_like(x), torch.zeros_like(x)


def test_every_stream_form_is_served_by_the_compile_from_fakes() -> None:
    k = cute_bind.kernel(rows64, compile_options=TVM, cache=False)
    k.compile(*_fakes())
    theirs = _theirs()
    s = torch.cuda.Stream()
    for rows in (3, 100):
        x, mine, ref = _inputs(rows)
        theirs(x, ref, 0.25)
        k(x, mine, 0.25)  # the stream left out: the environment stream, as before
        torch.cuda.synchronize()
        assert torch.equal(mine, ref)
        mine.zero_()
        k(x, mine, 0.25, s.cuda_stream)  # explicit: the sibling compiled from the same fakes
        s.synchronize()
        assert torch.equal(mine, ref)
        mine.zero_()
        h = k.bind(x, mine, 0.25, s.cuda_stream)
        h.launch(x, mine, 0.25, s.cuda_stream)
        s.synchronize()
        assert torch.equal(mine, ref)
    assert k.cache_info()["compiled"] == 2  # the env compile and its one sibling: nothing from real tensors


def test_a_call_no_compile_takes_is_cb315_naming_the_guard() -> None:
    k = cute_bind.kernel(rows64, compile_options=TVM, cache=False)
    k.compile(*_fakes())
    s = torch.cuda.Stream()
    for x, o, parameter in (
        (torch.zeros(4, 32, device="cuda"), torch.zeros(4, 32, device="cuda"), "mX"),  # N = 32, compiled 64
        (torch.zeros(4 * 64 + 1, device="cuda")[1:].view(4, 64), torch.zeros(4, 64, device="cuda"), "mX"),  # 4-byte aligned
    ):
        with pytest.raises(cute_bind.CuteBindError) as info:
            k(x, o, 0.25, s.cuda_stream)
        assert info.value.code == "CB315" and f"parameter '{parameter}'" in str(info.value), info.value
