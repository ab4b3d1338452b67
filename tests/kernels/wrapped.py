"""Host-only functions under decorators of a user's own (functools.wraps), for tests/jit/test_wrapping.py."""

import functools

import cutlass
import cutlass.cute as cute

import cute_bind

I32 = cute_bind.Pointer[cutlass.Int32]


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@logged
@cute.jit
def squares_jitted(out: I32, n: cutlass.Int32):
    """A user's wrapper over a @cute.jit function: the wrapper calls jitted code."""
    t = cute.make_tensor(out, cute.make_layout(8))
    for k in range(n):
        t[k] = k * k + n


@logged
def squares_plain(out: I32, n: cutlass.Int32):
    """A user's wrapper over a plain function: nothing under it is jitted (CB118)."""
    t = cute.make_tensor(out, cute.make_layout(8))
    for k in range(n):
        t[k] = k * k + n


def squares(out: I32, n: cutlass.Int32):
    """The same body, undecorated: what cute_bind.kernel(fn) takes."""
    t = cute.make_tensor(out, cute.make_layout(8))
    for k in range(n):
        t[k] = k * k + n


def make_constant_writer():
    """A new kernel per call (its own function object): for compiles of different kernels at once."""

    @cute_bind.kernel(cache=False)
    def write(out: I32, c: cutlass.Constexpr[int]):
        o = cute.make_tensor(out, cute.make_layout(1))
        o[0] = c

    return write
