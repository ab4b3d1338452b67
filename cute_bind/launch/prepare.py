"""``cute_bind.prepare``: a prepared launch of a function compiled elsewhere."""

from __future__ import annotations

from typing import Any

from .. import dsl
from .. import _whitelist as W
from .. import diagnostics as D
from ..slots import (
    Bound,
    OptionalKind,
    PointerKind,
    Rejected,
    SequenceKind,
    SlotKind,
    StructureKind,
    TensorKind,
    Where,
    classify,
    describe_value,
    infer_slot,
)
from .arguments import bind_arguments
from .prepared import PreparedLaunch, build
from .tvm_ffi import PreparedTvmFfiLaunch, prepare_tvm_ffi

__all__ = ["prepare"]


def prepare(compiled: object, /, *args: object, **kwargs: object) -> PreparedLaunch[Any] | PreparedTvmFfiLaunch:
    """Prepare a function compiled with ``cute.compile`` (or its ``.to(device)`` executor).

    Takes the same arguments as calling ``compiled``; eligibility comes from
    the compiled function's declared annotations and the values given. A
    function compiled with ``--enable-tvm-ffi``, or a bare ``tvm_ffi.Function``
    (such a function exported and loaded back with
    ``cute.runtime.load_module(path, enable_tvm_ffi=True)[name]``), gives a
    :class:`~cute_bind.launch.tvm_ffi.PreparedTvmFfiLaunch` (its entry checks
    the arguments itself). A result of ``cute_bind.compile`` loaded from the
    disk cache is prepared as the function it loaded.
    """
    inner = getattr(type(compiled), "__cute_bind_compiled__", None)
    known_types: list[str] | None = None
    if isinstance(inner, property):  # cute_bind.cache.CachedFunction: its loaded function
        # the argument types its compile's IR held, kept in the (checked) cache entry: a loaded function has no IR
        known_types = getattr(compiled, "argument_types", None)
        compiled = inner.__get__(compiled)
    if dsl.is_tvm_ffi_function(compiled) and not dsl.is_compiled(compiled):
        # a bare tvm_ffi.Function: the DSL's exported functions loaded back
        # (cute.runtime.load_module(path, enable_tvm_ffi=True)[name]); no name of its own
        return prepare_tvm_ffi(compiled, "tvm_ffi.Function", args, kwargs)
    if not dsl.is_compiled(compiled):
        raise D.error(
            D.NOT_COMPILED,
            expected="the result of cute.compile(...), compiled.to(device) or a TVM-FFI function loaded back (tvm_ffi.Function)",
            got=describe_value(compiled),
        )
    if dsl.is_tvm_ffi_compiled(compiled):
        # TVM-FFI entry points take a TVMFFIAny array, not the DSL's void** array: their own handle.
        return prepare_tvm_ffi(compiled, dsl.compiled_display_name(compiled), args, kwargs)
    rsig = dsl.runtime_signature(compiled)
    name = dsl.compiled_display_name(compiled)
    values = bind_arguments(name, rsig.names, frozenset(rsig.kwonly), rsig.defaults, args, kwargs, {})
    bounds: list[Bound] = []
    for pname, annotation in zip(rsig.names, rsig.annotations):
        value = values[pname]
        where = Where(name, pname)
        slot: SlotKind | None
        if annotation is None:
            slot = infer_slot(value)
            if slot is None:
                raise D.error(D.MISSING_ANNOTATION, kernel=name, parameter=pname, expected=W.ELIGIBLE_SUMMARY, got="no annotation")
        else:
            found = classify(annotation)
            if isinstance(found, Rejected):
                raise D.error(
                    found.diagnostic,
                    kernel=name,
                    parameter=pname,
                    expected=W.expected_for(found.diagnostic.code),
                    got=found.got,
                    detail=found.detail,
                )
            if not isinstance(found, SlotKind):  # pragma: no cover - constexprs are not runtime parameters
                continue
            slot = found
        bounds.append(_prepare_slot(slot, value, where))
    _check_tensor_descriptors(name, compiled, list(rsig.names), bounds, values, known_types)
    return build(
        kernel=name,
        compiled=compiled,
        names=list(rsig.names),
        bounds=bounds,
        defaults=dict(rsig.defaults),
    )


def _prepare_slot(slot: SlotKind, value: object, where: Where) -> Bound:
    """Bind one value; a pointer learns its dtype and alignment from the value (``prepare``)."""
    if isinstance(slot, PointerKind):
        return slot.prepare(value, where)
    if isinstance(slot, OptionalKind) and isinstance(slot.element, PointerKind):
        return slot.bind_with(value, where, slot.element.prepare)
    return slot.bind(value, where)


def _part_leaves(slot: SlotKind, value: Any) -> list[tuple[SlotKind, Any]]:
    """The element kind (and the value given) behind each C argument a bound slot marshals into, in order."""
    if isinstance(slot, SequenceKind):
        return list(zip(slot.elements or (), value))
    if isinstance(slot, OptionalKind):
        return [] if slot.inner is None else _part_leaves(slot.inner, value)
    if isinstance(slot, StructureKind):
        # a structure's fields in field order; its constant (None) fields marshal nothing
        return [leaf for fname, fslot, _ in slot.bound or () if fslot is not None for leaf in _part_leaves(fslot, getattr(value, fname))]
    return [(slot, value)] * len(slot.parts)


