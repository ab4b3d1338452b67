"""cute_bind.jax on a GPU, bitwise against the torch path and against the DSL's cutlass_call.

Device kernels (tests/jax/gpu_kernels.py) for tensors, pointers, numbers and
Constexpr values, in-place writes with donation, XLA's command buffers (CUDA
graphs) and two threads issuing programs concurrently. Skipped without a
CUDA device for JAX.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

jax = pytest.importorskip("jax")
if not any(d.platform == "gpu" for d in jax.devices()):
    pytest.skip("no GPU for JAX", allow_module_level=True)

import jax.numpy as jnp  # noqa: E402

import cute_bind.jax as cj  # noqa: E402
from tests.child import child_env  # noqa: E402
from tests.jax import gpu_kernels as G  # noqa: E402
from tests.optional import torch_or_skip  # noqa: E402

torch = torch_or_skip()
from cutlass.jax import cutlass_call  # noqa: E402

N = (1 << 16) + 3


def rand(seed: int, n: int = N) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def bits(a) -> bytes:
    if isinstance(a, torch.Tensor):
        return a.cpu().numpy().tobytes()
    return np.asarray(a).tobytes()


def spec(n: int = N):
    return jax.ShapeDtypeStruct((n,), jnp.float32)


@pytest.mark.parametrize("alpha", [2.0, -0.75])
def test_tensor_and_number(alpha):
    x = rand(1)
    out = jax.jit(lambda a: cj.op(G.tscale, outputs={"out": "x"})(a, alpha))(x)
    xt = torch.from_numpy(x).cuda()
    ot = torch.empty_like(xt)
    G.tscale(ot, xt, alpha)
    cc = jax.jit(cutlass_call(G.cc_scale, output_shape_dtype=spec(), alpha=alpha))(x)
    assert bits(out) == bits(ot) == bits(cc) == bits(x * np.float32(alpha))


def test_pointer_parameters():
    x = rand(2)
    f = cj.op(G.pscale, outputs={"out": "inp"})
    out = jax.jit(lambda a: f(a, 1.5, N))(x)
    xt = torch.from_numpy(x).cuda()
    ot = torch.empty_like(xt)
    G.pscale(ot, xt, 1.5, N)
    cc = jax.jit(cutlass_call(G.cc_pscale, output_shape_dtype=spec(), alpha=1.5))(x)
    assert bits(out) == bits(ot) == bits(cc)


@pytest.mark.parametrize("shift, square", [(0.5, True), (-1.0, False)])
def test_constexpr(shift, square):
    x = rand(3)
    out = jax.jit(lambda a: cj.op(G.taffine, outputs={"out": "x"})(a, shift, square))(x)
    xt = torch.from_numpy(x).cuda()
    ot = torch.empty_like(xt)
    G.taffine(ot, xt, shift, square)
    cc = jax.jit(cutlass_call(G.cc_affine, output_shape_dtype=spec(), shift=shift, square=square))(x)
    assert bits(out) == bits(ot) == bits(cc)


def test_in_place_with_donation():
    y0, x = rand(4), rand(5)
    f = cj.op(G.taxpy, mutates_args=("y",))
    y = jnp.asarray(y0)
    address = y.unsafe_buffer_pointer()
    out = jax.jit(lambda p, q: f(p, q, 0.25), donate_argnums=0)(y, x)
    assert y.is_deleted() and out.unsafe_buffer_pointer() == address
    yt, xt = torch.from_numpy(y0).cuda(), torch.from_numpy(x).cuda()
    G.taxpy(yt, xt, 0.25)
    cc = jax.jit(cutlass_call(G.cc_axpy, output_shape_dtype=spec(), input_output_aliases={0: 0}, a=0.25), donate_argnums=0)(
        jnp.asarray(y0), x
    )
    assert bits(out) == bits(yt) == bits(cc)


def test_stream_order_with_jnp_ops_around():
    """Kernels between XLA's own ops, no synchronisation: right only if the kernel runs on XLA's stream."""
    f = cj.op(G.tscale, outputs={"out": "x"})
    x = rand(6)
    g = jax.jit(lambda a: jnp.sin(f(jnp.cos(a) * 3, 2.0)) + f(a, -1.0))
    ref = np.sin((np.cos(x) * 3) * np.float32(2.0)) + x * np.float32(-1.0)
    ref_jnp = jax.jit(lambda a: jnp.sin((jnp.cos(a) * 3) * 2.0) + a * -1.0)(x)
    out = g(x)
    assert np.allclose(np.asarray(out), np.asarray(ref_jnp), rtol=1e-6, atol=1e-6)
    assert np.allclose(np.asarray(out), ref, rtol=1e-5, atol=1e-5)


def test_two_threads_issue_programs_concurrently():
    f = cj.op(G.tscale, outputs={"out": "x"})
    progs = [jax.jit(lambda a: f(f(a, 2.0), 0.5)), jax.jit(lambda a: f(a + 1, 3.0))]
    inputs = [rand(10 + i) for i in range(2)]
    refs = [progs[0](inputs[0]), progs[1](inputs[1])]
    errors: list[str] = []

    def work(i: int) -> None:
        for _ in range(50):
            if bits(progs[i](inputs[i])) != bits(refs[i]):
                errors.append(f"thread {i}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and bits(refs[0]) == bits(inputs[0]) and bits(refs[1]) == bits((inputs[1] + 1) * np.float32(3.0))


GRAPHS = r"""
import numpy as np, jax, jax.numpy as jnp
import cute_bind.jax as cj
from tests.jax import gpu_kernels as G
f = cj.op(G.tscale, outputs={"out": "x"}, allow_cuda_graph=__GRAPH__)
step = jax.jit(lambda a: jnp.cos(f(f(a + 1, 2.0), 0.5)) * 2)
runs, ok = 30, 0
rng = np.random.default_rng(0)
for i in range(runs):
    x = rng.standard_normal(4096).astype(np.float32)
    want = jax.jit(lambda a: jnp.cos(((a + 1) * 2.0) * 0.5) * 2)(x)
    ok += np.asarray(step(x)).tobytes() == np.asarray(want).tobytes()
print("RESULT", runs, ok, sum(fr.launches() for fr in f.frames.values()))
"""


@pytest.mark.parametrize("graph", [True, False])
def test_command_buffers(graph):
    """With XLA's command buffers on for custom calls, the graph-compatible target may be captured into a CUDA
    graph (the handler then runs at capture and when XLA re-records for new buffer addresses, not at a replay);
    the other target runs every time. Results are bitwise right on every run either way; the launch count is
    printed (the benchmark reports it)."""
    env = child_env(XLA_FLAGS="--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1")
    proc = subprocess.run(
        [sys.executable, "-c", GRAPHS.replace("__GRAPH__", str(graph))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=os.getcwd(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    runs, ok, launches = (int(v) for v in line.split()[1:])
    print(f"graph={graph}: {ok}/{runs} bitwise, handler launches {launches}")
    assert ok == runs
    if graph:
        assert 0 < launches <= 2 * runs
    else:
        assert launches == 2 * runs
