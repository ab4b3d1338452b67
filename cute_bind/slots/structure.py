"""The structure slot kind: a NamedTuple or dataclass parameter whose fields are eligible kinds or None.

The DSL flattens a structure argument into the C arguments of its fields, in
field order (``get_c_pointers``/``get_mlir_types`` recurse into tuples; a
dataclass goes through the DSL's dataclass adapter, field by field, leaving out
its ``Constexpr`` fields). A field holding ``None`` gives no C argument: it is
a constant of the compiled code, as an ``Optional`` parameter bound to ``None``
is. So a structure slot is the concatenation of its field slots, each an
optional slot fixed at bind to ``None`` or a value of its kind; a structure
whose fields are all ``None`` (FlashAttention-4's ``AuxData()``) gives no C
argument at all and is a compile-time constant. Which fields hold ``None``,
the fields' kinds and the structure's class are part of the compile key; a
launch keeps them (a field bound to ``None`` given a value, or the reverse, is
CB225, a changed ``Constexpr`` field CB232; ``kernel(*args)`` compiles a new
specialization instead).

A field is classified from the class's type hints as a parameter is (a
pointer, scalar, stream, tensor, sequence, ``Optional``/union of those, or
another structure); a field annotated ``None`` is always ``None``; a
NamedTuple or dataclass field annotated ``Constexpr[...]`` is a constant held at
bind and compared at launch (the DSL bakes it into the compiled code and gives
it no C argument); a field of an untyped ``collections.namedtuple`` takes
its kind from the value given at bind. Anything else is CB125 at decoration.

The DSL does not adapt what a NamedTuple holds (only the NamedTuple itself is
flattened), so it refuses Python numbers and torch tensors inside one; the
structure slot binds every field through its own kind and gives the DSL the
structure rebuilt from the fields' DSL values (``from_dlpack`` tensors,
``cutlass.Int32(...)`` numbers), which it compiles as it would a structure
of DSL values. A launch takes what each field's own slot takes.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import struct
import threading
import typing
from typing import Any, Callable, Hashable

from .. import dsl
from .. import diagnostics as D
from .base import Bound, Converter, Held, Rejected, SlotKind, Where
from .base import describe_annotation, describe_value, hold_converted, is_namedtuple, packing_of, qualname, wrong_kind
from .optional import OptionalKind
from .registry import classify, infer_slot, register

__all__ = ["StructureKind", "compile_copy", "structure_fields"]

# How a field is read: "slot" (an eligible kind), "infer" (unannotated: the value's kind
# at bind), "const" (always None, or a dataclass Constexpr field: held and compared).
_SLOT, _INFER, _CONST = "slot", "infer", "const"

_ACTIVE = threading.local()  # classes being classified on this thread (a structure holding itself)


def compile_copy(value: object) -> object:
    """``value`` with every dataclass instance in it (nested in dataclasses, tuples and lists) copied.

    The DSL's tracing writes its traced values into the dataclass objects a compile is
    given (a field read inside a loop becomes ``Float32(?)``), which then marshal no more
    ("only float is supported"); the compile gets copies, so the bound DSL values the
    launch marshals, and the caller's own objects, stay as they were.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = copy.copy(value)
        for f in dataclasses.fields(value):
            v = getattr(value, f.name, None)
            c = compile_copy(v)
            if c is not v:
                object.__setattr__(out, f.name, c)  # frozen dataclasses too: this is our own copy
        return out
    if type(value) is tuple:
        return tuple(compile_copy(v) for v in typing.cast("tuple[object, ...]", value))
    if type(value) is list:
        return [compile_copy(v) for v in typing.cast("list[object]", value)]
    if isinstance(value, tuple) and is_namedtuple(type(value)):
        return typing.cast(Any, value)._make(compile_copy(v) for v in value)
    return value


def _is_structure(annotation: object) -> bool:
    return isinstance(annotation, type) and (is_namedtuple(annotation) or dataclasses.is_dataclass(annotation))


def _field_names(cls: type) -> tuple[str, ...]:
    if is_namedtuple(cls):
        return tuple(cls._fields)
    return tuple(f.name for f in dataclasses.fields(cls))