def _check_tensor_descriptors(
    name: str, compiled: object, names: list[str], bounds: list[Bound], values: dict[str, object], known_types: list[str] | None = None
) -> None:
    """A prepared tensor's descriptor must be the one the compiled function reads.

    ``prepare()`` learns a tensor slot's layout from the value it is given (a
    torch tensor is read as dynamic, as the DSL's direct call reads it); the
    compiled function may have been built for another marking. The compiled
    function's own argument types (its IR) say, for each tensor argument, how
    many dynamic extents and strides its descriptor holds and their widths;
    each bound tensor slot says what it writes (``TensorKind.descriptor_groups``).
    They must be equal, else CB306. Counts and widths do not say which modes
    are static (``(?,?):(?{i64},1)`` and ``(?,?):(1,?{i64})`` have the same
    argument type). A ``from_dlpack`` tensor, marked as when compiling, states
    it. A plain tensor (torch, NumPy) whose reading leaves it open
    (``TensorKind.groups_pin_layout``) is taken only as the direct call takes
    it: when prepare() reads it exactly as the direct call does (the DSL's
    tensor adapter, ``from_dlpack(t).mark_layout_dynamic()``:
    ``dsl.direct_call_tensor_layout``) and the compile itself was given a
    value the DSL reads that way (what the DSL recorded of the compile's
    arguments: not DSL values only, ``dsl.compiled_from_dsl_values``), as
    CUTLASS's elementwise_add compiles from and calls with plain torch
    tensors; a compile from marked tensors only keeps its marking unknown,
    so there a plain tensor is refused (CB306). Without IR (an executor from
    ``.to(device)``, a function loaded from a binary) nothing can be compared,
    so a function with tensor parameters is refused (CB307), never passed
    unchecked. Not in an argument type, and so taken from the value given:
    static extents and strides, divisibilities and the assumed alignment.
    """
    leaves = [
        (f"{pname}[{i}]" if isinstance(b.slot, SequenceKind) else pname, leaf, given)
        for pname, b in zip(names, bounds)
        for i, (leaf, given) in enumerate(_part_leaves(b.slot, values[pname]))
    ]
    tensors = [(k, label, leaf, given) for k, (label, leaf, given) in enumerate(leaves) if isinstance(leaf, TensorKind)]
    if not tensors:
        return
    types = known_types if known_types is not None else dsl.compiled_argument_types(compiled)
    if types is None:
        raise D.error(
            D.NO_ARGUMENT_TYPES,
            kernel=name,
            parameter=tensors[0][1],
            expected="a compiled function whose IR holds its argument types (cute.compile's result)",
            got=f"{type(compiled).__name__} {dsl.why_no_argument_types(compiled)}",
        )
    for k, label, leaf, given in tensors:
        ours = leaf.descriptor_groups()
        theirs = dsl.tensor_argument_groups(types[k]) if k < len(types) else None
        if ours != theirs:
            raise D.error(
                D.COMPILED_DESCRIPTOR_MISMATCH,
                kernel=name,
                parameter=label,
                expected=_describe_groups(theirs, types[k] if k < len(types) else "no argument"),
                got=f"{_describe_groups(ours, '')} (a tensor read as {leaf.describe()})",
            )
        if not dsl.is_dsl_tensor(given) and not leaf.groups_pin_layout() and not _read_as_the_direct_call_reads(compiled, leaf, given):
            # Equal groups, but which mode is static is not in an argument type: a plain
            # tensor's reading (its own leading dimension) is a guess prepare() cannot check.
            raise D.error(
                D.COMPILED_DESCRIPTOR_MISMATCH,
                kernel=name,
                parameter=label,
                expected=f"{_describe_groups(theirs, types[k])}, whose static mode's position is not in the "
                "argument type (e.g. the leading dimension)",
                got=f"a {type(given).__name__} read as {leaf.describe()}, which prepare() cannot check",
            )


def _read_as_the_direct_call_reads(compiled: object, leaf: TensorKind, given: object) -> bool:
    """Whether a plain tensor's prepared reading is the direct call's, for a function compiled
    from values the DSL reads the same way (see :func:`_check_tensor_descriptors`).

    Then a launch writes what the direct call writes for the same tensor,
    field for field; which leading dimension the compile saw is recorded
    nowhere in the compiled function (its argument types, C header arguments
    and execution arguments hold counts and widths only), so, exactly as for
    the direct call, the tensor must be laid out as at compile. Later launches
    keep this reading: a tensor with another leading dimension is refused
    (the direct call would read it differently from the compile).
    """
    if dsl.compiled_from_dsl_values(compiled) is not False:
        return False
    direct = dsl.direct_call_tensor_layout(compiled, given)
    return direct is not None and direct == leaf.layout


def _describe_groups(groups: tuple[tuple[int, ...], tuple[int, ...]] | None, raw: str) -> str:
    if groups is None:
        return f"a non-tensor argument ({raw})"
    shape, stride = groups
    return f"a descriptor with {len(shape)} dynamic extent(s) {list(shape)} and {len(stride)} dynamic stride(s) {list(stride)} (bits)"
