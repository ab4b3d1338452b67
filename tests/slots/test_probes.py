"""Each slot kind's dispatch probe: a kernel whose calls cycle over more specializations than a
thread keeps C routes for (``jit.dispatch._ROUTES``) finds each one by probe, never by the full
compile key, whatever its parameters' kinds (optional and union members, sequences, a class
kernel's unannotated parameters); and a value the probe names wrongly still reaches the right
specialization through the full key."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest

import cute_bind
from cute_bind.jit.probes import probes_for
from tests.optional import torch_or_skip

FACTORS = range(1, 8)  # 7 specializations: more than the routes a thread tries in C


@cute.jit
def optional_pointer(out: cute_bind.Pointer[cutlass.Float32], bias: Optional[cute_bind.Pointer[cutlass.Float32]], k: cutlass.Constexpr):
    o = cute.make_tensor(out, cute.make_layout(1))
    v = cutlass.Float32(k)
    if cutlass.const_expr(bias is not None):
        v = v + cute.make_tensor(bias, cute.make_layout(1))[0]
    o[0] = v


@cute.jit
def optional_tensor(out: cute.Tensor, bias: Optional[cute.Tensor], k: cutlass.Constexpr):
    v = cutlass.Float32(k)
    if cutlass.const_expr(bias is not None):
        v = v + bias[0]
    out[0] = v


@cute.jit
def bare_tuple(out: cute.Tensor, xs: tuple, k: cutlass.Constexpr):
    v = cutlass.Float32(k)
    for x in xs:
        v = v + x[0]
    out[0] = v


class Unannotated:
    """A class kernel whose runtime parameters carry no annotation (their kinds come from the values)."""

    @cute.jit
    def __call__(self, out, bias, k: cutlass.Constexpr):  # noqa: ANN001 - unannotated on purpose
        out[0] = cutlass.Float32(k) + bias[0]


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(1, np.float32), np.full(1, 0.5, np.float32)


#: (id, kernel maker, call(k, out, bias, factor), expected out[0] for a factor)
CASES: list[tuple[str, Callable[[], Any], Callable[..., None], Callable[[int], float]]] = [
    ("optional-pointer-given", lambda: cute_bind.kernel(optional_pointer), lambda k, o, b, f: k(o, b, f), lambda f: f + 0.5),
    ("optional-pointer-none", lambda: cute_bind.kernel(optional_pointer), lambda k, o, b, f: k(o, None, f), lambda f: float(f)),
    ("optional-tensor", lambda: cute_bind.kernel(optional_tensor), lambda k, o, b, f: k(o, b, f), lambda f: f + 0.5),
    ("bare-tuple", lambda: cute_bind.kernel(bare_tuple), lambda k, o, b, f: k(o, (b,), f), lambda f: f + 0.5),
    ("bare-list-two", lambda: cute_bind.kernel(bare_tuple), lambda k, o, b, f: k(o, [b, b], f), lambda f: f + 1.0),
    ("class-unannotated", lambda: cute_bind.kernel(Unannotated()), lambda k, o, b, f: k(o, b, f), lambda f: f + 0.5),
]


@pytest.mark.parametrize("make, call, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_key_switches_past_the_routes_are_found_by_probe(monkeypatch: pytest.MonkeyPatch, make: Any, call: Any, expected: Any) -> None:
    torch = torch_or_skip()
    k = make()
    out, bias = (torch.from_numpy(a) for a in _arrays())
    for f in FACTORS:
        call(k, out, bias, f)
    assert probes_for(k.compiler.signature.params) is not None

    def no_full_key(*args: object, **kwargs: object) -> None:
        raise AssertionError("the full compile key was computed for a known specialization")

    monkeypatch.setattr(k.compiler, "bind_values", no_full_key)
    for _ in range(2):
        for f in FACTORS:
            call(k, out, bias, f)
            assert out[0].item() == expected(f)


def test_a_union_member_is_found_by_probe_and_tagged() -> None:
    from cute_bind.slots import OptionalKind

    union = OptionalKind.recognize(Optional[Union[cute_bind.Pointer[cutlass.Float32], cutlass.Float32]])
    assert union is not None and union.is_union
    probe = union.probe()
    assert probe(None) == ("none",)
    from cutlass.cute.runtime import make_ptr

    buffer = np.zeros(2, np.float32)
    a, b = probe(make_ptr(cutlass.Float32, buffer.ctypes.data)), probe(1.5)
    assert a != b and a[:2] == ("value", 0) and b[:2] == ("value", 1)
