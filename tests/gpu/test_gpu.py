"""GPU suite: real device kernels, direct call vs PreparedLaunch.launch, on a CUDA device.

Run on a GPU machine with ``python -m pytest -m gpu tests/gpu``; skipped where
no CUDA device exists. Every check uses fresh random inputs and poisons the
output (NaN / a sentinel) before each launch.
"""

import os
import threading

import pytest

from tests.child import run_isolated
from tests.optional import torch_or_skip

torch = torch_or_skip()
import cuda.bindings.driver as cuda  # noqa: E402
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind import dsl  # noqa: E402
from cute_bind.bench.kernels import scale  # noqa: E402
from tests.kernels.gpu import floats, ints, scale_threads  # noqa: E402

pytestmark = pytest.mark.gpu

N = 4096
SCALE = cute_bind.kernel(scale)
GMEM = cute.AddressSpace.gmem


def gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


def fresh(seed, n=N, dtype=torch.float32):
    g = gen(seed)
    if dtype.is_floating_point:
        return torch.randn(n, device="cuda", dtype=dtype, generator=g)
    return torch.randint(-(2**40), 2**40, (n,), device="cuda", dtype=dtype, generator=g)


def poisoned_like(x):
    return torch.full_like(x, float("nan")) if x.dtype.is_floating_point else torch.full_like(x, -0x5A5A5A5A)


def bitwise_equal(a, b):
    return torch.equal(a.view(torch.int8 if a.element_size() == 1 else {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]),
                       b.view(torch.int8 if b.element_size() == 1 else {2: torch.int16, 4: torch.int32, 8: torch.int64}[b.element_size()]))  # fmt: skip


def direct_scale(compiled, out, x, alpha, n, stream):
    return compiled(
        make_ptr(cutlass.Float32, out.data_ptr(), GMEM, assumed_align=16),
        make_ptr(cutlass.Float32, x.data_ptr(), GMEM, assumed_align=16),
        cutlass.Float32(alpha),
        cutlass.Int32(n),
        cuda.CUstream(stream),
    )


# ------------------------------------------------------------------ bitwise identity
def test_scale_bitwise_identical_to_direct_call():
    x = fresh(0)
    out = poisoned_like(x)
    h = SCALE.bind(out, x, 1.0, N, 0)
    for seed in range(1, 21):
        x = fresh(seed)
        alpha = float(torch.randn(1, generator=torch.Generator().manual_seed(seed)))
        n = N - seed * 7
        ref = poisoned_like(x)
        direct_scale(h.compiled, ref, x, alpha, n, 0)
        out = poisoned_like(x)
        assert h.launch(out.data_ptr(), x.data_ptr(), alpha, n, 0) == 0
        torch.cuda.synchronize()
        assert bitwise_equal(out, ref), f"seed {seed}"
        assert torch.equal(out[:n], x[:n] * torch.tensor(alpha, dtype=torch.float32))
        assert torch.isnan(out[n:]).all()


INT_CASES = [
    dict(b=False, i8=-128, i16=32767, i32=-(2**31), i64=2**62, u8=255, u16=65535, u32=2**32 - 1, u64=2**64 - 1),
    dict(b=True, i8=127, i16=-32768, i32=2**31 - 1, i64=-(2**63), u8=0, u16=1, u32=7, u64=2**63),
    dict(b=1, i8=0, i16=0, i32=0, i64=0, u8=1, u16=2, u32=3, u64=4),
]


@pytest.mark.parametrize("case", range(len(INT_CASES)))
def test_integer_and_bool_scalars_bitwise(case):
    k = cute_bind.kernel(ints)
    x = fresh(100 + case, dtype=torch.int64)
    values = INT_CASES[case]
    ref = poisoned_like(x)
    k.call_dsl(ref, x, N, *values.values(), 0)  # direct call through the DSL
    out0 = poisoned_like(x)
    h = k.bind(out0, x, N, *INT_CASES[0].values(), 0)
    out = poisoned_like(x)
    h.launch(out, x, N, *values.values(), 0)
    torch.cuda.synchronize()
    assert torch.equal(out, ref)


FLOAT_CASES = [
    dict(f32=1.5, f64=-2.25, tf32=0.1, flag=True, pf=3.0, pi=-4),
    dict(f32=float("inf"), f64=1e300, tf32=-0.0, flag=False, pf=1e-45, pi=2**31 - 1),
    dict(f32=3.4e38, f64=5e-324, tf32=65504.0, flag=False, pf=-1.0, pi=0),
]


