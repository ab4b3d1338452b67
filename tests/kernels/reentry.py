"""Host-only functions whose compiled code bakes in trace-time Python values.

Compiled under the DSL's PyIR frontend (nvidia-cutlass-dsl 4.8), each carries
a re-entry record that a direct call re-checks; tests/launch/test_reentry.py
changes the values below and checks that a prepared launch refuses exactly
when the direct call does.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind

I32 = cute_bind.Pointer[cutlass.Int32]

OFFSET = 1
TABLE = {"scale": 2}


@cute.jit
def add_global(out: I32, value: cutlass.Int32):
    """out[0] = value * TABLE["scale"] + OFFSET (a module global and a dict item baked in)."""
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value * TABLE["scale"] + OFFSET


class Scaler:
    """A jitted method: ``self.k`` is baked in (the record roots at the receiver)."""

    def __init__(self, k: int) -> None:
        self.k = k

    @cute.jit
    def __call__(self, out: I32, value: cutlass.Int32):
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = value * self.k


def make_add_closure(k: int):
    """A function closing over ``k`` (the record roots at the closure cell), and a setter of ``k``."""

    @cute.jit
    def add_closure(out: I32, value: cutlass.Int32):
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = value + k

    def set_k(value: int) -> None:
        nonlocal k
        k = value

    return add_closure, set_k


@cute.jit
def every_slot(
    out: I32, x: cute.Tensor, a: cutlass.Int32, f: cutlass.Float32, pair: tuple[cutlass.Int32, cutlass.Int32], stream: cuda.CUstream
):
    """Reads every runtime slot kind (and bakes OFFSET, so a record exists)."""
    t = cute.make_tensor(out, cute.make_layout(4))
    t[0] = a + OFFSET
    t[1] = cutlass.Int32(f)
    t[2] = pair[0] + pair[1]
    t[3] = x[0]
