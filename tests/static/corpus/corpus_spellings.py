"""Every spelling of the decorator, each on a kernel with one missing annotation.

Functions decorated with anything else are not kernels and are not reported.
"""

import functools
from typing import Callable, TypeVar

import cutlass

import cute_bind
import cute_bind as cb
from cute_bind import kernel
from cute_bind import kernel as k

F = TypeVar("F", bound=Callable[..., object])


def passthrough(fn: F) -> F:
    return fn


@cute_bind.kernel
def attribute(n):  # expect: CB101
    pass


@kernel
def imported_name(n):  # expect: CB101
    pass


@k
def imported_alias(n):  # expect: CB101
    pass


@cb.kernel
def module_alias(n):  # expect: CB101
    pass


@cute_bind.kernel()
def empty_call(n):  # expect: CB101
    pass


@cute_bind.kernel(name="renamed")
def with_name(n):  # expect: CB101
    pass


@cb.kernel(checked=True, compile_options=None)
def with_options(n):  # expect: CB101
    pass


@k(name="")
def empty_name(n):  # expect: CB101
    pass


@kernel(name="both")
@passthrough
def stacked(n, m: cutlass.Int32):  # expect: CB101
    pass


class Other:
    """A different decorator that happens to be called ``kernel``."""

    @staticmethod
    def kernel(fn):
        return fn


@Other.kernel
def other_kernel(n):
    pass


@functools.lru_cache
def cached(n, *rest):
    pass


def undecorated(n, *rest):
    pass
