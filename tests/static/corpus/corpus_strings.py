"""String annotations, evaluated by cute_bind in the module's globals at decoration time."""

from typing import TYPE_CHECKING

import cutlass
import cutlass.cute as cute

import cute_bind

if TYPE_CHECKING:
    from cutlass import Int64


@cute_bind.kernel
def quoted(
    a: "cutlass.Int32",
    b: "cute_bind.Pointer[cutlass.Float32, 16]",
    c: "cutlass.Constexpr[int]",
    d: "cute.Tensor",
    e: "list[int]",
    f: "Int64",  # expect: CB107
    g: "Undefined",  # expect: CB107
    h: "cutlass.Int32[",  # expect: CB107
    i: "  cutlass.Int32",
    j: "cute_bind.Tensor[cutlass.Float32, 2, 16]",
    k: "cute_bind.Tensor",  # expect: CB102
    m: "tuple[int, tuple[int, int]]",  # expect: CB113
    n: "list[Undefined]",  # expect: CB107
    o: "tuple[cutlass.BFloat16, ...]",
    p: tuple["cutlass.Int32", int],  # expect: CB113
) -> None:
    pass


@cute_bind.kernel
def defined_later(n: "Later") -> None:  # expect: CB107
    pass


class Later:
    """Defined after the kernel: not bound yet when the decorator runs."""
