"""Production clients' annotations, as they are, through ``@cute_bind.kernel`` (issue 40, Build item 3).

- ``Union[cute.Tensor, <client operand class>]`` / ``cute.Tensor | Operand`` (quack's
  ``mA: Union[cute.Tensor, TransformAOperand]``; was CB102): the value picks the member, as
  the DSL's ``_validate_arg`` and its value-driven marshalling do;
- a NamedTuple annotation given a plain tuple of its arity (was CB204): read as that
  NamedTuple (same slots, same key); another arity is CB234, naming the fields;
- a class kernel's unannotated parameters (``stream``; was CB101): the kind is read from the
  value given at compile/bind time, and the kernel says so;
- FP8 data passed as a ``uint8`` view, and every torch dtype on tensor and pointer slots:
  taken, or a coded error (never a raw exception).

Launch rows compare the output bitwise with calling the DSL's own ``cute.compile(...)``
result, on both launch paths (the ``path`` fixture).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
import cuda.bindings.driver as cuda  # noqa: E402
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Float32, Int32  # noqa: E402
from cutlass.cute.runtime import from_dlpack  # noqa: E402

import cute_bind  # noqa: E402
from cute_bind import CuteBindError  # noqa: E402
from cute_bind.slots import OptionalKind, Rejected, StructureKind, TensorKind, classify  # noqa: E402
from cute_bind.slots.registry import InferredKind  # noqa: E402
from tests.kernels import client_annotations as K  # noqa: E402


def _t(seed: int, n: int = 4) -> Any:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def _dsl(value: Any) -> Any:
    """``value`` with every torch tensor (also inside NamedTuples) as the DSL's compile takes it."""
    if isinstance(value, torch.Tensor):
        return from_dlpack(value).mark_layout_dynamic()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_dsl(v) for v in value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Int32(value) if isinstance(value, int) else Float32(value)
    return value


def _reference(fn: Any, *args: Any) -> Any:
    """The output of the DSL's own ``cute.compile(fn, ...)`` result called with the same values."""
    out = torch.zeros(4)
    dsl_args = [_dsl(out), *(_dsl(a) for a in args)]
    compiled = cute.compile(fn, *dsl_args)
    compiled(*dsl_args)
    return out


# ------------------------------------------------------------------ (a) unions with a client's class
CLASSIFIED = [
    (Union[cute.Tensor, K.Operand], ("tensor", "structure")),
    (cute.Tensor | K.Operand, ("tensor", "structure")),
    (cute.Tensor | K.Opaque, ("tensor", "inferred")),
    (cute.Tensor | torch.Tensor, ("tensor", "inferred")),
    (Union[cute.Tensor, Int32], ("tensor", "scalar")),  # FlashAttention's decode seqlens
    (cute.Tensor | cute.Pointer, ("tensor", "pointer")),
]


@pytest.mark.parametrize("annotation, members", CLASSIFIED, ids=[repr(c[0]) for c in CLASSIFIED])
def test_unions_with_a_tensor_member_are_slots(annotation: Any, members: tuple[str, ...]) -> None:
    found = classify(annotation)
    assert isinstance(found, OptionalKind) and not found.nullable
    assert tuple(m.kind for m in found.members) == members
    assert found.reads_address  # a tensor member: converted after the numbers (the lifetime rule)


REFUSED = [
    (cute.Tensor | str, "CB114"),  # a builtin that is no eligible kind
    (cute.Tensor | cute.Layout, "CB114"),  # a DSL type that is no eligible kind
    (Int32 | Float32, "CB102"),  # no tensor member, no None: as before (and as the static tools say)
    (Int32 | K.Opaque, "CB102"),
    (Optional[Union[cute.Tensor, K.Opaque]], "CB114"),  # with None: every member an eligible kind, as before
]


@pytest.mark.parametrize("annotation, code", REFUSED, ids=[repr(c[0]) for c in REFUSED])
def test_other_unions_are_refused_as_before(annotation: Any, code: str) -> None:
    found = classify(annotation)
    assert isinstance(found, Rejected) and found.diagnostic.code == code


UNION_ROWS = [
    # (kernel, values after out, what the first value binds as)
    (K.union_operand, lambda s: (_t(s),), TensorKind),
    (K.union_operand, lambda s: (K.Operand(_t(s), 0.5),), StructureKind),
    (K.union_operand, lambda s: (K.Operand(_t(s), 2.0, _t(s + 7)),), StructureKind),
    (K.piped_operand, lambda s: (_t(s), 3), TensorKind),
    (K.piped_operand, lambda s: (K.Operand(_t(s), 0.25), 5), StructureKind),
    (K.opaque_member, lambda s: (_t(s),), TensorKind),
]


