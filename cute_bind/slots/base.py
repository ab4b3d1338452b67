"""The slot-kind base: what every kind is, and the records the launch loop uses.

A slot kind is one object that knows three things:

- how it is recognised from an annotation (``recognize``, and ``rejection``
  for an annotation it recognises as its own but cannot take),
- how a value is checked and turned into what its storage holds (``coerce``,
  plus ``bind`` for the compile-time view of the value),
- how it is written: the native ``struct`` format of each C argument the DSL
  marshals it into (``parts``; a scalar or pointer is one part of one item, a
  tensor one part holding its memref descriptor, a sequence one part per
  element), plus what the fast paths need: an optional guard expression
  (``guard``) true when a value can be packed as it is, or a converter
  (``converter``) that turns a value into the items to pack, and the C fast
  path's class (``fast``) with its data (``c_spec``).

The launch loop (:mod:`cute_bind.launch`) only ever uses those. A new kind is
a subclass that joins the registry (:func:`cute_bind.slots.registry.register`);
neither the registry nor the launch loop names it. A kind the C fast path has
no class for uses its generic class ``"X"`` (it calls the converter).
"""

from __future__ import annotations

import re
import struct
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Hashable, Iterable, Protocol, Sequence, TypeGuard

from .. import diagnostics as D

__all__ = [
    "Where",
    "SlotKind",
    "Bound",
    "Constexpr",
    "Rejected",
    "describe_value",
    "describe_annotation",
    "qualname",
    "is_namedtuple",
    "wrong_kind",
    "item_ranges",
    "Held",
    "HeldAddress",
    "invalid_dlpack",
    "conversion_order",
    "read_without_code",
    "holding_storage",
    "storage_of",
    "hold_converted",
    "packing_of",
    "Unprobeable",
    "unprobeable",
    "probe_value",
    "Converter",
    "Probe",
]

U64 = 1 << 64

#: what a slot's converter or fallback is: a launch value (any object a caller passes) -> what
#: ``coerce`` returns for it (raising its catalog error for a value it does not take); that is one
#: item or a tuple of items by kind, which the writers index or pack without narrowing: Any
Converter = Callable[[object], Any]
#: a slot's probe: a value -> its hint of the compile key (see :meth:`SlotKind.probe`)
Probe = Callable[[object], Hashable]


@dataclass(frozen=True)
class Where:
    """Kernel and parameter names, for messages."""

    kernel: str
    parameter: str

    def error(
        self,
        diagnostic: D.Diagnostic,
        *,
        expected: str | None = None,
        got: str | None = None,
        detail: str | None = None,
        conversion: str | None = None,
    ) -> D.CuteBindError:
        """The exception for one occurrence of catalog entry ``diagnostic`` at this parameter (the caller raises it)."""
        return D.error(
            diagnostic, kernel=self.kernel, parameter=self.parameter, expected=expected, got=got, detail=detail, conversion=conversion
        )


def describe_value(value: object) -> str:
    """A value as a message's ``got`` shows it: one short line (an array by its shape and dtype, not its items).

    Never raises: it describes values a slot refuses, hostile ones included (a ``__repr__``, a
    ``shape`` or an ``__getattr__`` that raises, a nested tensor whose sizes are symbolic), so
    what fails is left out and the type's name stays."""
    name = type(value).__name__
    try:
        shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
        dims = (
            tuple(int(d) for d in shape) if shape is not None and dtype is not None and not isinstance(value, (bool, int, float)) else None
        )
    except Exception:  # noqa: BLE001 - whatever a hostile or unusual attribute raises: no shape to show
        dims = None
    if dims:  # an array or tensor (a 0-d NumPy scalar shows its value below)
        return f"{name} of shape {dims} and dtype {dtype}"
    try:
        text = " ".join(repr(value).split())
    except Exception:  # noqa: BLE001 - a __repr__ that raises
        return f"{name} object (its repr() raised)"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{name} {text}"


#: the fix for a tensor with torch's negative bit set (see :func:`negative_view`)
NEGATIVE_FIX = "its memory holds the values un-negated; pass t.resolve_neg()"


