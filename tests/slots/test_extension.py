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


class TaggedInt32(ClampedInt32):
    """A toy kind that is part of the compile key's probe: its values' parity picks a specialization hint.

    It defines one object's worth of rules (recognize, coerce, bind, probe) and joins the registry with
    one line; dispatch, the compiler and ``prepare()`` read it through those methods only."""

    kind = "tagged"
    probed: list[Any] = []

    def probe(self) -> Any:
        def probe(value: Any) -> Any:
            TaggedInt32.probed.append(value)
            return ("tagged", type(value))

        return probe


@pytest.mark.parametrize("kind", [ClampedInt32, TaggedInt32], ids=["without a probe", "with a probe"])
def test_a_toy_kind_is_taken_by_dispatch_compile_and_prepare(kind: type[SlotKind], path: str, monkeypatch: Any) -> None:
    """A kind from outside the package, registered with one line, goes through ``kernel(...)`` (the
    dispatch path and its probes, the compiler's key, hits on the thread's caller), ``compile()``,
    ``bind()`` and ``cute_bind.prepare()`` of the compiled function, with no edit anywhere else."""
    monkeypatch.setattr(registry, "_KINDS", list(registry.kinds()))
    monkeypatch.setattr(registry, "_ELEMENT_KINDS", list(registry.element_kinds()))
    registry.register(kind, before=ScalarKind)
    TaggedInt32.probed.clear()
    k = cute_bind.kernel(fill_i32)
    assert type(k.signature.params[1].slot) is kind
    out = np.zeros(4, np.int32)
    for value, stored in [(50, 10), (3, 3), (-1, 0), (7, 7)]:  # kernel(...): the dispatch path, then the caller
        k(out, value)
        assert out[0] == stored
    info = k.cache_info()
    assert (info["misses"], info["specializations"], info["hits"]) == (1, 1, 3)
    # the probe is asked on the dispatch path only (the first call here); a kind without one keys every dispatch in full
    assert TaggedInt32.probed == ([50] if kind is TaggedInt32 else [])
    compiled = k.compile(out, 2)
    handle = cute_bind.prepare(compiled, out, 2)
    handle.launch(out, 99)
    assert out[0] == 10
    assert type(handle.slots["value"]) is kind


class ScalarToy(TaggedInt32):
    """The toy kind, also a torch op's Scalar (its one schema line)."""

    def schema_element(self) -> tuple[str, bool]:
        return ("Scalar", False)


@pytest.mark.parametrize("kind", [TaggedInt32, ScalarToy], ids=["no schema type", "a Scalar"])
def test_a_toy_kind_is_taken_by_the_torch_schema(kind: type[SlotKind], monkeypatch: Any) -> None:
    """``cute_bind.torch.op`` asks the kind for its schema type: a kind that names one is an op argument
    with no edit of the schema code; one that names none is CB702 (give it a default), as a structure is."""
    from tests.optional import torch_or_skip

    torch = torch_or_skip()
    import cute_bind.torch as cbt

    monkeypatch.setattr(registry, "_KINDS", list(registry.kinds()))
    monkeypatch.setattr(registry, "_ELEMENT_KINDS", list(registry.element_kinds()))
    registry.register(kind, before=ScalarKind)
    k = cute_bind.kernel(fill_i32)
    name = f"cbtest::toy_{kind.__name__.lower()}"
    if kind is TaggedInt32:
        with pytest.raises(cute_bind.KernelDefinitionError, match=r"\[CB702\]"):
            cbt.op(name, k, mutates_args=("out",))
        return
    op = cbt.op(name, k, mutates_args=("out",))
    assert "Scalar value" in op.schema
    out = torch.zeros(4, dtype=torch.int32)
    for value, stored in [(50, 10), (3, 3)]:
        op(out, value)  # eagerly: the kernel's own call
        assert int(out[0]) == stored
    torch.ops.cbtest.__getattr__(f"toy_{kind.__name__.lower()}")(out, -5)  # through torch's dispatcher
    assert int(out[0]) == 0
