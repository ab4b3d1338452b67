"""Tensor slots end to end on host-only functions, on both launch fast paths.

- byte identity: after ``launch(new tensors)`` each tensor slot's descriptor
  bytes equal the memref descriptor the DSL's own marshalling builds for the
  same tensor with the same layout marking (one row per layout case);
- real outputs: bound launches with new tensors (new addresses, new extents
  where the layout is dynamic) match the direct call bitwise;
- every fact the compiled code assumes is checked at launch (one row per
  catalog code), on both fast paths.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

import cute_bind
from cute_bind import dsl
from cute_bind.slots import item_ranges
from tests.kernels.host import tadd2d, tcopy_any, tlead0, tscale, tstatic
from tests.optional import torch_or_skip

torch = torch_or_skip()

TSCALE = cute_bind.kernel(tscale)
TADD2D = cute_bind.kernel(tadd2d)
TSTATIC = cute_bind.kernel(tstatic)
TCOPY = cute_bind.kernel(tcopy_any)


def _items_fmt(layout) -> str:
    return "@Q" + "".join(("i" if m.width == 32 else "q") for m in (*layout.shape, *layout.stride) if m.static is None)


def _items(raw: bytes, layout) -> bytes:
    # the padding inside the descriptor is never read and the DSL leaves it uninitialised
    return b"".join(raw[a:b] for a, b in item_ranges(_items_fmt(layout)))


def _dsl_descriptor(tensor) -> bytes:
    """The memref descriptor the DSL's marshalling builds for a from_dlpack tensor (items only)."""
    layout = dsl.tensor_layout(tensor)
    return _items(ctypes.string_at(tensor.__c_pointers__()[0], struct.calcsize(_items_fmt(layout))), layout)


def _slot_descriptor(handle, name: str) -> bytes:
    layout = handle.slots[name].layout
    return _items(handle.slot_bytes(name), layout)


# ------------------------------------------------------------------ byte identity
def _dyn(t):
    return from_dlpack(t).mark_layout_dynamic()


# (name, value at bind (made twice: out and inp), value at launch, DSL marking of a launch value)
IDENTITY = [
    ("1d dynamic", lambda: torch.zeros(8), lambda: torch.zeros(13), _dyn),
    ("2d dynamic", lambda: torch.zeros(3, 4), lambda: torch.zeros(5, 7), _dyn),
    ("3d dynamic", lambda: torch.zeros(2, 3, 4), lambda: torch.zeros(4, 1, 6), _dyn),
    ("column major", lambda: torch.zeros(4, 3).t(), lambda: torch.zeros(6, 5).t(), _dyn),
    ("strided view", lambda: torch.zeros(4, 8)[:, ::2], lambda: torch.zeros(6, 10)[:, ::2], _dyn),
    ("offset view", lambda: torch.zeros(16)[3:11], lambda: torch.zeros(32)[5:30], _dyn),
    ("numpy", lambda: np.zeros((3, 4), np.float32), lambda: np.zeros((2, 9), np.float32), _dyn),
    ("numpy at launch", lambda: torch.zeros(3, 4), lambda: np.zeros((6, 2), np.float32), _dyn),
    (
        "compact div 16",
        lambda: from_dlpack(torch.zeros(64, 32)).mark_compact_shape_dynamic(mode=1, divisibility=16),
        lambda: torch.zeros(64, 48),
        lambda t: from_dlpack(t).mark_compact_shape_dynamic(mode=1, divisibility=16),
    ),
    (
        "32-bit strides",
        lambda: from_dlpack(torch.zeros(3, 4), use_32bit_stride=True).mark_layout_dynamic(),
        lambda: torch.zeros(7, 4),
        lambda t: from_dlpack(t, use_32bit_stride=True).mark_layout_dynamic(),
    ),
    (
        "assumed align 16",
        lambda: from_dlpack(torch.zeros(3, 4), assumed_align=16).mark_layout_dynamic(),
        lambda: torch.zeros(5, 4),
        lambda t: from_dlpack(t, assumed_align=16).mark_layout_dynamic(),
    ),
    ("static", lambda: from_dlpack(torch.zeros(3, 4)), lambda: torch.zeros(3, 4), from_dlpack),
    ("rank 0", lambda: torch.zeros(()), lambda: torch.ones(()), _dyn),
]


