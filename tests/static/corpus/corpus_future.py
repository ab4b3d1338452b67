"""Postponed annotations (PEP 563): every annotation is a string cute_bind evaluates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import cutlass
import cutlass.cute as cute

import cute_bind

if TYPE_CHECKING:
    from cutlass import Int64


@cute_bind.kernel
def postponed(
    a: cutlass.Int32,
    b: cute_bind.Pointer[cutlass.Float32, 16],
    c: cutlass.Constexpr[int],
    d: cute.Tensor,
    e: cutlass.Float16,
    f: Int64,  # expect: CB107
    g: Later,  # expect: CB107
    h: "cutlass.Int32",  # expect: CB102
    i: tuple[cutlass.Int32, cute_bind.Tensor[cutlass.Float32, 2]],
    j: cutlass.Float8E5M2,  # expect: CB104
    k: tuple[int, tuple[int]],  # expect: CB113
    m: list[Later],  # expect: CB107
    n: tuple[int, "cutlass.Int32"],  # expect: CB113
    o: cute_bind.Tensor,  # expect: CB102
) -> None:
    pass


class Later:
    """Defined after ``postponed`` (CB107 there), before ``after`` (a plain class there)."""


@cute_bind.kernel
def after(x: Later) -> None:  # expect: CB102
    pass
