"""``cute_bind.prepare``: a prepared launch of a function compiled elsewhere."""

from __future__ import annotations

from typing import Any

from .. import _dsl
from .. import _whitelist as W
from .. import diagnostics as D
from ..slots import Bound, PointerKind, Rejected, SequenceKind, SlotKind, TensorKind, Where, classify, describe_value, infer_slot
from .arguments import bind_arguments
from .prepared import PreparedLaunch, build

__all__ = ["prepare"]


def prepare(compiled: Any, /, *args: Any, **kwargs: Any) -> PreparedLaunch[Any]:
    """Prepare a function compiled with ``cute.compile`` (or its ``.to(device)`` executor).

    Takes the same arguments as calling ``compiled``; eligibility comes from
    the compiled function's declared annotations and the values given.
    """
    if not _dsl.is_compiled(compiled):
        raise D.error(D.NOT_COMPILED, expected="the result of cute.compile(...) or compiled.to(device)", got=describe_value(compiled))
    if _dsl.is_tvm_ffi_compiled(compiled):
        # TVM-FFI entry points take TVM-FFI packed arguments, not the DSL's void** array.
        raise D.error(
            D.NOT_COMPILED,
            expected="a function compiled without --enable-tvm-ffi",
            got=f"{type(compiled).__name__} (a TVM-FFI compiled function)",
        )
    rsig = _dsl.runtime_signature(compiled)
    name = _dsl.function_name(compiled)
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
                raise D.error(found.diagnostic, kernel=name, parameter=pname, expected=W.expected_for(found.diagnostic.code), got=found.got, detail=found.detail)
            if not isinstance(found, SlotKind):  # pragma: no cover - constexprs are not runtime parameters
                continue
            slot = found
        bounds.append(slot.prepare(value, where) if isinstance(slot, PointerKind) else slot.bind(value, where))
    _check_tensor_descriptors(name, compiled, list(rsig.names), bounds)
    return build(
        kernel=name,
        compiled=compiled,
        names=list(rsig.names),
        bounds=bounds,
        defaults=dict(rsig.defaults),
    )


def _check_tensor_descriptors(name: str, compiled: Any, names: list[str], bounds: list[Bound]) -> None:
    """A prepared tensor's layout must be the one compiled in.

    ``prepare()`` learns a tensor slot's layout from the value it is given (a
    torch tensor is read as dynamic, as the DSL's direct call reads it); the
    compiled function may have been built for another marking (e.g. a static
    layout, another leading dimension, a divisibility). The entry's symbol
    spells each tensor's layout and its argument types give each descriptor's
    fields; a tensor whose layout is not the compiled one is refused (the
    direct call would get it silently wrong). The assumed alignment is in
    neither: a ``from_dlpack`` tensor must carry the compile's ``assumed_align``.
    """
    types = _dsl.entry_argument_types(compiled)
    symbol = _dsl.mangled_name(compiled)
    at = 0  # tensor symbols appear in the entry's symbol in parameter order
    k = 0
    for pname, b in zip(names, bounds):
        leaves = list(b.slot.elements or ()) if isinstance(b.slot, SequenceKind) else [b.slot]
        for i, leaf in enumerate(leaves):
            for part in leaf.parts:
                if isinstance(leaf, TensorKind) and leaf.layout is not None:
                    label = pname if not isinstance(b.slot, SequenceKind) else f"{pname}[{i}]"
                    ours = ["ptr"] + [{"i": "i32", "q": "i64"}[c] for c in part[1:] if c in "iq"]
                    theirs = _dsl.descriptor_fields(types[k]) if types is not None and k < len(types) else ours
                    spelled = _dsl.tensor_symbol(leaf.layout)
                    found = symbol.find(spelled, at)
                    if ours != theirs or found < 0:
                        raise D.error(
                            D.TENSOR_LAYOUT_MISMATCH,
                            kernel=name,
                            parameter=label,
                            detail="prepare(): the compiled function takes another tensor layout; pass the from_dlpack tensor "
                            "marked as when compiling",
                            expected=f"the layout compiled into {symbol}",
                            got=f"a tensor read as {leaf.layout.text}",
                        )
                    at = found + len(spelled)
                k += 1

