"""Constexpr values are compiled apart exactly when a trace could tell them apart (issue 22, rows 5 and 6).

``0.0 == -0.0`` and a NaN equals nothing, so a compile key compared with
``==`` reused the ``0.0`` compile for ``-0.0`` (the result depended on call
order) and never found a NaN's compile again (a compile per call, CB601 on
the ninth, one more compiled module per ``bind()``). Each kernel here writes
:func:`code` of its Constexpr value, computed while tracing: what a fresh
process, compiling that value alone, writes. Every test runs on the C call
path and on the Python one.
"""

from __future__ import annotations

import ctypes
import hashlib
import pickle
import struct
from collections import namedtuple
from dataclasses import dataclass

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest

import cute_bind
from cute_bind.jit import dispatch as dispatch_mod


def code(value: object) -> int:
    """A number that differs for any two values a trace could tell apart (pickle keeps float bits and types)."""
    return int.from_bytes(hashlib.sha256(pickle.dumps(value, protocol=4)).digest()[:7], "little")


@cute.jit
def traced_code(out: cute_bind.Pointer[cutlass.Int64], v: cutlass.Int64, c: cutlass.Constexpr):
    """out[0] = v + code(c), code(c) computed while tracing."""
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = v + code(c)


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


NAN = _f64(0x7FF8000000000000)
NAN_OTHER = _f64(0x7FF8000000000001)
NAN_NEG = _f64(0xFFF8000000000000)


@dataclass(frozen=True)
class Scale:
    x: float


Pair = namedtuple("Pair", "a b")


@pytest.fixture(params=["c", "python"])
def make(request):
    """A kernel over traced_code on the C call path or on the Python one."""
    if request.param == "c":
        if dispatch_mod.call_path() != "c":
            pytest.skip("the C call path is not built")
        return lambda: cute_bind.kernel(traced_code)
    cls = cute_bind.Kernel
    if dispatch_mod.call_path() == "c":

        class PyCallKernel(cute_bind.Kernel):  # type: ignore[type-arg]
            __call__ = cute_bind.Kernel._python_call  # type: ignore[attr-defined]

        cls = PyCallKernel
    return lambda: cls(traced_code)


class Out:
    def __init__(self) -> None:
        self.buf = (ctypes.c_int64 * 1)()
        self.addr = ctypes.addressof(self.buf)

    @property
    def value(self) -> int:
        return self.buf[0]


def _call(k, out, c):
    out.buf[0] = -1
    k(out.addr, 0, c)
    return out.value


def _bind(k, out, c):
    out.buf[0] = -1
    k.bind(out.addr, 0, c).launch(out.addr, 0)
    return out.value


@pytest.mark.parametrize("order", [(0.0, -0.0), (-0.0, 0.0)], ids=["zero-first", "negative-zero-first"])
@pytest.mark.parametrize("first", ["call", "bind"])
def test_signed_zeros_compile_apart_in_either_order(make, order, first):
    k, out = make(), Out()
    ways = (_call, _bind) if first == "call" else (_bind, _call)
    for way in ways:
        for c in order:
            assert way(k, out, c) == code(c), (way.__name__, c)
    assert k.cache_info()["compiled"] == 2
    assert k.compile(out.addr, 0, 0.0) is not k.compile(out.addr, 0, -0.0)


def test_a_nan_compiles_once_however_often_it_is_called(make):
    k, out = make(), Out()
    for _ in range(20):
        assert _call(k, out, float("nan")) == code(NAN)  # a new NaN object each call
    info = k.cache_info()
    assert (info["compiled"], info["misses"], info["specializations"]) == (1, 1, 1)
    assert info["hits"] == 19
    for _ in range(20):
        assert _bind(k, out, float("nan")) == code(NAN)
    assert k.cache_info()["compiled"] == 1  # no compiled module more per bind()


def test_nans_of_other_payloads_are_other_compiles(make):
    k, out = make(), Out()
    for c in (NAN, NAN_OTHER, NAN_NEG, NAN, NAN_OTHER, NAN_NEG):
        assert _call(k, out, c) == code(c)
    assert k.cache_info()["specializations"] == 3


