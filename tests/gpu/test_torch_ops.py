"""cute_bind.torch ops on a CUDA device: eager, torch.compile (default and reduce-overhead), CUDA graphs, streams.

Every result is compared bit for bit with ``handle.launch`` of the same kernel
on the same inputs. Run with ``python -m pytest -m gpu tests/gpu``.
"""

from __future__ import annotations

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
import cute_bind.torch as cbt  # noqa: E402
from tests.kernels.gpu import tscale, tscale_default_stream  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def ops():
    k = cute_bind.kernel(tscale)
    return {
        "kernel": k,
        "scale_": cbt.op("cbgpu::scale_", k, mutates_args=("out",)),
        "scaled": cbt.op("cbgpu::scaled", k, outputs={"out": "inp"}),
        "nostream": cbt.op("cbgpu::nostream", tscale_default_stream, mutates_args=("out",)),
    }


def rand(n, seed):
    return torch.randn(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed))


def reference(ops, x, alpha):
    """handle.launch of the same kernel on the same input (on the current stream)."""
    out = torch.full_like(x, float("nan"))
    h = ops["kernel"].bind(out, x, alpha, torch.cuda.current_stream())
    h.launch(out, x, alpha, torch.cuda.current_stream())
    torch.cuda.synchronize()
    return out


def same_bits(a, b):
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


@pytest.mark.parametrize("n", [1, 1000, 4096, 1 << 20])
def test_eager_op_bitwise_equal_to_handle_launch(ops, n):
    x = rand(n, n)
    y = torch.full_like(x, float("nan"))
    ops["scale_"](y, x, 1.25)
    z = ops["scaled"](x, 1.25)
    torch.cuda.synchronize()
    ref = reference(ops, x, 1.25)
    assert same_bits(y, ref) and same_bits(z, ref)


def test_eager_op_launches_on_the_current_stream(ops, monkeypatch):
    seen = []
    real_call = type(ops["kernel"]).__call__
    monkeypatch.setattr(type(ops["kernel"]), "__call__", lambda self, *a, **k: (seen.append(a[-1]), real_call(self, *a, **k))[1])
    s = torch.cuda.Stream()
    x = rand(4096, 1)
    y = torch.empty_like(x)
    with torch.cuda.stream(s):
        ops["scale_"](y, x, 2.0)
    ops["scale_"](y, x, 2.0)
    assert seen == [s.cuda_stream, torch.cuda.current_stream().cuda_stream]
    torch.cuda.synchronize()


@pytest.mark.parametrize("side_stream", [False, True], ids=["torch.cuda.graph", "torch.cuda.graph(stream=s)"])
def test_cuda_graph_capture_replays_the_op(ops, side_stream):
    x = rand(4096, 7)
    y = torch.zeros_like(x)
    ops["scale_"](y, x, 3.0)  # warm up (compiles) before capture, as torch requires
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    kwargs = {"stream": torch.cuda.Stream()} if side_stream else {}
    with torch.cuda.graph(g, **kwargs):
        ops["scale_"](y, x, 3.0)
        z = ops["scaled"](x, 3.0)
    for seed in (8, 9):
        x.copy_(rand(4096, seed))
        y.zero_()
        g.replay()
        torch.cuda.synchronize()
        ref = reference(ops, x, 3.0)
        assert same_bits(y, ref) and same_bits(z, ref)


def _codes(exc):
    codes = []
    while exc is not None:
        codes.append(getattr(exc, "code", None))
        exc = exc.__cause__ or exc.__context__
    return codes


def test_kernel_without_stream_parameter_refuses_other_streams(ops):
    x = rand(4096, 3)
    y = torch.zeros_like(x)
    ops["nostream"](y, x, 2.0)  # the default stream is current: fine
    torch.cuda.synchronize()
    assert same_bits(y, reference(ops, x, 2.0))
    with pytest.raises(cute_bind.LaunchRuntimeError, match=r"\[CB705\]"):
        with torch.cuda.stream(torch.cuda.Stream()):
            ops["nostream"](y, x, 2.0)
    g = torch.cuda.CUDAGraph()
    with pytest.raises(Exception) as info:
        with torch.cuda.graph(g):
            ops["nostream"](y, x, 2.0)
    assert "CB705" in _codes(info.value)
    torch.cuda.synchronize()


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_torch_compile_fullgraph_bitwise(ops, mode):
    torch._dynamo.reset()

    def fn(x):
        y = torch.empty_like(x)
        ops["scale_"](y, x, 0.75)
        return ops["scaled"](y, 1.0), y

    compiled = torch.compile(fn, fullgraph=True, mode=mode)
    for seed in range(4):
        x = rand(4096, 100 + seed)
        a, b = compiled(x)
        a, b = a.clone(), b.clone()  # reduce-overhead reuses its output buffers
        torch.cuda.synchronize()
        ref = reference(ops, x, 0.75)
        assert same_bits(b, ref) and same_bits(a, ref)
    explained = torch._dynamo.explain(fn)(rand(64, 1))
    assert explained.graph_break_count == 0


def test_torch_compile_dynamic_one_graph_one_kernel_compile():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    k = cute_bind.kernel(tscale)
    scaled = cbt.op("cbgpu::dyn", k, outputs={"out": "inp"})
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(lambda x: scaled(x, 2.0) + 0.0, fullgraph=True, dynamic=True, backend=counter)
    for n in (100, 3000, 70000):
        x = rand(n, n)
        assert torch.equal(compiled(x), x * 2.0)
    assert counter.frame_count == 1
    assert k.cache_info()["compiled"] == 1
