"""Kernels with the definition-time diagnostics the static tools report (CB101, CB102,
CB104, CB106, CB113, CB114; CB107 is in corpus_strings.py and corpus_future.py), then one
with several at once."""

import typing
from collections.abc import Sequence

import cutlass
import cutlass.cute as cute

import cute_bind


class Params:
    """A user type: not a slot kind."""


@cute_bind.kernel
def missing_annotation(
    out: cute.Pointer,
    n,  # expect: CB101
) -> None:
    pass


@cute_bind.kernel
def unsupported(
    params: Params,  # expect: CB102
    union: typing.Union[cutlass.Int32, cutlass.Float32],  # expect: CB102
    piped_union: cutlass.Int32 | cutlass.Float32,  # expect: CB102
    text: str,  # expect: CB102
    layout: cute.Layout,  # expect: CB102
    helper: cute_bind.Pointer,  # expect: CB102
    tagged: typing.Annotated[cutlass.Int32, "tag"],  # expect: CB102
    tensor_helper: cute_bind.Tensor,  # expect: CB102
    tagged_helper: typing.Annotated[cute_bind.Tensor, "tag"],  # expect: CB102
    tagged_half: typing.Annotated[cutlass.Float16, "tag"],  # expect: CB102
) -> None:
    pass


@cute_bind.kernel
def no_runtime_storage(
    a: cutlass.Float8E4M3FN,  # expect: CB104
    b: cutlass.Float8E5M2,  # expect: CB104
    c: cutlass.Float6E2M3FN,  # expect: CB104
    d: cutlass.Float4E2M1FN,  # expect: CB104
    e: cutlass.Int4,  # expect: CB104
    f: cutlass.Int128,  # expect: CB104
    g: cutlass.Uint128,  # expect: CB104
    h: typing.Annotated[cutlass.Float8E4M3FN, "tag"],  # expect: CB104
    i: cute.Float8E5M2,  # expect: CB104
    j: cutlass.Numeric,  # expect: CB104
) -> None:
    pass


@cute_bind.kernel
def ineligible_sequences(
    nested: tuple[int, tuple[int, int]],  # expect: CB113
    nested_list: list[list[int]],  # expect: CB113
    bare_nested: typing.Sequence[tuple],  # expect: CB113
    constexpr: tuple[cutlass.Constexpr[int], int],  # expect: CB113
    bare_constexpr: tuple[int, cutlass.Constexpr],  # expect: CB113
    narrow: tuple[cutlass.Float8E4M3FN, int],  # expect: CB113
    narrow_repeated: tuple[cutlass.Int4, ...],  # expect: CB113
    unknown: list[Params],  # expect: CB113
    layouts: tuple[cute.Layout, ...],  # expect: CB113
    helper: typing.List[cute_bind.Pointer],  # expect: CB113
    tensor_helper: tuple[cute_bind.Tensor],  # expect: CB113
    optional: list[typing.Optional[int]],  # expect: CB113
    text: tuple[int, str],  # expect: CB113
    tagged_scalar: tuple[typing.Annotated[cutlass.Int32, "tag"], int],  # expect: CB113
    abstract: Sequence[cutlass.Integer],  # expect: CB113
    second_bad: tuple[int, cute.Pointer, Params, tuple[int]],  # expect: CB113
    tagged: typing.Annotated[tuple[int, tuple[int]], "tag"],  # expect: CB113
    tagged_element: tuple[typing.Annotated[list[int], "tag"]],  # expect: CB113
) -> None:
    pass


@cute_bind.kernel
def variadic(
    out: cute.Pointer,
    *rest,  # expect: CB106
    **options,  # expect: CB106
) -> None:
    pass


@cute_bind.kernel
def annotated_variadic(*sizes: cutlass.Int32) -> None:  # expect: CB106
    pass


@cute_bind.kernel
def several(
    a,  # expect: CB101
    b: cute.Tensor,
    c: cute.Pointer,
    *d: int,  # expect: CB106
    e: list[list[int]],  # expect: CB113
    f: cutlass.Float8E5M2,  # expect: CB104
    g: Params,  # expect: CB102
) -> None:
    pass


def not_a_kernel(a, b: cute.Tensor, *c, **d):
    """Undecorated: nobody checks it."""


@cute_bind.kernel
def ineligible_optionals(
    text: typing.Optional[str],  # expect: CB114
    layout: cute.Layout | None,  # expect: CB114
    constexpr: typing.Optional[cutlass.Constexpr[int]],  # expect: CB114
    user: None | Params,  # expect: CB114
    nested_bad: typing.Optional[tuple[int, str]],  # expect: CB114
) -> None:
    pass