@pytest.mark.parametrize("case", range(len(FLOAT_CASES)))
def test_float_scalars_bitwise(case):
    k = cute_bind.kernel(floats)
    x = fresh(200 + case, dtype=torch.float64)
    values = FLOAT_CASES[case]
    ref = poisoned_like(x)
    k.call_dsl(ref, x, N, *values.values(), 0)
    h = k.bind(poisoned_like(x), x, N, *FLOAT_CASES[0].values(), 0)
    out = poisoned_like(x)
    h.launch(out, x, N, *values.values(), 0)
    torch.cuda.synchronize()
    assert bitwise_equal(out, ref)


# ------------------------------------------------------------------ pointer and stream forms
@pytest.mark.parametrize("form", ["data_ptr", "tensor", "make_ptr"])
def test_pointer_forms(form):
    x = fresh(300)
    out = poisoned_like(x)
    h = SCALE.bind(out, x, 1.0, N, 0)

    def conv(t):
        if form == "data_ptr":
            return t.data_ptr()
        if form == "make_ptr":
            return make_ptr(cutlass.Float32, t.data_ptr(), GMEM, assumed_align=16)
        return t

    h.launch(conv(out), conv(x), 3.0, N, 0)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 3.0)


@pytest.mark.parametrize("form", ["torch.cuda.Stream", "raw handle", "cuda.CUstream"])
def test_stream_forms_ordered_with_torch_work(form):
    s = torch.cuda.Stream()
    x = torch.empty(N, device="cuda")
    out = torch.empty(N, device="cuda")
    h = SCALE.bind(out, x, 1.0, N, s.cuda_stream)
    stream_arg = {"torch.cuda.Stream": s, "raw handle": s.cuda_stream, "cuda.CUstream": cuda.CUstream(s.cuda_stream)}[form]
    results = []
    with torch.cuda.stream(s):
        for i in range(20):
            # torch writes x on s, the kernel reads it on s, torch reads out on s: no host sync in between
            torch.cuda._sleep(2000)  # keep the stream busy so mis-ordering would show
            x.fill_(float(i + 1))
            out.fill_(float("nan"))
            h.launch(out, x, 2.0, N, stream_arg)
            results.append(out.sum())
    s.synchronize()
    assert [float(r) for r in results] == [2.0 * (i + 1) * N for i in range(20)]


# ------------------------------------------------------------------ CUDA graphs
def test_cuda_graph_capture_frozen_at_capture():
    x = fresh(400)
    out = poisoned_like(x)
    h = SCALE.bind(out, x, 1.0, N, 0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up outside capture, as torch recommends
        h.launch(out, x, 2.0, N, side.cuda_stream)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h.launch(out, x, 5.0, N, torch.cuda.current_stream().cuda_stream)
    x.copy_(fresh(401))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x * 5.0), "replay reproduces the captured launch"
    other = poisoned_like(x)
    h.launch(other, x, 7.0, N, 0)  # rewrite the handle after capture
    torch.cuda.synchronize()
    x.copy_(fresh(402))
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x * 5.0), "changing the handle after capture does not change the graph"
    assert torch.equal(other[: N // 2], other[: N // 2])  # launched outside the graph, on its own


# ------------------------------------------------------------------ threads
def test_two_threads_own_handles_and_streams():
    iters = 500
    base = SCALE.bind(poisoned_like(fresh(0)), fresh(0), 1.0, N, 0)
    failures = []
    barrier = threading.Barrier(2)

    def work(tid):
        h = base.clone()
        s = torch.cuda.Stream()
        x = fresh(500 + tid)
        outs = [poisoned_like(x) for _ in range(4)]
        barrier.wait()
        with torch.cuda.stream(s):
            for i in range(iters):
                o = outs[i % 4]
                alpha = float(tid * 1000 + i)
                h.launch(o, x, alpha, N, s)
                if i % 50 == 49:
                    s.synchronize()
                    if not torch.equal(o, x * alpha):
                        failures.append((tid, i))
        s.synchronize()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


# ------------------------------------------------------------------ lifetime and errors
def test_unload_then_launch_raises_new_handle_after_recompile_works():
    k = cute_bind.kernel(scale)
    x = fresh(600)
    out = poisoned_like(x)
    h = k.bind(out, x, 1.0, N, 0)
    h.launch(out, x, 2.0, N, 0)
    torch.cuda.synchronize()
    dsl.unload(h.compiled)
    with pytest.raises(cute_bind.LaunchRuntimeError) as info:
        h.launch(out, x, 2.0, N, 0)
    assert info.value.code == "CB402"
    k.clear_cache()
    h2 = k.bind(out, x, 1.0, N, 0)
    out.fill_(float("nan"))
    h2.launch(out, x, 4.0, N, 0)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 4.0)


def test_real_cuda_error_is_typed():
    k = cute_bind.kernel(scale_threads)
    x = fresh(700)
    out = poisoned_like(x)
    h = k.bind(out, x, 1.0, N, 0, 2048)  # 2048 threads per block: the launch itself fails
    with pytest.raises(cute_bind.CudaLaunchError) as info:
        h.launch(out, x, 1.0, N, 0)
    assert info.value.code == "CB401" and info.value.cuda_error != 0
    assert torch.isnan(out).all()
    ok = k.bind(out, x, 1.0, N, 0, 256)
    ok.launch(out, x, 3.0, N, 0)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 3.0)


