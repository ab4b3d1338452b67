"""Specializations as guards: a compile made from the client's fake arguments serves real calls.

A porting user compiles a kernel the way its package does, from fake tensors
that say what the compiled code may assume (``kernel.compile(*fakes)``: a
static ``N``, a 16-byte alignment, the gmem address space, a stride order), then
calls it with real tensors. The real tensors' own compile key differs (their
layout is dynamic by default), and compiling for them loses what the fakes
said: the client's own code then fails inside the DSL (``const_expr(N == ...)``
on a runtime value, an alignment below what a copy needs).

So every ``compile()`` is recorded (:class:`Record`: the compiled function, the
arguments it was compiled from, the streams it compiled as the TVM-FFI
environment stream), and a call whose own key is not compiled is first offered
to those records, newest first (:func:`serve`): a record serves it when the
call's compile-time values are the record's and the compiled function takes
the call's runtime values, as :func:`cute_bind.prepare` checks them against the
compiled function's own argument types (element type, rank, static extents and
strides, alignment, device). Where only the form of a stream differs (compiled
with the environment stream, called with an explicit one, or the reverse), the
sibling is compiled from the record's own arguments with the other stream form,
never from the real tensors. A call no record serves compiles what it asked
for; where that compile fails, the error (CB315) names each record and the
guard that refused the call, chained to the compile's own error.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import diagnostics as D
from .. import dsl
from ..diagnostics import CuteBindError
from ..dsl import Mode
from ..slots import Bound, OptionalKind, SlotKind, TensorKind, Where, describe_value, infer_slot, is_namedtuple
from ..slots import dlpack as _dlpack

if TYPE_CHECKING:
    from ..dsl import Compiled
    from .keys import CompileKey, ConstexprPart, Handle

__all__ = ["Record", "Records", "Refusal", "Served", "composite_guard", "holds_fake", "real_tensor_guard", "tensor_guard"]

#: DLPack ``uint8`` and the DLPack codes of the 8-bit floats (Float8E4M3, ...B11FNUZ, ...FN, E5M2, E8M0FNU)
_UINT8 = (1, 8, 1)
_FLOAT8_CODES = frozenset({8, 9, 10, 12, 14})


class Record(NamedTuple):
    """One ``compile()``: what it was compiled from and what it gave."""

    #: the compile's arguments as given (the client's fakes), by parameter name
    values: dict[str, object]
    #: its compile key: Constexpr values, environment streams...
    key: CompileKey
    #: the compiled function
    compiled: Compiled


class Refusal(NamedTuple):
    """Why one record did not serve a call: the guard (a parameter and what it assumed) and the check's error."""

    record: Record
    parameter: str | None
    error: str


class Served(NamedTuple):
    """A record that serves a call: the compiled function, a handle for the call's values, the record."""

    compiled: Compiled
    handle: Handle
    record: Record


