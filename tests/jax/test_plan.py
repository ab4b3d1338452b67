"""cute_bind.jax.op checks the kernel when the op is made: roles, output specs, parameters JAX cannot pass."""

from __future__ import annotations

import pytest

import cute_bind
import cute_bind.jax as cj
from cute_bind.jax.plan import JAX_DTYPES, plan
from cute_bind.slots.dlpack import dtype_code
from tests.jax import kernels as K


@pytest.mark.parametrize(
    "kernel, outputs, mutates, roles",
    [
        (K.scale, {"out": "x"}, (), {"out": "output", "x": "array", "alpha": "static"}),
        (K.scale_stream, {"out": cj.like("x")}, (), {"out": "output", "x": "array", "alpha": "static", "stream": "stream"}),
        (K.axpy, None, ("y",), {"y": "mutated", "x": "array", "a": "static"}),
        (K.axpy, None, "y", {"y": "mutated", "x": "array", "a": "static"}),
        (K.ptr_scale, {"out": "inp"}, (), {"out": "output", "inp": "array", "alpha": "static", "n": "static", "stream": "stream"}),
        (K.affine_cx, {"out": "x"}, (), {"out": "output", "x": "array", "shift": "static", "square": "static"}),
        (K.scale_opt, {"out": "x"}, (), {"out": "output", "x": "array", "bias": "array", "alpha": "static"}),
        (K.split_sign, {"pos": "x", "neg": "x", "counts": cj.shaped((1,), "int32")}, (), {"pos": "output", "neg": "output", "counts": "output", "x": "array"}),
    ],
)  # fmt: skip
def test_roles(kernel, outputs, mutates, roles):
    p = plan(kernel, outputs, mutates)
    assert {q.name: q.role for q in p.params} == roles
    assert [q.name for q in p.results] == [q.name for q in p.params if q.role in ("output", "mutated")]
    assert all(q.role in ("array", "mutated", "static") for q in p.inputs)


def test_annotation_facts_are_read():
    p = {q.name: q for q in plan(K.add2d, {"out": "a"}, ()).params}
    assert (p["a"].dtype, p["a"].rank) == ("Float32", 2)
    assert p["scale_opt" if False else "beta"].role == "static"
    opt = {q.name: q for q in plan(K.scale_opt, {"out": "x"}, ()).params}["bias"]
    assert opt.optional and opt.dtype == "Float32" and opt.rank == 1


@pytest.mark.parametrize(
    "kernel, outputs, mutates, got",
    [
        (K.scale, {"alpha": "x"}, (), "'alpha' is not a tensor or pointer parameter"),
        (K.scale, {"nope": "x"}, (), "'nope' is not a parameter"),
        (K.scale, {"out": "x"}, ("out",), "out in both outputs and mutates_args"),
        (K.axpy, None, ("y", "y"), "a name repeated in mutates_args"),
        (K.scale, {"out": "alpha"}, (), "output 'out' is like 'alpha', not an array input"),
        (K.scale, {"out": "out"}, (), "output 'out' is like 'out', not an array input"),
        (K.scale, {"out": 3}, (), "output 'out' is int"),
        (K.scale, None, (), "no outputs and no mutates_args"),
        (K.scale_opt, {"bias": "x"}, (), "'bias' is not a tensor or pointer parameter"),
    ],
)  # fmt: skip
def test_spec_errors_are_cb907(kernel, outputs, mutates, got):
    with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB907\]") as info:
        cj.op(kernel, outputs=outputs, mutates_args=mutates)
    assert info.value.got == got
    assert info.value.kernel == kernel.name


def test_sequence_without_default_is_cb906():
    with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB906\]") as info:
        cj.op(K.pair_sum, outputs={"out": cj.shaped((4,), "float32")})
    assert info.value.parameter == "xs"


def test_every_jax_dtype_maps_to_a_dlpack_code():
    for jax_name, cute in JAX_DTYPES.items():
        assert dtype_code(cute) is not None, (jax_name, cute)


def test_a_cute_jit_function_is_wrapped():
    from tests.kernels import host

    f = cj.op(host.tadd2d, outputs={"out": "inp"})
    assert isinstance(f.kernel, cute_bind.Kernel)
    assert f.result_names == ("out",)