@pytest.mark.parametrize("row", range(len(UNION_ROWS)))
def test_union_members_launch_like_the_dsl(row: int, path: str) -> None:
    fn, make, kind = UNION_ROWS[row]
    kernel = cute_bind.kernel(fn)
    args = make(1)
    out = torch.zeros(4)
    handle = kernel.bind(out, *args)
    assert isinstance(handle.slots["a"].inner, kind)
    for seed in (2, 3):
        new = make(seed)
        want = _reference(fn, *new)
        handle.launch(out, *new)
        assert torch.equal(out.view(torch.int32), want.view(torch.int32))
        out.zero_()
        kernel(out, *new)
        assert torch.equal(out.view(torch.int32), want.view(torch.int32))


def test_a_union_member_is_fixed_at_bind_and_none_is_refused(path: str) -> None:
    kernel = cute_bind.kernel(K.union_operand)
    out = torch.zeros(4)
    handle = kernel.bind(out, _t(1))
    with pytest.raises(CuteBindError) as info:
        handle.launch(out, K.Operand(_t(2), 1.0))
    assert info.value.code == "CB231"  # the other member: kernel(...) compiles it, the handle refuses it
    with pytest.raises(CuteBindError) as info:
        kernel.bind(out, None)  # the DSL refuses None too: NoneType is no member
    assert info.value.code == "CB230" and "None is not a member" in str(info.value)
    # both members through kernel(...): one specialization each
    kernel(out, _t(3))
    kernel(out, K.Operand(_t(4), 1.0))
    assert len(kernel.specializations()) == 2


@pytest.mark.parametrize("value, code", [(K.Opaque(1.0), "CB204"), (K.JitArg(), "CB230"), ("x", "CB230")])
def test_a_client_member_value_cute_bind_cannot_rewrite_is_a_coded_error(value: Any, code: str) -> None:
    kernel = cute_bind.kernel(K.opaque_member)
    with pytest.raises(CuteBindError) as info:
        kernel.bind(torch.zeros(4), value)
    assert info.value.code == code


# ------------------------------------------------------------------ (b) a NamedTuple given a plain tuple
TUPLE_ROWS = [
    (K.pair, lambda s: (s, 0.5 * s), K.Pair),
    (K.pair, lambda s: (Int32(s), Float32(1.5)), K.Pair),
    (K.operand, lambda s: (_t(s), 0.5), K.Operand),  # the last field left to its default (None)
    (K.operand, lambda s: (_t(s), 2.0, _t(s + 1)), K.Operand),
]


@pytest.mark.parametrize("row", range(len(TUPLE_ROWS)))
def test_a_plain_tuple_is_taken_as_the_namedtuple(row: int, path: str) -> None:
    fn, make, cls = TUPLE_ROWS[row]
    kernel = cute_bind.kernel(fn)
    out = torch.zeros(4)
    first = make(1)
    if len(first) < len(cls._fields):
        with pytest.raises(CuteBindError) as info:  # a short tuple: the defaults are the class's, not the tuple's
            kernel.bind(out, first)
        assert info.value.code == "CB234"
        return
    handle = kernel.bind(out, first)
    # same slots and key as the NamedTuple itself
    assert handle.slots["p"].describe() == kernel.bind(out, cls(*first)).slots["p"].describe()
    assert kernel.compiler.bind((out, first), {}).key == kernel.compiler.bind((out, cls(*first)), {}).key
    for seed in (2, 3):
        new = make(seed)
        want = _reference(fn, cls(*new))
        for value in (new, cls(*new)):
            out.zero_()
            handle.launch(out, value)
            assert torch.equal(out.view(torch.int32), want.view(torch.int32))
            out.zero_()
            kernel(out, value)
            assert torch.equal(out.view(torch.int32), want.view(torch.int32))
    assert len(kernel.specializations()) == 1


@pytest.mark.parametrize("value", [(1,), (1, 2.0, 3), ()])
def test_a_tuple_of_another_arity_is_cb234_naming_the_fields(value: tuple[Any, ...], path: str) -> None:
    kernel = cute_bind.kernel(K.pair)
    out = torch.zeros(4)
    with pytest.raises(CuteBindError) as info:
        kernel(out, value)
    assert info.value.code == "CB234" and "(a, b)" in str(info.value)
    handle = kernel.bind(out, (1, 2.0))
    with pytest.raises(CuteBindError) as info:
        handle.launch(out, value)
    assert info.value.code == "CB234"


def test_a_list_is_still_refused() -> None:
    with pytest.raises(CuteBindError) as info:
        cute_bind.kernel(K.pair).bind(torch.zeros(4), [1, 2.0])
    assert info.value.code == "CB204"


# ------------------------------------------------------------------ (c) a class kernel's unannotated parameters
def test_a_class_kernels_unannotated_parameters_are_read_from_the_values() -> None:
    kernel = cute_bind.kernel(K.Scaler(3))
    params = {p.name: p for p in kernel.signature.params}
    assert isinstance(params["stream"].slot, InferredKind) and isinstance(params["n"].slot, InferredKind)
    assert params["stream"].slot.reads_address  # unbound: converted with the address-reading slots
    assert "stream: unannotated (kind read from the value)" in repr(kernel)  # the kernel says so
    assert "class kernel" in cute_bind.CATALOG["CB101"].explanation  # and `python -m cute_bind explain CB101`


