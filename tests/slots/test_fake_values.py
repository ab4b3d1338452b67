"""The DSL's compile-time placeholders in tensor and stream slots (issue 23, Build item 2).

``make_fake_tensor``/``make_fake_compact_tensor`` tensors, ``make_fake_stream``
streams and ``from_dlpack`` tensors of fake (address 0) torch tensors are what
``cute.compile`` takes to compile without data. Inside ``dsl.compile_only()``
(what ``Kernel.compile`` binds under) a slot takes them as the compile's spec:
the DSL value is the placeholder itself and the key its spelling. Anywhere
else (``bind()``, a call, a launch) they are CB226: there is nothing to launch.
"""

from __future__ import annotations

from typing import Any, Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import (
    from_dlpack,
    make_fake_compact_tensor,
    make_fake_stream,
    make_fake_tensor,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_bind
from cute_bind import dsl
from cute_bind.slots import StreamKind, TensorKind, Where, classify
from tests.optional import torch_or_skip

torch = torch_or_skip()

W = Where("k", "x")
GENERIC = cute.AddressSpace.generic


def _fake(dtype: Any = cutlass.Float32, extent: Any = None, align: int = 16) -> Any:
    extent = cute.sym_int() if extent is None else extent
    return make_fake_tensor(dtype, (extent, 8), (cute.sym_int64(divisibility=4), 1), assumed_align=align, memspace=GENERIC)


SLOTS = [
    ("cute.Tensor", lambda: TensorKind()),
    ("cute_bind.Tensor", lambda: classify(cute_bind.Tensor[cutlass.Float32, 2])),
    ("cute_bind.Tensor shape", lambda: classify(cute_bind.Tensor[cutlass.Float32, ("?", "static"), 16])),
    ("Optional[cute.Tensor]", lambda: classify(Optional[cute.Tensor])),
]


@pytest.mark.parametrize("name, make", SLOTS, ids=[s[0] for s in SLOTS])
def test_a_fake_tensor_is_the_compile_spec_inside_compile_only(name: str, make: Any) -> None:
    slot, fake = make(), _fake()
    with dsl.compile_only() as state:
        b = slot.bind(fake, W)
        assert b.dsl_value is fake and b.packed in (None, ())
        key = dsl.fake_tensor_spelling(fake, state)
    assert b.key in (key, ("value", key))  # an optional slot wraps its element's key


@pytest.mark.parametrize("name, make", SLOTS, ids=[s[0] for s in SLOTS])
def test_a_fake_tensor_outside_compile_is_cb226(name: str, make: Any) -> None:
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        make().bind(_fake(), W)
    assert (info.value.code, info.value.kernel, info.value.parameter) == ("CB226", "k", "x")
    assert "FakeTensor<Float32" in info.value.got and "kernel.compile" in info.value.expected


def test_a_fake_tensor_is_checked_against_the_annotation() -> None:
    slot = classify(cute_bind.Tensor[cutlass.Float16, 2])
    with dsl.compile_only(), pytest.raises(cute_bind.LaunchArgumentError) as info:
        slot.bind(_fake(cutlass.Float32), W)
    assert info.value.code == "CB211" and "Float32" in info.value.got


@pytest.mark.parametrize("env", [False, True])
def test_a_fake_stream_inside_compile_only_keys_its_kind(env: bool) -> None:
    fake = make_fake_stream(use_tvm_ffi_env_stream=env)
    with dsl.compile_only():
        b = StreamKind().bind(fake, W)
    # the environment stream takes the argument out of a TVM-FFI entry: part of the key, unlike a real stream
    assert (b.dsl_value, b.key, b.packed) == (fake, ("fake stream", env), 0)
    assert StreamKind().bind(0, W).key is None


@pytest.mark.parametrize("how", ["bind", "launch"])
def test_a_fake_stream_outside_compile_is_cb226(how: str) -> None:
    fake = make_fake_stream(use_tvm_ffi_env_stream=True)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        StreamKind().bind(fake, W) if how == "bind" else StreamKind().coerce(fake, W)
    assert info.value.code == "CB226" and "FakeStream" in info.value.got


# ------------------------------------------------------------------ the spelling
def test_a_shared_symint_is_one_value_in_the_key() -> None:
    """Two tensors of one SymInt (a TVM-FFI entry checks them equal) key apart from two SymInts."""
    slot = TensorKind()
    n = cute.sym_int()

    def keys(a: Any, b: Any) -> tuple[Any, Any]:
        with dsl.compile_only():
            return slot.bind(a, W).key, slot.bind(b, W).key

    shared = keys(_fake(extent=n), _fake(extent=n))
    separate = keys(_fake(), _fake())
    assert shared[0] == separate[0] and shared[1] != separate[1]
    m = cute.sym_int()
    assert keys(_fake(extent=m), _fake(extent=m)) == shared  # fresh objects, same structure: the same key


MODES = st.one_of(
    st.integers(1, 4096),
    st.tuples(st.sampled_from([32, 64]), st.sampled_from([1, 2, 4, 8, 16])),
)


def _make(dtype: Any, shape: tuple[Any, ...], align: int) -> Any:
    return make_fake_compact_tensor(
        dtype,
        tuple(cute.sym_int(m[0], divisibility=m[1]) if isinstance(m, tuple) else m for m in shape),
        assumed_align=align,
        memspace=GENERIC,
    )


@settings(max_examples=60, deadline=None)
@given(
    a=st.tuples(
        st.sampled_from(["Float32", "Float16", "Int8"]), st.lists(MODES, min_size=1, max_size=3).map(tuple), st.sampled_from([4, 8, 16])
    ),
    b=st.tuples(
        st.sampled_from(["Float32", "Float16", "Int8"]), st.lists(MODES, min_size=1, max_size=3).map(tuple), st.sampled_from([4, 8, 16])
    ),
)
def test_spellings_are_equal_exactly_when_the_fakes_are(a: Any, b: Any) -> None:
    def spell(spec: Any) -> Any:
        with dsl.compile_only() as state:
            return dsl.fake_tensor_spelling(_make(getattr(cutlass, spec[0]), spec[1], spec[2]), state)

    assert spell(a) == spell(a)
    assert (spell(a) == spell(b)) == (a == b)


# ------------------------------------------------------------------ from_dlpack of fake torch tensors
def _fake_cuda_tensor() -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return torch.empty(2, 8, dtype=torch.float32, device="cuda")


def test_a_from_dlpack_tensor_at_address_0_compiles_but_does_not_bind() -> None:
    """FlashAttention compiles from ``from_dlpack(<FakeTensor>)``: its layout is the compile's."""
    pytest.importorskip("tvm_ffi")
    t = from_dlpack(_fake_cuda_tensor(), assumed_align=16, enable_tvm_ffi=True).mark_layout_dynamic()
    with dsl.compile_only():
        b = TensorKind().bind(t, W)
    assert b.dsl_value is t and b.packed is None and "(?,?):(?{i64},1)" in str(b.key)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        TensorKind().bind(t, W)
    assert info.value.code == "CB216"


# ------------------------------------------------------------------ through a kernel
@cute.jit
def _scale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream):
    for i in range(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = inp[i, j] * alpha


def test_kernel_compile_takes_fakes_as_cute_compile_does() -> None:
    n = cute.sym_int()
    args = (_fake(extent=n), _fake(extent=n), cutlass.Float32(1.0), make_fake_stream())
    k = cute_bind.kernel(_scale, name="scale_fakes")
    ours = k.compile(*args)
    theirs = cute.compile(_scale, *args)
    assert str(ours.ir_module) == str(theirs.ir_module)
    for how in (k.bind, k):
        with pytest.raises(cute_bind.LaunchArgumentError) as info:
            how(*args)
        assert (info.value.code, info.value.parameter) == ("CB226", "out")
