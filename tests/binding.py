"""One check for the property tests of keyword placement (handle.launch and kernel(...)): a call of
``tests.kernels.host.two_defaults`` binds as Python's own binding of the same call does."""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np
import pytest

import cute_bind


def two_defaults_reference(out: int, value: int, a: int = 1, b: int = 2) -> int:
    """What ``two_defaults`` writes, and the signature Python binds the same call against."""
    return value * 100 + a * 10 + b


def binds_as_python_does(call: Callable[..., Any], npos: int, named: list[str], values: list[int]) -> None:
    """Call ``call`` with the first ``npos`` of (an output address, *values) and ``named`` keywords:
    it writes what Python's binding of the call gives, or raises CB201/CB202/CB203 where that binding
    raises TypeError."""
    target = np.zeros(1, np.int32)
    addr = target.ctypes.data
    pos = [addr, *values][:npos]
    kw = {n: (addr if n == "out" else values[i]) for i, n in enumerate(named)}
    try:
        want = inspect.signature(two_defaults_reference).bind(*pos, **kw)
    except TypeError:
        with pytest.raises(cute_bind.CuteBindError) as info:
            call(*pos, **kw)
        assert info.value.code in ("CB201", "CB202", "CB203"), str(info.value)
        return
    want.apply_defaults()
    call(*pos, **kw)
    assert target[0] == two_defaults_reference(*want.args)
