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
    d: "cute.Tensor",  # expect: CB103
    e: "list[int]",  # expect: CB105
    f: "Int64",  # expect: CB107
    g: "Undefined",  # expect: CB107
    h: "cutlass.Int32[",  # expect: CB107
    i: "  cutlass.Int32",
) -> None:
    pass


@cute_bind.kernel
def defined_later(n: "Later") -> None:  # expect: CB107
    pass


class Later:
    """Defined after the kernel: not bound yet when the decorator runs."""
