"""cute_bind.jax calls through XLA's CPU FFI: results, aliasing and donation, statics, frames and their cache.

Every result is compared bitwise with the same kernel called by cute_bind
directly on NumPy arrays (the path torch users take), and the frame's launch
counter (kept in C) shows XLA ran the kernel through the handler.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_bind
import cute_bind.jax as cj
from cute_bind.jax import frames
from tests.jax import kernels as K


def direct(kernel, *args):
    """The kernel called by cute_bind itself on NumPy arrays (the reference)."""
    kernel(*args)


def bits(a) -> bytes:
    return np.asarray(a).tobytes()


def new_frames(before: int) -> list:
    return frames._KEPT[before:]


def test_scale_matches_the_direct_call_and_runs_in_c():
    f = cj.op(K.scale, outputs={"out": "x"})
    x = np.linspace(-3, 5, 37, dtype=np.float32)
    before = len(frames._KEPT)
    g = jax.jit(lambda a: f(a, 1.25))
    y = g(x)
    ref = np.empty_like(x)
    direct(K.scale, ref, x, 1.25)
    assert bits(y) == bits(ref)
    (frame,) = new_frames(before)
    g(x).block_until_ready()
    g(x + 1).block_until_ready()
    assert frame.launches() == 3  # three executions, each one call of the entry point from C


def test_chained_calls_and_jnp_ops_in_one_program():
    f = cj.op(K.scale, outputs={"out": "x"})
    x = jnp.arange(16, dtype=jnp.float32)
    y = jax.jit(lambda a: f(f(a + 1, 2.0) * 3, 0.5) - 1)(x)
    assert bits(y) == bits(((np.arange(16, dtype=np.float32) + 1) * 2 * 3) * 0.5 - 1)


def test_one_frame_per_distinct_call_and_none_on_re_lowering():
    f = cj.op(K.scale, outputs={"out": "x"})
    x = jnp.ones(8, jnp.float32)
    before = len(frames._KEPT)
    chain = jax.jit(lambda a: f(f(f(a, 2.0), 2.0), 2.0))
    assert bits(chain(x)) == bits(np.full(8, 8, np.float32))
    assert len(new_frames(before)) == 1  # three identical calls: one frame
    jax.jit(lambda a: f(a, 2.0))(x)
    assert len(new_frames(before)) == 1  # another program, the same call: the same frame
    jax.jit(lambda a: f(a, 3.0))(x)
    jax.jit(lambda a: f(a, 2.0))(jnp.ones(9, jnp.float32))
    assert len(new_frames(before)) == 3  # another static value, another shape


def test_mutated_argument_aliases_and_donation_reuses_the_buffer():
    f = cj.op(K.axpy, mutates_args=("y",))
    y0 = np.arange(8, dtype=np.float32)
    x = np.full(8, 0.5, np.float32)
    ref = y0.copy()
    direct(K.axpy, ref, x, 4.0)
    y = jnp.asarray(y0)
    address = y.unsafe_buffer_pointer()
    out = jax.jit(lambda a, b: f(a, b, 4.0), donate_argnums=0)(y, x)
    assert bits(out) == bits(ref)
    assert y.is_deleted() and out.unsafe_buffer_pointer() == address  # written in place, no copy
    kept = jnp.asarray(y0)  # not donated: XLA copies first, the input is unchanged
    out2 = jax.jit(lambda a, b: f(a, b, 4.0))(kept, x)
    assert bits(out2) == bits(ref) and bits(kept) == bits(y0)


def test_lowered_custom_call():
    f = cj.op(K.axpy, mutates_args=("y",))
    text = jax.jit(lambda a, b: f(a, b, 1.0)).lower(jnp.ones(4), jnp.ones(4)).as_text()
    assert re.search(r"stablehlo.custom_call @cute_bind_call\(", text)
    assert re.search(r"cute_bind_frame = \d+ : ui64", text)
    assert "output_operand_alias" in text and "operand_index = 0" in text
    g = cj.op(K.scale, outputs={"out": "x"}, allow_cuda_graph=False)
    assert "@cute_bind_call_no_graph(" in jax.jit(lambda a: g(a, 1.0)).lower(jnp.ones(4)).as_text()


def test_pointer_parameters_and_numbers():
    f = cj.op(K.ptr_scale, outputs={"out": cj.like("inp")})
    x = np.arange(64, dtype=np.float32) - 7
    ref = np.zeros(64, np.float32)
    direct(K.ptr_scale, ref, x, -1.5, 64, 0)
    assert bits(jax.jit(lambda a: f(a, -1.5, 64))(x)) == bits(ref)
    assert bits(jax.jit(lambda a: f(a, np.float32(-1.5), n=np.int32(64)))(x)) == bits(ref)  # NumPy scalars


@pytest.mark.parametrize("shift, square", [(0.5, True), (0.5, False), (-2.0, True)])
def test_constexpr_parameters(shift, square):
    f = cj.op(K.affine_cx, outputs={"out": "x"})
    x = np.linspace(-1, 1, 11, dtype=np.float32)
    ref = np.empty_like(x)
    direct(K.affine_cx, ref, x, shift, square)
    assert bits(jax.jit(lambda a: f(a, shift, square))(x)) == bits(ref)


def test_several_outputs_of_several_dtypes():
    f = cj.op(K.split_sign, outputs={"pos": "x", "neg": "x", "counts": cj.shaped((1,), "int32")})
    x = np.array([-2, 3, 0, 1.5, -0.25], np.float32)
    pos, neg, counts = jax.jit(f)(x)
    assert bits(pos) == bits(np.maximum(x, 0)) and bits(neg) == bits(np.minimum(x, 0))
    assert counts.dtype == jnp.int32 and int(counts[0]) == 2


def test_output_from_a_function_of_the_inputs():
    f = cj.op(K.scale, outputs={"out": lambda x, alpha: jax.ShapeDtypeStruct(x.shape, x.dtype)})
    assert bits(jax.jit(lambda a: f(a, 2.0))(np.ones(3, np.float32))) == bits(np.full(3, 2, np.float32))


def test_optional_array():
    f = cj.op(K.scale_opt, outputs={"out": "x"})
    x = np.arange(6, dtype=np.float32)
    assert bits(jax.jit(lambda a: f(a, None, 2.0))(x)) == bits(x * 2)
    assert bits(jax.jit(lambda a: f(a, a, 2.0))(x)) == bits(x * 2 + x)


def test_rank_two():
    f = cj.op(K.add2d, outputs={"out": "a"})
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((3, 4), np.float32)
    ref = np.empty_like(a)
    direct(K.add2d, ref, a, b, 0.5)
    assert bits(jax.jit(lambda p, q: f(p, q, 0.5))(a, b)) == bits(ref)


def test_stream_parameter_on_the_host_platform():
    f = cj.op(K.scale_stream, outputs={"out": "x"})
    assert bits(jax.jit(lambda a: f(a, 3.0))(np.ones(4, np.float32))) == bits(np.full(4, 3, np.float32))


def test_eager_call_outside_jit():
    f = cj.op(K.scale, outputs={"out": "x"})
    assert bits(f(np.ones(4, np.float32), 2.0)) == bits(np.full(4, 2, np.float32))


def test_control_flow_bodies():
    f = cj.op(K.scale, outputs={"out": "x"})
    out = jax.jit(lambda a: jax.lax.fori_loop(0, 5, lambda i, v: f(v, 2.0), a))(jnp.ones(4, jnp.float32))
    assert bits(out) == bits(np.full(4, 32, np.float32))
    out = jax.jit(lambda a, p: jax.lax.cond(p, lambda v: f(v, 2.0), lambda v: v, a))(jnp.ones(4, jnp.float32), True)
    assert bits(out) == bits(np.full(4, 2, np.float32))


@settings(max_examples=25, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 9), st.integers(1, 9)).filter(lambda s: s != (1, 1)),
    beta=st.floats(-4, 4, allow_nan=False, width=32),
)
def test_shapes_property(shape, beta):
    """Any rank-2 shape and number: the XLA call equals the direct call, bitwise ((1, 1): see below)."""
    rows, cols = shape
    f = cj.op(K.add2d, outputs={"out": "a"}) if not hasattr(test_shapes_property, "op") else test_shapes_property.op
    test_shapes_property.op = f
    rng = np.random.default_rng(rows * 10 + cols)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal((rows, cols)).astype(np.float32)
    ref = np.empty_like(a)
    direct(K.add2d, ref, a, b, beta)
    assert bits(jax.jit(lambda p, q: f(p, q, beta))(a, b)) == bits(ref)


def test_the_frame_keeps_its_handle_open():
    f = cj.op(K.scale, outputs={"out": "x"})
    before = len(frames._KEPT)
    jax.jit(lambda a: f(a, 7.0))(np.ones(2, np.float32))
    (frame,) = new_frames(before)
    assert isinstance(frame.handle, cute_bind.PreparedLaunch) and not frame.handle.closed
    assert frame.kernel == "scale"


def test_a_refusal_of_the_dsl_is_binds_code():
    """A (1, 1) tensor has no leading dimension the DSL can deduce: bind() on NumPy arrays and the lowering both raise CB213."""
    f = cj.op(K.add2d, outputs={"out": "a"})
    a = np.ones((1, 1), np.float32)
    K.add2d.clear_cache()
    with pytest.raises(cute_bind.LaunchValueError, match=r"\[CB213\]"):
        K.add2d.bind(np.empty_like(a), a, a, 1.0)
    with pytest.raises(cute_bind.LaunchValueError, match=r"\[CB213\]"):
        jax.jit(lambda p: f(p, p, 1.0))(a)
