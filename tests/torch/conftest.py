"""Shared pieces of the torch-op tests: unique op names, whether a call went through torch's dispatcher, and the
calls that must take it (a mode active, a tensor subclass)."""

from __future__ import annotations

import itertools

import pytest
from tests.optional import torch_or_skip

torch = torch_or_skip()

_COUNTER = itertools.count()


@pytest.fixture
def opname():
    """A fresh ``"cbtest::<name>_<n>"`` each call: torch registers an op name once per process."""

    def make(name: str) -> str:
        return f"cbtest::{name}_{next(_COUNTER)}"

    return make


def dispatcher_calls(name: str, fn, *args, **kwargs):
    """(fn's result, how many times op ``name`` went through torch's dispatcher while it ran).

    The profiler records every dispatched op by its qualified name; the eager
    path calls the kernel without dispatching, so it records nothing.
    """
    with torch.autograd.profiler.profile() as prof:
        result = fn(*args, **kwargs)
    return result, sum(e.name == name for e in prof.function_events)


class Sub(torch.Tensor):
    """A tensor subclass: an op given one takes torch's dispatcher."""


def no_grad(op, y, x):
    with torch.no_grad():
        return op(y, x, 2.0)


def in_dispatch_mode(op, y, x):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passthrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Passthrough():
        return op(y, x, 2.0)


def in_function_mode(op, y, x):
    from torch.overrides import TorchFunctionMode

    class Passthrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Passthrough():
        return op(y, x, 2.0)
