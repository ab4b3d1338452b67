"""The pure-Python launch fast path: the launch function generated per slot shape.

:func:`fast_factory` compiles (once per slot shape, :data:`CODE_CACHE`) a factory whose
``launch`` writes the values into the handle's storage with one ``struct.pack_into`` and calls
the entry point; :class:`Gen` names its closure, shared by the generator and the handle.
"""

from __future__ import annotations

import ctypes
from typing import Callable, Final, Sequence, cast

from .. import dsl
from .._generated import compile_source
from ..slots import SlotKind
from ..slots.base import read_without_code

__all__ = ["CODE_CACHE", "Gen", "fast_factory", "fast_source", "plain_only"]


class Gen:
    """The names of the generated launch function's closure, shared by the generator and the handle.

    ``GATE`` is the handle's gate (:class:`~cute_bind.launch.lifecycle.Lifecycle`):
    a one-element list read right before the call, so a close or unload (which
    puts the refusal there) is seen by every launch, a saved ``launch``
    reference included, without touching the generated function.
    """

    PREFIX: Final = "_cb_"
    GATE: Final = "_cb_gate"
    LEAVE: Final = "_cb_leave"
    #: the factory's parameters before the per-slot ones, in order
    FIXED: Final = (
        "_cb_M",
        "_cb_pack",
        "_cb_buf",
        GATE,
        "_cb_argv",
        "_cb_res",
        "_cb_slow",
        "_cb_fail",
        "_cb_ret",
        "_cb_enter",
        LEAVE,
        "_cb_busy",
        "_cb_kw",
    )


#: the generated factory: called with the launch's bindings (NOT_GIVEN, the slow path, the converters, ...), it
#: returns the launch function
LaunchFactory = Callable[..., Callable[..., "int | None"]]
CODE_CACHE: dict[tuple[object, ...], LaunchFactory] = {}


def fast_source(
    slots: Sequence[SlotKind], converted: Sequence[bool], has_defaults: Sequence[bool], has_result: bool, fallbacks: Sequence[bool] = ()
) -> str:
    """The source of the factory :func:`fast_factory` compiles (see its docstring for a sample).

    ``fallbacks``: per slot, whether a value its guard refuses is read by its kind's
    ``fallback`` (``_cb_f{i}``) inside the launch instead of going to the slow path.
    """
    x = Gen.PREFIX
    args = [f"a{i}" for i in range(len(slots))]
    fallbacks = list(fallbacks) + [False] * (len(slots) - len(fallbacks))
    # a defaulted parameter's value is v{i}; a{i} stays as given (or NOT_GIVEN) for the slow path
    vals = [f"v{i}" if d else a for i, (a, d) in enumerate(zip(args, has_defaults))]
    params = ", ".join(f"{a}={x}M" for a in args)
    fell = [not c and f and s.guard(v) is not None for s, v, c, f in zip(slots, vals, converted, fallbacks)]
    guards = [g for s, v, c, f in zip(slots, vals, converted, fell) if not c and not f and (g := s.guard(v)) is not None]
    bad = " or ".join(f"not ({g})" for g in guards)
    defaults = "".join(f"        v{i} = {x}V{i} if {a} is {x}M else {a}\n" for i, (a, d) in enumerate(zip(args, has_defaults)) if d)
    # converted values are bound to locals: what they hold (a DLPack capsule, a list's snapshot)
    # lives until the entry point returns; so are the values a fallback reads (a pointer read
    # through a buffer export holds it). Every number is converted before any address is read
    # (the lifetime rule: a __float__ or a structure's property may free another argument's memory).
    steps = {i: f"            c{i} = {x}c{i}({vals[i]})\n" for i in range(len(slots)) if converted[i]}
    steps.update(
        {i: f"            f{i} = {vals[i]} if {slots[i].guard(vals[i])} else {x}f{i}({vals[i]})\n" for i in range(len(slots)) if fell[i]}
    )
    converts = "".join(steps[i] for i in sorted(steps, key=lambda i: slots[i].reads_address))
    items = [
        (f"*c{i}" if s.packs_tuple else f"c{i}") if c else (f"f{i}" if f else v)
        for i, (s, v, c, f) in enumerate(zip(slots, vals, converted, fell))
    ]
    tup = "(" + "".join(f"{a}, " for a in args) + ")"
    free = [*Gen.FIXED]
    free += [f"{x}V{i}" for i, d in enumerate(has_defaults) if d]
    free += [f"{x}c{i}" for i, c in enumerate(converted) if c]
    free += [f"{x}f{i}" for i, f in enumerate(fell) if f]
    sep = "/, " if args else ""
    check = f"            if {x}res[0]:\n                {x}fail()\n" if has_result else ""
    # Keywords are placed by name (``_cb_kw``: the call's positions, NOT_GIVEN where left out) and the
    # launch called again with them; what it cannot place (an unknown or repeated name, a required
    # parameter left out) and extra positionals go to the slow path as given, before defaults are
    # substituted, so it can still tell a defaulted parameter from a given one.
    guard_check = f"        if {bad}:\n            return {x}slow({tup}, (), {{}})\n" if bad else ""
    return (
        f"def factory({', '.join(free)}):\n"
        f"    def launch({params}{', ' if args else ''}{sep}*{x}x, **{x}k):\n"
        f"        if {x}x or {x}k:\n"
        f"            if not {x}x and (p := {x}kw({tup}, {x}k)) is not None:\n"
        f"                return launch(*p)\n"
        f"            return {x}slow({tup}, {x}x, {x}k)\n"
        f"{defaults}"
        f"{guard_check}"
        f"        try:\n"
        f"            {x}enter()\n"
        f"        except IndexError:\n"
        f"            return {x}busy()\n"
        f"        try:\n"
        f"{converts}"
        f"            {x}pack({x}buf, 0, {', '.join(items)})\n"
        f"        except Exception:\n"
        f"            {Gen.LEAVE}(True)\n"
        f"            return {x}slow({tup}, (), {{}})\n"
        f"        except BaseException:\n"
        f"            {Gen.LEAVE}(True)\n"
        f"            raise\n"
        f"        try:\n"
        f"            {Gen.GATE}[0]({x}argv)\n"
        f"{check}"
        f"        finally:\n"
        f"            {Gen.LEAVE}(True)\n"
        f"        return {x}ret\n"
        f"    return launch\n"
    )