def negative_view(value: object) -> bool:
    """Whether ``value`` is a torch tensor with its negative bit set (``complex_t.conj().imag``,
    ``torch._neg_view(t)``): torch negates its elements lazily, so a kernel reading its memory
    reads the values un-negated. torch's DLPack export takes it as it is; the checked paths
    refuse it (the fast paths read no such bit, as they read no strides of a pointer)."""
    is_neg = getattr(type(value), "is_neg", None)
    if is_neg is None or not callable(is_neg):
        return False
    try:
        return is_neg(value) is True
    except Exception:  # noqa: BLE001 - not torch's method after all: nothing to say
        return False


#: Public packages a DSL type is spelled from in messages, as the static tools
#: spell it (``cutlass.Float8E4M3FN``, not its defining ``cutlass.base_dsl.typing``).
_PUBLIC_DSL_PACKAGES = ("cutlass", "cutlass.cute")


def describe_annotation(annotation: object) -> str:
    if isinstance(annotation, type):
        module = annotation.__module__
        if module.startswith("cutlass."):
            # the innermost package the type is defined under: cute.Layout (also cutlass.Layout)
            # is cutlass.cute.Layout, Float8E4M3FN (defined in cutlass.base_dsl) cutlass.Float8E4M3FN
            owners = [p for p in _PUBLIC_DSL_PACKAGES if module.startswith(p + ".")]
            for package in sorted(owners, key=len, reverse=True):
                owner = sys.modules.get(package)
                name = annotation.__qualname__
                if owner is not None and getattr(owner, name, None) is annotation:
                    return f"{package}.{name}"
        return f"{module}.{annotation.__qualname__}".replace("builtins.", "")
    return repr(annotation)


def wrong_kind(where: Where, expected: str, value: object, conversion: str | None = None) -> Exception:
    """CB204 for ``value``; ``conversion``: the fix's sentence for the refusing kind (a
    :data:`~cute_bind.diagnostics.WRONG_KIND_CONVERSIONS` value; default: the one for any kind)."""
    return where.error(
        D.WRONG_KIND, expected=expected, got=describe_value(value), conversion=conversion or D.WRONG_KIND_CONVERSIONS["other"]
    )


@dataclass(frozen=True)
class Bound:
    """A value bound to a slot at ``bind()``/``prepare()`` time.

    ``packed`` is what the slot's storage holds, ``dsl_value`` the DSL object
    passed to ``cute.compile`` and to the DSL's marshalling, ``key`` the
    value's contribution to the compile-cache key, ``slot`` the slot kind
    specialised for this handle (pointers learn dtype and alignment here).
    """

    packed: Any
    dsl_value: Any
    key: Any
    slot: SlotKind


class Held(tuple[object, ...]):
    """Items a ``coerce``/converter returns, plus ``owner``: what their addresses point into.

    A value read through a new object (a DLPack capsule that may own a fresh
    copy, a snapshot of a list's elements) returns its items as a ``Held``
    tuple; every launch path keeps it until the entry point returns, so
    nothing the kernel reads is freed under it. Packs like a plain tuple.
    """

    owner: object

    def __new__(cls, items: Iterable[object], owner: object) -> Held:
        self = super().__new__(cls, items)
        self.owner = owner
        return self


class HeldAddress(int):
    """An address a pointer slot's ``coerce`` returns with ``owner``, what keeps its memory valid.

    A pointer read through a new object (a DLPack capsule, a buffer export)
    returns the address as a ``HeldAddress``: an ``int`` for every writer, which
    every launch path keeps until the entry point returns, as it keeps a
    :class:`Held` tuple.
    """

    owner: object

    def __new__(cls, address: int, owner: object) -> HeldAddress:
        self = super().__new__(cls, address)
        self.owner = owner
        return self


def invalid_dlpack(where: Where, detail: str, got: str) -> Exception:
    """CB218 for the value of ``where``: a DLPack description that cannot be read safely (``detail`` says why)."""
    return where.error(D.INVALID_DLPACK, detail=detail, expected="a tensor a DLPack producer can describe", got=got)


