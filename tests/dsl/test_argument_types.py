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
