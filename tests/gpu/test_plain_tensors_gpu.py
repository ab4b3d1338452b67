"""GPU: a function compiled from plain torch tensors, as CUTLASS's ampere ``elementwise_add`` main compiles and calls it.

Its ``run_elementwise_add`` passes the torch tensors themselves to
``cute.compile`` and to the compiled function (``is_*_dynamic_layout=True``):
no ``from_dlpack``. ``cute_bind.prepare(compiled, a, b, c)`` takes the same
plain tensors, and every launch (other tensors, other extents) writes exactly
what the compiled function's own call writes. The kernel is ours, in that
example's host style (unannotated tensors, the launch in the ``@cute.jit``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cutlass.cute as cute  # noqa: E402

import cute_bind  # noqa: E402

pytestmark = pytest.mark.gpu

THREADS = 256


@cute.kernel
def _add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    m, n = gA.shape
    if i < m * n:
        gC[i // n, i % n] = gA[i // n, i % n] + gB[i // n, i % n]


@cute.jit
def elementwise_add(mA, mB, mC):
    _add_kernel(mA, mB, mC).launch(grid=[(cute.size(mA) + THREADS - 1) // THREADS, 1, 1], block=[THREADS, 1, 1])


def _inputs(seed: int, m: int, n: int, dtype: Any) -> tuple[Any, Any, Any]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, n, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(m, n, device="cuda", dtype=dtype, generator=g)
    return a, b, torch.full_like(a, float("nan"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
def test_prepare_takes_the_plain_tensors_the_example_compiles_and_calls_with(dtype: Any) -> None:
    a, b, c = _inputs(0, 64, 96, dtype)
    compiled = cute.compile(elementwise_add, a, b, c)
    handle = cute_bind.prepare(compiled, a, b, c)
    for seed, (m, n) in enumerate([(64, 96), (64, 96), (7, 33), (256, 1024)], start=1):
        a, b, ours = _inputs(seed, m, n, dtype)
        theirs = torch.full_like(ours, float("nan"))
        handle.launch(a, b, ours)
        compiled(a, b, theirs)
        torch.cuda.synchronize()
        bits = torch.int16 if dtype == torch.float16 else torch.int32
        assert torch.equal(ours.view(bits), theirs.view(bits))
        assert torch.equal(ours, a + b)


@cute.jit
def elementwise_add_annotated(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    _add_kernel(mA, mB, mC).launch(grid=[(cute.size(mA) + THREADS - 1) // THREADS, 1, 1], block=[THREADS, 1, 1])


def test_the_decorator_needs_annotations_and_then_takes_the_plain_tensors() -> None:
    """The decorator reads slots from annotations: the example's unannotated host is CB101 (prepare takes it)."""
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(elementwise_add)
    assert info.value.code == "CB101"
    k = cute_bind.kernel(elementwise_add_annotated)
    for seed, (m, n) in enumerate([(32, 32), (5, 700), (32, 32)]):
        a, b, ours = _inputs(seed, m, n, torch.float32)
        theirs = torch.full_like(ours, float("nan"))
        k(a, b, ours)
        k.call_dsl(a, b, theirs)
        torch.cuda.synchronize()
        assert torch.equal(ours.view(torch.int32), theirs.view(torch.int32)) and torch.equal(ours, a + b)