def item_ranges(fmt: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` byte ranges of the items of native struct format
    ``fmt``, leaving out the alignment padding between and after them."""
    ranges = []
    prefix = "@"
    for count, code in re.findall(r"(\d*)(\D)", fmt.lstrip("@")):
        if code in "sp":  # one item of ``count`` bytes
            count, code = "", count + code
        elif code == "x" or count == "0":
            prefix += count + code
            continue
        for _ in range(int(count or 1)):
            start = struct.calcsize(prefix + "0" + code[-1])
            prefix += code
            ranges.append((start, struct.calcsize(prefix)))
    return ranges


class SlotKind(ABC):
    """One kind of runtime slot."""

    #: short name of the kind, e.g. "pointer"
    kind: ClassVar[str]
    #: native ``struct`` format of the slot's storage (all parts, in order)
    fmt: str
    #: how the C fast path writes the slot: "P" exact int (64-bit, format
    #: Q/q), "Z" the same or a stream object (``c_spec``), "B" exact bool (?), "I" int, range-checked for ``fmt``
    #: (b/h/i/q/B/H/I/Q), "R" exact float or int (f/d), "h"/"g" the same as a
    #: Float16/BFloat16 bit pattern (H), "T" tensor (``c_spec``), "S" sequence
    #: of element kinds (each written by its own class), "X" generic (calls the
    #: converter). ``bind()`` refuses a class that does not fit ``fmt`` (CB406).
    fast: str

    @property
    def parts(self) -> tuple[str, ...]:
        """``struct`` format of each C argument the slot marshals into (one C pointer each)."""
        return (self.fmt,)

    @property
    def width(self) -> int:
        """Number of ``struct`` items the slot packs."""
        return 1

    #: whether ``coerce`` returns a tuple of items (composite kinds) rather than one item; a kind
    #: whose storage is another's (a bound optional slot) sets it per instance
    packs_tuple: bool = False

    #: whether ``coerce`` reads a memory address from the value (a pointer, a tensor, or a
    #: composite holding one): such slots are converted after every other slot of a launch, so no
    #: user code (a ``__float__``, an ``__index__``) runs between reading an address and the entry
    #: point (:func:`conversion_order`); composite kinds set it per instance from their members
    reads_address: bool = False

    def converter(self, where: Where) -> Converter | None:
        """For the Python fast path: a function turning a value into what ``coerce`` returns
        (raising on anything it does not take as is), or ``None`` to pack values as they are."""
        return None

    def c_spec(self) -> object:
        """Data the C fast path's class needs (``None`` for the plain classes)."""
        return None

    def probe(self) -> Probe | None:
        """For ``kernel(...)``'s dispatch: a cheap hint of this slot's part of the compile key, read
        from a value without building DSL objects (raising :class:`Unprobeable` for a value it
        cannot read: the full key decides that call); ``None``: the slot is never part of the key
        (numbers, streams). The default, :func:`unprobeable`, is a kind without a probe: every
        call of a kernel with such a slot is keyed in full (correct, a little slower)."""
        return unprobeable

    def schema_element(self) -> tuple[str, bool] | None:
        """For ``cute_bind.torch.op``: the torch schema type of one value of this kind and whether it
        is a tensor (``("Tensor", True)``, ``("Scalar", False)``), or ``None``: no schema type (such a
        parameter needs a default, which the op then always passes)."""
        return None

    def fallback(self, where: Where) -> Converter | None:
        """For the Python fast path of a kind with a ``guard``: a function turning a value the guard
        refuses into what ``coerce`` returns (raising on anything it does not take), tried before the
        slow path; ``None``: such values go to the slow path (which binds the arguments again)."""
        return None

    def coerce_converter(self, where: Where) -> Converter:
        """A converter that is ``coerce`` itself, for kinds whose every value needs converting."""
        coerce = self.coerce

        def convert(value: object) -> object:
            return coerce(value, where)

        return convert

    @classmethod
    @abstractmethod
    def recognize(cls, annotation: object) -> SlotKind | None:
        """The kind for ``annotation``, or ``None`` if this kind does not apply."""

    @abstractmethod
    def expected(self) -> str:
        """What values the slot takes, for messages."""

    def conversion(self) -> str:
        """CB204's fix for this kind, after "Pass <expected>.": what to write where a conversion is
        meant (the catalog's :data:`~cute_bind.diagnostics.WRONG_KIND_CONVERSIONS`, by :attr:`kind`)."""
        return D.WRONG_KIND_CONVERSIONS.get(self.kind, D.WRONG_KIND_CONVERSIONS["other"])

    def refusal(self, where: Where, value: object, expected: str | None = None) -> Exception:
        """CB204 for ``value`` at ``where``: what this slot takes (``expected``, default
        :meth:`expected`) and this kind's :meth:`conversion`."""
        return wrong_kind(where, self.expected() if expected is None else expected, value, self.conversion())

    def guard(self, var: str) -> str | None:
        """Python expression, true when ``var`` may be packed as it is (fast path)."""
        return None

    def guard_check(self) -> Callable[[object], object] | None:
        """:meth:`guard` as a function of the value (``None`` where the kind has none): how a composite's
        Python converter takes a member's value as it is, as the generated fast path does a slot's."""
        guard = self.guard("v")
        # guard expressions come from the slot kinds themselves (e.g. "v.__class__ is int")
        check: Callable[[object], object] | None = eval(f"lambda v: {guard}") if guard else None  # noqa: S307
        return check

    @abstractmethod
    def coerce(self, value: object, where: Where, checked: bool = False) -> Any:
        """Check ``value`` and return what the storage holds; raise a catalog error otherwise."""

    @abstractmethod
    def bind(self, value: object, where: Where) -> Bound:
        """Check ``value`` at bind/prepare time; see :class:`Bound`."""

    @property
    def size(self) -> int:
        return struct.calcsize("@" + self.fmt)

    def describe(self) -> str:
        return self.kind

    @classmethod
    def rejection(cls, annotation: object) -> Rejected | None:
        """Why ``annotation``, which this kind would otherwise claim, is not eligible
        (a specific catalog entry instead of the generic CB102), or ``None``."""
        return None

    @classmethod
    def infer(cls, value: object) -> SlotKind | None:
        """The kind for an unannotated parameter given ``value``, when the value's
        type alone does not say (see :func:`cute_bind.slots.registry.infer_slot`)."""
        return None


@dataclass(frozen=True)
class Unprobeable(Exception):
    """A value a slot's probe cannot read: the dispatch path computes the full compile key."""


def unprobeable(value: object) -> Hashable:
    """The probe of a kind that has none (:meth:`SlotKind.probe`'s default)."""
    raise Unprobeable


def probe_value(kind: SlotKind, value: object) -> Hashable:
    """``kind``'s probe of ``value`` where the kind is known only per value (a union's member, an
    inferred kind): None for a kind never in the key; :class:`Unprobeable` from a kind without one."""
    probe = kind.probe()
    return None if probe is None else probe(value)


class Constexpr:
    """A compile-time parameter: part of the compile key, not a runtime slot."""


class NamedTupleClass(Protocol):
    """What cute_bind reads of a NamedTuple (``typing.NamedTuple``, ``collections.namedtuple``): an
    instance of one; :func:`is_namedtuple` narrows a class to ``type[NamedTupleClass]``."""

    _fields: ClassVar[tuple[str, ...]]

    @classmethod
    def _make(cls, iterable: Iterable[object]) -> tuple[object, ...]: ...


def is_namedtuple(cls: type) -> TypeGuard[type[NamedTupleClass]]:
    """A NamedTuple class (a tuple subclass with ``_fields``), told from its class alone."""
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def qualname(obj: object) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', ''))}"


@dataclass(frozen=True)
class Rejected:
    """An ineligible annotation and the catalog entry explaining why."""

    diagnostic: D.Diagnostic
    got: str
    detail: str | None = None


def read_without_code(value: object) -> bool:
    """Whether a pointer or tensor slot reads ``value``'s address without running Python code of
    the value's own: exactly a NumPy array or a torch tensor (not a subclass, whose methods may be
    overridden). Such values are read last of all (:func:`conversion_order`)."""
    tp = value.__class__
    if tp.__module__ == "numpy" and tp.__name__ == "ndarray":
        return True
    torch = sys.modules.get("torch")
    return torch is not None and (tp is getattr(torch, "Tensor", None) or tp is getattr(getattr(torch, "nn", None), "Parameter", None))


def conversion_order(reads: Sequence[bool], values: Sequence[object]) -> list[int]:
    """The order in which a launch converts ``values`` (``reads[i]``: whether value ``i``'s slot
    :attr:`~SlotKind.reads_address`): the arguments' lifetime rule (docs/concepts/safety.md).

    First every slot that reads no address (numbers and streams, whose ``__float__`` /
    ``__index__`` may run any code, even code that frees another argument's memory with
    ``out.set_()`` or ``a.resize()``), then the address-reading slots whose values run code of
    their own as they are read (array-interface exporters, tensor subclasses, structures), then
    the plain NumPy arrays and torch tensors, whose addresses are read without running any code:
    so every address is read after all user code of the conversion has run.
    """

    def rank(i: int) -> int:
        if not reads[i]:
            return 0
        return 2 if read_without_code(values[i]) else 1

    return sorted(range(len(reads)), key=rank)


#: how a composite packs one member's converted value (:func:`packing_of`, :func:`hold_converted`)
SKIP, APPEND, EXTEND = 0, 1, 2


def packing_of(kinds: Sequence[SlotKind | None]) -> tuple[list[bool], list[int]]:
    """A composite's members, read once where its converter is made: which read an address (for
    :func:`conversion_order`) and how each is packed (``SKIP`` a constant, ``APPEND`` one value,
    ``EXTEND`` a kind that packs a tuple)."""
    reads = [kind is not None and kind.reads_address for kind in kinds]
    packing = [SKIP if kind is None else EXTEND if kind.packs_tuple else APPEND for kind in kinds]
    return reads, packing


def hold_converted(
    reads: Sequence[bool], packing: Sequence[int], values: Sequence[object], convert: Callable[[int, object], object], owners: list[object]
) -> Held:
    """A composite's members converted: ``convert(k, values[k])`` for each, in the launch's
    :func:`conversion_order` (numbers before addresses), then packed in order as ``packing`` says
    (:func:`packing_of`), held with ``owners`` (what the caller read the values through), each
    value's torch storage and the owner of each member's own :class:`Held` items."""
    converted: list[Any] = [None] * len(packing)
    for k in conversion_order(reads, values):
        converted[k] = convert(k, values[k])
    out: list[object] = []
    owners.extend(storage_of(v) for v in values)
    for how, c in zip(packing, converted):
        if how == APPEND:
            out.append(c)
        elif how == EXTEND:
            out.extend(c)
            if isinstance(c, Held):
                owners.append(c.owner)
    return Held(out, owners)


def storage_of(value: object) -> object:
    """A torch tensor's storage (what keeps its memory allocated), or ``None`` for any other value."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, getattr(torch, "Tensor", ())):
        return None
    storage = getattr(value, "untyped_storage", None)
    try:
        return storage() if callable(storage) else None
    except Exception:  # noqa: BLE001 - a tensor without one storage (sparse, nested): its slot refuses it
        return None


def holding_storage(result: object, value: object) -> object:
    """``result`` (what a slot's ``coerce`` gave for ``value``), also holding a torch tensor's storage.

    Composite slots (structures, sequences, unions) read a tensor's address inside their own
    conversion, and another composite's conversion may run user code after it (a ``__float__``
    calling ``t.set_()``): held, the storage the address points into stays allocated until the
    entry point returns, whatever the tensor is rebound to (the arguments' lifetime rule)."""
    storage = storage_of(value)
    if storage is None:
        return result
    if isinstance(result, tuple):
        return Held(result, (getattr(result, "owner", None), storage))
    if isinstance(result, int) and not isinstance(result, bool):
        return HeldAddress(result, (getattr(result, "owner", None), storage))
    return result
