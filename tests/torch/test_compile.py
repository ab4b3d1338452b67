"""cute_bind.torch ops under torch.compile on the CPU: no graph breaks, eager's outputs, dynamic shapes.

Most tests use the ``aot_eager`` backend (dynamo, AOTAutograd and
functionalization, the parts that trace the op) so they stay fast; one runs
inductor's CPU backend end to end (it compiles C++ with the machine's compiler).
"""

from __future__ import annotations

import shutil

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from tests.kernels import host  # noqa: E402

from torch._dynamo.testing import CompileCounterWithBackend  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture(scope="module")
def ops():
    """A mutating and a functional op over the same kernel, and a pointer kernel taking n."""
    k = cute_bind.kernel(host.tscale)
    return {
        "kernel": k,
        "scale_": cbt.op("cbtest::c_scale_", k, mutates_args=("out",)),
        "scaled": cbt.op("cbtest::c_scaled", k, outputs={"out": "inp"}),
        "scale_n": cbt.op("cbtest::c_scale_n", host.scale, mutates_args=("out",)),
    }


def step(ops, x):
    """A small model step mixing both ops with torch ops."""
    y = torch.empty_like(x)
    ops["scale_"](y, x.sin(), 2.0)
    z = ops["scaled"](y + 1.0, 0.5)
    return (z * x).cos() + z


def bits(t):
    return t.contiguous().view(torch.int32)


def test_fullgraph_has_no_graph_break(ops):
    explained = torch._dynamo.explain(lambda x: step(ops, x))(torch.randn(33))
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1
    # both ops are in the one graph, as the registered custom ops
    code = explained.graphs[0].code
    assert "cbtest.c_scale_" in code and "cbtest.c_scaled" in code


@pytest.mark.parametrize("n", [5, 64, 100])
def test_compiled_gives_eager_outputs_bitwise(ops, n):
    compiled = torch.compile(lambda x: step(ops, x), fullgraph=True, backend="aot_eager")
    x = torch.randn(n, generator=torch.Generator().manual_seed(n))
    assert torch.equal(bits(compiled(x)), bits(step(ops, x)))


def test_dynamic_shapes_no_recompile_of_graph_or_kernel(ops):
    counter = CompileCounterWithBackend("aot_eager")
    before = ops["kernel"].cache_info()["compiled"]

    def fn(x):
        y = torch.empty_like(x)
        ops["scale_n"](y, x, 3.0, x.numel())  # n is a SymInt taken from the dynamic shape
        return ops["scaled"](y, 0.5) - x

    compiled = torch.compile(fn, fullgraph=True, dynamic=True, backend=counter)
    for n in (17, 40, 64):
        x = torch.randn(n)
        assert torch.equal(bits(compiled(x)), bits(fn(x)))
    assert counter.frame_count == 1  # one graph for every extent
    assert ops["kernel"].cache_info()["compiled"] - before <= 1  # and one kernel compile


@pytest.mark.skipif(not any(shutil.which(c) for c in ("g++", "c++", "clang++")), reason="inductor's CPU backend needs a C++ compiler")
def test_inductor_cpu_dynamic_fullgraph(ops):
    """The real backend: inductor generates C++ around the op, dynamic extents, one compile of each."""
    counter = CompileCounterWithBackend("inductor")
    k = cute_bind.kernel(host.tscale)
    scaled = cbt.op("cbtest::c_inductor", k, outputs={"out": "inp"})

    def fn(x, w):
        return scaled(x * w + 1.0, 2.0).relu() + w

    compiled = torch.compile(fn, fullgraph=True, dynamic=True, backend=counter)
    for n in (9, 30, 77):
        x, w = torch.randn(n), torch.randn(n)
        assert torch.equal(bits(compiled(x, w)), bits(fn(x, w)))
    assert counter.frame_count == 1
    assert k.cache_info()["compiled"] == 1


def test_autograd_through_the_compiled_op():
    k = cute_bind.kernel(host.tscale)
    scaled = cbt.op("cbtest::c_grad", k, outputs={"out": "inp"})

    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[1]

    def backward(ctx, grad):
        return scaled(grad.contiguous(), ctx.alpha), None

    scaled.register_autograd(backward, setup_context=setup_context)

    def loss(x):
        return (scaled(x.sin(), 3.0) ** 2).sum()

    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    x1 = torch.randn(21, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    compiled(x1).backward()
    loss(x2).backward()
    assert torch.allclose(x1.grad, x2.grad)
    expected = 2 * 3.0 * x2.detach().sin() * 3.0 * x2.detach().cos()
    assert torch.allclose(x2.grad, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "trace",
    [
        lambda op: torch.compile(lambda x: op(x, 2.0), fullgraph=True, backend="eager")(torch.ones(5)),
        lambda op: torch.library.opcheck(op.overload, (torch.ones(5), 2.0)),
    ],
    ids=["torch.compile", "opcheck"],
)
def test_register_autograd_after_a_trace_is_cb707(opname, trace):
    """A backward registered after torch traced the op would be missing from later compiles
    (gradients silently None): refused, and the op keeps working."""
    k = cute_bind.kernel(host.tscale)
    scaled = cbt.op(opname("late_grad"), k, outputs={"out": "inp"})
    trace(scaled)
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        scaled.register_autograd(lambda ctx, grad: (grad * 2.0, None))
    assert info.value.code == "CB707" and scaled.name in str(info.value)
    assert torch.equal(scaled(torch.ones(5), 2.0), torch.full((5,), 2.0))
