"""Where a slot's value goes in the captured kernel nodes, found by probing.

A handle's storage is a list of *items* (a pointer, one scalar, a tensor's
address or one of its dynamic extents and strides). For each item the step is
captured again with the item alone changed to probe values; comparing the
nodes with those of a plain capture says what the value does:

- ``in place``: only parameter bytes changed, and every changed byte lies in
  a window holding the old value before and the probe value after, at the
  same offsets for every probe. Those windows are the item's locations.
- ``unused``: nothing changed.
- a *derived* effect, not updatable by rewriting parameters: ``transformed``
  (parameter bytes changed otherwise, CB801), ``tensor map`` (a 128-byte
  parameter changed otherwise: a TMA descriptor, CB801), ``grid``, ``block``,
  ``shared memory`` (the launch configuration changed, CB802) or ``launches``
  (other kernels or another number of nodes, or the capture failed, CB802).

Bytes that differ between two plain captures (uninitialised padding) are
ignored everywhere.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Sequence

from ..slots import SlotKind
from .driver import KernelParams, Node

__all__ = ["Item", "Location", "Effect", "items_of", "probe_values", "classify", "Capture", "LAUNCH_EFFECTS"]

#: Effects that change the launch itself (CB802); the others that are not in place are CB801.
LAUNCH_EFFECTS = ("launches", "grid", "block", "shared memory")
IN_PLACE = ("in place", "unused")


@dataclass(frozen=True, eq=False)
class Item:
    """One value in a handle's storage (compared and hashed by identity: each step has its own)."""

    slot: int  # index of the parameter
    parameter: str
    label: str  # "address", "extent[0]", "value", "[1]"...
    start: int  # byte range in the handle's storage
    end: int
    code: str  # struct code of the item
    role: str  # "address", "integer", "float", "bool", "stream"

    @property
    def name(self) -> str:
        return (
            self.parameter
            if self.label == "value"
            else f"{self.parameter}.{self.label}"
            if not self.label.startswith("[")
            else self.parameter + self.label
        )


@dataclass(frozen=True)
class Location:
    """Where an item's bytes go: kernel node ``node`` of the step (in order), parameter ``param``, byte ``offset``."""

    node: int
    param: int
    offset: int


@dataclass(frozen=True)
class Effect:
    """What changing one item does to the step's nodes."""

    how: str  # "in place", "unused", or a derived effect (see the module docstring)
    locations: tuple[Location, ...] = ()
    detail: str = ""

    @property
    def in_place(self) -> bool:
        return self.how in IN_PLACE


@dataclass(frozen=True)
class Capture:
    """The nodes one capture of a step produced (or why it failed)."""

    nodes: tuple[Node, ...]
    failed: str = ""

    @property
    def kernels(self) -> list[KernelParams]:
        return [n.kernel for n in self.nodes if n.kernel is not None]

    def shape(self) -> tuple[object, ...]:
        return tuple((n.kind, n.kernel.signature() if n.kernel is not None else None) for n in self.nodes)


_CODES = re.compile(r"(\d*)(\D)")


def _fmt_items(fmt: str) -> list[tuple[int, int, str]]:
    """(start, end, code) of each item of a native struct format (padding left out)."""
    out = []
    prefix = "@"
    for count, code in _CODES.findall(fmt.lstrip("@")):
        if code == "x" or count == "0":
            prefix += count + code
            continue
        for _ in range(int(count or 1)):
            start = struct.calcsize(prefix + "0" + code)
            prefix += code
            out.append((start, struct.calcsize(prefix), code))
    return out


def _leaf_kinds(slot: SlotKind) -> list[SlotKind]:
    elements = getattr(slot, "elements", None)
    if slot.kind == "sequence" and elements is not None:
        return list(elements)
    return [slot] * len(slot.parts)


def _tensor_labels(slot: SlotKind, n: int) -> list[str]:
    layout = getattr(slot, "layout", None)
    labels = ["address"]
    if layout is not None:
        labels += [f"extent[{i}]" for i, m in enumerate(layout.shape) if m.static is None]
        labels += [f"stride[{i}]" for i, m in enumerate(layout.stride) if m.static is None]
    while len(labels) < n:
        labels.append(f"item[{len(labels)}]")
    return labels[:n]


def items_of(names: Sequence[str], slots: Sequence[SlotKind], slot_parts: Sequence[Sequence[tuple[str, int]]]) -> list[Item]:
    """Every item of a handle's storage, in order."""
    out = []
    for j, (name, slot, parts) in enumerate(zip(names, slots, slot_parts)):
        leaves = _leaf_kinds(slot)
        for p, ((fmt, off), leaf) in enumerate(zip(parts, leaves)):
            items = _fmt_items(fmt)
            prefix = f"[{p}]" if slot.kind == "sequence" else ""
            labels = _tensor_labels(leaf, len(items)) if leaf.kind == "tensor" else ["value"] * len(items)
            for k, ((a, b, code), label) in enumerate(zip(items, labels)):
                if leaf.kind == "stream":
                    role = "stream"
                elif leaf.kind == "pointer" or (leaf.kind == "tensor" and k == 0):
                    role = "address"
                elif code == "?":
                    role = "bool"
                elif code in "fde" and not getattr(leaf, "is_half", False):
                    role = "float"
                else:
                    role = "integer"
                if prefix:
                    label = prefix if label == "value" else f"{prefix}.{label}"
                out.append(Item(j, name, label, off + a, off + b, code, role))
    return out


