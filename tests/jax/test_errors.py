"""Trace-time diagnostics and transforms: each refusal is the catalog's code, raised before anything compiles."""

from __future__ import annotations

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import cute_bind
import cute_bind.jax as cj
from cute_bind.jax import frames
from tests.jax import kernels as K

SCALE = None


def scale_op():
    global SCALE
    if SCALE is None:
        SCALE = cj.op(K.scale, outputs={"out": "x"})
    return SCALE


@pytest.mark.parametrize(
    "call, parameter, got",
    [
        (lambda f: f(jnp.ones(4, jnp.float16), 1.0), "x", "an array of dtype float16"),
        (lambda f: f(jnp.ones((2, 2), jnp.float32), 1.0), "x", "an array of shape (2, 2)"),
        (lambda f: f(jnp.ones(4, jnp.complex64), 1.0), "x", "an array of dtype complex64"),
        (lambda f: f(jnp.float32(1.0), 1.0), "x", "an array of shape ()"),
        (lambda f: f(object(), 1.0), "x", None),
    ],
)
def test_array_mismatch_is_cb908_at_trace_time(call, parameter, got):
    f = scale_op()
    before = len(frames._KEPT)
    with pytest.raises(cute_bind.LaunchArgumentError, match=r"\[CB908\]") as info:
        jax.jit(lambda: call(f))()
    assert info.value.parameter == parameter and info.value.kernel == "scale"
    if got is not None:
        assert info.value.got == got
    assert len(frames._KEPT) == before  # nothing was bound or compiled


def test_output_spec_mismatch_is_cb908():
    f = cj.op(K.scale, outputs={"out": cj.shaped((4,), "int32")})
    with pytest.raises(cute_bind.LaunchArgumentError, match=r"\[CB908\]") as info:
        jax.jit(lambda a: f(a, 1.0))(jnp.ones(4, jnp.float32))
    assert info.value.parameter == "out" and info.value.got == "an output of dtype int32"


def test_traced_number_is_cb905():
    f = scale_op()
    with pytest.raises(cute_bind.LaunchArgumentError, match=r"\[CB905\]") as info:
        jax.jit(lambda a, s: f(a, s))(jnp.ones(4, jnp.float32), 2.0)
    assert info.value.parameter == "alpha"
    # as a static argument it is fine
    out = jax.jit(lambda a, s: f(a, s), static_argnums=1)(jnp.ones(4, jnp.float32), 2.0)
    assert np.asarray(out).tolist() == [2.0] * 4


def test_unhashable_constexpr_is_cb905():
    f = cj.op(K.affine_cx, outputs={"out": "x"})
    with pytest.raises(cute_bind.LaunchArgumentError, match=r"\[CB905\]") as info:
        jax.jit(lambda a: f(a, [1.0], True))(jnp.ones(4, jnp.float32))
    assert info.value.parameter == "shift"


@pytest.mark.parametrize(
    "args, kwargs, code",
    [
        ((), {}, "CB201"),
        ((jnp.ones(4), 1.0, 2.0), {}, "CB202"),
        ((jnp.ones(4),), {"beta": 1}, "CB202"),
        ((jnp.ones(4), 1.0), {"alpha": 1.0}, "CB203"),
    ],
)
def test_argument_binding_is_the_kernels(args, kwargs, code):
    f = scale_op()
    with pytest.raises(cute_bind.CuteBindError, match=rf"\[{code}\]"):
        f(*args, **kwargs)


@pytest.mark.parametrize(
    "transform, got",
    [
        (lambda f: jax.vmap(lambda a: f(a, 2.0))(jnp.ones((3, 4), jnp.float32)), "jax.vmap of a cute_bind.jax call"),
        (lambda f: jax.grad(lambda a: f(a, 2.0).sum())(jnp.ones(4, jnp.float32)), "jax.jvp/jax.grad of a cute_bind.jax call"),
        (lambda f: jax.jvp(lambda a: f(a, 2.0), (jnp.ones(4),), (jnp.ones(4),)), "jax.jvp/jax.grad of a cute_bind.jax call"),
    ],
)
def test_transforms_are_cb909(transform, got):
    with pytest.raises(cute_bind.LaunchRuntimeError, match=r"\[CB909\]") as info:
        transform(scale_op())
    assert info.value.got.startswith(got)


def test_export_is_cb910():
    f = scale_op()
    with pytest.raises(cute_bind.LaunchRuntimeError, match=r"\[CB910\]"):
        jax.export.export(jax.jit(lambda a: f(a, 2.0)), platforms=["cpu"])(jax.ShapeDtypeStruct((4,), jnp.float32))


def test_eval_shape_compiles_nothing():
    f = cj.op(K.split_sign, outputs={"pos": "x", "neg": "x", "counts": cj.shaped((1,), "int32")})
    before = len(frames._KEPT)
    shapes = jax.eval_shape(f, jax.ShapeDtypeStruct((5,), jnp.float32))
    assert [(s.shape, s.dtype) for s in shapes] == [((5,), jnp.float32), ((5,), jnp.float32), ((1,), jnp.int32)]
    assert len(frames._KEPT) == before


def test_a_kernel_without_stream_is_refused_for_cuda():
    """Lowered for CUDA (cross-platform lowering works without a GPU), a kernel with no stream parameter would
    launch on the default stream, outside XLA's order: CB906 names it."""
    f = scale_op()
    with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB906\]") as info:
        jax.jit(lambda a: f(a, 2.0)).trace(jax.ShapeDtypeStruct((4,), jnp.float32)).lower(lowering_platforms=("cuda",))
    assert info.value.parameter == "stream"


def test_cross_lowering_for_cuda_writes_the_stream_slot():
    """A kernel with a stream parameter lowers for CUDA on this machine (a host-only body binds without a GPU)."""
    f = cj.op(K.scale_stream, outputs={"out": "x"})
    text = jax.jit(lambda a: f(a, 2.0)).trace(jax.ShapeDtypeStruct((4,), jnp.float32)).lower(lowering_platforms=("cuda",)).as_text()
    assert "@cute_bind_call(" in text