@pytest.mark.parametrize("case", IDENTITY, ids=[c[0] for c in IDENTITY])
def test_descriptor_bytes_match_the_dsl(case, path):
    _, at_bind, at_launch, mark = case
    handle = TCOPY.bind(at_bind(), at_bind(), 0.0)
    new_out, new_in = at_launch(), at_launch()
    handle.launch(new_out, new_in, 1.0)
    for name, value in (("out", new_out), ("inp", new_in)):
        assert _slot_descriptor(handle, name) == _dsl_descriptor(mark(value)), name


def test_bind_bytes_match_the_dsl_and_layout_is_reported():
    x = torch.zeros(5, 6)
    handle = TCOPY.bind(x, x.clone(), 0.0)
    assert _slot_descriptor(handle, "out") == _dsl_descriptor(_dyn(x))
    assert "(?,?):(?{i64},1)" in repr(handle)


# ------------------------------------------------------------------ real outputs
def test_rank1_outputs_identical_to_direct_call_with_new_tensors(path):
    handle = TSCALE.bind(torch.zeros(8), torch.zeros(8), 1.0)
    for seed, n, alpha in [(1, 8, 2.0), (2, 100, -0.5), (3, 1, 3.25), (4, 0, 1.0), (5, 37, 0.1)]:
        x = torch.randn(n, generator=torch.Generator().manual_seed(seed))
        y_bound, y_direct = torch.full((n,), float("nan")), torch.full((n,), float("nan"))
        handle.launch(y_bound, x, alpha)
        TSCALE.call_dsl(y_direct, x, alpha)
        assert y_bound.numpy().tobytes() == y_direct.numpy().tobytes()


def test_rank2_outputs_identical_to_direct_call(path):
    handle = TADD2D.bind(torch.zeros(2, 3), torch.zeros(2, 3), 0.0)
    for shape, view in [((3, 4), None), ((7, 5), None), ((6, 8), "transpose"), ((4, 10), "stride")]:
        x = torch.randn(*shape)
        if view == "transpose":
            # a transposed tensor moves the unit stride: dynamic, but the leading dimension is compiled in
            with pytest.raises(cute_bind.LaunchValueError) as info:
                handle.launch(torch.zeros(*shape).t(), x.t(), 1.5)
            assert info.value.code == "CB213"
            continue
        if view == "stride":
            x = x[:, ::2]  # non-unit leading stride: CB213 for the (?,?):(?,1) layout
            with pytest.raises(cute_bind.LaunchValueError) as info:
                handle.launch(torch.zeros(x.shape), x, 1.5)
            assert info.value.code == "CB213" and info.value.parameter == "inp"
            continue
        y_bound, y_direct = torch.zeros(*shape), torch.zeros(*shape)
        handle.launch(y_bound, x, 1.5)
        TADD2D.call_dsl(y_direct, x, 1.5)
        assert torch.equal(y_bound, y_direct)


def test_static_layout_runs_and_refuses_other_extents(path):
    handle = TSTATIC.bind(torch.zeros(6), torch.zeros(6))
    x, y = torch.arange(6, dtype=torch.float32), torch.zeros(6)
    handle.launch(y, x)
    assert torch.equal(y, x * 3)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        handle.launch(torch.zeros(7), torch.zeros(7))
    assert info.value.code == "CB213" and "extent of mode 0" in str(info.value)
    assert TSTATIC.bind(torch.zeros(7), torch.zeros(7)).slots["out"].layout.text == "(7):(1)"  # a new compile
    assert TSTATIC.cache_info()["compiled"] == 2


def test_from_dlpack_tensor_at_launch(path):
    handle = TSCALE.bind(torch.zeros(4), torch.zeros(4), 1.0)
    x, y = torch.arange(9, dtype=torch.float32), torch.zeros(9)
    handle.launch(from_dlpack(y), from_dlpack(x), 2.0)
    assert torch.equal(y, x * 2)


