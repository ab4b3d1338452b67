"""A closed TVM-FFI prepared handle refuses every launch, on both paths, whatever its parameter count (issue 22, row 8).

The C launcher used to refuse a closed handle's launch only through its
arguments (each one no longer taken as is), so a function without runtime
parameters still ran after ``close()``. ``bump`` makes a launch visible: it
adds one to a host counter whose address is a compile-time constant, so the
compiled function has no parameter at all.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

from tests.optional import torch_or_skip

torch = torch_or_skip()
pytest.importorskip("tvm_ffi")
import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

import cute_bind  # noqa: E402

COUNTER = ctypes.c_int64(0)


@cute.jit
def bump(counter: cutlass.Constexpr[int]):
    """counter[0] += 1 (a host address fixed at compile time: no runtime parameter)."""
    c = cute.make_tensor(cute.make_ptr(cutlass.Int64, counter, cute.AddressSpace.generic, assumed_align=8), cute.make_layout(1))
    c[0] = c[0] + cutlass.Int64(1)


@cute.jit
def bump_by(counter: cutlass.Constexpr[int], by: cutlass.Int64):
    """counter[0] += by: the same with one runtime parameter."""
    c = cute.make_tensor(cute.make_ptr(cutlass.Int64, counter, cute.AddressSpace.generic, assumed_align=8), cute.make_layout(1))
    c[0] = c[0] + by


@pytest.fixture(scope="module")
def compiled() -> dict[str, Any]:
    address = ctypes.addressof(COUNTER)
    return {
        "bump": cute.compile(bump, address, options="--enable-tvm-ffi"),
        "bump_by": cute.compile(bump_by, address, cutlass.Int64(1), options="--enable-tvm-ffi"),
    }


# (function, arguments of a good launch and what it adds, launches to try once closed)
CASES = [
    ("bump", (), 1, [((), {}), ((1,), {}), ((), {"x": 1})]),
    ("bump_by", (3,), 3, [((3,), {}), ((), {}), ((1, 2), {}), ((), {"by": 3}), (("three",), {})]),
]


@pytest.mark.parametrize("name, args, adds, closed_calls", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("how", ["close", "with"])
def test_a_closed_handle_refuses_every_launch(
    compiled: dict[str, Any], tvm_path: str, name: str, args: tuple[Any, ...], adds: int, closed_calls: list[Any], how: str
) -> None:
    fn = compiled[name]
    h = cute_bind.prepare(fn, *args)
    assert h.fast_path == ("c" if tvm_path == "c" else "direct")
    launch = h.launch  # a saved reference sees the close too
    start = COUNTER.value
    h.launch(*args)
    assert COUNTER.value == start + adds
    if how == "close":
        h.close()
    else:
        with h:
            pass
    assert h.closed
    for call_args, call_kwargs in closed_calls:
        for call in (h.launch, launch):
            with pytest.raises(cute_bind.PreparedLaunchError) as info:
                call(*call_args, **call_kwargs)
            assert info.value.code == "CB404", (call_args, call_kwargs)
    assert COUNTER.value == start + adds  # nothing ran once closed