NESTED = [
    ((0.0, 1), (-0.0, 1)),
    ((1, 2), (True, 2)),
    ((1, 2), (1.0, 2)),
    (complex(0.0, 1.0), complex(-0.0, 1.0)),
    (np.float32(0.0), np.float32(-0.0)),
    (np.float64(NAN), np.float64(NAN_OTHER)),
    (Scale(0.0), Scale(-0.0)),
    (Pair(0.0, 1), Pair(-0.0, 1)),
    (frozenset({0.0}), frozenset({-0.0})),
]


@pytest.mark.parametrize("a, b", NESTED, ids=[f"{a!r}-vs-{b!r}" for a, b in NESTED])
def test_values_equal_by_eq_but_not_for_a_trace_compile_apart(make, a, b):
    """Alternating keys: the hit path's check, then the dispatch path's probe (after a few switches) decide."""
    assert a == b or a != a  # equal by ==, or NaNs of other payloads
    k, out = make(), Out()
    for c in (a, b) * 5:
        assert _call(k, out, c) == code(c), c
    assert k.cache_info()["specializations"] == 2
    k2 = make()
    for c in (b, a):
        assert _bind(k2, out, c) == code(c), c


SAME = [
    ((float("nan"), 2), (float("nan"), 2)),
    (Scale(NAN), Scale(float("nan"))),
    (complex(NAN, 0.0), complex(float("nan"), 0.0)),
    ((128, 64), (128, int("64"))),
]


@pytest.mark.parametrize("a, b", SAME, ids=[f"{a!r}" for a, _ in SAME])
def test_equal_values_that_are_other_objects_share_one_compile(make, a, b):
    assert a is not b
    k, out = make(), Out()
    for c in (a, b) * 5:
        assert _call(k, out, c) == code(c)
    info = k.cache_info()
    assert (info["specializations"], info["compiled"]) == (1, 1)


def test_the_recompile_reason_shows_the_values(make):
    k, out = make(), Out()
    _call(k, out, 0.0)
    _call(k, out, -0.0)
    assert [dict(s.parameters)["c"] for s in k.specializations()] == ["0.0", "-0.0"]
    assert "0.0 -> -0.0" in k.specializations()[1].reason


class Tag:
    """A Constexpr value whose ``==`` answers False (not NotImplemented) for any other type."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tag) and self.n == other.n

    def __hash__(self) -> int:
        return hash(self.n)

    def __repr__(self) -> str:
        return f"Tag({self.n})"  # a stable spelling: the disk cache keeps its compile


def test_a_value_with_its_own_eq_stays_on_the_hit_path(make):
    """The hit path asks the compiled value (the key's part) whether the given one differs, never the given
    value: ``Tag.__eq__`` would refuse the key's wrapper, and every call would take the dispatch path."""
    k, out = make(), Out()
    dispatches = []
    real = k._calls.dispatch

    def counting(args, kwargs):
        dispatches.append(1)
        return real(args, kwargs)

    k._calls.dispatch = counting
    k._calls.clear()  # the C path takes the dispatch function when its calls are reset
    for _ in range(10):
        assert _call(k, out, Tag(1)) == code(Tag(1))  # an equal, new object each call
    assert len(dispatches) == 1
    assert k.cache_info()["specializations"] == 1


def test_the_dsl_call_path_compares_exactly_too(make, monkeypatch):
    """A compiled function cute_bind cannot prepare (a CB3xx) is called the DSL's own way, its compile key
    rebuilt from the specialization's Constexpr values on each call: those must be the values, not key parts."""
    k, out = make(), Out()

    def cannot_prepare(compiled, bounds):
        raise cute_bind.error(cute_bind.CATALOG["CB303"], kernel=k.name, expected="0", got="2")

    monkeypatch.setattr(k.compiler, "prepare", cannot_prepare)
    for c in (0.0, -0.0, 0.0, float("nan"), float("nan"), (1, 2), (True, 2)):
        assert _call(k, out, c) == code(c), c
    assert k.cache_info()["specializations"] == 5
