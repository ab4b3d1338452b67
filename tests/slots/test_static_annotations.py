"""Static extents, divisibility and alignment in ``cute_bind.Tensor[...]`` (issue 23, Build item 3).

``cute_bind.Tensor[dtype, (extent, ...), align, layout]`` says mode by mode
which extents are compiled in (``"static"``: from the value, one
specialization per extent; an int: that extent only), which are runtime
values (``"?"``, ``"?{div=k}"``) and the alignment (the data address, and with
a shape every row: dynamic strides are multiples of ``align`` bytes).

- the annotation's grammar (table-driven, and property-based over entries);
- the compiled layout is the fake tensor's of the same spelling (the IR of
  ``cute.compile`` from that fake), and launches are bitwise equal to that
  compiled function's own call, on both fast paths and through TVM-FFI;
- calls specialize once per static value, never per dynamic one;
- every compiled fact is checked at bind and at launch (CB213, CB207).
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
import pytest
from cutlass.cute.runtime import make_fake_tensor
from hypothesis import given, settings
from hypothesis import strategies as st

import cute_bind
from cute_bind._types import Extent, TensorSpec, tensor_spec_of
from cute_bind.launch.tvm_ffi import PreparedTvmFfiLaunch
from tests.optional import torch_or_skip

torch = torch_or_skip()

F32 = cutlass.Float32
ROW = cute_bind.Tensor[F32, ("?", "static"), 16]
STATIC = "static"  # in an annotation a bare "static" reads as a forward reference to linters and mypy


@cute_bind.kernel
def rows(out: ROW, inp: ROW, alpha: cutlass.Float32):
    for i in range(cute.size(out, mode=[0])):
        for j in cutlass.range_constexpr(cute.size(out, mode=[1])):
            out[i, j] = inp[i, j] * alpha + cutlass.Float32(j)


@cute_bind.kernel(compile_options="--enable-tvm-ffi")
def rows_tvm(out: ROW, inp: ROW, alpha: cutlass.Float32):
    for i in range(cute.size(out, mode=[0])):
        for j in cutlass.range_constexpr(cute.size(out, mode=[1])):
            out[i, j] = inp[i, j] * alpha + cutlass.Float32(j)


@cute_bind.kernel
def fixed(out: cute_bind.Tensor[F32, ("?{div=4}", 8)], inp: cute_bind.Tensor[F32, ("?{div=4}", 8)]):
    for i in range(cute.size(out, mode=[0])):
        for j in cutlass.range_constexpr(8):
            out[i, j] = inp[i, j] + cutlass.Float32(1.0)


@cute_bind.kernel
def columns(out: cute_bind.Tensor[F32, (STATIC, "?"), None, 0], inp: cute_bind.Tensor[F32, (STATIC, "?"), None, 0]):
    for i in cutlass.range_constexpr(cute.size(out, mode=[0])):
        for j in range(cute.size(out, mode=[1])):
            out[i, j] = inp[i, j] * cutlass.Float32(2.0)


# ------------------------------------------------------------------ the annotation
GRAMMAR = [
    ("?", Extent("dynamic", 1)),
    ("?{div=8}", Extent("dynamic", 8)),
    ("? {div=8}", Extent("dynamic", 8)),
    ("static", Extent("static", 1)),
    (1024, Extent("fixed", 1024)),
]


@pytest.mark.parametrize("entry, extent", GRAMMAR, ids=[str(g[0]) for g in GRAMMAR])
def test_shape_entries(entry: Any, extent: Extent) -> None:
    spec = tensor_spec_of(cute_bind.Tensor[F32, (entry, "?")])
    assert spec is not None and spec.shape == (extent, Extent("dynamic")) and spec.rank == 2


@pytest.mark.parametrize("entry", ["", "??", "?{div=0}", "?{div=-2}", "Static", 0, -3, True, 2.0, None, ("?",)])
def test_bad_shape_entries_are_cb112(entry: Any) -> None:
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.Tensor[F32, ("?", entry)]
    assert info.value.code == "CB112" and repr(entry) in info.value.got


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.text(max_size=12), st.integers(-5, 5000)))
def test_any_entry_is_an_extent_or_cb112(entry: Any) -> None:
    try:
        spec = tensor_spec_of(cute_bind.Tensor[F32, (entry,)])
    except cute_bind.KernelDefinitionError as exc:
        assert exc.code == "CB112"
        return
    assert spec is not None and spec.shape is not None
    (extent,) = spec.shape
    # what it describes reads back as the same extent
    assert tensor_spec_of(cute_bind.Tensor[F32, (extent.describe() if extent.kind != "fixed" else extent.value,)]) == spec


def test_describe_names_the_shape() -> None:
    spec = tensor_spec_of(cute_bind.Tensor[F32, ("?{div=4}", "static", 3), 16])
    assert spec == TensorSpec(dtype=F32, rank=3, align=16, shape=(Extent("dynamic", 4), Extent("static"), Extent("fixed", 3)))
    assert spec.describe() == "Tensor[Float32, shape=(?{div=4}, static, 3), align=16]"


# ------------------------------------------------------------------ compiled layout and launches
def _fake_like(n: int) -> Any:
    # quack's spelling of the same layout: sym rows, static n, 16-byte rows (4 floats), 16-byte aligned
    return make_fake_tensor(
        F32, (cute.sym_int(), n), (cute.sym_int64(divisibility=4), 1), assumed_align=16, memspace=cute.AddressSpace.generic
    )


def _reference(n: int) -> Any:
    """What ``cute.compile`` makes of the same function from quack's fake tensors of the layout."""
    return cute.compile(rows._jit_function(), _fake_like(n), _fake_like(n), F32(1.0))


