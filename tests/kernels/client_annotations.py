"""Host-only kernels annotated as production clients annotate theirs (issue 40, Build item 3).

- ``Union[cute.Tensor, <client operand class>]`` / ``cute.Tensor | Operand`` (quack's
  ``GemmSm90.__call__(mA: Union[cute.Tensor, TransformAOperand], ...)``): a tensor, or a
  NamedTuple of tensors; ``cute.Tensor | Opaque`` where ``Opaque`` is a client class that is no
  eligible kind (its values are read by their own kind);
- a NamedTuple parameter given a plain tuple;
- a class kernel whose ``stream`` (and a number) have no annotation;
- a tensor read as raw bytes, given FP8 data as a ``uint8`` view.

The DSL compiles from source files, so the kernels live in this module.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32

import cute_bind


class Operand(NamedTuple):
    """quack's TransformAOperand shape: a tensor and an optional second one, plus a scale."""

    blob: cute.Tensor
    scale: Float32
    sf: Optional[cute.Tensor] = None


class Pair(NamedTuple):
    a: Int32
    b: Float32


class Opaque:
    """A client's own class that is no eligible kind (no fields cute_bind can read)."""

    def __init__(self, value: float) -> None:
        self.value = value


class JitArg:
    """A client's class with the DSL's JitArgument protocol (marshalled by its own code)."""

    def __init__(self) -> None:
        import ctypes

        self._cell = ctypes.c_int32(1)

    def __c_pointers__(self) -> list[int]:
        import ctypes

        return [ctypes.addressof(self._cell)]

    def __get_mlir_types__(self) -> list[object]:
        return [Int32.mlir_type]

    def __new_from_mlir_values__(self, values: list[object]) -> object:
        return values[0]


def _read(out: cute.Tensor, a: object) -> None:
    if cutlass.const_expr(isinstance(a, Operand)):
        out[0] = a.blob[0] * a.scale
        out[1] = a.blob[1]
        if cutlass.const_expr(a.sf is not None):
            out[2] = a.sf[0]
    else:
        out[0] = a[0]  # type: ignore[index]
        out[1] = a[1]  # type: ignore[index]


@cute.jit
def union_operand(out: cute.Tensor, a: Union[cute.Tensor, Operand]):
    """out[0..2] from a tensor, or from the operand's tensors and scale."""
    _read(out, a)


@cute.jit
def piped_operand(out: cute.Tensor, a: cute.Tensor | Operand, n: Int32):
    """The same with ``|`` and a number after it."""
    _read(out, a)
    out[3] = Float32(n)


@cute.jit
def opaque_member(out: cute.Tensor, a: cute.Tensor | Opaque):
    """A client class member that is no eligible kind: a tensor value is a tensor."""
    out[0] = a[0]  # type: ignore[index]


@cute.jit
def pair(out: cute.Tensor, p: Pair):
    """out[0..1] from a NamedTuple of two numbers."""
    out[0] = Float32(p.a)
    out[1] = p.b


@cute.jit
def operand(out: cute.Tensor, p: Operand):
    """A NamedTuple of tensors and a number (a plain tuple of 2 or 3 items takes it)."""
    _read(out, p)


class Scaler:
    """A class kernel as clients write them: ``stream`` and ``n`` have no annotation."""

    def __init__(self, times: int) -> None:
        self.times = times

    @cute.jit
    def __call__(self, out: cute.Tensor, x: cute.Tensor, n, stream):
        for k in cutlass.range_constexpr(2):
            out[k] = x[k] * Float32(self.times)
        out[2] = Float32(n)


class Untyped:
    """A class kernel with an unannotated tensor and an unannotated structure."""

    @cute.jit
    def __call__(self, out, p, stream=None):
        out[0] = Float32(p.a)
        out[1] = p.b


@cute.jit
def raw_bytes(out: cute.Tensor, x: cute.Tensor):
    """out[k] = the k-th byte of x as a number (x is Uint8: FP8 data viewed as bytes)."""
    for k in cutlass.range_constexpr(4):
        out[k] = Float32(x[k])


@cute.jit
def u8_pointer(out: cute.Tensor, x: cute_bind.Pointer[cutlass.Uint8]):
    """out[k] = the k-th byte behind a Uint8 pointer."""
    t = cute.make_tensor(x, cute.make_layout(4))
    for k in cutlass.range_constexpr(4):
        out[k] = Float32(t[k])


@cute.jit
def untyped_pointer(out: cute.Tensor, x: cute.Pointer):
    """A pointer of any element type (nothing read through it)."""
    out[0] = Float32(1.0)
