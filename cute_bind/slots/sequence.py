"""The sequence slot kind: a tuple/list parameter of eligible elements.

The DSL flattens a sequence argument into one C argument per element, in
order, each marshalled as its own kind. A sequence slot is therefore the
concatenation of its element slots, with the length fixed at ``bind()``:
``tuple[X, Y]`` fixes the element kinds in the annotation; ``tuple[X, ...]``,
``list[X]`` and ``Sequence[X]`` fix one kind for every element; a bare
``tuple``/``list`` takes each element's kind from the value given to ``bind()``
(a NamedTuple given to a bare ``tuple`` binds as the structure it is, as the
DSL traces it: quack's GEMMs annotate ``epilogue_args: tuple``).

A sequence value is read by iterating it (``list(value)``), on every path: a
tuple or list subclass overriding ``__iter__`` is read through it (the C fast
path takes exact tuples and lists only, whose raw items are their iteration).
What was read (a snapshot of the elements, any capsule an element was read
through) is returned with the items (:class:`~cute_bind.slots.base.Held`), so
the launch holds every element until the entry point returns even if another
thread empties the list meanwhile.
"""

from __future__ import annotations

import typing
from typing import Any

from .. import _whitelist as W
from .. import diagnostics as D
from .base import Bound, Converter, Held, Probe, Rejected, SlotKind, Unprobeable, Where
from .base import describe_annotation, hold_converted, is_namedtuple, packing_of, qualname, unprobeable, wrong_kind
from .registry import element_kinds, first_answer, infer_slot, inferred_probe, register

__all__ = ["SequenceKind", "element_problem"]


def _origin(annotation: object) -> tuple[object, object]:
    base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
    return typing.get_origin(base) or base, base


def is_sequence_annotation(annotation: object) -> bool:
    origin, _ = _origin(annotation)
    return origin in (list, tuple) or qualname(origin) in W.SEQUENCE_NAMES


def _element_kinds(annotation: object) -> tuple[tuple[object, ...] | None, bool]:
    """``(element annotations, homogeneous)``; ``(None, True)`` for a bare sequence."""
    origin, base = _origin(annotation)
    args = typing.get_args(base)
    if not args:
        return None, True
    if origin is tuple or qualname(origin) == "typing.Tuple":
        if len(args) == 2 and args[1] is Ellipsis:
            return (args[0],), True
        if args == ((),):  # tuple[()]
            return (), False
        return tuple(args), False
    return (args[0],), True


def _element_kind(annotation: object) -> SlotKind | str:
    """The slot kind of one element annotation, or why it is not eligible."""
    if is_sequence_annotation(annotation):
        return f"{describe_annotation(annotation)} is a sequence"
    found = first_answer(element_kinds(), lambda kind: kind.recognize(annotation))
    if found is not None:
        return found
    return f"{describe_annotation(annotation)} is not a pointer, scalar, stream or tensor"


def element_problem(annotation: object) -> str | None:
    """Why a sequence annotation is not eligible (the CB113 detail), or None."""
    elements, _ = _element_kinds(annotation)
    for i, element in enumerate(elements or ()):
        found = _element_kind(element)
        if isinstance(found, str):
            return f"element {i}: {found}"
    return None


def _probe_inferred_sequence(value: object) -> tuple[object, ...]:
    """A bare ``tuple``/``list`` parameter's probe: the length and, per element, the kind read from it
    and that kind's probe. None is no element's value (bind refuses it), so it is never probed."""
    cls = type(value)
    if cls is not tuple and cls is not list:
        raise Unprobeable
    items = tuple(typing.cast("tuple[object, ...] | list[object]", value))
    if any(x is None for x in items):
        raise Unprobeable
    return (len(items), *(inferred_probe(x, element=True) for x in items))