def test_rss_flat_over_a_million_launches():
    # measured in a fresh process: what ran before in this one (torch.compile's state from the
    # torch tests) can grow its memory meanwhile, which says nothing of the launch path
    run_isolated(
        """
        import gc, psutil, torch, cute_bind
        from cute_bind.bench.kernels import scale
        n = 4096
        x = torch.randn(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(800))
        out = torch.full_like(x, float("nan"))
        h = cute_bind.kernel(scale).bind(out, x, 1.0, n, 0)
        launch, o, i = h.launch, out.data_ptr(), x.data_ptr()
        for _ in range(50_000):
            launch(o, i, 2.0, n, 0)
        torch.cuda.synchronize()
        gc.collect()
        before = psutil.Process().memory_info().rss
        for j in range(1_000_000):
            launch(o, i, 2.0, n, 0)
            if j % 20000 == 0:
                torch.cuda.synchronize()  # keep the launch queue short
        torch.cuda.synchronize()
        gc.collect()
        after = psutil.Process().memory_info().rss
        assert after - before < 4 << 20, f"RSS grew by {(after - before) / 1024:.0f} KiB"
        assert torch.equal(out, x * 2.0)
        """,
        "python" if os.environ.get("CUTE_BIND_PURE_PYTHON") == "1" else "c",  # the fast path this run tests
        timeout=600,
    )


# ------------------------------------------------------------------ multi-device: compiled.to(device)
def test_prepare_executor_on_every_device():
    count = torch.cuda.device_count()
    x0 = fresh(900)
    args0 = (
        make_ptr(cutlass.Float32, x0.data_ptr(), GMEM, assumed_align=16),
        make_ptr(cutlass.Float32, x0.data_ptr(), GMEM, assumed_align=16),
        cutlass.Float32(1.0),
        cutlass.Int32(N),
        cuda.CUstream(0),
    )
    compiled = cute.compile(scale, *args0)
    for d in range(count):
        with torch.cuda.device(d):
            x = torch.randn(N, device=f"cuda:{d}")
            out = torch.full_like(x, float("nan"))
            s = torch.cuda.Stream(device=d)
            ex = compiled.to(d)
            h = cute_bind.prepare(
                ex,
                make_ptr(cutlass.Float32, out.data_ptr(), GMEM, assumed_align=16),
                make_ptr(cutlass.Float32, x.data_ptr(), GMEM, assumed_align=16),
                cutlass.Float32(1.0),
                cutlass.Int32(N),
                cuda.CUstream(s.cuda_stream),
            )
            ref = torch.full_like(x, float("nan"))
            ex(make_ptr(cutlass.Float32, ref.data_ptr(), GMEM, assumed_align=16), make_ptr(cutlass.Float32, x.data_ptr(), GMEM, assumed_align=16),
               cutlass.Float32(1.5), cutlass.Int32(N), cuda.CUstream(s.cuda_stream))  # fmt: skip
            h.launch(out, x, 1.5, N, s)
            s.synchronize()
            assert bitwise_equal(out, ref), f"device {d}"


# ------------------------------------------------------------------ tensors, half scalars, sequences
def _dyn(t):
    from cutlass.cute.runtime import from_dlpack

    return from_dlpack(t).mark_layout_dynamic()