def structure_fields(cls: type) -> tuple[tuple[tuple[str, str, SlotKind | None], ...] | None, str | None]:
    """``(fields, problem)`` of a NamedTuple or dataclass: each field's ``(name, how, kind)``,
    or why one is not eligible (CB125's detail). ``(None, None)`` for any other class."""
    if not _is_structure(cls):
        return None, None
    active: set[type] = getattr(_ACTIVE, "classes", None) or set()
    if cls in active:
        return None, f"{describe_annotation(cls)} holds itself"
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # a forward reference the class's module does not define
        return None, f"its field annotations cannot be resolved ({type(exc).__name__}: {exc})"
    namedtuple = is_namedtuple(cls)
    _ACTIVE.classes = active | {cls}
    try:
        fields: list[tuple[str, str, SlotKind | None]] = []
        for name in _field_names(cls):
            if name not in hints:
                fields.append((name, _INFER, None))  # an untyped collections.namedtuple
                continue
            annotation = hints[name]
            if annotation is None or annotation is type(None):
                fields.append((name, _CONST, None))
                continue
            found = classify(annotation)
            if isinstance(found, Rejected):
                why = found.detail or found.diagnostic.summary.rstrip(".")
                return None, f"field '{name}': {found.got} is not eligible ({why})"
            if not isinstance(found, SlotKind):  # Constexpr: held at bind, compared at launch
                # A NamedTuple's Constexpr field (quack's TileSchedulerOptions.raster_order, an IntEnum)
                # is traced as a constant and gives no C argument, as a dataclass's does
                fields.append((name, _CONST, None))
                continue
            if namedtuple and _is_stream(found):
                return None, _NAMEDTUPLE_STREAM.format(name=name)
            fields.append((name, _SLOT, found))
        return tuple(fields), None
    finally:
        _ACTIVE.classes = active


#: The DSL adapts nothing inside a NamedTuple: a ``CUstream`` there gives no C argument.
_NAMEDTUPLE_STREAM = "field '{name}': a stream inside a NamedTuple is not passed by the DSL (it adapts nothing inside one); use a dataclass"


def _is_stream(kind: SlotKind) -> bool:
    """A stream, or a union with a stream member (a sequence's elements are known only at bind)."""
    if isinstance(kind, OptionalKind):
        return any(_is_stream(m) for m in kind.members)
    return kind.kind == "stream"


def _const_key(value: object) -> Hashable:
    """A hashable, exact spelling of a held constant for the compile key (floats by their bits)."""
    if value is None or value.__class__ in (bool, int, str, bytes):
        return (value.__class__.__name__, value)
    if value.__class__ is float:
        return ("float", struct.pack("<d", value).hex())
    if isinstance(value, enum.Enum):
        return (qualname(type(value)), value.name)
    if value.__class__ is tuple:
        return ("tuple", tuple(_const_key(v) for v in value))
    hash(value)  # an unhashable constant is refused by the caller
    return (qualname(type(value)), value)


def _same_constant(value: object, held: object) -> bool:
    if value is held:
        return True
    if value.__class__ is not held.__class__:
        return False
    try:
        return bool(_const_key(value) == _const_key(held))
    except TypeError:
        return False


def _to_dsl(value: Any) -> object:
    """A bound field's DSL value with Python numbers as the DSL's own (``Int32(...)``...):
    the DSL adapts nothing inside a NamedTuple, and a Python number there does not compile."""
    cls = value.__class__
    if cls is bool or cls is int or cls is float:
        cutlass = dsl.dsl().cutlass
        return {bool: cutlass.Boolean, int: cutlass.Int32, float: cutlass.Float32}[cls](value)
    if cls is tuple or cls is list:
        return cls(_to_dsl(v) for v in value)
    return value


def _atoms(slot: SlotKind) -> list[SlotKind]:
    """The single-part kinds (pointer, scalar, stream, tensor) a bound slot marshals, in order."""
    if isinstance(slot, OptionalKind):
        return _atoms(slot.inner) if slot.inner is not None else []
    if isinstance(slot, StructureKind):
        return list(slot.elements or ())
    elements = getattr(slot, "elements", None)
    if slot.kind == "sequence" and elements is not None:
        return [a for e in elements for a in _atoms(e)]
    return [slot]


