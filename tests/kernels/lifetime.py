"""Host-only kernels for the arguments' lifetime tests (tests/launch/test_argument_lifetime.py)."""

import dataclasses

import cutlass
import cutlass.cute as cute


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