# ------------------------------------------------------------------ checks at launch
class _ForeignDevice:
    """A DLPack exporter that reports a CUDA device (its data is host memory; never read)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (2, 0)


BAD = [
    ("dtype", lambda: (torch.zeros(8), torch.zeros(8, dtype=torch.float64)), "CB211", "inp", cute_bind.LaunchArgumentError),
    ("dtype int", lambda: (torch.zeros(8, dtype=torch.int32), torch.zeros(8)), "CB211", "out", cute_bind.LaunchArgumentError),
    ("rank", lambda: (torch.zeros(2, 4), torch.zeros(2, 4)), "CB212", "out", cute_bind.LaunchArgumentError),
    ("static stride", lambda: (torch.zeros(8), torch.zeros(16)[::2]), "CB213", "inp", cute_bind.LaunchValueError),
    ("device", lambda: (torch.zeros(8), _ForeignDevice(np.zeros(8, np.float32))), "CB214", "inp", cute_bind.LaunchValueError),
    ("extent > Int32", lambda: (torch.zeros(1).expand(2**31 + 5), torch.zeros(8)), "CB205", "out", cute_bind.LaunchValueError),
    ("not a tensor", lambda: (torch.zeros(8), [1.0, 2.0]), "CB204", "inp", cute_bind.LaunchArgumentError),
    ("address int", lambda: (torch.zeros(8), 4096), "CB204", "inp", cute_bind.LaunchArgumentError),
    ("none", lambda: (None, torch.zeros(8)), "CB204", "out", cute_bind.LaunchArgumentError),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_launch_checks(case, path):
    _, values, code, param, cls = case
    handle = TSCALE.bind(torch.zeros(8), torch.zeros(8), 1.0)
    out, inp = values()
    with pytest.raises(cls) as info:
        handle.launch(out, inp, 1.0)
    err = info.value
    assert (err.code, err.kernel, err.parameter) == (code, "tscale", param)
    assert err.expected and err.got
    # a rejected launch leaves the handle usable
    x, y = torch.ones(3), torch.zeros(3)
    handle.launch(y, x, 4.0)
    assert torch.equal(y, torch.full((3,), 4.0))


def test_misaligned_data_pointer_is_refused(path):
    # compiled assuming 16-byte alignment; an element-offset view breaks it
    handle = TCOPY.bind(
        from_dlpack(torch.zeros(8), assumed_align=16).mark_layout_dynamic(),
        from_dlpack(torch.zeros(8), assumed_align=16).mark_layout_dynamic(),
        0.0,
    )
    base = torch.zeros(12)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        handle.launch(base[1:9], torch.zeros(8), 0.0)
    assert info.value.code == "CB207" and info.value.parameter == "out"


def test_divisibility_is_checked(path):
    marked = from_dlpack(torch.zeros(64, 32)).mark_compact_shape_dynamic(mode=1, divisibility=16)
    handle = TCOPY.bind(marked, from_dlpack(torch.zeros(64, 32)).mark_compact_shape_dynamic(mode=1, divisibility=16), 0.0)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        handle.launch(torch.zeros(64, 40), torch.zeros(64, 40), 0.0)
    assert info.value.code == "CB213" and "multiple of 16" in str(info.value)


def test_bind_self_check_ignores_descriptor_padding(monkeypatch, path):
    """The DSL leaves the padding inside a memref descriptor uninitialised;
    bind()'s byte comparison (CB305) must compare the items only."""
    real_marshal = dsl.marshal

    def marshal_with_garbage_padding(compiled, args, kwargs):
        addresses, keep = real_marshal(compiled, args, kwargs)
        for address, arg in zip(addresses, args):
            if dsl.is_dsl_tensor(arg):
                fmt = _items_fmt(dsl.tensor_layout(arg)) + "0Q"
                used = set()
                for a, b in item_ranges(fmt):
                    used.update(range(a, b))
                for i in set(range(struct.calcsize(fmt))) - used:
                    ctypes.memset(address + i, 0xAB, 1)
        return addresses, keep

    monkeypatch.setattr(dsl, "marshal", marshal_with_garbage_padding)
    out, inp = torch.zeros(64, 32), torch.ones(64, 32)
    marked = [from_dlpack(t).mark_compact_shape_dynamic(mode=1, divisibility=16) for t in (out, inp)]
    # (64, 32) compact, mode 1 dynamic: {address; i32 extent; 4 padding bytes; i64 stride}
    assert item_ranges(_items_fmt(dsl.tensor_layout(marked[0])) + "0Q")[-1][0] == 16
    handle = TCOPY.bind(*marked, 2.0)
    handle.launch(out, inp, 2.0)
    assert torch.equal(out, torch.full((64, 32), 3.0))


