"""Values spelled exactly, read without running their code: what the entry key and the Constexpr keys stand on.

:func:`exact_form` turns a value into a hashable form compared by its exact
type and bits (floats by their bits, nested types kept), :class:`Exact`
wraps such a value for an in-process compile key, and :func:`constexpr_key`
keeps the common exact values bare. The readers (``_read``, ``_state``,
``_class_lookup``...) look into a foreign object's class and instance
dictionaries without calling its ``__getattr__``, properties, ``repr`` or
``==``: see :mod:`cute_bind.cache.key`, which hashes what they read.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
import sys
import types
import typing
from typing import TYPE_CHECKING, Hashable

if TYPE_CHECKING:  # read at run time from sys.modules, where a value of their types is
    pass


__all__ = ["Uncacheable", "Exact", "constexpr_key", "constexpr_value", "dataclass_field_names", "exact_form"]


class Uncacheable(Exception):
    """The compile depends on something the key cannot spell; ``args[0]`` says what."""


# ------------------------------------------------------------------ exact values
_F64 = struct.Struct("<d")
_BARE = frozenset({int, str, bytes, type(None)})  # types whose == is exact between two values of the type
_DEPTH = 12  # nesting past which a value keeps its own equality (a cycle, or data no Constexpr holds)


def _loaded(name: str) -> types.ModuleType | None:
    """NumPy or torch if this process imported it, else None: never imported here (a value of one of
    their types, subclasses defined elsewhere included, means the module already is)."""
    return sys.modules.get(name)


# ------------------------------------------------------------------ reading foreign objects without running their code
# The key reads values the kernel's code names: any object at all, a client's operator class holding
# ``cute.Layout`` values among them. Such an object's own methods (``repr``, ``str``, ``__eq__``,
# ``__getattr__``, a property) may run anything, and a layout whose MLIR context is gone crashes the
# process on ``repr``. So the key reads an object only through the machinery of ``type`` and ``object``
# themselves (a class's own dictionary, its MRO, slot descriptors, the instance dictionary), and spells by
# ``repr`` only values of a few types whose ``repr`` it knows; anything else it cannot spell is
# :class:`Uncacheable` (CB608, not cached), never a call into the object.
_TYPE_DICT = type.__dict__["__dict__"].__get__  # cls -> its own mappingproxy (no metaclass code)
_TYPE_MRO = type.__dict__["__mro__"].__get__
_TYPE_MODULE = type.__dict__["__module__"].__get__
_TYPE_QUALNAME = type.__dict__["__qualname__"].__get__
_OBJECT_GETATTRIBUTE = object.__dict__["__getattribute__"]
#: the builtin classes whose own ``__getattribute__`` slot is the interpreter's generic lookup (an ``IntEnum``
#: member finds ``int``'s first, a ``str`` subclass ``str``'s): reading through them runs no class's code
_GENERIC_GETATTRIBUTE = tuple(c.__dict__["__getattribute__"] for c in (object, int, str, float, complex, tuple, bytes, frozenset))


def _generic_getattribute(cls: type) -> bool:
    """Whether an attribute read of a ``cls`` instance is the interpreter's own (no ``__getattribute__`` of a class's code)."""
    found = _class_lookup(cls, "__getattribute__")
    return any(found is g for g in _GENERIC_GETATTRIBUTE)


_MODULE_DICT = _TYPE_DICT(types.ModuleType)["__dict__"].__get__  # a module's namespace, without its class's attribute hooks
_MISSING = object()


def _class_lookup(cls: type, name: str) -> object:
    """``name`` as found in ``cls``'s MRO dictionaries (no descriptor is called), or ``_MISSING``."""
    for klass in _TYPE_MRO(cls):
        d = _TYPE_DICT(klass)
        if name in d:
            return d[name]
    return _MISSING


def _type_name(cls: type) -> str:
    """``module.qualname`` of a class, read from the class itself (a metaclass's attributes are not consulted)."""
    try:
        module, qualname = _TYPE_MODULE(cls), _TYPE_QUALNAME(cls)
    except Exception:  # pragma: no cover - every class has both
        return "?.?"
    return f"{module if type(module) is str else '?'}.{qualname if type(qualname) is str else '?'}"


