"""The slot-kind registry: which kinds exist, in which order they are tried.

Kinds join with :func:`register` when their module is imported; the registry
never names a kind. :func:`classify` asks each registered kind, in order,
whether it recognises an annotation, then whether it can say why the
annotation is not eligible (its :meth:`SlotKind.rejection`), and falls back to
the generic CB102.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .. import dsl
from .. import diagnostics as D
from .base import Constexpr, Rejected, SlotKind, describe_annotation

__all__ = ["register", "kinds", "element_kinds", "classify", "infer_slot"]

_KINDS: list[type[SlotKind]] = []
_ELEMENT_KINDS: list[type[SlotKind]] = []

K = TypeVar("K", bound=type[SlotKind])


def register(kind: K, *, element: bool = True, before: type[SlotKind] | None = None) -> K:
    """Add ``kind`` to the kinds :func:`classify` tries.

    ``element``: whether a sequence may hold values of this kind (composite
    kinds, such as the sequence kind itself, pass ``False``). ``before``: a
    registered kind this one is tried ahead of (to claim some of its
    annotations); by default a kind is tried after those already registered.
    Registering a kind twice is a no-op, so re-importing a module is harmless.
    """
    if kind in _KINDS:
        return kind
    for table, wanted in ((_KINDS, True), (_ELEMENT_KINDS, element)):
        if wanted:
            at = table.index(before) if before is not None and before in table else len(table)
            table.insert(at, kind)
    return kind


def kinds() -> tuple[type[SlotKind], ...]:
    """Every registered runtime slot kind, in the order they are tried."""
    return tuple(_KINDS)


def element_kinds() -> tuple[type[SlotKind], ...]:
    """The registered kinds a sequence element may have."""
    return tuple(_ELEMENT_KINDS)


def classify(annotation: Any) -> SlotKind | Constexpr | Rejected:
    """Classify one (already resolved) annotation against the registered kinds."""
    if dsl.is_constexpr(annotation):
        return Constexpr()
    for kind in _KINDS:
        found = kind.recognize(annotation)
        if found is not None:
            return found
    for kind in _KINDS:
        rejected = kind.rejection(annotation)
        if rejected is not None:
            return rejected
    return Rejected(D.UNSUPPORTED_ANNOTATION, describe_annotation(annotation))


def infer_slot(value: Any, *, element: bool = False) -> SlotKind | None:
    """A slot kind read from a value, as the DSL reads an unannotated parameter.

    Each kind is asked to recognise ``type(value)`` first, then (through its
    :meth:`SlotKind.infer` hook) the value itself, for kinds whose values'
    types are not annotations (a DLPack exporter). ``element``: only the kinds
    a sequence element may have.
    """
    candidates = _ELEMENT_KINDS if element else _KINDS
    for kind in candidates:
        found = kind.recognize(type(value))
        if found is not None:
            return found
    for kind in candidates:
        found = kind.infer(value)
        if found is not None:
            return found
    return None