# ------------------------------------------------------------------ bind-time checks from the annotation
def test_annotation_dtype_and_rank_checked_at_bind():
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        TADD2D.bind(torch.zeros(2, 3, dtype=torch.float16), torch.zeros(2, 3), 0.0)
    assert info.value.code == "CB211"
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        TADD2D.bind(torch.zeros(6), torch.zeros(6), 0.0)
    assert info.value.code == "CB212"


@pytest.mark.parametrize(
    "params, fragment",
    [
        ((), "2 to 4"),
        ((int, 1), "numeric"),
        (("float32", 1), "numeric"),
        (("F32", -1), "rank"),
        (("F32", True), "rank"),
        (("F32", 2, 3), "power of two"),
        (("F32", 2, 2), "element size"),
        (("F32", 2, None, "dense"), "layout"),
        (("F32", 2, None, 2), "layout"),
    ],
)
def test_invalid_tensor_annotation(params, fragment):
    import cutlass

    params = tuple(cutlass.Float32 if p == "F32" else p for p in params)
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.Tensor[params]
    assert info.value.code == "CB112" and fragment in str(info.value)


def test_tensor_annotation_is_an_annotation_only():
    with pytest.raises(TypeError):
        cute_bind.Tensor()


def test_layout_choices_compile_as_declared(path):
    k = cute_bind.kernel(tlead0)
    handle = k.bind(torch.zeros(3, 4).t(), torch.zeros(3, 4).t(), 0.0)  # column major: unit stride in mode 0
    assert handle.slots["out"].layout.text == "(?,?):(1,?{i64})" and handle.slots["out"].align == 16
    x = torch.randn(5, 6).t()
    y = torch.zeros(5, 6).t()
    handle.launch(y, x, 1.0)
    assert torch.equal(y, x + 1.0)
    with pytest.raises(cute_bind.LaunchValueError) as info:  # row major: the unit stride moved
        handle.launch(torch.zeros(6, 5), torch.zeros(6, 5), 1.0)
    assert info.value.code == "CB213"


# ------------------------------------------------------------------ prepare() and clones
def test_prepare_with_tensors(path):
    import cutlass.cute as cute

    x = torch.zeros(8)
    compiled = cute.compile(tscale, _dyn(x), _dyn(x.clone()), 1.0)
    handle = cute_bind.prepare(compiled, x, x.clone(), 1.0)
    a, b = torch.arange(20, dtype=torch.float32), torch.zeros(20)
    handle.launch(b, a, 0.5)
    assert torch.equal(b, a * 0.5)


def test_clone_keeps_its_own_descriptor(path):
    handle = TSCALE.bind(torch.zeros(8), torch.zeros(8), 1.0)
    other = handle.clone()
    a, b = torch.ones(4), torch.zeros(4)
    other.launch(b, a, 3.0)
    assert torch.equal(b, torch.full((4,), 3.0))
    assert handle.slot_bytes("out") != other.slot_bytes("out")


