"""One kernel per definition-time diagnostic CB101-CB106, then one with several at once."""

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
    maybe: typing.Optional[cutlass.Int32],  # expect: CB102
    either: cutlass.Int32 | None,  # expect: CB102
    text: str,  # expect: CB102
    layout: cute.Layout,  # expect: CB102
    helper: cute_bind.Pointer,  # expect: CB102
    tagged: typing.Annotated[cutlass.Int32, "tag"],  # expect: CB102
) -> None:
    pass


@cute_bind.kernel
def tensors(
    t: cute.Tensor,  # expect: CB103
    alpha: cutlass.Float32,
    tagged: typing.Annotated[cute.Tensor, "tag"],  # expect: CB103
) -> None:
    pass


@cute_bind.kernel
def bitcast_scalars(
    a: cutlass.Float16,  # expect: CB104
    b: cutlass.BFloat16,  # expect: CB104
    c: cutlass.Float8E4M3FN,  # expect: CB104
    d: cutlass.Int4,  # expect: CB104
    e: cutlass.Int128,  # expect: CB104
    f: typing.Annotated[cutlass.Float16, "tag"],  # expect: CB104
    g: cute.BFloat16,  # expect: CB104
) -> None:
    pass


@cute_bind.kernel
def sequences(
    a: list[int],  # expect: CB105
    b: tuple[int, int],  # expect: CB105
    c: typing.List[int],  # expect: CB105
    d: typing.Tuple[int, ...],  # expect: CB105
    e: typing.Sequence[cutlass.Int32],  # expect: CB105
    f: Sequence,  # expect: CB105
    g: tuple,  # expect: CB105
    h: typing.MutableSequence[int],  # expect: CB105
    i: typing.Annotated[list[int], "tag"],  # expect: CB105
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
    b: cute.Tensor,  # expect: CB103
    c: cute.Pointer,
    *d: int,  # expect: CB106
    e: list[int],  # expect: CB105
    f: cutlass.Float16,  # expect: CB104
) -> None:
    pass


def not_a_kernel(a, b: cute.Tensor, *c, **d):
    """Undecorated: nobody checks it."""