class StructureKind(SlotKind):
    """A NamedTuple or dataclass: its fields' slots, in field order; ``None`` fields are constants."""

    kind = "structure"
    fast = "X"
    packs_tuple = True

    def __init__(
        self,
        cls: type,
        fields: tuple[tuple[str, str, SlotKind | None], ...],
        bound: tuple[tuple[str, SlotKind | None, object], ...] | None = None,
    ) -> None:
        self.cls = cls
        #: per field: (name, how it is read, its kind from the annotation)
        self.fields = fields
        #: after bind, per field: (name, its bound slot, None) or (name, None, the held constant)
        self.bound = bound
        slots = [s for _, s, _ in bound or () if s is not None]
        self.fmt = "".join(s.fmt for s in slots)
        self._slots = slots
        # an unannotated field's kind comes from its value at bind: it may read one
        self.reads_address = (
            any(s.reads_address for s in slots)
            if bound is not None
            else any(how == _INFER or (k is not None and k.reads_address) for _, how, k in fields)
        )
        #: the single-part kinds behind each C argument, in order (for device lookups)
        self.elements: tuple[SlotKind, ...] | None = tuple(a for s in slots for a in _atoms(s)) if bound is not None else None

    def __repr__(self) -> str:
        return f"StructureKind({self.describe()})"

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for s in self._slots for p in s.parts)

    @property
    def width(self) -> int:
        return sum(s.width for s in self._slots)

    def _spelling(self) -> str:
        return f"{describe_annotation(self.cls)} ({'NamedTuple' if is_namedtuple(self.cls) else 'dataclass'})"

    def describe(self) -> str:
        if self.bound is None:
            return self._spelling()
        shown = []
        for name, slot, held in self.bound:
            shown.append(f"{name}={slot.describe()}" if slot is not None else f"{name}={held!r}")
        return f"{self.cls.__name__}({', '.join(shown)})"

    @classmethod
    def recognize(cls, annotation: object) -> StructureKind | None:
        if not isinstance(annotation, type):
            return None
        fields, problem = structure_fields(annotation)
        if fields is None or problem is not None:
            return None
        return cls(annotation, fields)

    @classmethod
    def rejection(cls, annotation: object) -> Rejected | None:
        """A NamedTuple or dataclass with a field that is not an eligible kind or None is CB125."""
        if not isinstance(annotation, type):
            return None
        fields, problem = structure_fields(annotation)
        if problem is None:
            return None
        return Rejected(D.INELIGIBLE_STRUCTURE, describe_annotation(annotation), problem)

    def expected(self) -> str:
        return f"a {self._spelling()} for a structure slot"

    @staticmethod
    def _where(where: Where, name: str) -> Where:
        return Where(where.kernel, f"{where.parameter}.{name}")

    def _check_type(self, value: object, where: Where) -> None:
        if not isinstance(value, self.cls):
            raise self.refusal(where, value)

    def _adopt(self, value: object, where: Where) -> object:
        """``value`` as an instance of the class: a plain tuple given for a NamedTuple is read as
        that NamedTuple (the compiled function's own call takes one), if it has one item per
        field (else CB234, naming the fields); anything else as it is (then checked)."""
        if value.__class__ is not tuple or not is_namedtuple(self.cls):
            return value
        names = _field_names(self.cls)
        if len(value) != len(names):
            raise where.error(
                D.STRUCTURE_ARITY,
                expected=f"a {self._spelling()} or a plain tuple of its {len(names)} field(s) in order ({', '.join(names)})",
                got=f"a tuple of {len(value)} item(s)",
            )
        return self.cls._make(value)

    def _constant_error(self, value: object, held: object, where: Where) -> Exception:
        return where.error(D.STRUCTURE_CONSTANT_CHANGED, expected=f"{held!r}, the constant it was compiled with", got=describe_value(value))

    def bind(self, value: object, where: Where) -> Bound:
        value = self._adopt(value, where)  # a plain tuple: the same slots and key as the NamedTuple
        self._check_type(value, where)
        bound: list[tuple[str, SlotKind | None, object]] = []
        packed: list[object] = []
        dsl_fields: dict[str, object] = {}
        key: list[Hashable] = []
        compile_only = False
        for name, how, kind in self.fields:
            v = getattr(value, name)
            w = self._where(where, name)
            if how == _INFER and v is not None:
                kind = infer_slot(v)
                if kind is None:
                    raise wrong_kind(w, "a pointer, scalar, stream, tensor, sequence or structure field, or None", v)
            if how == _CONST or kind is None:
                try:
                    key.append((name, "const", _const_key(v)))
                except TypeError:
                    raise w.error(D.CONSTEXPR_UNHASHABLE, expected="a hashable value", got=describe_value(v)) from None
                bound.append((name, None, v))
                continue
            # None in any field is a constant of the compiled code (the DSL gives it no argument)
            slot = kind if isinstance(kind, OptionalKind) else OptionalKind(kind)
            b = slot.bind(v, w)
            bound.append((name, b.slot, None))
            if b.packed is None:  # a compile-only placeholder (a fake tensor): nothing is launched
                compile_only = True
            else:
                packed.extend(b.packed if b.slot.packs_tuple else (b.packed,))
            dsl_fields[name] = _to_dsl(b.dsl_value)
            key.append((name, b.slot.describe(), b.key))
        slot_ = StructureKind(self.cls, self.fields, tuple(bound))
        return Bound(
            packed=None if compile_only else tuple(packed),
            dsl_value=self._rebuilt(value, dsl_fields),
            key=("structure", qualname(self.cls), tuple(key)),
            slot=slot_,
        )

    def _rebuilt(self, value: Any, dsl_fields: dict[str, object]) -> object:
        """``value`` with its slot fields replaced by their DSL values (constants kept as they are)."""
        if not dsl_fields:
            return value
        if is_namedtuple(self.cls):
            return value._replace(**dsl_fields)
        out = copy.copy(value)
        for name, v in dsl_fields.items():
            object.__setattr__(out, name, v)  # frozen dataclasses too: this is our own copy
        return out

    def _fields(self, value: object, convert: Callable[[int, object], object]) -> Held:
        """Every field of ``value`` read first (a property may build a fresh tensor), then each
        converted by ``convert(k, v)`` in the launch's :func:`conversion_order` (numbers before
        addresses); what is packed, in field order, with what keeps it valid: the structure and
        every field value read (so a later field's conversion cannot free an earlier one)."""
        bound = self.bound or ()
        values = [getattr(value, name) for name, _, _ in bound]
        return hold_converted(*packing_of([slot for _, slot, _ in bound]), values, convert, [value, *values])

    def coerce(self, value: object, where: Where, checked: bool = False) -> Held:
        value = self._adopt(value, where)
        self._check_type(value, where)
        bound = self.bound or ()

        def convert(k: int, v: object) -> object:
            name, slot, held = bound[k]
            w = self._where(where, name)
            if slot is None:
                if not _same_constant(v, held):
                    raise self._constant_error(v, held, w)
                return None
            return slot.coerce(v, w, checked)

        return self._fields(value, convert)

    def converter(self, where: Where) -> Converter | None:
        """Each field through its own converter, taken as it is where its guard allows, else coerced."""
        plan: list[tuple[SlotKind | None, object, Where, Converter | None, Callable[[object], object] | None]] = []
        for name, slot, held in self.bound or ():
            w = self._where(where, name)
            if slot is None:
                plan.append((None, held, w, None, None))
                continue
            convert = slot.converter(w)
            check = slot.guard_check() if convert is None else None
            plan.append((slot, held, w, convert, check))
        cls, type_error, constant_error = self.cls, self._check_type, self._constant_error
        names = tuple(name for name, _, _ in self.bound or ())
        reads, packing = packing_of([slot for _, slot, _ in self.bound or ()])
        adopt = self._adopt if is_namedtuple(self.cls) else None

        def convert_field(k: int, v: object) -> object:
            slot, held, w, convert, check = plan[k]
            if slot is None:
                if v is not held and not _same_constant(v, held):
                    raise constant_error(v, held, w)
                return None
            if convert is not None:
                return convert(v)
            if check is not None and check(v):
                return v
            return slot.coerce(v, w)

        def convert_structure(value: object) -> Held:
            if value.__class__ is not cls:
                if adopt is not None and value.__class__ is tuple:
                    value = adopt(value, where)  # a plain tuple of one item per field (else CB234)
                else:
                    type_error(value, where)  # a subclass is taken, anything else refused
            values = [getattr(value, name) for name in names]  # every field read first (see _fields)
            return hold_converted(reads, packing, values, convert_field, [value, *values])

        return convert_structure


# composite: tried after every other kind (a class another kind claims is not a structure);
# not a sequence element
register(StructureKind, element=False)