def test_the_compile_is_the_fake_tensors() -> None:
    x, y = torch.zeros(3, 8), torch.zeros(3, 8)
    ours = rows.compile(x, y, 1.0)
    theirs = _reference(8)
    assert "(?,8):(?{i64 div=4},1)" in str(rows.bind(x, y, 1.0))
    # the same module but for the entry's name (the DSL names it after the values' types)
    assert str(ours.ir_module).replace(ours.function_name, "F") == str(theirs.ir_module).replace(theirs.function_name, "F")


def _inputs(rows_: int, n: int, seed: int, pad: int = 0) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(seed)
    inp = torch.randn(rows_, n + pad, generator=g)[:, :n]
    return torch.zeros(rows_, n + pad)[:, :n], inp


@pytest.mark.parametrize("pad", [0, 4], ids=["compact", "padded_rows"])
def test_launches_equal_the_fake_compiled_call(path: str, pad: int) -> None:
    """Bitwise equal to the function cute.compile makes from the same fake, called the DSL's own way."""
    reference = _reference(8)
    out, inp = _inputs(5, 8, 1, pad)
    h = rows.bind(out, inp, 1.5)
    for seed, m in ((2, 3), (3, 7)):
        out, inp = _inputs(m, 8, seed, pad)
        expected = out.clone()
        reference(expected, inp, 2.5)
        h.launch(out, inp, 2.5)
        assert torch.equal(out, expected) and not torch.equal(out, torch.zeros_like(out))
        out2 = torch.zeros_like(out)
        rows(out2, inp, 2.5)
        assert torch.equal(out2, expected)


def test_tvm_ffi_launches_equal_the_direct_call() -> None:
    pytest.importorskip("tvm_ffi")
    out, inp = _inputs(4, 8, 1)
    h = rows_tvm.bind(out, inp, 1.0)
    assert isinstance(h, PreparedTvmFfiLaunch)
    compiled = rows_tvm.compile(out, inp, 1.0)
    for seed, m in ((2, 6), (3, 1)):
        out, inp = _inputs(m, 8, seed)
        expected = out.clone()
        compiled(expected, inp, 0.5)
        h.launch(out, inp, 0.5)
        assert torch.equal(out, expected)
        out.zero_()
        rows_tvm(out, inp, 0.5)
        assert torch.equal(out, expected)


