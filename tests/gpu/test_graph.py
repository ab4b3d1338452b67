"""cute_bind.graph on a CUDA device: real captures, real node rewrites, bitwise against one-by-one launches.

Skipped where no CUDA device exists. Every check poisons outputs (NaN)
before each run, compares replays bit for bit with the same prepared launches
run one by one, and uses fresh random inputs.
"""

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()

import cute_bind  # noqa: E402
from cute_bind.bench.kernels import scale  # noqa: E402
from tests.kernels.gpu import scale_fixed_grid, scale_twice, tensor2d  # noqa: E402

pytestmark = pytest.mark.gpu

N = 4096
SCALE = cute_bind.kernel(scale)
FIXED = cute_bind.kernel(scale_fixed_grid)
T2D = cute_bind.kernel(tensor2d)


def fresh(seed, *shape):
    return torch.randn(*(shape or (N,)), device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed))


def nan_like(x):
    return torch.full_like(x, float("nan"))


def same_bits(a, b):
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_real_mapping_of_the_scale_kernel():
    """Pointers and alpha reach the kernel as their own bytes; n sizes the grid (CB802)."""
    s = torch.cuda.Stream()
    x, y = fresh(0), torch.empty(N, device="cuda")
    h = SCALE.bind(y, x, 1.0, N, s)
    h.launch(y, x, 1.0, N, s)  # warm up outside the capture
    s.synchronize()
    with cute_bind.graph(s) as g:
        step = g.launch(h, y, x, 2.0, N, s)
    assert step.effect("out") == {"value": "in place"} and step.effect("inp") == {"value": "in place"}  # a pointer slot is one item
    assert step.effect("alpha") == {"value": "in place"}
    assert step.effect("n") == {"value": "grid"}
    assert [(f.parameter, f.code) for f in g.findings] == [("n", "CB802")]
    g.close()


def _chain(k, s):
    xs = [fresh(10 + i) for i in range(k + 1)]
    hs = [FIXED.bind(xs[i + 1], xs[i], 1.0, N, s) for i in range(k)]
    for h, i in zip(hs, range(k)):
        h.launch(xs[i + 1], xs[i], 1.0, N, s)
    s.synchronize()
    return xs, hs


@pytest.mark.parametrize("k", [1, 5])
def test_chain_replay_bitwise_equal_to_one_by_one(k):
    s = torch.cuda.Stream()
    bufs, hs = _chain(k, s)
    with cute_bind.graph(s) as g:
        steps = [g.launch(h, bufs[i + 1], bufs[i], 1.0 + i, N, s) for i, h in enumerate(hs)]
    assert g.findings == ()  # every value of this kernel passes straight through
    for r in range(6):
        src = fresh(100 + r)
        outs = [nan_like(src) for _ in range(k)]
        alphas = [0.5 + r + i for i in range(k)]
        n = N - 37 * r
        chain_in = [src] + outs[:-1]
        torch.cuda.synchronize()  # made on torch's current stream; `s` does not wait for it by itself
        g.replay({st: {"out": outs[i], "inp": chain_in[i], "alpha": alphas[i], "n": n} for i, st in enumerate(steps)})
        s.synchronize()
        replayed = [o.clone() for o in outs]
        for o in outs:
            o.fill_(float("nan"))
        torch.cuda.synchronize()
        for i, h in enumerate(hs):
            h.launch(outs[i], chain_in[i], alphas[i], n, s)
        s.synchronize()
        for a, b in zip(replayed, outs):
            assert same_bits(a, b)
        assert not torch.isnan(replayed[-1][:n]).any() and torch.isnan(replayed[-1][n:]).all()
    assert g.stats.rerecords == 0 and g.stats.nodes_updated == 6 * k
    g.close()


def test_updater_fast_path_one_pointer_per_kernel():
    s = torch.cuda.Stream()
    bufs, hs = _chain(3, s)
    with cute_bind.graph(s) as g:
        steps = [g.launch(h, bufs[i + 1], bufs[i], 2.0, N, s) for i, h in enumerate(hs)]
    set_out = [g.updater(st, "out") for st in steps]
    for r in range(4):
        outs = [nan_like(bufs[0]) for _ in steps]
        for f, o in zip(set_out, outs):
            f(o.data_ptr())
        g.replay()
        s.synchronize()
        assert same_bits(outs[0], bufs[0] * torch.tensor(2.0, device="cuda"))
    g.close()


def test_tensors_of_other_extents_rerecord_bitwise():
    """Dynamic-layout rank-2 tensors: the extents size the grid, so changing them re-records (counted)."""
    s = torch.cuda.Stream()
    x0, y0 = fresh(1, 16, 32), torch.zeros(16, 32, device="cuda")
    h = T2D.bind(y0, x0, 1.0, 0.5, 0.25, s)
    h.launch(y0, x0, 1.0, 0.5, 0.25, s)
    s.synchronize()
    with cute_bind.graph(s, derived="rerecord") as g:
        step = g.launch(h, y0, x0, 1.0, 0.5, 0.25, s)
    assert {f.parameter for f in g.findings} >= {"out"} and all(f.code == "CB802" for f in g.findings if f.parameter == "out")
    shapes = [(16, 32), (33, 65), (33, 65), (128, 3), (1, 1000)]
    for seed, (m, n) in enumerate(shapes):
        wide = fresh(50 + seed, m, n + seed)
        x = wide[:, :n]  # another row stride
        y, ref = torch.full((m, n), float("nan"), device="cuda"), torch.full((m, n), float("nan"), device="cuda")
        g.replay({step: {"out": y, "inp": x, "alpha": 1.5 - seed, "beta": 0.25 * seed, "gamma": -1.0 / (seed + 1)}})
        s.synchronize()
        h.launch(ref, x, 1.5 - seed, 0.25 * seed, -1.0 / (seed + 1), s)
        s.synchronize()
        assert same_bits(y, ref), (m, n)
        assert not torch.isnan(y).any()
    assert 1 <= g.stats.rerecords <= len(shapes) - 1
    g.close()