def test_c_path_reads_torch_tensors_without_python(monkeypatch):
    """On the C fast path a torch tensor launch never runs cute_bind's Python tensor code."""
    if cute_bind.launch.fast_path() != "c":
        pytest.skip("the C fast path is not built")
    handle = TSCALE.bind(from_dlpack(torch.zeros(8)).mark_layout_dynamic(), torch.zeros(8), 1.0)  # bound with a DSL tensor
    from cute_bind.slots import tensor as _tensor_slot

    def boom(*a, **k):
        raise AssertionError("Python tensor path used")

    monkeypatch.setattr(_tensor_slot.TensorKind, "coerce", boom)
    x, y = torch.arange(5, dtype=torch.float32), torch.zeros(5)
    handle.launch(y, x, 2.0)
    assert torch.equal(y, x * 2)


def test_prepare_refuses_a_tensor_read_with_another_layout():
    """A function compiled for a static layout: a torch tensor (read as dynamic) is refused, the marked tensor works."""
    import cutlass.cute as cute

    y, x = torch.zeros(8), torch.arange(8, dtype=torch.float32)
    compiled = cute.compile(tscale, from_dlpack(y), from_dlpack(x), 1.0)  # (8):(1), static
    with pytest.raises(cute_bind.LaunchValueError) as info:
        cute_bind.prepare(compiled, y, x, 1.0)
    assert info.value.code == "CB306" and info.value.parameter == "out" and "prepare()" in str(info.value)
    handle = cute_bind.prepare(compiled, from_dlpack(y), from_dlpack(x), 2.0)
    handle.launch(y, x, 2.0)
    assert torch.equal(y, x * 2)
    with pytest.raises(cute_bind.LaunchValueError):
        handle.launch(torch.zeros(13), torch.zeros(13), 2.0)  # static extent 8 compiled in


# ------------------------------------------------------------------ values the producer cannot export, odd dtypes
ODD = [
    ("meta", lambda: torch.zeros(8, device="meta")),
    ("sparse", lambda: torch.zeros(8).to_sparse()),
    ("proxy", lambda: __import__("unittest.mock").mock.Mock(spec=torch.Tensor)),
]


@pytest.mark.parametrize("case", ODD, ids=[c[0] for c in ODD])
def test_unexportable_tensors_are_cb204(case, path):
    handle = TSCALE.bind(torch.zeros(8), torch.zeros(8), 1.0)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        handle.launch(torch.zeros(8), case[1](), 1.0)
    assert (info.value.code, info.value.parameter) == ("CB204", "inp")


def test_dtype_without_a_cute_type_is_cb211_at_bind():
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        TSCALE.bind(torch.zeros(8, dtype=torch.complex64), torch.zeros(8), 1.0)
    assert info.value.code == "CB211"


def test_requires_grad_tensors_are_read_like_any_other(path):
    w = torch.ones(8, requires_grad=True)
    handle = TSCALE.bind(torch.zeros(8), w, 1.0)
    y = torch.zeros(8)
    handle.launch(y, w, 3.0)
    assert torch.equal(y, torch.full((8,), 3.0))


def test_32bit_strides_bound_the_footprint(path):
    marked = from_dlpack(torch.zeros(3, 4), use_32bit_stride=True).mark_layout_dynamic()
    handle = TCOPY.bind(marked, from_dlpack(torch.zeros(3, 4), use_32bit_stride=True).mark_layout_dynamic(), 0.0)
    # each stride fits Int32, the span does not: 1 + 2 * 2**30 + 3 elements
    wide = np.lib.stride_tricks.as_strided(np.zeros(4, np.float32), shape=(3, 4), strides=(4 * 2**30, 4))
    with pytest.raises(cute_bind.LaunchValueError) as info:
        handle.launch(wide, torch.zeros(3, 4), 0.0)
    assert info.value.code == "CB205" and "footprint" in str(info.value)
    try:  # the same through the C tensor class (torch): 8 GiB of address space, never touched
        big = torch.empty(2**31 + 8).as_strided((3, 4), (2**30, 1))
    except RuntimeError:
        return
    with pytest.raises(cute_bind.LaunchValueError) as info:
        handle.launch(big, torch.zeros(3, 4), 0.0)
    assert info.value.code == "CB205"