@pytest.mark.parametrize("kernel", [rows, rows_tvm], ids=["plain", "tvm_ffi"])
def test_one_specialization_per_static_value(kernel: Any) -> None:
    if kernel is rows_tvm:
        pytest.importorskip("tvm_ffi")
    kernel.clear_cache()
    for m, n in ((2, 8), (9, 8), (3, 12), (4, 8), (1, 12), (2, 16)):
        out, inp = _inputs(m, n, m + n)
        kernel(out, inp, 1.0)
        assert torch.equal(out, inp * 1.0 + torch.arange(n, dtype=torch.float32))
    info = kernel.specializations()
    assert [dict(s.parameters)["out"].split(" on ")[0] for s in info] == [
        f"Tensor[Float32, (?,{n}):(?{{i64 div=4}},1)]" for n in (8, 12, 16)
    ]


# ------------------------------------------------------------------ every compiled fact is checked
def _misaligned() -> tuple[Any, Any]:
    base = torch.zeros(4, 9)
    return base[:, 1:9], base[:, 1:9]


CHECKS = [
    # (what, kernel, bound with, given, code, expected part, got part)
    ("static extent", rows, (2, 8), lambda: _inputs(2, 12, 0), "CB213", "8 (layout (?,8)", "shape (2, 12)"),
    ("alignment", rows, (2, 8), _misaligned, "CB207", "16 bytes", "0x"),
    (
        "row stride divisibility",
        rows,
        (2, 8),
        lambda: (torch.zeros(3, 9)[:, :8], torch.zeros(3, 9)[:, :8]),
        "CB213",
        "a multiple of 4",
        "strides (9, 1)",
    ),
    ("fixed extent", fixed, (4, 8), lambda: (torch.zeros(4, 9), torch.zeros(4, 9)), "CB213", "8 (layout (?{div=4},8)", "shape (4, 9)"),
    ("dynamic divisibility", fixed, (4, 8), lambda: (torch.zeros(6, 8), torch.zeros(6, 8)), "CB213", "a multiple of 4", "shape (6, 8)"),
]


def _bound_with(kernel: Any, shape: tuple[int, int]) -> Any:
    args = (torch.zeros(*shape), torch.zeros(*shape))
    return kernel.bind(*args, 1.0) if kernel is rows else kernel.bind(*args)


@pytest.mark.parametrize("what, kernel, shape, given, code, expected, got", CHECKS, ids=[c[0] for c in CHECKS])
def test_a_launch_checks_the_fact(path: str, what: str, kernel: Any, shape: Any, given: Any, code: str, expected: str, got: str) -> None:
    h = _bound_with(kernel, shape)
    extra = (1.0,) if kernel is rows else ()
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(*given(), *extra)
    err = info.value
    assert (err.code, err.parameter) == (code, "out") and expected in err.expected and got in err.got


@pytest.mark.parametrize(
    "what, kernel, shape, given, code, expected, got",
    [c for c in CHECKS if c[0] != "static extent"],
    ids=[c[0] for c in CHECKS if c[0] != "static extent"],
)
def test_a_call_checks_the_fact(what: str, kernel: Any, shape: Any, given: Any, code: str, expected: str, got: str) -> None:
    """A call never compiles around a refused fact: it reports it (a new static value alone specializes)."""
    extra = (1.0,) if kernel is rows else ()
    with pytest.raises(cute_bind.CuteBindError) as info:
        kernel(*given(), *extra)
    assert (info.value.code, info.value.parameter) == (code, "out") and got in info.value.got
    if what == "fixed extent":  # refused at bind, before any compile: the annotation says so
        assert info.value.expected.startswith("8 (the annotation Tensor[Float32, shape=(?{div=4}, 8)]")


def test_an_int_leading_dimension_with_a_shape() -> None:
    out, inp = torch.zeros(8, 3).t(), torch.randn(8, 3).t()  # (3, 8), column-major
    h = columns.bind(out, inp)
    assert "(3,?):(1,?{i64})" in str(h)
    h.launch(out, inp)
    assert torch.equal(out, inp * 2.0)
    with pytest.raises(cute_bind.LaunchValueError) as info:
        columns.bind(torch.zeros(3, 8), torch.zeros(3, 8))  # row-major: mode 0 is not the leading dimension
    assert info.value.code == "CB213" and "stride of mode 0" in str(info.value)