def _instance_dict(obj: object, cls: type) -> dict[str, object] | None:
    """The instance dictionary of ``obj`` when ``type``'s own ``__dict__`` descriptor gives it; None: it has none.

    Raises :class:`Uncacheable` where a class redefines ``__dict__`` (reading it would run that code)."""
    d = _class_lookup(cls, "__dict__")
    if d is _MISSING:
        return None
    if type(d) is not types.GetSetDescriptorType:
        raise Uncacheable(f"{_type_name(cls)} redefines __dict__ (reading its state would run its code)")
    try:
        value = d.__get__(obj, cls)
    except AttributeError:  # pragma: no cover - a getset of a class without a dict
        return None
    return value if type(value) is dict else None


def dataclass_field_names(fields: dict[object, object]) -> list[str]:
    """The names of a dataclass's fields from its ``__dataclass_fields__`` (a dict read from the class
    itself), filtered as :func:`dataclasses.fields` filters them: no ClassVar or InitVar pseudo-field."""
    return [f.name for f in fields.values() if type(f) is dataclasses.Field and f._field_type is dataclasses._FIELD]  # type: ignore[attr-defined]  # dataclasses.fields()'s own filter: _field_type is private


def _is_data_descriptor(attr: object) -> bool:
    t = type(attr)
    return _class_lookup(t, "__set__") is not _MISSING or _class_lookup(t, "__delete__") is not _MISSING


def _read(obj: object, cls: type, name: str) -> object:
    """``obj.name`` as a plain attribute read would give it, without running the class's code.

    A slot, the instance dictionary and a plain class attribute are read; a class that redefines
    ``__getattribute__`` or ``__getattr__`` (for a missing name), a property or any other descriptor
    would run code: :class:`Uncacheable`."""
    if not _generic_getattribute(cls):
        raise Uncacheable(f"{_type_name(cls)} defines __getattribute__ (reading .{name} would run its code)")
    attr = _class_lookup(cls, name)
    if attr is not _MISSING and _is_data_descriptor(attr):
        if type(attr) is types.MemberDescriptorType:  # a __slots__ entry: read by the interpreter
            try:
                return attr.__get__(obj, cls)
            except AttributeError:
                raise Uncacheable(f"{_type_name(cls)}.{name} is not set") from None
        raise Uncacheable(f"{_type_name(cls)}.{name} is a {_type_name(type(attr))} (reading it would run code)")
    d = _instance_dict(obj, cls)
    if d is not None and name in d:
        return d[name]
    if attr is _MISSING:
        raise Uncacheable(f"{_type_name(cls)} has no attribute {name!r} of its own")
    if _class_lookup(type(attr), "__get__") is not _MISSING:
        raise Uncacheable(f"{_type_name(cls)}.{name} is a {_type_name(type(attr))} (reading it would run code)")
    return attr


def _state(obj: object, cls: type) -> dict[str, object]:
    """An object's own attributes: its instance dictionary and its slots (an unset slot is left out).

    What a traced method reads as ``self.x``; read without running the object's code (see :func:`_read`)."""
    if not _generic_getattribute(cls):
        raise Uncacheable(f"{_type_name(cls)} defines __getattribute__ (reading its attributes would run its code)")
    state: dict[str, object] = {}
    for klass in reversed(_TYPE_MRO(cls)):
        for name, attr in _TYPE_DICT(klass).items():
            if type(attr) is types.MemberDescriptorType and type(name) is str:
                try:
                    state[name] = attr.__get__(obj, cls)
                except AttributeError:
                    state.pop(name, None)
    d = _instance_dict(obj, cls)
    if d is not None:
        state.update(d)
    return state


