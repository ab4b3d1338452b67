"""The optional slot kind: ``Optional[X]`` / ``X | None`` for an eligible kind ``X``.

The DSL specialises a compile on ``None``: a parameter compiled with ``None``
is folded into the code as a constant and marshals into no C argument at
all; one compiled with a value is an ordinary ``X`` parameter. So which of the
two a handle holds is decided at ``bind()``/``prepare()`` (it is part of the
compile key) and a launch must keep it: a ``None`` slot takes only ``None``
(it has no storage), a value slot takes only values (``None`` would leave the
compiled code reading its last value). Either change is CB225.

A bound value slot is its element slot: same storage, same fast paths (every
fast path refuses ``None``, which then reaches ``coerce`` here and its
catalog error). A bound ``None`` slot has no parts; its converter only checks
that the value is still ``None``.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from .. import diagnostics as D
from .base import Bound, Rejected, SlotKind, Where, describe_annotation, describe_value
from .registry import kinds, register

__all__ = ["OptionalKind", "optional_element"]

_NONE = type(None)


def optional_element(annotation: Any) -> Any | None:
    """``X`` for an ``Optional[X]`` / ``X | None`` / ``Union[X, None]`` annotation, else ``None``.

    Only a union of exactly one type and ``None`` is optional; ``Union[X, Y, None]``
    is not (the DSL cannot marshal a value whose kind changes between calls).
    """
    if not _is_union(annotation):
        return None
    args = typing.get_args(annotation)
    if _NONE not in args:
        return None
    rest = [a for a in args if a is not _NONE]
    return rest[0] if len(rest) == 1 else None


def _is_union(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin is typing.Union or origin is types.UnionType


def _element_kind(element: Any) -> SlotKind | None:
    # any eligible runtime kind, sequences included (not another optional)
    for kind in kinds():
        if kind is OptionalKind:
            continue
        found = kind.recognize(element)
        if found is not None:
            return found
    return None


class OptionalKind(SlotKind):
    """``Optional[X]``: ``None`` or a value of the element kind, fixed at bind."""

    kind = "optional"
    fast = "X"
    packs_tuple = True

    def __init__(self, element: SlotKind, present: bool | None = None, inner: SlotKind | None = None) -> None:
        #: the element kind recognised from the annotation (unbound)
        self.element = element
        #: None before bind; then whether the handle holds a value (True) or None (False)
        self.present = present
        #: the bound element slot, when present
        self.inner = inner
        if inner is not None:
            # a bound value: exactly the element slot's storage and fast path
            self.fmt = inner.fmt
            self.fast = inner.fast
            self.packs_tuple = inner.packs_tuple  # type: ignore[misc]  # per instance: as the element packs
        else:
            self.fmt = ""

    def __repr__(self) -> str:
        return f"OptionalKind({self.describe()})"

    @property
    def parts(self) -> tuple[str, ...]:
        return self.inner.parts if self.inner is not None else ()

    @property
    def width(self) -> int:
        return self.inner.width if self.inner is not None else 0

    @property
    def elements(self) -> Any:
        """The bound element's elements (a sequence element), for the C fast path's class "S"."""
        return getattr(self.inner, "elements", None)

    def describe(self) -> str:
        inner = (self.inner or self.element).describe()
        if self.present is None:
            return f"Optional[{inner}]"
        return f"Optional[{inner}] (bound to a value)" if self.present else f"Optional[{inner}] (bound to None)"

    @classmethod
    def recognize(cls, annotation: Any) -> OptionalKind | None:
        element = optional_element(annotation)
        if element is None:
            return None
        found = _element_kind(element)
        return cls(found) if found is not None else None

    @classmethod
    def rejection(cls, annotation: Any) -> Rejected | None:
        """A union with None whose other member is not eligible (or is several types) is CB114."""
        if not _is_union(annotation) or _NONE not in typing.get_args(annotation):
            return None
        element = optional_element(annotation)
        if element is None:
            detail = "only one type besides None is allowed"
        elif _element_kind(element) is None:
            detail = f"{describe_annotation(element)} is not a pointer, scalar, stream, tensor or sequence of those"
        else:  # pragma: no cover - recognize() took it
            return None
        return Rejected(D.INELIGIBLE_OPTIONAL, describe_annotation(annotation), detail)

    def expected(self) -> str:
        if self.present is False:
            return f"None (the {self.describe()} slot was compiled for None)"
        if self.present:
            return f"a value, not None, for the {self.describe()} slot"
        return f"None or {self.element.expected()}"

    def guard(self, var: str) -> str | None:
        g = self.inner.guard(var) if self.inner is not None else None
        return f"{var} is not None and ({g})" if g is not None else None

    def _presence_error(self, value: Any, where: Where) -> Exception:
        return D.error(
            D.OPTIONAL_PRESENCE_MISMATCH,
            kernel=where.kernel,
            parameter=where.parameter,
            expected="None (compiled for None: the parameter is a constant of the compiled code)"
            if self.present is False
            else f"a value ({(self.inner or self.element).describe()}), as compiled",
            got=describe_value(value) if value is not None else "None",
        )

    def coerce(self, value: Any, where: Where, checked: bool = False) -> Any:
        if self.present is False:
            if value is not None:
                raise self._presence_error(value, where)
            return ()
        if value is None or self.inner is None:
            raise self._presence_error(value, where)
        return self.inner.coerce(value, where, checked)

    def converter(self, where: Where) -> Any:
        if self.inner is None:
            return self.coerce_converter(where)
        convert = self.inner.converter(where)
        if convert is None:
            return None  # the guard refuses None; coerce reports it
        fail = self._presence_error

        def convert_present(value: Any) -> Any:
            if value is None:
                raise fail(value, where)
            return convert(value)

        return convert_present

    def c_spec(self) -> Any:
        return self.inner.c_spec() if self.inner is not None else None

    def bind(self, value: Any, where: Where) -> Bound:
        return self.bind_with(value, where, self.element.bind)

    def bind_with(self, value: Any, where: Where, bind: Any) -> Bound:
        """Bind with ``bind`` for the element (``prepare()`` passes a pointer kind's ``prepare``)."""
        if value is None:
            return Bound(packed=(), dsl_value=None, key=("none",), slot=OptionalKind(self.element, present=False))
        b = bind(value, where)
        return Bound(packed=b.packed, dsl_value=b.dsl_value, key=("value", b.key), slot=OptionalKind(self.element, True, b.slot))


# composite: tried first, so Optional[X] is never taken for X's own kind; not a sequence element
register(OptionalKind, element=False)
