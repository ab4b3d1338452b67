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

A union of several eligible kinds with ``None`` (``Int32 | int | None``,
``Optional[Float32 | cute.Pointer]``) is the same slot with several members.
The DSL checks a value against the members (``isinstance``, as its
``_validate_arg`` does) and then compiles it by its own kind: an ``int`` or
``Int32`` a runtime Int32, a ``bool`` a Boolean, a ``Float32`` a Float32, a
pointer a pointer. So the member (the value's own kind) is fixed at bind, is
part of the compile key, and a launch keeps it: a value the bound member takes
is written as that member writes it; one that is, by its own kind, another
member is CB231 (``kernel(*args)`` compiles a new specialization for it). A
value of no member is CB230 at bind. A union slot bound to a value launches
through the generic class "X" (its converter checks the member by the value's
class, once per class).

A union without ``None`` that has a tensor member (quack's
``mA: Union[cute.Tensor, TransformAOperand]``: a tensor, or a NamedTuple of
tensors) is the same slot, with ``None`` refused at bind (CB230: the DSL
refuses it too, none of the members is ``NoneType``). There a member that is a
client's own class (not a DSL, ``cuda`` or builtin type) and no eligible kind
(``cute.Tensor | torch.Tensor``, a class the DSL adapts) is taken as the DSL
takes it, by the value: a value of that class is bound by its own kind
(:class:`~cute_bind.slots.registry.InferredKind`), and one cute_bind cannot
rewrite is refused at bind (CB204). Other unions without ``None`` (of numbers
only) stay CB102, as the static tools say.
"""

from __future__ import annotations

import types
import typing
from typing import Callable, Hashable

from .. import dsl
from .. import diagnostics as D
from .base import (
    Converter,
    Bound,
    Probe,
    Rejected,
    SlotKind,
    Unprobeable,
    Where,
    describe_annotation,
    describe_value,
    holding_storage,
    probe_value,
    unprobeable,
)
from .pointer import PointerKind
from .registry import NONE_SLOT, InferredKind, first_answer, infer_slot, kinds, register
from .scalar import ScalarKind
from .tensor import TensorKind

__all__ = ["OptionalKind", "optional_element", "union_members"]

_NONE = type(None)


def optional_element(annotation: object) -> object | None:
    """``X`` for an ``Optional[X]`` / ``X | None`` / ``Union[X, None]`` annotation, else ``None``.

    Only a union of exactly one type and ``None`` has one element; for ``Union[X, Y, None]``
    see :func:`union_members`.
    """
    if not _is_union(annotation):
        return None
    args = typing.get_args(annotation)
    if _NONE not in args:
        return None
    rest = [a for a in args if a is not _NONE]
    return rest[0] if len(rest) == 1 else None


def union_members(annotation: object) -> tuple[object, ...] | None:
    """The members besides ``None`` of a union with ``None`` (``typing`` flattens nested unions), else ``None``."""
    if not _is_union(annotation):
        return None
    args = typing.get_args(annotation)
    if _NONE not in args:
        return None
    return tuple(a for a in args if a is not _NONE)


def union_parts(annotation: object) -> tuple[tuple[object, ...], bool] | None:
    """``(members besides None, whether None is one)`` of any union annotation, else ``None``."""
    if not _is_union(annotation):
        return None
    args = typing.get_args(annotation)
    return tuple(a for a in args if a is not _NONE), _NONE in args


#: top-level packages whose classes are never a client's own (an ineligible one is refused)
_NOT_CLIENT = frozenset({"builtins", "cutlass", "cuda", "typing", "typing_extensions", "types", "collections", "enum", "abc", "cute_bind"})


def client_class(member: object) -> bool:
    """Whether a union member is a client's own class (its values are read by their own kind)."""
    return isinstance(member, type) and str(getattr(member, "__module__", "")).partition(".")[0] not in _NOT_CLIENT


def _tensor_union(members: tuple[object, ...], found: list[SlotKind | None]) -> bool:
    """A union without None is a slot when one of its members is a tensor."""
    return any(isinstance(f, TensorKind) for f in found)


def _is_union(annotation: object) -> bool:
    origin = typing.get_origin(annotation)
    return origin is typing.Union or origin is types.UnionType


def _element_kind(element: object) -> SlotKind | None:
    # any eligible runtime kind, sequences and structures included (not another optional)
    return first_answer((kind for kind in kinds() if kind is not OptionalKind), lambda kind: kind.recognize(element))


_PROBE = Where("", "")  # where for a trial coerce whose error is dropped


def _tag(slot: SlotKind) -> tuple[str, ...]:
    """What a union member contributes to the compile key: a scalar its dtype (an ``int``
    and an ``Int32`` compile the same runtime Int32), any other kind its class."""
    if isinstance(slot, ScalarKind):
        return ("scalar", slot.dtype_name)
    return (type(slot).__name__,)


def _dsl_isinstance(value: object, annotation: object) -> bool:
    """The DSL's own test of a value against one union member (``_validate_arg``)."""
    base = typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation
    origin = typing.get_origin(base)
    if origin is not None:
        return isinstance(origin, type) and isinstance(value, origin)
    if base is dsl.cute_pointer_class():
        return dsl.is_runtime_pointer(value)
    return isinstance(base, type) and isinstance(value, base)


class OptionalKind(SlotKind):
    """``Optional[X]`` / ``X | Y | None``: ``None`` or a value of one member kind, fixed at bind."""

    kind = "optional"
    fast = "X"
    packs_tuple = True

    def __init__(
        self,
        element: SlotKind,
        present: bool | None = None,
        inner: SlotKind | None = None,
        members: tuple[SlotKind, ...] | None = None,
        annotations: tuple[object, ...] | None = None,
        nullable: bool = True,
    ) -> None:
        #: the (first) member kind recognised from the annotation (unbound)
        self.element = element
        #: every member kind besides None, in the annotation's order (one for Optional[X])
        self.members = members or (element,)
        #: the members' annotations (the DSL tests a value against them)
        self.annotations = annotations
        #: None before bind; then whether the handle holds a value (True) or None (False)
        self.present = present
        #: the bound member slot, when present
        self.inner = inner
        #: whether None is a member (a union without None refuses it at bind)
        self.nullable = nullable
        self.reads_address = inner.reads_address if inner is not None else any(m.reads_address for m in self.members)
        if inner is not None:
            # a bound value: exactly the member slot's storage (and, for one member, its fast path)
            self.fmt = inner.fmt
            self.fast = inner.fast if not self.is_union else "X"
            self.packs_tuple = inner.packs_tuple  # per instance: as the member packs
        else:
            self.fmt = ""

    def __repr__(self) -> str:
        return f"OptionalKind({self.describe()})"

    @property
    def is_union(self) -> bool:
        """Whether the annotation has several members besides None."""
        return len(self.members) > 1

    @property
    def parts(self) -> tuple[str, ...]:
        return self.inner.parts if self.inner is not None else ()

    @property
    def width(self) -> int:
        return self.inner.width if self.inner is not None else 0

    @property
    def elements(self) -> tuple[SlotKind, ...] | None:
        """The bound element's elements (a sequence element), for the C fast path's class "S"."""
        return getattr(self.inner, "elements", None)

    def describe(self) -> str:
        if not self.nullable:
            spelled = self._spelled()
            if self.inner is None:
                return spelled
            return f"{spelled} (bound to {self.inner.describe()})"
        if self.inner is not None:
            inner = self.inner.describe()
        elif self.is_union:
            inner = self._spelled()
        else:
            inner = self.element.describe()
        if self.present is None:
            return f"Optional[{inner}]"
        return f"Optional[{inner}] (bound to a value)" if self.present else f"Optional[{inner}] (bound to None)"

    @classmethod
    def recognize(cls, annotation: object) -> OptionalKind | None:
        parts = union_parts(annotation)
        if not parts or not parts[0]:
            return None
        members, nullable = parts
        found = [_element_kind(m) for m in members]
        if not nullable:
            if not _tensor_union(members, found):
                return None  # a union of numbers without None: CB102
            found = [InferredKind(m) if f is None and client_class(m) else f for m, f in zip(members, found)]
        if any(f is None for f in found):
            return None
        kinds_ = tuple(typing.cast(SlotKind, f) for f in found)
        return cls(kinds_[0], members=kinds_, annotations=members, nullable=nullable)

    @classmethod
    def rejection(cls, annotation: object) -> Rejected | None:
        """A union with None, or one without None that has a tensor member, with a member that is
        not an eligible kind (nor, without None, a client's own class) is CB114, naming the member."""
        parts = union_parts(annotation)
        if parts is None:
            return None
        members, nullable = parts
        if not nullable and not _tensor_union(members, [_element_kind(m) for m in members]):
            return None  # CB102
        for member in members:
            if _element_kind(member) is None and (nullable or not client_class(member)):
                detail = f"{describe_annotation(member)} is not a pointer, scalar, stream, tensor, sequence or structure of those"
                return Rejected(D.INELIGIBLE_OPTIONAL, describe_annotation(annotation), detail)
        return None  # pragma: no cover - recognize() took it

    def _spelled(self) -> str:
        return " | ".join(describe_annotation(a) for a in self.annotations or ()) or " | ".join(m.describe() for m in self.members)

    def expected(self) -> str:
        if not self.nullable and self.present is None:
            return f"a value of one of {self._spelled()}"
        if self.present is False:
            return f"None (the {self.describe()} slot was compiled for None)"
        if self.present:
            return f"a value, not None, for the {self.describe()} slot"
        if self.is_union:
            return f"None or a value of one of {self._spelled()}"
        return f"None or {self.element.expected()}"

    def guard(self, var: str) -> str | None:
        if self.is_union:
            return None  # the converter checks the member
        g = self.inner.guard(var) if self.inner is not None else None
        return f"{var} is not None and ({g})" if g is not None else None

    def _presence_error(self, value: object, where: Where) -> Exception:
        return where.error(
            D.OPTIONAL_PRESENCE_MISMATCH,
            expected="None (compiled for None: the parameter is a constant of the compiled code)"
            if self.present is False
            else f"a value ({(self.inner or self.element).describe()}), as compiled",
            got=describe_value(value) if value is not None else "None",
        )

    # -- unions: which member a value is
    def probe(self) -> Probe:
        """None, or the member's own probe of the value, as the key holds ``("none",)`` or the
        member's key; a union's member is found by :meth:`own_kind` and tagged by its index. A
        member kind without a probe: the full key decides."""
        if not self.is_union:
            inner = self.element.probe()
            if inner is unprobeable:
                return unprobeable

            def probe_optional(value: object) -> Hashable:
                return ("none",) if value is None else ("value", None if inner is None else inner(value))

            return probe_optional
        own_kind = self.own_kind

        def probe_union(value: object) -> Hashable:
            if value is None:
                return ("none",)
            found = own_kind(value)
            if found is None:
                raise Unprobeable  # the full key reports it (CB230)
            index, kind = found
            return ("value", index, type(kind).__name__, probe_value(kind, value))

        return probe_union

    def own_kind(self, value: object) -> tuple[int, SlotKind] | None:
        """``(member index, kind to bind with)`` for a (non-None) value, or ``None`` for a value of no member.

        First the DSL's own rule: the first member the value is an instance of,
        a scalar then compiled by its own kind (an ``int`` as Int32, a ``bool``
        as Boolean, a ``Float32`` as Float32). Then what a member's own slot
        takes after conversion (a ``float`` for a Float32 member, a torch tensor
        for a tensor member), bound with that member's kind so the DSL gets a
        value of the member's type.
        """
        annotations = self.annotations or ()
        for i, (annotation, kind) in enumerate(zip(annotations, self.members)):
            if _dsl_isinstance(value, annotation):
                if isinstance(kind, InferredKind):  # a client's class: the value's own kind, as the DSL reads it
                    own_ = infer_slot(value)
                    return (i, own_) if own_ is not None else (i, kind)
                if isinstance(kind, ScalarKind):
                    own = infer_slot(value)
                    return i, own if isinstance(own, ScalarKind) else kind
                return i, kind
        own = infer_slot(value)
        for i, kind in enumerate(self.members):
            if own is None:
                break
            if isinstance(kind, ScalarKind):
                if isinstance(own, ScalarKind) and own.dtype_name == kind.dtype_name:
                    return i, kind
            elif type(own) is type(kind) and kind.kind not in ("structure", "inferred"):  # a structure only by isinstance
                return i, kind
        # last, a number the first scalar member's slot takes as it is (an int for a Float32 member),
        # as a launch of the bound member would take it; not an integer beside a pointer member,
        # where it may be an address (a handle bound to the pointer takes it as one)
        if any(isinstance(m, PointerKind) for m in self.members) and not isinstance(value, float) and hasattr(value, "__index__"):
            return None
        for i, kind in enumerate(self.members):
            if isinstance(kind, ScalarKind) and (own is None or isinstance(own, ScalarKind)):
                try:
                    kind.coerce(value, _PROBE)
                except Exception:  # not a number this member takes: try the next
                    continue
                return i, kind
        return None

    def _member_error(self, value: object, where: Where, found: SlotKind) -> Exception:
        assert self.inner is not None  # internal: only a bound value slot checks members
        return where.error(
            D.UNION_MEMBER_CHANGED,
            expected=f"a value of the member it was bound to ({self.inner.describe()})",
            got=f"{describe_value(value)}, a value of {found.describe()}",
        )

    def _launch_member(self, value: object) -> SlotKind | None:
        """The other member a launch value is, by its own kind (``None``: the bound member's own, or none)."""
        assert self.inner is not None  # internal: only a bound value slot checks members
        found = self.own_kind(value)
        if found is None or _tag(found[1]) == _tag(self.inner):
            return None
        if isinstance(self.inner, PointerKind) and value.__class__ is int:
            return None  # an int is an address for a pointer member, as the compiled function's own call takes it
        return found[1]

    def coerce(self, value: object, where: Where, checked: bool = False) -> object:
        if self.present is False:
            if value is not None:
                raise self._presence_error(value, where)
            return ()
        if value is None or self.inner is None:
            raise self._presence_error(value, where)
        if self.is_union:
            other = self._launch_member(value)
            if other is not None:
                raise self._member_error(value, where, other)
            return holding_storage(self.inner.coerce(value, where, checked), value)
        return self.inner.coerce(value, where, checked)

    def converter(self, where: Where) -> Converter | None:
        if self.inner is None:
            return self.coerce_converter(where)
        fail = self._presence_error
        if self.is_union:
            return self._union_converter(where)
        convert = self.inner.converter(where)
        if convert is None:
            return None  # the guard refuses None; coerce reports it

        def convert_present(value: object) -> object:
            if value is None:
                raise fail(value, where)
            return convert(value)

        return convert_present

    def _union_converter(self, where: Where) -> Converter:
        """The member check by the value's class (decided once per class), then the member's own coerce."""
        inner = self.inner
        assert inner is not None  # internal: only a bound value slot converts
        coerce, fail, member, member_error = inner.coerce, self._presence_error, self._launch_member, self._member_error
        # the member a value is depends only on its class (isinstance, and the kinds' own recognition)
        others: dict[type, SlotKind | None] = {}

        def convert_member(value: object) -> object:
            if value is None:
                raise fail(value, where)
            cls = value.__class__
            if cls in others:
                other = others[cls]
            else:
                other = others[cls] = member(value)
            if other is not None:
                raise member_error(value, where, other)
            # a union is a writer of its own (the C class "X"): another writer's conversion may run
            # after it, so a tensor's storage is held with what its address was read through
            return holding_storage(coerce(value, where), value)

        return convert_member

    def c_spec(self) -> object:
        return self.inner.c_spec() if self.inner is not None else None

    def bind(self, value: object, where: Where) -> Bound:
        return self.bind_with(value, where, self.element.bind)

    def bind_with(self, value: object, where: Where, bind: Callable[[object, Where], Bound]) -> Bound:
        """Bind with ``bind`` for the (first) element (``prepare()`` passes a pointer kind's ``prepare``)."""
        if value is None:
            if not self.nullable:  # the DSL refuses None too: NoneType is no member
                raise where.error(D.UNION_NO_MEMBER, expected=f"a value of one of {self._spelled()} (None is not a member)", got="None")
            return Bound(packed=(), dsl_value=None, key=("none",), slot=self._bound(False))
        if not self.is_union:
            return self.present_bound(bind(value, where))
        found = self.own_kind(value)
        if found is None:
            raise where.error(
                D.UNION_NO_MEMBER,
                expected=f"{'None or ' if self.nullable else ''}a value of one of {self._spelled()}",
                got=describe_value(value),
            )
        index, kind = found
        return self.present_bound(bind(value, where) if index == 0 and kind is self.element else kind.bind(value, where))

    def present_bound(self, b: Bound) -> Bound:
        """The bound value of this slot holding a value its member bound as ``b``."""
        key = ("value", _tag(b.slot), b.key) if self.is_union else ("value", b.key)
        return Bound(packed=b.packed, dsl_value=b.dsl_value, key=key, slot=self._bound(True, b.slot))

    def tensor_member(self, value: object) -> SlotKind | None:
        """The tensor member kind that a (non-None) ``value`` is bound with, or ``None``: the member
        the value is (a union), else the element if it is a tensor. A compile from a tensor (a fake, or a
        ``from_dlpack``) assumed a tensor here; a guard checks the call's value as that member."""
        if self.is_union:
            found = self.own_kind(value)
            return found[1] if found is not None and found[1].kind == "tensor" else None
        return self.element if self.element.kind == "tensor" else None

    def bind_address(self, value: object, where: Where) -> Bound | None:
        """An ``int`` bound to the union's pointer member as an address for a compiled entry, or ``None`` where there is none.

        ``bind`` refuses an int beside a pointer member (CB230: a number or an
        address?), as the DSL does. An entry compiled with the pointer member
        (quack's split-k ``alpha``: ``make_ptr(...)`` at compile, ``data_ptr()``
        at the call) takes an int as the address; the caller that knows it
        binds with this.
        """
        if value.__class__ is not int or not self.is_union:
            return None
        member = next((m for m in self.members if isinstance(m, PointerKind)), None)
        if member is None:
            return None
        return self.present_bound(member.prepare(value, where))  # for a compiled entry: an int carries no dtype to compile with

    def _bound(self, present: bool, inner: SlotKind | None = None) -> OptionalKind:
        return OptionalKind(self.element, present, inner, self.members, self.annotations, self.nullable)


# composite: tried first, so Optional[X] is never taken for X's own kind; not a sequence element
register(OptionalKind, element=False)
NONE_SLOT.append(lambda kind: OptionalKind(kind, present=False))  # an unannotated parameter bound to None
