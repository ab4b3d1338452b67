"""Compiled argument types: the tensor descriptor groups read from the IR (``dsl.tensor_argument_groups``).

The DSL lowers a tensor argument to ``!llvm.struct<(ptr, struct<(S, D)>)>``,
each group a bare ``iN`` with one member, else a struct (``struct<()>`` when
empty). Generated groups are spelled that way and read back; real compiled
functions are checked against ``TensorKind.descriptor_groups`` of the tensors
they were compiled for.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cute_bind import dsl
from tests.optional import torch_or_skip

widths = st.lists(st.sampled_from([32, 64]), max_size=5)


def _group(ws: list[int]) -> str:
    if len(ws) == 1:
        return f"i{ws[0]}"
    return "struct<(" + ", ".join(f"i{w}" for w in ws) + ")>"


@given(widths, widths)
def test_groups_read_back(shape: list[int], stride: list[int]) -> None:
    spelled = f"!llvm.struct<(ptr, struct<({_group(shape)}, {_group(stride)})>)>"
    assert dsl.tensor_argument_groups(spelled) == (tuple(shape), tuple(stride))


@pytest.mark.parametrize(
    "spelled",
    ["i32", "ptr", "f32", "!llvm.struct<(ptr, i32)>", "!llvm.struct<(ptr, struct<(f32, i32)>)>", "!llvm.struct<(ptr, struct<(i32", ""],
)
def test_other_types_are_not_tensor_descriptors(spelled: str) -> None:
    assert dsl.tensor_argument_groups(spelled) is None


def test_compiled_functions_agree_with_the_bound_tensor_slots() -> None:
    torch = torch_or_skip()
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from cute_bind.slots import TensorKind, Where
    from tests.kernels.styles import add_unannotated

    markings = [
        from_dlpack(torch.zeros(8, 4)),
        from_dlpack(torch.zeros(8, 4)).mark_layout_dynamic(),
        from_dlpack(torch.zeros(4, 8).t()).mark_layout_dynamic(leading_dim=0),
        from_dlpack(torch.zeros(2, 8, 4), assumed_align=16).mark_compact_shape_dynamic(mode=1, stride_order=(0, 1, 2), divisibility=2),
        from_dlpack(torch.zeros(6, 8)[::2, ::2]).mark_layout_dynamic(),
    ]
    for t in markings:
        compiled = cute.compile(add_unannotated, t, t, t)
        types = dsl.compiled_argument_types(compiled)
        assert types is not None and len(types) == 3
        bound = TensorKind().bind(t, Where("k", "a")).slot
        assert isinstance(bound, TensorKind)
        assert dsl.tensor_argument_groups(types[0]) == bound.descriptor_groups(), bound.describe()


@pytest.mark.parametrize(
    ("name", "printed"),
    [
        ("cutlass_add2d_tensor_15410_029", "@cutlass_add2d_tensor_15410_029"),
        ("_f.x$1", "@_f.x$1"),
        ("add2d_tensor_84549e05_20494e+00", '@"add2d_tensor_84549e05_20494e+00"'),  # a float printed 2.0494e+00
        ("1st", '@"1st"'),
        ('a"b', '@"a\\22b"'),
        ("a\\b", '@"a\\\\b"'),
        ("caf\u00e9\n", '@"caf\\C3\\A9\\0A"'),
    ],
)
def test_symbol_references_are_spelled_as_mlir_prints_them(name: str, printed: str) -> None:
    assert dsl.argument_types.symbol_reference(name) == printed


@given(st.text(min_size=1, max_size=20))
def test_symbol_references_match_the_dsl_printer(name: str) -> None:
    """Whatever the symbol, the spelling searched for is the one the DSL's MLIR prints."""
    from cutlass._mlir import ir

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["sym_name"] = ir.StringAttr.get(name)
        text = str(module)
    assert text.startswith(f"module {dsl.argument_types.symbol_reference(name)} ")


def test_an_entry_whose_name_is_printed_quoted_is_read() -> None:
    """The DSL names a compile from its arguments' text: a tensor printed in scientific notation puts ``+`` in it."""
    torch = torch_or_skip()
    import cutlass.cute as cute

    from tests.kernels.styles import add_unannotated

    t = torch.tensor([[8.4549e-05, 2.0494, 0.5], [1.0, -3.25, 12.5]])
    assert "e+00" in str(t)
    compiled = cute.compile(add_unannotated, t, t, torch.zeros(2, 3))
    assert "+" in compiled.function_name
    types = dsl.compiled_argument_types(compiled)
    assert types is not None and len(types) == 3
    assert all(dsl.tensor_argument_groups(ty) is not None for ty in types)


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("a module whose printer fails")


@pytest.mark.parametrize(
    ("ir_module", "function_name", "why"),
    [
        (None, "f", "without IR"),
        ("module {\n}", "", "without a function name"),
        ("module {\n  llvm.func @g(%arg0: i32) {\n  }\n}", "f+1", 'whose IR has no entry function @"f+1"'),
        (Unprintable(), "f", "whose IR cannot be printed (RuntimeError)"),
    ],
)
def test_a_function_without_argument_types_says_why(ir_module: object, function_name: str, why: str) -> None:
    from types import SimpleNamespace

    fn = SimpleNamespace(ir_module=ir_module, function_name=function_name)
    assert dsl.compiled_argument_types(fn) is None
    assert dsl.why_no_argument_types(fn) == why


def test_the_entry_is_found_by_its_quoted_name() -> None:
    from types import SimpleNamespace

    text = 'module {\n  llvm.func @"f+1"(%arg0: !llvm.struct<(ptr, struct<(i32, i64)>)>, %arg1: f32) {\n  }\n}'
    types = dsl.compiled_argument_types(SimpleNamespace(ir_module=text, function_name="f+1"))
    assert types == ["!llvm.struct<(ptr, struct<(i32, i64)>)>", "f32"]
