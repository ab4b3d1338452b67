"""Shared pieces of the torch-op tests: unique op names, and whether a call went through torch's dispatcher."""

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