class SequenceKind(SlotKind):
    """A tuple/list of eligible elements: its element slots, one C argument each."""

    kind = "sequence"
    fast = "S"
    packs_tuple = True

    def __init__(self, elements: tuple[SlotKind, ...] | None = None, homogeneous: SlotKind | None = None, bound: bool = False) -> None:
        # elements: one kind per position (tuple[X, Y] or a bound sequence);
        # homogeneous: one kind for any length (tuple[X, ...], list[X]); neither: bare.
        self.elements = elements
        self.homogeneous = homogeneous
        self.bound = bound
        self.fmt = "".join(e.fmt for e in elements) if bound and elements is not None else ""
        self.reads_address = any(e.reads_address for e in (*(elements or ()), *((homogeneous,) if homogeneous else ())))

    def __repr__(self) -> str:
        return f"SequenceKind({self.describe()})"

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for e in self.elements or () for p in e.parts)

    @property
    def width(self) -> int:
        return sum(e.width for e in self.elements or ())

    def describe(self) -> str:
        if self.elements is not None:
            return "tuple[" + ", ".join(e.describe() for e in self.elements) + ("" if self.elements else "()") + "]"
        if self.homogeneous is not None:
            return f"tuple[{self.homogeneous.describe()}, ...]"
        return "tuple"

    @classmethod
    def recognize(cls, annotation: object) -> SequenceKind | None:
        if not is_sequence_annotation(annotation) or element_problem(annotation) is not None:
            return None
        elements, homogeneous = _element_kinds(annotation)
        if elements is None:
            return cls()
        kinds = tuple(typing.cast(SlotKind, _element_kind(e)) for e in elements)
        return cls(homogeneous=kinds[0]) if homogeneous else cls(elements=kinds)

    @classmethod
    def rejection(cls, annotation: object) -> Rejected | None:
        """A sequence with an ineligible element is CB113, naming the element."""
        problem = element_problem(annotation) if is_sequence_annotation(annotation) else None
        if problem is None:
            return None
        return Rejected(D.INELIGIBLE_SEQUENCE_ELEMENT, describe_annotation(annotation), problem)

    def expected(self) -> str:
        if self.bound or self.elements is not None:
            n = len(self.elements or ())
            return f"a tuple or list of {n} element{'s' if n != 1 else ''} for a {self.describe()} slot"
        return f"a tuple or list for a {self.describe()} slot"

    def _items(self, value: object, where: Where) -> list[object]:
        # a tuple or a list (or a subclass: torch.Size), as the message says: a range or another
        # Sequence would give its elements as values (range(2): the addresses 0 and 1)
        if not isinstance(value, (tuple, list)):
            raise self.refusal(where, value)
        try:
            items = list(value)
        except Exception as exc:  # a subclass whose __iter__ or __len__ raises: a typed error
            raise self.refusal(where, value) from exc
        if self.elements is not None and len(items) != len(self.elements):
            raise where.error(
                D.SEQUENCE_LENGTH_MISMATCH, expected=f"{len(self.elements)} elements ({self.describe()})", got=f"{len(items)} elements"
            )
        return items

    @staticmethod
    def _where(where: Where, i: int) -> Where:
        return Where(where.kernel, f"{where.parameter}[{i}]")

    def bind(self, value: object, where: Where) -> Bound:
        if self.elements is None and self.homogeneous is None and is_namedtuple(value.__class__):
            # a bare ``tuple`` annotation given a NamedTuple (quack's ``epilogue_args: tuple``): the DSL
            # traces the NamedTuple as the structure it is (its None fields and Constexpr fields are
            # constants), so it binds as one; a NamedTuple the structure kind refuses stays a sequence
            found = infer_slot(value)
            if found is not None and found.kind == "structure":
                return found.bind(value, where)
        items = self._items(value, where)
        kinds: list[SlotKind] = []
        for i, item in enumerate(items):
            kind = self.elements[i] if self.elements is not None else self.homogeneous or infer_slot(item, element=True)
            if kind is None:
                raise wrong_kind(self._where(where, i), "a pointer, scalar, stream or tensor element", item)
            kinds.append(kind)
        bounds = [k.bind(item, self._where(where, i)) for i, (k, item) in enumerate(zip(kinds, items))]
        packed: list[object] = []
        compile_only = False
        for b in bounds:
            if b.packed is None:  # a compile-only placeholder (a fake tensor): nothing is launched
                compile_only = True
            elif not b.slot.packs_tuple:
                packed.append(b.packed)
            else:
                packed.extend(b.packed)
        slot = SequenceKind(elements=tuple(b.slot for b in bounds), bound=True)
        key = tuple((type(b.slot).__name__, b.slot.describe(), b.key) for b in bounds)
        return Bound(packed=None if compile_only else tuple(packed), dsl_value=tuple(b.dsl_value for b in bounds), key=key, slot=slot)

    def probe(self) -> Probe | None:
        """The length and each element's probe, read from an exact tuple or list: annotated elements
        (``tuple[X, Y]``, ``tuple[X, ...]``, ``list[X]``) by their kinds' own probes; a bare ``tuple``
        or ``list`` by the kind read from each element and that kind's probe (as the key holds each
        element's kind and key). An element kind without a probe, or a subclass of tuple or list (read
        by iterating it, as the full key does; a NamedTuple given to a bare ``tuple`` binds as a
        structure): the full key decides."""
        fixed = self.elements is not None
        kinds = self.elements if fixed else (self.homogeneous,) if self.homogeneous is not None else None
        if kinds is None:
            return _probe_inferred_sequence
        probes = tuple(k.probe() for k in kinds)  # once: a kind without a probe makes the kernel unprobeable
        if any(p is unprobeable for p in probes):
            return unprobeable

        def probe_sequence(value: object) -> tuple[object, ...]:
            cls = type(value)
            if cls is not tuple and cls is not list:
                raise Unprobeable
            items = tuple(typing.cast("tuple[object, ...] | list[object]", value))  # an exact tuple or list (checked above)
            each = probes if fixed else probes * len(items)
            if len(items) != len(each):
                raise Unprobeable  # the full key reports the length (CB215)
            return (len(items), *(None if p is None else p(x) for p, x in zip(each, items)))

        return probe_sequence

    def coerce(self, value: object, where: Where, checked: bool = False) -> Held:
        items = self._items(value, where)
        kinds = tuple(self.elements or ())
        # numbers before addresses (the arguments' lifetime rule), each tensor's storage held
        return hold_converted(*packing_of(kinds), items, lambda i, v: kinds[i].coerce(v, self._where(where, i), checked), [items])

    def converter(self, where: Where) -> Converter | None:
        """Elements taken as they are where their guard allows (as the generated fast path does
        for top-level slots), converted by their own converter, or else fully coerced."""
        elements = tuple(self.elements or ())
        n = len(elements)
        plan = []
        for i, e in enumerate(elements):
            w = self._where(where, i)
            convert = e.converter(w)
            check = e.guard_check() if convert is None else None
            plan.append((e, w, convert, check))
        coerce = self.coerce
        reads, packing = packing_of(elements)

        def convert_one(k: int, v: object) -> object:
            e, w, convert, check = plan[k]
            if convert is not None:
                return convert(v)
            if check is None or check(v):
                return v
            return e.coerce(v, w)

        def convert_sequence(value: Any) -> Held:
            cls = type(value)
            if (cls is tuple or cls is list) and len(value) == n:
                items = tuple(value)  # a snapshot: the launch holds the elements, whatever happens to the list
                # numbers before addresses (the lifetime rule), each element's torch storage held
                return hold_converted(reads, packing, items, convert_one, [items])
            return coerce(value, where)

        return convert_sequence


# composite: a sequence never holds a sequence
register(SequenceKind, element=False)
