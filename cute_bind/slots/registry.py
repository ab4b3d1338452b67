"""The slot-kind registry: which kinds exist, in which order they are tried.

Kinds join with :func:`register` when their module is imported; the registry
never names a kind. :func:`classify` asks each registered kind, in order,
whether it recognises an annotation, then whether it can say why the
annotation is not eligible (its :meth:`SlotKind.rejection`), and falls back to
the generic CB102.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, NoReturn, TypeVar

from .. import dsl
from .. import diagnostics as D
from .base import Converter, Bound, Constexpr, Probe, Rejected, SlotKind, Unprobeable, Where, describe_annotation, probe_value, wrong_kind

__all__ = ["register", "kinds", "element_kinds", "classify", "infer_slot", "inferred_probe", "first_answer", "InferredKind"]

_KINDS: list[type[SlotKind]] = []
_ELEMENT_KINDS: list[type[SlotKind]] = []

K = TypeVar("K", bound=type[SlotKind])
A = TypeVar("A")


def first_answer(candidates: Iterable[type[SlotKind]], ask: Callable[[type[SlotKind]], A | None]) -> A | None:
    """The first answer of ``ask(kind)`` that is not ``None``, over ``candidates`` in order (else ``None``)."""
    for kind in candidates:
        found = ask(kind)
        if found is not None:
            return found
    return None


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


def classify(annotation: object) -> SlotKind | Constexpr | Rejected:
    """Classify one (already resolved) annotation against the registered kinds."""
    if dsl.is_constexpr(annotation):
        return Constexpr()
    found = first_answer(_KINDS, lambda kind: kind.recognize(annotation))
    if found is not None:
        return found
    rejected = first_answer(_KINDS, lambda kind: kind.rejection(annotation))
    if rejected is not None:
        return rejected
    return Rejected(D.UNSUPPORTED_ANNOTATION, describe_annotation(annotation))


def infer_slot(value: object, *, element: bool = False) -> SlotKind | None:
    """A slot kind read from a value, as the DSL reads an unannotated parameter.

    Each kind is asked to recognise ``type(value)`` first, then (through its
    :meth:`SlotKind.infer` hook) the value itself, for kinds whose values'
    types are not annotations (a DLPack exporter). ``element``: only the kinds
    a sequence element may have.
    """
    candidates = _ELEMENT_KINDS if element else _KINDS
    found = first_answer(candidates, lambda kind: kind.recognize(type(value)))
    if found is not None:
        return found
    return first_answer(candidates, lambda kind: kind.infer(value))


def inferred_probe(value: object, *, element: bool = False) -> Hashable:
    """The probe of a value whose kind is read from it (:func:`infer_slot`): the kind found and that
    kind's own probe of the value, as the compile key holds the kind and its key. None is its own
    part; a value of no kind, or of a kind without a probe, is :class:`Unprobeable`."""
    if value is None:
        return None
    kind = infer_slot(value, element=element)
    if kind is None:
        raise Unprobeable
    return (type(kind).__name__, probe_value(kind, value))


#: what an inferred slot takes, for messages
_INFERRED_EXPECTED = "a pointer, number, stream, tensor, sequence or structure (the kind is read from the value)"


#: makes the storage-free slot of an unannotated parameter bound to None: the optional kind's module
#: puts its maker here when it is imported (it imports this module, so this one cannot import it)
NONE_SLOT: list[Callable[[SlotKind], SlotKind]] = []


class InferredKind(SlotKind):
    """A slot whose kind is read from the value given at bind, as the DSL reads an unannotated parameter.

    Made for a class kernel's unannotated parameter (``annotation`` ``None``) and for a union
    member that is a client's own class (``Union[cute.Tensor, Operand]``: ``annotation`` is the
    class); never recognised from an annotation. ``bind()`` asks :func:`infer_slot` for the
    value's kind and binds with it: the bound handle holds that kind's slot (so launches take
    what it takes), and the compile key holds the kind and its key. ``None`` is a constant of
    the compiled code, as the DSL compiles it. Unbound, it may read an address (the value may
    be a tensor or pointer), so it is converted with the address-reading slots
    (``reads_address``); bound, its slot is the value's own kind's.
    """

    kind = "inferred"
    fast = "X"
    fmt = ""
    packs_tuple = True
    #: unbound: the value's kind may read an address (bound slots are the value's own kind)
    reads_address = True

    def __init__(self, annotation: object = None) -> None:
        #: the union member's class, or None for an unannotated parameter
        self.annotation = annotation

    def __repr__(self) -> str:
        return f"InferredKind({self.describe()})"

    @property
    def parts(self) -> tuple[str, ...]:
        return ()

    @property
    def width(self) -> int:
        return 0

    @classmethod
    def recognize(cls, annotation: object) -> SlotKind | None:
        return None  # never from an annotation: made by the signature reader and the union kind

    def describe(self) -> str:
        if self.annotation is None:
            return "unannotated (kind read from the value)"
        return f"{describe_annotation(self.annotation)} (kind read from the value)"

    def expected(self) -> str:
        if self.annotation is None:
            return _INFERRED_EXPECTED
        return f"for the {describe_annotation(self.annotation)} member, {_INFERRED_EXPECTED}"

    def probe(self) -> Probe:
        """The kind read from the value and that kind's own probe of it (:func:`inferred_probe`)."""
        return inferred_probe

    def resolve(self, value: object, where: Where) -> SlotKind:
        """The kind ``value`` is bound with (CB204 for a value of no kind cute_bind can rewrite)."""
        found = infer_slot(value)
        if found is None:
            expected = self.expected()
            if hasattr(value, "__c_pointers__"):
                expected += (
                    "; a JitArgument object (__c_pointers__) is marshalled by its own code, which cute_bind does not "
                    "reproduce: pass its fields as a NamedTuple or dataclass of tensors and numbers"
                )
            raise wrong_kind(where, expected, value)
        return found

    def bind(self, value: object, where: Where) -> Bound:
        if value is None:
            # the optional kind's slot bound to None (its module, which imports this one, registers the maker)
            return Bound(packed=(), dsl_value=None, key=("inferred", "none"), slot=NONE_SLOT[0](self))
        b = self.resolve(value, where).bind(value, where)
        # a stream's key as it is (the TVM-FFI environment stream is recognised by its key)
        key = b.key if b.slot.kind == "stream" else ("inferred", type(b.slot).__name__, b.key)
        return Bound(packed=b.packed, dsl_value=b.dsl_value, key=key, slot=b.slot)

    def coerce(self, value: object, where: Where, checked: bool = False) -> NoReturn:
        # only bound slots launch; an unbound one has no storage
        raise wrong_kind(where, f"{self.expected()}, bound first (bind() or a call)", value)

    def converter(self, where: Where) -> Converter | None:
        return self.coerce_converter(where)