def test_dynamic_tensor_kernel_new_tensors_every_launch_bitwise():
    """New torch tensors each launch: other addresses, other extents, other row strides (dynamic layout)."""
    from tests.kernels.gpu import tensor2d

    k = cute_bind.kernel(tensor2d)
    s = torch.cuda.Stream()
    h = k.bind(torch.zeros(4, 8, device="cuda"), torch.zeros(4, 8, device="cuda"), 1.0, 0.5, 0.25, s)
    compiled = h.compiled
    shapes = [(4, 8), (33, 65), (128, 3), (1, 1000), (257, 129), (64, 64)]
    for seed, (m, n) in enumerate(shapes):
        g = gen(1000 + seed)
        wide = torch.randn(m, n + seed, device="cuda", generator=g)  # a row stride != n for seed > 0
        x = wide[:, :n]
        alpha, beta, gamma = 1.5 - seed, 0.1 * seed + 1.1, -3.3 / (seed + 1)
        ref = torch.full((m, n), float("nan"), device="cuda")
        compiled(_dyn(ref), _dyn(x), cutlass.Float32(alpha), cutlass.Float16(beta), cutlass.BFloat16(gamma), cuda.CUstream(s.cuda_stream))
        out = torch.full((m, n), float("nan"), device="cuda")
        assert h.launch(out, x, alpha, beta, gamma, s) == 0
        s.synchronize()
        assert bitwise_equal(out, ref), f"shape {(m, n)}"
        assert not torch.isnan(out).any()


def test_tensor_launch_checks_on_device():
    from tests.kernels.gpu import tensor2d

    h = cute_bind.kernel(tensor2d).bind(torch.zeros(4, 8, device="cuda"), torch.zeros(4, 8, device="cuda"), 1.0, 0.5, 0.25, 0)
    ok = torch.zeros(4, 8, device="cuda")
    cases = [
        (torch.zeros(4, 8), "CB214"),  # host tensor for a CUDA slot
        (torch.zeros(4, 8, device="cuda", dtype=torch.float16), "CB211"),
        (torch.zeros(32, device="cuda"), "CB212"),
        (torch.zeros(8, 4, device="cuda").t(), "CB213"),  # unit stride moved
    ]
    if torch.cuda.device_count() > 1:
        cases.append((torch.zeros(4, 8, device="cuda:1"), "CB214"))
    for bad, code in cases:
        with pytest.raises(cute_bind.CuteBindError) as info:
            h.launch(ok, bad, 1.0, 0.5, 0.25, 0)
        assert (info.value.code, info.value.parameter) == (code, "inp"), (bad.device, bad.dtype, bad.shape)


def test_sequence_kernel_bitwise():
    from tests.kernels.gpu import seq_axpby

    k = cute_bind.kernel(seq_axpby)
    a, b = fresh(1200), fresh(1201)
    out = poisoned_like(a)
    h = k.bind(out, (a, b), (1.0, 1.0), N, 0)
    for seed in range(3):
        a, b = fresh(1210 + seed), fresh(1220 + seed)
        ref = poisoned_like(a)
        n = N - 100 * seed
        P = lambda t: make_ptr(cutlass.Float32, t.data_ptr(), GMEM, assumed_align=16)  # noqa: E731
        h.compiled(P(ref), (P(a), P(b)), (cutlass.Float32(0.5 + seed), cutlass.Float32(-2.0)), cutlass.Int32(n), cuda.CUstream(0))
        out = poisoned_like(a)
        h.launch(out, (a.data_ptr(), b), [0.5 + seed, -2.0], n, 0)
        torch.cuda.synchronize()
        assert bitwise_equal(out, ref)


def test_tensor_handle_replays_in_cuda_graph():
    from tests.kernels.gpu import tensor2d

    s = torch.cuda.Stream()
    x, out = torch.randn(16, 32, device="cuda"), torch.zeros(16, 32, device="cuda")
    h = cute_bind.kernel(tensor2d).bind(out, x, 2.0, 0.0, 0.0, s)
    h.launch(out, x, 2.0, 0.0, 0.0, s)
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        h.launch(out, x, 3.0, 0.0, 0.0, s)
    x.copy_(torch.randn(16, 32, device="cuda"))
    out.zero_()
    torch.cuda.synchronize()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x * 3.0)
