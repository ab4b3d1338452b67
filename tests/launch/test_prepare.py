"""cute_bind.prepare on functions compiled with cute.compile."""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import make_ptr

import cute_bind
from tests.kernels.host import scale_ptr
from tests.optional import torch_or_skip


def compiled_scale(y, x):
    args = (
        make_ptr(cutlass.Float32, y.ctypes.data),
        make_ptr(cutlass.Float32, x.ctypes.data),
        cutlass.Float32(1.0),
        cutlass.Int32(64),
        cuda.CUstream(0),
    )
    return cute.compile(scale_ptr, *args), args


def test_prepare_matches_direct_call():
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    y = np.zeros(64, np.float32)
    compiled, args = compiled_scale(y, x)
    h = cute_bind.prepare(compiled, *args)
    for alpha in (0.5, -3.0):
        expected = np.full(64, np.nan, np.float32)
        compiled(make_ptr(cutlass.Float32, expected.ctypes.data), args[1], cutlass.Float32(alpha), cutlass.Int32(64), cuda.CUstream(0))
        y.fill(np.nan)
        h.launch(y.ctypes.data, x.ctypes.data, alpha, 64, 0)
        assert y.tobytes() == expected.tobytes()
    assert h.launch(y, x, alpha=1.0, n=64, stream=cuda.CUstream(0)) == 0


def test_prepare_executor_from_to():
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    compiled, args = compiled_scale(y, x)
    executor = compiled.to(None)  # host-only: no device needed
    h = cute_bind.prepare(executor, *args)
    h.launch(y.ctypes.data, x.ctypes.data, 4.0, 64, 0)
    assert np.array_equal(y, x * 4)


def test_prepare_pointer_slot_learns_dtype_from_value():
    x = np.zeros(64, np.float32)
    compiled, args = compiled_scale(x, x)
    h = cute_bind.prepare(compiled, *args)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        h.launch(np.zeros(64, np.int64), x, 1.0, 4, 0)
    assert info.value.code == "CB210"


@pytest.mark.parametrize("obj", [scale_ptr, 42, None])
def test_prepare_rejects_uncompiled(obj):
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(obj, 1)
    assert info.value.code == "CB301"


def test_prepare_takes_tvm_ffi_compiled_with_pointer_parameters():
    """A TVM-FFI call takes int addresses for pointer parameters (the DSL converts make_ptr objects)."""
    pytest.importorskip("tvm_ffi")
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    _, args = compiled_scale(y, x)
    tvm = cute.compile(scale_ptr, *args, options="--enable-tvm-ffi")
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(tvm, *args)  # make_ptr objects: CB308
    assert (info.value.code, info.value.parameter) == ("CB308", "out")
    h = cute_bind.prepare(tvm, y.ctypes.data, x.ctypes.data, 1.0, 64, 0)
    assert "out: int" in repr(h)
    expected = np.zeros(64, np.float32)
    for alpha in (0.5, -3.0):
        tvm(expected.ctypes.data, x.ctypes.data, alpha, 64, 0)
        h.launch(y.ctypes.data, x.ctypes.data, alpha, 64, 0)
        assert y.tobytes() == expected.tobytes() and y[1] == alpha


def test_prepare_argument_errors():
    x = np.zeros(64, np.float32)
    compiled, args = compiled_scale(x, x)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(compiled, *args[:4])
    assert (info.value.code, info.value.parameter) == ("CB201", "stream")


def test_prepare_unannotated_parameter_takes_its_kind_from_the_value():
    from tests.kernels.host import fill_unannotated

    out = np.zeros(1, np.int32)
    p = make_ptr(cutlass.Int32, out.ctypes.data)
    compiled = cute.compile(fill_unannotated, p, 1)
    h = cute_bind.prepare(compiled, p, 1)
    assert h.slots["value"].dtype_name == "Int32"
    h.launch(out, 42)
    assert out[0] == 42
    with pytest.raises(cute_bind.LaunchValueError) as info:
        h.launch(out, 2**31)
    assert info.value.code == "CB205"


