"""A recorded graph keeps its launches' modules loaded until it is closed, on a CUDA device (issue 22, row 9).

The graph's kernel nodes point into the compiled module of each recorded
launch. Closing the recorded handle and clearing its kernel's compile cache
drops every other reference to the module; the graph's replays must still
run the same code (checked bit for bit against a launch of the same kernel
compiled separately), and closing the graph lets the module go.
"""

import gc
import weakref

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
from tests.kernels.gpu import scale_fixed_grid  # noqa: E402

pytestmark = pytest.mark.gpu

N = 4096
REFERENCE = cute_bind.kernel(scale_fixed_grid)  # its own compiled module, never released here


def fresh(seed):
    return torch.randn(N, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed))


def same_bits(a, b):
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_replay_after_the_handle_closed_and_the_cache_cleared():
    s = torch.cuda.Stream()
    k = cute_bind.kernel(scale_fixed_grid, cache=False)  # a module of its own: nothing else holds it
    x, y = fresh(0), torch.empty(N, device="cuda")
    h = k.bind(y, x, 1.0, N, s)
    h.launch(y, x, 1.0, N, s)  # warm up outside the capture
    s.synchronize()
    with cute_bind.graph(s) as g:
        step = g.launch(h, y, x, 2.0, N, s)
    compiled = weakref.ref(h.compiled)
    h.close()
    k.clear_cache()
    del k, h
    gc.collect()
    assert compiled() is not None  # the graph holds the module
    ref = REFERENCE.bind(y, x, 1.0, N, s)
    for r in range(4):
        src = fresh(100 + r)
        out, expected = torch.full_like(src, float("nan")), torch.full_like(src, float("nan"))
        alpha, n = 0.75 + r, N - 101 * r
        g.replay({step: {"out": out, "inp": src, "alpha": alpha, "n": n}})
        ref.launch(expected, src, alpha, n, s)
        s.synchronize()
        assert same_bits(out, expected)
        assert not torch.isnan(out[:n]).any() and torch.isnan(out[n:]).all()
    g.close()
    s.synchronize()
    gc.collect()
    assert compiled() is None  # and lets it go once closed