def test_a_plain_function_still_needs_annotations() -> None:
    def fn(out: cute.Tensor, n):  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(fn)
    assert info.value.code == "CB101"  # as the static tools report it


SCALER_STREAMS = [cuda.CUstream(0), 0]


@pytest.mark.parametrize("stream", SCALER_STREAMS, ids=["CUstream", "int"])
def test_a_class_kernel_with_an_unannotated_stream_launches_like_the_dsl(stream: Any, path: str) -> None:
    obj = K.Scaler(3)
    kernel = cute_bind.kernel(obj)
    out = torch.zeros(4)
    handle = kernel.bind(out, _t(1), 5, stream)
    expected_kind = "stream" if isinstance(stream, cuda.CUstream) else "scalar"  # an int is an Int32, as the DSL reads it
    assert handle.slots["stream"].kind == expected_kind and handle.slots["n"].kind == "scalar"
    for seed in (2, 3):
        x = _t(seed)
        want = torch.zeros(4)
        compiled = cute.compile(obj, _dsl(want), _dsl(x), seed, stream)
        compiled(_dsl(want), _dsl(x), seed, stream)
        handle.launch(out, x, seed, stream)
        assert torch.equal(out.view(torch.int32), want.view(torch.int32))
        out.zero_()
        kernel(out, x, seed, stream)
        assert torch.equal(out.view(torch.int32), want.view(torch.int32))


def test_a_class_kernels_unannotated_values_compile_from_fakes_and_none(path: str) -> None:
    kernel = cute_bind.kernel(K.Untyped())
    out = torch.zeros(4)
    fake = cute.runtime.make_fake_compact_tensor(Float32, (4,))
    kernel.compile(fake, K.Pair(Int32(1), Float32(2.0)), None)  # a fake tensor, a structure, a None stream
    kernel(out, K.Pair(2, 0.25))
    assert out[:2].tolist() == [2.0, 0.25]
    kernel(out, (3, 0.5))  # an unannotated parameter given a plain tuple: a sequence, as the DSL reads it
    with pytest.raises(CuteBindError):
        kernel(out, object())


# ------------------------------------------------------------------ (d) FP8 as uint8 views; every torch dtype
def _fp8_bytes() -> Any:
    return torch.tensor([1.0, -2.0, 0.5, 448.0]).to(torch.float8_e4m3fn)


@pytest.mark.parametrize("fn", [K.raw_bytes, K.u8_pointer], ids=["tensor", "pointer"])
def test_fp8_data_as_a_uint8_view_launches_like_the_dsl(fn: Any, path: str) -> None:
    data = _fp8_bytes().view(torch.uint8)
    kernel = cute_bind.kernel(fn)
    out = torch.zeros(4)
    want = torch.zeros(4)
    if fn is K.raw_bytes:
        compiled = cute.compile(fn, _dsl(want), from_dlpack(data).mark_layout_dynamic())
        compiled(_dsl(want), from_dlpack(data).mark_layout_dynamic())
    else:
        ptr = cute.runtime.make_ptr(cutlass.Uint8, data.data_ptr(), cute.AddressSpace.generic)
        compiled = cute.compile(fn, _dsl(want), ptr)
        compiled(_dsl(want), ptr)
    assert want[0] == float(data[0])  # the bytes themselves (the DSL's own conversion decides the rest)
    handle = kernel.bind(out, data)
    handle.launch(out, data)
    assert torch.equal(out, want)
    out.zero_()
    kernel(out, data)
    assert torch.equal(out, want)


def _every_torch_dtype() -> list[Any]:
    found = {getattr(torch, n) for n in dir(torch) if isinstance(getattr(torch, n, None), torch.dtype)}
    return sorted(found, key=str)


def _tensor_of(dtype: Any) -> Any:
    try:
        return torch.zeros(8, dtype=dtype)
    except Exception:  # noqa: BLE001 - a dtype torch makes no plain tensor of: its bytes viewed as it
        try:
            return torch.zeros(8, dtype=torch.uint8).view(dtype)
        except Exception:  # noqa: BLE001 - no such view either (quantized, bits...): nothing to pass
            return None


@pytest.mark.parametrize("dtype", _every_torch_dtype(), ids=str)
def test_every_torch_dtype_is_taken_or_a_coded_error(dtype: Any, path: str) -> None:
    value = _tensor_of(dtype)
    if value is None:
        pytest.skip(f"torch makes no tensor of {dtype}")
    out = torch.zeros(4)
    for fn in (K.untyped_pointer, K.u8_pointer, K.raw_bytes, K.union_operand):
        kernel = cute_bind.kernel(fn)
        for call in (lambda: kernel(out, value), lambda: kernel.bind(out, value).launch(out, value)):
            try:
                call()
            except CuteBindError:
                pass  # a coded error: what the slot does not take
            # anything else (a KeyError from a dtype table) fails the test