# ------------------------------------------------------------------ tensor descriptors vs the compiled argument types
def _descriptor_cases():
    torch = torch_or_skip()
    from cutlass.cute.runtime import from_dlpack

    col = lambda: torch.zeros(4, 6).t()  # noqa: E731 - column major, (6, 4) with strides (1, 6)
    strided = lambda: torch.zeros(6, 8)[::2, ::2]  # noqa: E731 - no unit stride: every stride dynamic
    return [
        # (id, compile-time value, prepare-time value, expected code or None)
        ("rank1_dynamic_plain", lambda: from_dlpack(torch.zeros(8)).mark_layout_dynamic(), lambda: torch.zeros(8), None),
        ("static_plain", lambda: from_dlpack(torch.zeros(8)), lambda: torch.zeros(8), "CB306"),
        ("static_marked", lambda: from_dlpack(torch.zeros(8)), lambda: from_dlpack(torch.zeros(8)), None),
        ("leading_dim0_plain", lambda: from_dlpack(col()).mark_layout_dynamic(leading_dim=0), col, "CB306"),
        (
            "leading_dim0_marked",
            lambda: from_dlpack(col()).mark_layout_dynamic(leading_dim=0),
            lambda: from_dlpack(col()).mark_layout_dynamic(leading_dim=0),
            None,
        ),
        (
            "compact_mode1_plain",
            lambda: from_dlpack(torch.zeros(4, 8)).mark_compact_shape_dynamic(mode=1, stride_order=(0, 1), divisibility=4),
            lambda: torch.zeros(4, 8),
            "CB306",
        ),
        ("all_strides_dynamic_plain", lambda: from_dlpack(strided()).mark_layout_dynamic(), strided, None),
    ]


@pytest.mark.parametrize(
    "case",
    range(7),
    ids=[
        "rank1_dynamic_plain",
        "static_plain",
        "static_marked",
        "leading_dim0_plain",
        "leading_dim0_marked",
        "compact_mode1_plain",
        "all_strides_dynamic_plain",
    ],
)
def test_tensor_descriptors_are_checked_against_the_compiled_argument_types(case):
    from tests.kernels.styles import add_unannotated

    name, at_compile, at_prepare, code = _descriptor_cases()[case]
    compiled = cute.compile(add_unannotated, at_compile(), at_compile(), at_compile())
    args = (at_prepare(), at_prepare(), at_prepare())
    if code is None:
        assert len(cute_bind.prepare(compiled, *args).slots) == 3
        return
    with pytest.raises(cute_bind.LaunchValueError) as info:
        cute_bind.prepare(compiled, *args)
    assert (info.value.code, info.value.parameter) == (code, "a")


def test_an_executor_has_no_ir_to_check_tensors_against():
    torch = torch_or_skip()
    from cutlass.cute.runtime import from_dlpack

    from tests.kernels.styles import add_unannotated

    t = from_dlpack(torch.zeros(8)).mark_layout_dynamic()
    compiled = cute.compile(add_unannotated, t, t, t)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        cute_bind.prepare(compiled.to(None), t, t, t)
    assert info.value.code == "CB307"
    assert len(cute_bind.prepare(compiled, t, t, t).slots) == 3  # the compiled function itself has its IR


@pytest.mark.parametrize("marked, code", [(False, None), (True, "CB306")], ids=["dynamic-as-read", "static-at-compile"])
def test_tensors_inside_a_structure_are_checked_against_the_compiled_argument_types(marked, code):
    """A tensor reaching the kernel inside a NamedTuple is a C argument like any other: prepare()
    compares its descriptor with the compiled one (it went unchecked, so a static compile was
    prepared with a dynamic descriptor)."""
    torch = torch_or_skip()
    from cutlass.cute.runtime import from_dlpack

    from tests.kernels.styles import TensorPair, add_pair

    def at_compile():
        t = from_dlpack(torch.zeros(8))
        return t if marked else t.mark_layout_dynamic()

    compiled = cute.compile(add_pair, TensorPair(at_compile(), at_compile()), at_compile())
    a, b, c = torch.arange(8.0), torch.ones(8), torch.zeros(8)
    if code is None:
        h = cute_bind.prepare(
            compiled,
            TensorPair(from_dlpack(a).mark_layout_dynamic(), from_dlpack(b).mark_layout_dynamic()),
            from_dlpack(c).mark_layout_dynamic(),
        )
        h.launch(TensorPair(a, b), c)
        assert torch.equal(c, a + b)
        return
    with pytest.raises(cute_bind.LaunchValueError) as info:
        cute_bind.prepare(compiled, TensorPair(a, b), c)
    assert info.value.code == code and info.value.parameter.startswith("p")