def test_prepare_refuses_another_leading_dimension():
    import cutlass.cute as cute

    col = lambda: from_dlpack(torch.zeros(4, 3).t()).mark_layout_dynamic(leading_dim=0)  # noqa: E731
    compiled = cute.compile(tcopy_any, col(), col(), 0.0)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        cute_bind.prepare(compiled, torch.zeros(3, 4), torch.zeros(3, 4), 0.0)  # read as row major
    assert info.value.code == "CB306" and "prepare()" in str(info.value)
    assert cute_bind.prepare(compiled, col(), col(), 0.0).slots["out"].layout.text == "(?,?):(1,?{i64})"


def test_c_launcher_refuses_misuse():
    if cute_bind.launch.fast_path() != "c":
        pytest.skip("the C fast path is not built")
    from cute_bind.launch._claunch import Launcher

    with pytest.raises(RuntimeError):
        Launcher.__new__(Launcher).launch()
    handle = TSCALE.bind(torch.zeros(8), torch.zeros(8), 1.0)
    with pytest.raises(TypeError):
        handle._launcher.__init__(object())  # initialised twice (its one argument is a LaunchSpec)


def test_from_dlpack_alignment_must_match_the_annotation():
    k = cute_bind.kernel(tlead0)  # cute_bind.Tensor[Float32, 2, 16, 0]
    col = torch.zeros(3, 4).t()
    with pytest.raises(cute_bind.LaunchValueError) as info:
        k.bind(from_dlpack(col).mark_layout_dynamic(leading_dim=0), col, 0.0)
    assert info.value.code == "CB213" and "assumed_align" in str(info.value)
    ok = from_dlpack(col, assumed_align=16).mark_layout_dynamic(leading_dim=0)
    assert k.bind(ok, col, 0.0).slots["out"].align == 16


def _unit_mode(a):
    # ampere/tensorop_gemm.py's marking with L = 1: the DSL compiles the extent-1 mode's stride as 0
    return from_dlpack(a, assumed_align=16).mark_compact_shape_dynamic(mode=2, stride_order=(0, 1, 2), divisibility=8)


def test_an_extent_one_modes_stride_is_not_a_guard(path: str) -> None:
    """Before: every launch of such a slot was CB213 ("stride of mode 0: the slot takes 0"), though the
    DSL's own call takes these tensors: the index of an extent-1 mode is always 0, so its stride is
    never read (torch reports the stride a contiguous layout gives it, or any other after a view)."""
    from tests.kernels.host import tsum_rank3

    a = torch.arange(32, dtype=torch.float32).reshape(1, 4, 8)
    out = torch.zeros(1)
    compiled = cute.compile(tsum_rank3, from_dlpack(out), _unit_mode(a))
    assert "(1,4,?{div=8}):(0," in str(_unit_mode(a))  # the compiled stride of the extent-1 mode is 0
    handle = cute_bind.prepare(compiled, from_dlpack(out), _unit_mode(a))
    k = cute_bind.kernel(tsum_rank3, cache=False)
    k.compile(from_dlpack(out), _unit_mode(a))
    base = torch.arange(256, dtype=torch.float32)
    for b in (
        torch.randn(1, 4, 16),  # contiguous: mode 0's stride 64
        base.as_strided((1, 4, 8), (1000 % 256, 8, 1)),  # any stride on the extent-1 mode
        base.as_strided((1, 4, 24), (7, 24, 1))[..., :16],  # and another with a view
    ):
        expected = torch.zeros(1)
        compiled(
            from_dlpack(expected), _unit_mode(torch.empty(b.shape).copy_(b))
        )  # the DSL's own call (its marking wants canonical strides)
        for launch in (lambda o: handle.launch(o, b), lambda o: k(o, b), lambda o: k.bind(o, b).launch(o, b)):
            got = torch.zeros(1)
            launch(got)
            assert got.numpy().tobytes() == expected.numpy().tobytes()
    # the extent stays a guard: an extent-2 mode 0 with the compiled stride 0 is not the compiled layout
    with pytest.raises(cute_bind.CuteBindError, match="CB213"):
        handle.launch(out, torch.zeros(2, 4, 8))
