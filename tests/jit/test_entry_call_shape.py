"""A kernel called as its environment-stream entry is called: the stream left out of the positions.

An entry compiled with the TVM-FFI environment stream has no stream parameter, so a client that
calls it positionally passes the arguments after the stream one place earlier (quack's GEMM calls
``compiled(A, B, D, C, epilogue_args, scheduler_args, varlen_args, SFA, SFB)`` for a host taking
``(mA, mB, mD, mC, epilogue_args, scheduler_args, varlen_args, stream, mSFA=None, mSFB=None)``).
``kernel(...)`` takes that shape too, where the value on the stream's place is no stream; a stream
given there is the host's own call shape, as before.
"""

from __future__ import annotations

from typing import Any, Optional

import cuda.bindings.driver as cuda
import cuda.bindings.runtime as cudart
import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

import cute_bind
from tests.optional import torch_or_skip

torch = torch_or_skip()

TVM = "--enable-tvm-ffi"


@cute.jit
def mid_stream(mO: cute.Tensor, mX: cute.Tensor, stream: cuda.CUstream, mB: Optional[cute.Tensor] = None, scale: cutlass.Float32 = 1.0):
    for i in range(cute.size(mO)):
        v = mX[i] * scale
        if cutlass.const_expr(mB is not None):
            v = v + mB[i]
        mO[i] = v


def _fake() -> Any:
    # gmem: the DSL finds the environment stream from a GPU tensor parameter (compiled on the CPU;
    # launching it needs CUDA tensors: the device's clients run launches quack's GEMMs this way)
    return make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), memspace=cute.AddressSpace.gmem)


def _kernel() -> Any:
    k = cute_bind.kernel(mid_stream, cache=False, compile_options=TVM)
    k.compile(_fake(), _fake(), make_fake_stream(use_tvm_ffi_env_stream=True), _fake(), cutlass.Float32(1.0))
    return k


O, X, B = object(), object(), object()  # the values are only placed by name here, never read

SHAPES = [
    ((O, X), {}, {"mO": O, "mX": X, "mB": None, "scale": 1.0}),  # the stream left out at the end: the host's shape
    ((O, X, B), {}, {"mO": O, "mX": X, "mB": B, "scale": 1.0}),  # the entry's shape: B on the stream's place is mB
    ((O, X, B, 2.0), {}, {"mO": O, "mX": X, "mB": B, "scale": 2.0}),
    ((O, X, None, 2.0), {}, {"mO": O, "mX": X, "mB": None, "scale": 2.0}),  # None there: no stream either
    ((O, X), {"mB": B, "scale": 2.0}, {"mO": O, "mX": X, "mB": B, "scale": 2.0}),
]


@pytest.mark.parametrize("args, kwargs, want", SHAPES, ids=["host-shape", "entry-bias", "entry-bias-scale", "entry-none", "keywords"])
def test_the_entry_call_shape_is_read_by_name(args: tuple[Any, ...], kwargs: dict[str, Any], want: dict[str, Any]) -> None:
    found = _kernel().compiler.env_find(args, kwargs)
    assert found is not None
    matches, values = found
    assert len(matches) == 1 and values == want


@pytest.mark.parametrize("stream", [0, cuda.CUstream(0), cudart.cudaStream_t(0)], ids=["int", "CUstream", "cudaStream_t"])
def test_a_stream_on_the_streams_place_is_the_hosts_shape(stream: Any) -> None:
    """A stream there is the host's call shape (an explicit stream), never read as the entry's."""
    assert _kernel().compiler.env_find((O, X, stream, B), {}) is None


def test_a_kernel_without_an_environment_stream_compile_reads_no_entry_shape() -> None:
    k = cute_bind.kernel(mid_stream, cache=False, compile_options=TVM)
    k.compile(_fake(), _fake(), make_fake_stream(), _fake(), cutlass.Float32(1.0))
    assert k.compiler.env_find((O, X, B), {}) is None