def test_fixed_extent_change_raises_cb803():
    s = torch.cuda.Stream()
    x, y = fresh(2, 8, 8), torch.zeros(8, 8, device="cuda")
    h = T2D.bind(y, x, 1.0, 0.5, 0.25, s)
    h.launch(y, x, 1.0, 0.5, 0.25, s)
    s.synchronize()
    with cute_bind.graph(s) as g:
        step = g.launch(h, y, x, 1.0, 0.5, 0.25, s)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        g.replay({step: {"out": torch.zeros(9, 8, device="cuda")}})
    assert info.value.code == "CB803"
    y2 = torch.full((8, 8), float("nan"), device="cuda")
    g.replay({step: {"out": y2, "alpha": 3.0}})  # same extents, another address: in place
    s.synchronize()
    ref = torch.full((8, 8), float("nan"), device="cuda")
    h.launch(ref, x, 3.0, 0.5, 0.25, s)
    s.synchronize()
    assert same_bits(y2, ref)
    g.close()


def test_torch_pool_and_torch_work_in_the_graph():
    """Recorded through torch.cuda.graph with a pool: torch allocations and ops inside the block."""
    x = fresh(3)
    out0 = torch.empty(N, device="cuda")
    h = FIXED.bind(out0, x, 1.0, N, 0)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        h.launch(out0, x, 1.0, N, side)
    side.synchronize()
    pool = torch.cuda.graph_pool_handle()
    with cute_bind.graph(side, pool=pool) as g:
        tmp = x * 2.0  # torch work, allocated from the pool
        step = g.launch(h, out0, tmp, 1.0, N, g.stream)
        final = out0 + 1.0
    assert g.torch_graph is not None
    with pytest.raises(cute_bind.LaunchRuntimeError, match="CB805"):
        g.set_policy(step, "n", "rerecord")
    for r in range(3):
        x.copy_(fresh(30 + r))
        g.replay({step: {"alpha": 0.5 + r}})
        torch.cuda.synchronize()
        assert torch.equal(final, (x * 2.0) * torch.tensor(0.5 + r, device="cuda") + 1.0)
    other = torch.empty(N, device="cuda")
    g.replay({step: {"out": other}})  # the torch op still reads out0: only the kernel moved
    torch.cuda.synchronize()
    assert torch.equal(other, (x * 2.0) * torch.tensor(2.5, device="cuda"))
    g.close()


def test_replay_on_another_torch_stream_orders_with_torch_work():
    s, t = torch.cuda.Stream(), torch.cuda.Stream()
    x, y = fresh(4), torch.empty(N, device="cuda")
    h = FIXED.bind(y, x, 1.0, N, s)
    h.launch(y, x, 1.0, N, s)
    s.synchronize()
    with cute_bind.graph(s) as g:
        step = g.launch(h, y, x, 3.0, N, s)
    results = []
    with torch.cuda.stream(t):
        for i in range(10):
            torch.cuda._sleep(2000)
            x.fill_(float(i + 1))
            g.replay({step: {"alpha": float(i)}}, stream=t)
            results.append(y.sum())
    t.synchronize()
    assert [float(r) for r in results] == [float(i) * (i + 1) * N for i in range(10)]
    g.close()


def test_two_kernels_in_one_launch_bitwise():
    """One host function, two kernel nodes; inp reaches the first, tmp both."""
    k = cute_bind.kernel(scale_twice)
    s = torch.cuda.Stream()
    x, t, y = fresh(5), torch.empty(N, device="cuda"), torch.empty(N, device="cuda")
    h = k.bind(y, t, x, 1.0, 1.0, N, s)
    h.launch(y, t, x, 1.0, 1.0, N, s)
    s.synchronize()
    with cute_bind.graph(s) as g:
        step = g.launch(h, y, t, x, 2.0, 3.0, N, s)
    assert g.findings == () and len(step.nodes) == 2
    for r in range(3):
        x2, t2, y2 = fresh(60 + r), torch.empty(N, device="cuda"), nan_like(x)
        g.replay({step: {"out": y2, "tmp": t2, "inp": x2, "a": 0.5 + r, "b": -1.5 - r}})
        s.synchronize()
        ref, tref = nan_like(x), torch.empty(N, device="cuda")
        h.launch(ref, tref, x2, 0.5 + r, -1.5 - r, N, s)
        s.synchronize()
        assert same_bits(y2, ref)
    assert g.stats.nodes_updated == 6  # both nodes each round
    g.close()