class Records:
    """A kernel's recorded compiles, newest first when offered a call (thread-safe)."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self._items: list[Record] = []
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, values: dict[str, object], key: CompileKey, compiled: Compiled) -> None:
        """Record one ``compile()`` (one of a compiled function already recorded replaces it, as the newest)."""
        record = Record(dict(values), key, compiled)
        with self._lock:
            self._items = [r for r in self._items if r.compiled is not compiled]
            self._items.append(record)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def newest_first(self) -> list[Record]:
        with self._lock:
            return list(reversed(self._items))

    def serve(
        self,
        constexpr: Sequence[ConstexprPart],
        left_out: frozenset[str],
        check: Callable[[Record], list[Bound]],
        handle_for: Callable[[Record, Compiled, list[Bound]], Handle],
        compile_sibling: Callable[[Record, frozenset[str]], Compiled],
    ) -> tuple[Served | None, list[Refusal]]:
        """The newest record that serves a call (``constexpr``: its compile key's Constexpr parts;
        ``left_out``: its streams left out), with a handle for it, and why each record tried before
        it did not.

        ``check(record)`` checks the call's values against what the record's compile assumed (a
        catalog error: refused) and gives what ``handle_for(record, compiled, checked)`` makes the
        handle from; ``compile_sibling(record, env_streams)`` compiles the record's own arguments
        with those streams as the environment stream, every other one explicit (only once the
        values passed the record's guards)."""
        refusals: list[Refusal] = []
        wanted = tuple(constexpr)
        for record in self.newest_first():
            held = tuple(record.key.constexpr)
            if held != wanted:
                name = next((a[0] for a, b in zip(held, wanted) if a != b), None)
                refusals.append(Refusal(record, name, "compiled for another compile-time value"))
                continue
            compiled = record.compiled
            try:
                checked = check(record)
                if record.key.env_streams != left_out:
                    compiled = compile_sibling(record, left_out)
                return Served(compiled, handle_for(record, compiled, checked), record), refusals
            except CuteBindError as exc:
                refusals.append(Refusal(record, exc.parameter or None, _one_line(exc)))
        return None, refusals

    def refused(self, refusals: list[Refusal], cause: CuteBindError) -> CuteBindError:
        """CB315: the call's own compile failed (``cause``) where recorded compiles exist; names each
        record's refusing guard."""
        lines = []
        for r in refusals[:4]:
            where = f"parameter '{r.parameter}'" if r.parameter else "the call"
            lines.append(f"compile() from {_describe_record(r.record)}: {where}: {r.error}")
        if len(refusals) > 4:
            lines.append(f"... and {len(refusals) - 4} more")
        return D.error(
            D.GUARDS_REFUSED_CALL,
            kernel=self.kernel,
            expected="a call that a compile() of this kernel takes, or one whose own compile succeeds",
            got=f"{cause.code} from compiling for the call's own values",
            detail="; ".join(lines) or "no compile() of this kernel",
        )


def _one_line(exc: CuteBindError) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text


def _describe_record(record: Record) -> str:
    parts = []
    for name, value in record.values.items():
        if dsl.is_fake_tensor(value):
            facts = dsl.fake_tensor_facts(value)
            parts.append(f"{name}=fake {facts[0]} tensor of shape {_shape(value)}")
        elif dsl.is_fake_stream(value):
            env = name in record.key.env_streams
            parts.append(f"{name}={'the environment stream' if env else 'a fake stream'}")
    return "(" + ", ".join(parts) + ")" if parts else "(its arguments)"


def _shape(value: Any) -> str:
    try:
        return "(" + ", ".join("?" if not isinstance(m, int) else str(m) for m in tuple(value.shape)) + ")"
    except Exception:  # noqa: BLE001 - a description only
        return "(?)"


def _layout_mismatch(where: Where, detail: str, expected: str, got: str) -> CuteBindError:
    """CB213 for the parameter at ``where``: a guard of a compile from fakes refused its value."""
    return D.error(D.TENSOR_LAYOUT_MISMATCH, kernel=where.kernel, parameter=where.parameter, detail=detail, expected=expected, got=got)


def tensor_guard(
    slot: SlotKind | None, fake: object, value: object, where: Where, symbols: dict[int, tuple[str, int, int]], on_gpu: bool = False
) -> Bound:
    """``value`` checked against what the fake tensor ``fake`` let the compiled code assume, and bound
    for it: element type, rank, every static extent and stride, each dynamic one's divisibility, the
    assumed alignment, one value for the modes sharing a SymInt (``symbols``: what the call's
    earlier tensors gave each SymInt) and, with ``on_gpu`` (a TVM-FFI entry, which checks the
    device a fake's gmem memory space implies), a CUDA tensor. A catalog error names the guard.
    An ``Optional[cute.Tensor]`` parameter (quack's norm weights) takes a tensor guarded so."""
    if isinstance(slot, OptionalKind):
        return slot.present_bound(tensor_guard(_tensor_member(slot, value, where), fake, value, where, symbols, on_gpu))
    if not isinstance(slot, TensorKind):
        raise _layout_mismatch(
            where,
            detail="compiled from a fake tensor",
            expected="a cute.Tensor parameter",
            got=_describe_slot(slot),
        )
    read = dsl.fake_tensor_layout(fake)
    if read is None:
        raise _layout_mismatch(
            where,
            detail="compiled from a fake tensor with a nested layout",
            expected="a flat fake layout",
            got="a mode of modes",
        )
    layout, syms = read
    view = slot._read(value, where)
    if on_gpu and dsl.fake_tensor_on_gpu(fake) and view.device[0] not in (2, 13):
        raise D.error(
            D.TENSOR_DEVICE_MISMATCH,
            kernel=where.kernel,
            parameter=where.parameter,
            expected="a CUDA device (the compile's fake tensor is in gmem)",
            got=_dlpack.describe_device(view.device),
        )
    elem = max(1, int(getattr(layout.dtype, "width", 8)) // 8)
    align = layout.assumed_align or elem
    # the compile's element type: pack_view checks it, the rank and every static extent, stride,
    # divisibility and the alignment, with the tensor slot's own codes (CB211, CB212, CB213, CB207)
    dtype = _dlpack.dtype_code(layout.dtype.__name__) or view.dtype
    if view.dtype == _UINT8 and dtype[0] in _FLOAT8_CODES and dtype[1] == 8:
        # FP8 data as a uint8 view (the bytes the fake's 8-bit float describes; clients pass such
        # views where torch or DLPack lacks the float8 kind): the compiled code reads the bytes as the fake says
        dtype = view.dtype
    kind = TensorKind(slot.spec, layout=layout, dtype=dtype, device=view.device, align=align, value_type=type(value))
    packed = kind.pack_view(view, where)
    for k, sym in enumerate(syms):
        if sym is None:
            continue
        first = symbols.setdefault(id(sym), (where.parameter, k, view.shape[k]))
        if first[2] != view.shape[k]:
            raise _layout_mismatch(
                where,
                detail=f"extent of mode {k}, one value with '{first[0]}' mode {first[1]} in the compile (one SymInt)",
                expected=str(first[2]),
                got=str(view.shape[k]),
            )
    return _laid_out(kind, layout, view, packed)


def real_tensor_guard(slot: TensorKind | OptionalKind, given: object, value: object, where: Where) -> Bound:
    """``value`` checked against what a real tensor given to ``compile()`` (``from_dlpack(a)``, as
    the CUTLASS examples compile) let the compiled code assume, and bound for it: the layout the
    compile read from it (element type, rank, its static extents and strides, each dynamic one's
    divisibility, the alignment) on the same kind of device. The compile's key spells that tensor's
    own extents; a call of another tensor with the same facts is taken by them, not by its key."""
    if isinstance(slot, OptionalKind):
        return slot.present_bound(real_tensor_guard(_tensor_member(slot, value, where), given, value, where))
    try:
        with dsl.compile_only():  # as compile() bound it (a from_dlpack of a meta or fake tensor too)
            compiled = slot.bind(given, where).slot  # the compile's own reading of the tensor it was given
    except CuteBindError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever reading it again raises: this compile serves no call
        raise _layout_mismatch(
            where, detail="compiled from a tensor", expected="a tensor the compile's layout can be read from", got=type(exc).__name__
        ) from exc
    if not isinstance(compiled, TensorKind) or compiled.layout is None:  # pragma: no cover - a tensor binds to a tensor slot
        raise _layout_mismatch(where, detail="compiled from a tensor", expected="a tensor layout", got=_describe_slot(compiled))
    view = slot._read(value, where)
    kind = TensorKind(
        slot.spec, layout=compiled.layout, dtype=compiled.dtype, device=compiled.device, align=compiled.align, value_type=type(value)
    )
    return _laid_out(kind, compiled.layout, view, kind.pack_view(view, where))


def _tensor_member(slot: OptionalKind, value: object, where: Where) -> TensorKind:
    """The tensor member of an optional or union slot that the call's ``value`` is guarded as: a
    compile from a tensor assumed one here (a call's ``None`` or another member's value is refused)."""
    member = slot.tensor_member(value) if value is not None else None
    if not isinstance(member, TensorKind):
        raise _layout_mismatch(
            where,
            detail=f"compiled from a tensor for {slot.describe()}",
            expected="a tensor (the compiled code reads one here)",
            got=describe_value(value),
        )
    return member


def _describe_slot(slot: SlotKind | None) -> str:
    return slot.describe() if slot is not None else "an unannotated parameter"


def _laid_out(kind: TensorKind, layout: Any, view: Any, packed: tuple[int, ...]) -> Bound:
    """The bound value of a guarded tensor: ``kind``'s packed descriptor, and as the DSL value the
    handle's one marshalling reads, ``layout`` holding that descriptor."""

    def spelled(modes: tuple[Mode, ...]) -> tuple[int | tuple[int, int], ...]:
        return tuple(m.static if m.static is not None else (m.width, m.divisibility) for m in modes)

    gpu = view.device[0] in (2, 13)  # DLPack kDLCUDA, kDLCUDAManaged
    dsl_value = dsl.laid_out_tensor(
        layout.dtype, spelled(layout.shape), spelled(layout.stride), gpu, kind.align, struct.pack("@" + kind.fmt, *packed)
    )
    return Bound(packed=packed, dsl_value=dsl_value, key=None, slot=kind)


def shared_symbol(values: dict[str, object]) -> str | None:
    """The first parameter one of whose fake tensor's extents shares its SymInt with another mode
    (of that tensor or an earlier one), or ``None``."""
    seen: set[int] = set()
    for name, value in values.items():
        if not dsl.is_fake_tensor(value):
            continue
        read = dsl.fake_tensor_layout(value)
        for sym in read[1] if read is not None else ():
            if sym is None:
                continue
            if id(sym) in seen:
                return name
            seen.add(id(sym))
    return None


def _fields(value: Any) -> list[tuple[str, Any]] | None:
    """A NamedTuple's, dataclass's, tuple's or list's items with their names, else ``None``."""
    cls = value.__class__
    if is_namedtuple(cls):
        return list(zip(cls._fields, value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    if cls is tuple or cls is list:
        return [(str(i), v) for i, v in enumerate(value)]
    return None


def holds_fake(value: object) -> bool:
    """Whether a structure or sequence holds a fake tensor (at any depth)."""
    items = _fields(value)
    return items is not None and any(dsl.is_fake_tensor(v) or holds_fake(v) for _, v in items)


def composite_guard(fake: object, value: Any, where: Where, symbols: dict[int, tuple[str, int, int]]) -> None:
    """``value`` checked against a structure or sequence compiled from fakes (quack's ``EpilogueArguments``
    holding fake tensors), for a TVM-FFI entry: the same class and arity, ``None`` where the compile had
    ``None`` (a constant of the compiled code) and nowhere else, the same Python constants (enums,
    booleans: Constexpr fields), and every fake tensor's guards (:func:`tensor_guard`) on the tensor in
    its place. A catalog error names the field."""
    if dsl.is_fake_tensor(fake):
        slot = infer_slot(value) if value is not None else None
        tensor_guard(slot if isinstance(slot, TensorKind) else None, fake, value, where, symbols, on_gpu=True)
        return
    if fake is None or value is None:
        if fake is not value:
            raise _layout_mismatch(
                where,
                detail="the compile had None here (a constant of the compiled code)" if fake is None else "compiled for a value here",
                expected="None" if fake is None else "a value, as the compile had",
                got="None" if value is None else type(value).__name__,
            )
        return
    mine = _fields(fake)
    if mine is None:
        if isinstance(fake, (bool, enum.Enum)) and not (value.__class__ is fake.__class__ and value == fake):
            raise D.error(
                D.STRUCTURE_CONSTANT_CHANGED,
                kernel=where.kernel,
                parameter=where.parameter,
                expected=f"{fake!r}, the constant it was compiled with",
                got=repr(value) if isinstance(value, (bool, enum.Enum)) else type(value).__name__,
            )
        return  # a number: a runtime value the entry converts and checks
    theirs: list[tuple[str, Any]] | None
    if value.__class__ is tuple and fake.__class__ is not tuple and len(value) == len(mine):
        theirs = [(n, v) for (n, _), v in zip(mine, value)]  # a plain tuple for a NamedTuple, in field order
    else:
        theirs = _fields(value) if value.__class__ is fake.__class__ else None
    if theirs is None or len(theirs) != len(mine):
        raise _layout_mismatch(
            where,
            detail="compiled from a structure of fakes",
            expected=f"a {type(fake).__name__} of {len(mine)} item(s), as the compile had",
            got=f"a {type(value).__name__}" + (f" of {len(theirs)} item(s)" if theirs is not None else ""),
        )
    indexed = fake.__class__ in (tuple, list)
    for (name, f), (_, v) in zip(mine, theirs):
        field = f"{where.parameter}[{name}]" if indexed else f"{where.parameter}.{name}"
        composite_guard(f, v, Where(where.kernel, field), symbols)