def probe_values(item: Item, current: bytes) -> list[bytes]:
    """Other values for ``item`` (one for a bool), as bytes, chosen so derived quantities change.

    Addresses keep their low 12 bits (alignment) and flip high bits; integers
    move by multiples of 4096 (keeping any divisibility the layout assumes)
    within the type's range, and flip their top bit (so a widened value shows);
    floats get unrelated finite values.
    """
    width = item.end - item.start
    if item.role == "bool":
        return [bytes([0 if current[0] else 1]) + current[1:]]
    if item.role == "float":
        (v,) = struct.unpack("@" + item.code, current)
        finite = math.isfinite(v) and abs(v) < 1e30
        out: list[bytes] = []
        # two values whose bytes differ from the current one and from each other (v * 2 + 1.5 is v itself at -1.5)
        for cand in ((v * 2.0 + 1.5, -v - 3.75) if finite else ()) + (1.25, -2.5, 7.0):
            packed = struct.pack("@" + item.code, cand)
            if packed != current and packed not in out:
                out.append(packed)
            if len(out) == 2:
                break
        return out
    unsigned = int.from_bytes(current, "little", signed=False)
    bits = 8 * width
    if item.role == "address":
        return [(unsigned ^ (1 << (bits - 24 if bits >= 48 else bits - 2))).to_bytes(width, "little"),
                (unsigned ^ (3 << (bits - 26 if bits >= 48 else bits - 3))).to_bytes(width, "little")]  # fmt: skip
    signed = item.code in "bhilqn"
    value = int.from_bytes(current, "little", signed=signed)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    out = []
    for delta in (3 << 12, 10 << 12) if bits >= 32 else (1 << 12, 2 << 12) if bits == 16 else (0x40, 0x20):
        cand = value + delta if value + delta <= hi else value - delta
        if not lo <= cand <= hi:
            cand = value ^ (delta & hi)
        out.append(cand.to_bytes(width, "little", signed=signed))
    # the top bit too: a value the host function widens (sign-extends) changes more bytes than its own
    out.append((unsigned ^ (1 << (bits - 1))).to_bytes(width, "little"))
    return out


def noise_mask(a: Capture, b: Capture) -> dict[tuple[int, int], set[int]]:
    """Byte positions that differ between two captures of the same values, per (kernel, param)."""
    mask: dict[tuple[int, int], set[int]] = {}
    for n, (ka, kb) in enumerate(zip(a.kernels, b.kernels)):
        for p, (x, y) in enumerate(zip(ka.params, kb.params)):
            diff = {i for i in range(min(len(x), len(y))) if x[i] != y[i]}
            if diff:
                mask[(n, p)] = diff
    return mask


def classify(base: Capture, probe: Capture, old: bytes, new: bytes, noise: dict[tuple[int, int], set[int]]) -> Effect:
    """What changing an item from ``old`` to ``new`` did, comparing the captures."""
    if probe.failed:
        return Effect("launches", detail=f"capturing with another value failed: {probe.failed}")
    if len(base.nodes) != len(probe.nodes) or any(x.kind != y.kind for x, y in zip(base.nodes, probe.nodes)):
        return Effect("launches", detail=f"{len(base.nodes)} nodes became {len(probe.nodes)}")
    locations: list[Location] = []
    transformed = ""
    for n, (kb, kp) in enumerate(zip(base.kernels, probe.kernels)):
        if kb.func != kp.func or len(kb.params) != len(kp.params) or [len(x) for x in kb.params] != [len(x) for x in kp.params]:
            return Effect("launches", detail=f"kernel node {n} launches another kernel")
        if kb.grid != kp.grid:
            return Effect("grid", detail=f"kernel node {n}: grid {kb.grid} became {kp.grid}")
        if kb.block != kp.block:
            return Effect("block", detail=f"kernel node {n}: block {kb.block} became {kp.block}")
        if kb.shared_mem != kp.shared_mem:
            return Effect("shared memory", detail=f"kernel node {n}: {kb.shared_mem} bytes became {kp.shared_mem}")
        for p, (x, y) in enumerate(zip(kb.params, kp.params)):
            ignore = noise.get((n, p), set())
            diff = {i for i in range(len(x)) if x[i] != y[i] and i not in ignore}
            if not diff:
                continue
            w = len(old)
            step = min(w, 8) if w in (1, 2, 4, 8) else 1
            windows = [o for o in range(0, len(x) - w + 1, step) if x[o : o + w] == old and y[o : o + w] == new]
            covered = {o + i for o in windows for i in range(w)}
            if diff <= covered:
                locations.extend(Location(n, p, o) for o in windows)
            elif not transformed:
                how = "tensor map" if len(x) == 128 else "transformed"
                transformed = how
                detail = f"kernel node {n}, parameter {p} ({len(x)} bytes) changed otherwise than by the value's own bytes"
    if transformed:
        return Effect(transformed, detail=detail)
    if not locations:
        return Effect("unused")
    return Effect("in place", tuple(sorted(set(locations), key=lambda loc: (loc.node, loc.param, loc.offset))))


def combine(effects: Sequence[Effect]) -> Effect:
    """One effect from those of each probe value: in place only if every probe agrees on the locations."""
    for e in effects:
        if not e.in_place:
            return e
    places = {e.locations for e in effects if e.how == "in place"}
    if not places:
        return Effect("unused")
    if len(places) > 1 or any(e.how == "unused" for e in effects):
        return Effect("transformed", detail="the value's bytes land in different places for different values")
    return effects[0] if effects[0].how == "in place" else next(e for e in effects if e.how == "in place")