def fast_factory(
    slots: Sequence[SlotKind], converted: Sequence[bool], has_defaults: Sequence[bool], has_result: bool, fallbacks: Sequence[bool] = ()
) -> LaunchFactory:
    """Compile (once per slot shape) the factory of the pure-Python launch fast path.

    For ``(out: Pointer, alpha: Float16, n: Int32 = 64)`` with a result slot
    (Float16 has a converter, ``n`` a default), the generated source is::

        def factory(_cb_M, _cb_pack, _cb_buf, _cb_gate, _cb_argv, _cb_res, _cb_slow, _cb_fail, _cb_ret, _cb_enter, _cb_leave, _cb_busy, _cb_kw, _cb_V2, _cb_c1):
            def launch(a0=_cb_M, a1=_cb_M, a2=_cb_M, /, *_cb_x, **_cb_k):
                if _cb_x or _cb_k:
                    if not _cb_x and (p := _cb_kw((a0, a1, a2, ), _cb_k)) is not None:
                        return launch(*p)
                    return _cb_slow((a0, a1, a2, ), _cb_x, _cb_k)
                v2 = _cb_V2 if a2 is _cb_M else a2
                if not (a0.__class__ is int) or not (v2.__class__ is int):
                    return _cb_slow((a0, a1, a2, ), (), {})
                try:
                    _cb_enter()
                except IndexError:
                    return _cb_busy()
                try:
                    c1 = _cb_c1(a1)
                    _cb_pack(_cb_buf, 0, a0, c1, v2)
                except Exception:
                    _cb_leave(True)
                    return _cb_slow((a0, a1, a2, ), (), {})
                except BaseException:
                    _cb_leave(True)
                    raise
                try:
                    _cb_gate[0](_cb_argv)
                    if _cb_res[0]:
                        _cb_fail()
                finally:
                    _cb_leave(True)
                return _cb_ret
            return launch

    ``_cb_M`` is :data:`~cute_bind.launch.prepared.NOT_GIVEN`, ``_cb_pack`` the layout's
    ``struct.pack_into``, ``_cb_gate`` the handle's gate (``[entry point]``
    while open, ``[refusal]`` once closed or unloaded), ``_cb_enter``/``_cb_leave`` take and give back the
    handle's one launch token (``_cb_busy`` raises CB403 when it is taken), ``_cb_kw`` places keywords by name (:func:`~cute_bind.launch.prepared._place_keywords`), ``_cb_V2`` the pre-coerced default of slot 2,
    ``_cb_c1`` slot 1's converter. Anything the fast path does not take as is
    goes to ``_cb_slow``, which raises the catalog error. The closure names
    live in :class:`Gen` (``tests/launch/test_hostile.py`` checks this sample
    against the generator).
    """
    key = (
        tuple((s.fmt, s.guard("v"), s.packs_tuple, c, s.reads_address) for s, c in zip(slots, converted)),
        tuple(has_defaults),
        has_result,
        tuple(fallbacks),
    )
    factory = CODE_CACHE.get(key)
    if factory is not None:
        return factory
    src = fast_source(slots, converted, has_defaults, has_result, fallbacks)
    namespace: dict[str, object] = {}
    exec(compile_source(src, f"launch {len(slots)} slots"), namespace)  # noqa: S102 - generated from slot formats only
    factory = cast(LaunchFactory, namespace["factory"])  # the source defines it (fast_source)
    CODE_CACHE[key] = factory
    return factory


class _ReadByItsOwnCode(Exception):
    """A tensor or pointer value whose address only its own Python code gives (an array-interface
    exporter, a tensor subclass): the generated launch sends it to the slow path, which reads such
    values before the plain tensors and arrays (the arguments' lifetime rule); read in slot order
    here, its code could free another argument's memory after that argument's address was read."""


def plain_only(slot: SlotKind, convert: Callable[[object], object] | None) -> Callable[[object], object] | None:
    """``convert`` for the generated launch, taking only values read without running their own code
    where ``slot`` is a tensor or pointer slot (ints go through the pointer's guard before it)."""
    if convert is None or slot.kind not in ("tensor", "pointer"):
        return convert
    plain = read_without_code
    # what else holds its address without code of the value's own: ints (IntEnum members), ctypes
    # pointers, the DSL's make_ptr pointers (an address it was given, no memory of its own)
    held = tuple(t for t in (int, ctypes.c_void_p, ctypes._Pointer, dsl.runtime_pointer_type()) if isinstance(t, type))

    def convert_plain(value: object) -> object:
        if not plain(value) and not isinstance(value, held):
            raise _ReadByItsOwnCode
        return convert(value)

    return convert_plain
