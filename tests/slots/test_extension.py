"""A new slot kind plugs in without touching the launch loop.

The kind below is defined here, outside the package: it recognises Int32
parameters, clamps values to [0, 10] and has no C class of its own, so the C
fast path reaches it through its generic class "X" (its converter) and the
pure-Python fast path through the same converter. Nothing in
``cute_bind.launch`` or ``cute_bind.slots.registry`` names it: it joins the
registry with ``register(kind, before=ScalarKind)``.
"""

from __future__ import annotations

from typing import Any

import cutlass
import numpy as np
import pytest

import cute_bind
from cute_bind.slots import Bound, ScalarKind, SlotKind, Where, registry
from tests.kernels.host import fill_i32


class ClampedInt32(SlotKind):
    kind = "clamped"
    fmt = "i"
    fast = "X"

    @classmethod
    def recognize(cls, annotation: Any) -> ClampedInt32 | None:
        return cls() if annotation is cutlass.Int32 else None

    def expected(self) -> str:
        return "an int (clamped to [0, 10])"

    def coerce(self, value: Any, where: Where, checked: bool = False) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise cute_bind.error(
                cute_bind.CATALOG["CB204"], kernel=where.kernel, parameter=where.parameter, expected=self.expected(), got=repr(value)
            )
        return min(10, max(0, value))

    def converter(self, where: Where) -> Any:
        return self.coerce_converter(where)

    def bind(self, value: Any, where: Where) -> Bound:
        v = self.coerce(value, where)
        return Bound(packed=v, dsl_value=cutlass.Int32(v), key=None, slot=self)


def test_new_kind_on_both_fast_paths(path, monkeypatch):
    monkeypatch.setattr(registry, "_KINDS", list(registry.kinds()))  # both restored after the test
    monkeypatch.setattr(registry, "_ELEMENT_KINDS", list(registry.element_kinds()))
    registry.register(ClampedInt32, before=ScalarKind)
    k = cute_bind.kernel(fill_i32)
    assert type(k.signature.params[1].slot) is ClampedInt32
    out = np.zeros(4, np.int32)
    handle = k.bind(out, 3)
    for value, stored in [(50, 10), (-7, 0), (4, 4)]:
        handle.launch(out, value)
        assert out[0] == stored
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        handle.launch(out, 2.5)
    assert (info.value.code, info.value.parameter) == ("CB204", "value")
