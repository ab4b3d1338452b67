"""Tutorial 12: one kernel, called from torch and from JAX.

Run it:  python tutorials/12_jax.py

`cute_bind.jax.op(kernel, ...)` makes a `@cute_bind.kernel` -- the same
object torch users call -- a JAX function usable inside `jax.jit`. XLA
launches it without Python: cute_bind's XLA FFI handler (C) runs the
kernel's prepared launch with XLA's buffers and stream. The script defines a
fused scale-add kernel, calls it directly (as torch users do), then from JAX:
functional (XLA allocates the output), in place (the output aliases an
input, donated so XLA makes no copy), in a chain of kernels inside one
jitted program, and shows the trace-time diagnostics.

With a CUDA GPU visible to JAX it uses device kernels; elsewhere host-only
twins of the same kernels through XLA's CPU client. Without JAX it prints a
note and stops.
"""

from __future__ import annotations

import os
import sys


def jax_gpu() -> bool | None:
    """True when JAX sees a GPU, False when it runs on the CPU only, None without JAX."""
    try:
        import jax
    except ImportError:
        return None
    return any(d.platform == "gpu" for d in jax.devices())


GPU = jax_gpu()
if GPU is None:
    print("skipped: JAX is not installed (pip install 'cute_bind[jax]')")
    sys.exit(0)
if not GPU:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")  # device kernels compile without a device

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import jax
import jax.numpy as jnp
import numpy as np

import cute_bind
import cute_bind.jax  # imports nothing from JAX until an op is made

T = 256
F32x1 = cute_bind.Tensor[cutlass.Float32, 1]


# --8<-- [start:device]
@cute.kernel
def scale_add_kernel(out: cute.Tensor, x: cute.Tensor, res: cute.Tensor, alpha: cutlass.Float32):
    """out[k] = x[k] * alpha + res[k], one element per thread."""
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    k = bidx * T + tidx
    if k < cute.size(out):
        out[k] = x[k] * alpha + res[k]


@cute_bind.kernel
def scale_add(out: F32x1, x: F32x1, res: F32x1, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """The host function: grid from the extent, launched on `stream` (XLA's, under cute_bind.jax)."""
    n = cute.size(out)
    scale_add_kernel(out, x, res, alpha).launch(grid=((n + T - 1) // T, 1, 1), block=(T, 1, 1), stream=stream)


# --8<-- [end:device]


# --8<-- [start:host]
@cute_bind.kernel
def scale_add_host(out: F32x1, x: F32x1, res: F32x1, alpha: cutlass.Float32, stream: cuda.CUstream = None):
    """The host-only twin: same signature, a plain loop (runs through XLA's CPU client)."""
    for k in range(cute.size(out)):
        out[k] = x[k] * alpha + res[k]


# --8<-- [end:host]

kernel = scale_add if GPU else scale_add_host
rng = np.random.default_rng(0)
x = rng.standard_normal(1000).astype(np.float32)
res = rng.standard_normal(1000).astype(np.float32)

# --8<-- [start:direct]
# 1. The kernel called directly, as a torch user calls it (NumPy arrays on the host path; torch tensors on a GPU).
if GPU:
    import torch

    out_t = torch.empty(1000, device="cuda")
    kernel(out_t, torch.from_numpy(x).cuda(), torch.from_numpy(res).cuda(), 0.5)
    reference = out_t.cpu().numpy()
else:
    reference = np.empty_like(x)
    kernel(reference, x, res, 0.5)
# --8<-- [end:direct]

# --8<-- [start:functional]
# 2. From JAX: `out` is allocated by XLA (shaped like `x`) and returned.
scale_add_jax = cute_bind.jax.op(kernel, outputs={"out": "x"})
step = jax.jit(lambda x, res: scale_add_jax(x, res, 0.5))
y = step(x, res)
assert np.asarray(y).tobytes() == reference.tobytes()  # bitwise the direct call's result
print("functional:", scale_add_jax)
# --8<-- [end:functional]

# --8<-- [start:inplace]
# 3. In place: `out` is an input too, and the op returns its new value. XLA aliases the two buffers;
#    with the input donated, the kernel writes into it and no copy is made.
accumulate = cute_bind.jax.op(kernel, mutates_args=("out",))
acc = jnp.zeros(1000, jnp.float32)
address = acc.unsafe_buffer_pointer()
acc = jax.jit(lambda acc, x, res: accumulate(acc, x, res, 0.5), donate_argnums=0)(acc, x, res)
assert acc.unsafe_buffer_pointer() == address  # the same buffer, written in place
assert np.asarray(acc).tobytes() == reference.tobytes()
# --8<-- [end:inplace]

# --8<-- [start:chain]
# 4. Several kernels and XLA's own ops in one program: one launch per kernel, no Python between them.
#    Static values (alpha) are fixed per compiled program; arrays are traced.


@jax.jit
def residual_block(x, res):
    h = scale_add_jax(x, res, 0.5)
    h = jnp.tanh(h)
    return scale_add_jax(h, res, 2.0)


z = residual_block(x, res)
want = np.tanh(x * np.float32(0.5) + res) * np.float32(2.0) + res
assert np.allclose(np.asarray(z), want, rtol=1e-5, atol=1e-5)
# --8<-- [end:chain]

# --8<-- [start:errors]
# 5. Mistakes are caught when the call is traced, before anything compiles, with the catalog's codes.
try:
    jax.jit(lambda x, res, a: scale_add_jax(x, res, a))(x, res, 0.5)  # a traced number
except cute_bind.CuteBindError as e:
    print("traced number:", e.code)  # CB905: pass it as a static argument
    assert e.code == "CB905"
try:
    step(x.astype(np.float16), res)  # a float16 array for a Float32 tensor
except cute_bind.CuteBindError as e:
    print("wrong dtype:", e.code)  # CB908
    assert e.code == "CB908"
try:
    jax.vmap(lambda a: scale_add_jax(a, a, 1.0))(jnp.ones((3, 4), jnp.float32))
except cute_bind.CuteBindError as e:
    print("vmap:", e.code)  # CB909: no batching rule
    assert e.code == "CB909"
# --8<-- [end:errors]
print("ok")
