"""What a kernel parameter is, in words: the language server's hover, from the static rules.

For each parameter of a ``@cute_bind.kernel`` function the rules
(:meth:`cute_bind.static.rules.ModuleAnalysis.slot`) give the slot kind the
decorator would make of its annotation, or the code that rejects it. This
module turns that into three facts: the kind, what ``launch()`` (and a call
``kernel(...)``) accepts there, and whether the parameter is part of the
compile key (a new value compiles a new variant) or only written into the
prepared launch's storage. The texts follow docs/concepts/eligibility.md;
scalar ranges and storage come from :mod:`cute_bind._whitelist`. Nothing
here imports the runtime.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .. import _whitelist as W
from ..diagnostics import CATALOG
from .rules import SlotReading

__all__ = ["ParameterFacts", "describe_parameter", "describe_kernel", "KIND_FACTS"]

#: kind -> (what launch() accepts, compile-key part or None when the value is not in the key)
KIND_FACTS: dict[str, tuple[str, str | None]] = {
    "pointer": (
        "an `int` address, a `make_ptr` pointer, a torch tensor (its `data_ptr()`), a CuPy/NumPy array, a ctypes pointer, "
        "a `memoryview` or other buffer, a `__dlpack__` object",
        "its dtype, alignment and address space (from the annotation, or from the value given to `bind()` for a bare "
        "`cute.Pointer`); the address itself is written at each launch",
    ),
    "tensor": (
        "a new tensor at each launch: a torch tensor, any `__dlpack__` object (NumPy array...), a `from_dlpack` tensor, "
        "checked against the compiled layout",
        "its dtype, rank, layout (which modes have unit stride, static extents), alignment and device; data and "
        "dynamic extents are written at each launch",
    ),
    "scalar": ("a number of the slot's type", None),
    "stream": ("an `int` handle, `cuda.CUstream`, `torch.cuda.Stream`, an object with `__cuda_stream__`", None),
    "sequence": (
        "a tuple or list of the length fixed at `bind()`, each element as its kind",
        "its length and each element's own key part",
    ),
    "optional": (
        "`None` or a value of one member, as bound (which one is fixed at `bind()`)",
        "which member the bound value is (`None` is compiled in as a constant)",
    ),
    "structure": (
        "an instance of the NamedTuple/dataclass; each field takes what its kind takes",
        "the class, which fields hold `None`, the `Constexpr` fields' values and each field's own key part",
    ),
    "constexpr": (
        "not a launch slot: its value is given to `bind()` (or to each `kernel(...)` call), hashable",
        "its value (a new value compiles a new variant)",
    ),
}

_INT_RANGE = "an `int` in [{lo}, {hi}] (numpy integers too; out of range is CB205, never wrapped)"


@dataclass(frozen=True)
class ParameterFacts:
    """The hover facts of one parameter."""

    name: str
    kind: str  # a slot kind, or the catalog code rejecting it
    annotation: str | None
    accepts: str
    key: str | None  # the compile-key part, None when not in the key

    def markdown(self) -> str:
        """The hover text (Markdown)."""
        if self.kind.startswith("CB"):
            entry = CATALOG[self.kind]
            return (
                f"**{self.name}**: not eligible, [{self.kind}] {entry.summary}\n\n"
                f"annotation: `{self.annotation or 'none'}`\n\nfix: {' '.join(entry.fix.split())}"
            )
        key = f"yes: {self.key}" if self.key else "no: written into the prepared launch at each launch"
        return (
            f"**{self.name}**: {self.kind} slot" + (f" (`{self.annotation}`)" if self.annotation else "") + "\n\n"
            f"- `launch()` accepts: {self.accepts}\n- part of the compile key: {key}"
        )


def _scalar_accepts(qualname: str | None) -> str:
    name = (qualname or "").rpartition(".")[2]
    name = W.PYTHON_SCALARS.get(name, name) if (qualname or "").startswith("builtins.") else name
    fmt = W.SCALAR_FORMATS.get(name)
    if fmt is None:
        return "a number of the slot's type"
    if name in W.HALF_SCALARS:
        return f"a real number, stored as its {name} 16-bit pattern"
    if fmt == "?":
        return "`True`/`False` (or `0`/`1`)"
    if fmt in "fd":
        return f"a real number (`float` or `int`), stored as {name}"
    bits = struct.calcsize(fmt) * 8
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if fmt.islower() else (0, 2**bits - 1)
    return _INT_RANGE.format(lo=lo, hi=hi) + f", stored as {name}"


def describe_parameter(name: str, reading: SlotReading) -> ParameterFacts:
    """The facts of parameter ``name`` read as ``reading``."""
    if reading.kind.startswith("CB"):
        return ParameterFacts(name, reading.kind, reading.annotation, "nothing: the decorator rejects it", None)
    accepts, key = KIND_FACTS[reading.kind]
    if reading.kind == "scalar":
        accepts = _scalar_accepts(reading.qualname)
    if reading.kind == "stream":
        accepts += "; with a default of `None` it may be left out (torch's current stream)"
    return ParameterFacts(name, reading.kind, reading.annotation, accepts, key)


def describe_kernel(kernel: str, facts: list[ParameterFacts]) -> str:
    """The hover text of a kernel: each parameter's kind, and which make the compile key."""
    rejected = [f for f in facts if f.kind.startswith("CB")]
    keyed = [f.name for f in facts if f.key and not f.kind.startswith("CB")]
    lines = [f"**cute_bind kernel `{kernel}`**", ""]
    for f in facts:
        where = " (compile key)" if f.key and not f.kind.startswith("CB") else ""
        lines.append(f"- `{f.name}`: {f.kind}{where}" + (f" `{f.annotation}`" if f.annotation else ""))
    lines.append("")
    lines.append("compile key: " + (", ".join(f"`{n}`" for n in keyed) if keyed else "no parameter (one compile per target and options)"))
    if rejected:
        lines.append(f"not eligible: {', '.join(f'`{f.name}` ({f.kind})' for f in rejected)}")
    return "\n".join(lines)
