"""Host-only kernels for the arguments' lifetime tests (tests/launch/test_argument_lifetime.py)."""

import dataclasses
import typing

import cutlass
import cutlass.cute as cute

import cute_bind


@dataclasses.dataclass
class Scaled:
    """A tensor field read before a number field (field order): the number's conversion runs after."""

    out: cute.Tensor
    alpha: cutlass.Float32


@cute.jit
def struct_scale(s: Scaled, inp: cute.Tensor):
    """s.out[i] = inp[i] * s.alpha."""
    for i in range(cute.size(s.out)):
        s.out[i] = inp[i] * s.alpha


@dataclasses.dataclass
class Counted:
    """A second structure whose number field is converted after the first structure's tensor is read."""

    t: cute.Tensor
    n: cutlass.Int32


@cute.jit
def two_structs(s: Scaled, m: Counted):
    """s.out[i] = m.t[i] * s.alpha for i < m.n."""
    for i in range(m.n):
        s.out[i] = m.t[i] * s.alpha


@cute.jit
def pointer_and_count(p: tuple[cute_bind.Pointer[cutlass.Float32], cutlass.Int32], inp: cute_bind.Pointer[cutlass.Float32]):
    """A sequence of a pointer and a count: p[0][k] = inp[k] * 3 for k < p[1]."""
    o = cute.make_tensor(p[0], cute.make_layout(4))
    i = cute.make_tensor(inp, cute.make_layout(4))
    for k in range(p[1]):
        o[k] = i[k] * cutlass.Float32(3.0)


@cute.jit
def two_unions(a: typing.Union[cute.Tensor, cutlass.Int32], b: typing.Union[cute.Tensor, cutlass.Int32]):
    """Two union writers: a[i] = 3 * i, whatever b is."""
    for i in range(cute.size(a)):
        a[i] = cutlass.Float32(3.0) * i