def exact_form(value: object, depth: int = 0) -> Hashable:
    """A hashable form of ``value`` that another value shares only when a trace cannot tell them apart.

    ``==`` is not that: ``0.0 == -0.0`` (``1 / x`` or ``copysign`` differ), a NaN
    equals nothing, not even itself, and ``(1, 2) == (True, 2.0)``. Here floats
    (also inside complex numbers and NumPy scalars) are their bits, so ``-0.0``
    differs from ``0.0`` and a NaN equals a NaN of the same payload; nested
    values are tagged with their exact type. ``int``, ``str``, ``bytes`` and
    ``None`` stand for themselves (their ``==`` is already exact between
    values of one type, and no tagged form equals them); any other object is
    ``(its type, itself)``, i.e. keeps its own ``==`` within its type.

    Tagged forms are tuples whose first item is a type object, and a plain
    tuple's form never starts with one (a type inside it is tagged too), so two
    different values never share a form.
    """
    t = value.__class__
    if t is int or t is str or t is bytes or value is None:
        plain: Hashable = value  # hashable: an int, str, bytes or None is its own form
        return plain
    if t is float:
        return (float, _F64.pack(value))
    if t is bool:
        return (bool, value)
    if depth > _DEPTH:
        return (t, value)
    # t is value.__class__ (read once): typing.cast, not type(value) again, tells the checker what it is
    if t is tuple:
        return tuple([exact_form(x, depth + 1) for x in typing.cast("tuple[object, ...]", value)])
    if t is complex:
        number = typing.cast(complex, value)
        return (complex, _F64.pack(number.real), _F64.pack(number.imag))
    if t is frozenset:
        return (frozenset, frozenset([exact_form(x, depth + 1) for x in typing.cast("frozenset[object]", value)]))
    if isinstance(value, tuple):  # a named tuple: its class and its items
        return (t, tuple([exact_form(x, depth + 1) for x in value]))
    np = _loaded("numpy")
    if np is not None and isinstance(value, np.generic):  # np.float32(-0.0), np.float64('nan'), ...
        return (t, value.dtype.str, value.tobytes())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(t, "__dataclass_params__", None)
        if params is not None and params.eq:  # compared by its fields: compare those exactly
            return (t, tuple([exact_form(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value) if f.compare]))
    return (t, value)


class Exact:
    """A Constexpr value in a compile key: equal to another when their :func:`exact_form` agree.

    ``value`` is the value itself (what the DSL is given); ``repr`` is its repr,
    so messages about specializations read as before.
    """

    __slots__ = ("value", "form", "_hash", "_flat")

    def __init__(self, value: object) -> None:
        self.value = value
        # a tuple of ints and strings (a tile shape): equal to another tuple exactly when equal by ``==``
        # with items of the same types, two C-level comparisons instead of spelling the other value
        self._flat: tuple[type, ...] | None = None
        if value.__class__ is tuple and all(x.__class__ in _BARE for x in value):
            self._flat = tuple(map(type, value))
        form = exact_form(value)
        try:
            h = hash(form)
        except TypeError:  # a part the value's own hash skips (e.g. a field outside its eq) is unhashable
            form = (value.__class__, value)
            h = hash(form)
        self.form = form
        self._hash = h

    def __eq__(self, other: object) -> bool:
        if other.__class__ is Exact:
            return self.form == other.form
        return other is self.value or self.form == exact_form(other)

    def __ne__(self, other: object) -> bool:
        # the call path's check is ``compiled != given`` with ``given`` of the compiled value's class:
        # the same object (the common case: a constant passed again) needs no spelling
        if other is self.value:
            return False
        if self._flat is not None and other.__class__ is tuple:
            return other != self.value or tuple(map(type, other)) != self._flat
        if other.__class__ is Exact:
            return self.form != other.form
        return self.form != exact_form(other)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return repr(self.value)


def constexpr_key(value: object) -> object:
    """What stands for a Constexpr value in an in-process compile key (and the call path's checks).

    The value itself where ``==`` between two values of its type is already
    exact (the compile key holds the type beside it): ``int``, ``str``,
    ``bytes``, ``bool``, ``None``, enum members, and floats other than zero and
    NaN (two equal nonzero floats have the same bits). Anything else is
    wrapped in :class:`Exact`. Keeping the common values bare keeps the call
    path's check of them a single C-level comparison, as before.
    """
    t = value.__class__
    if t is int or t is str or t is bool or value is None or t is bytes:
        return value
    if t is float:
        if value == value and value != 0.0:
            return value
    elif isinstance(value, enum.Enum) and (t.__eq__ is object.__eq__ or isinstance(value, int)):
        return value  # members of one enum compare by identity (an int enum by its int: equal ints are one member)
    return Exact(value)


def constexpr_value(key_part: object) -> object:
    """The value :func:`constexpr_key` stands for."""
    return key_part.value if key_part.__class__ is Exact else key_part
