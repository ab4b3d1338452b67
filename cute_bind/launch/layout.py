"""A slot list's storage layout: one native struct, each slot's parts at the offsets C gives them."""

from __future__ import annotations

import struct
from typing import Any, Sequence

from ..slots import SlotKind

__all__ = ["Layout", "flatten"]


def _first_code(fmt: str) -> str:
    return fmt.lstrip("0123456789")[:1] or "x"


class Layout:
    """The storage layout of a slot list: one native struct, slots (and their parts) in order.

    Each part (one C argument the DSL marshals) starts at the offset native
    alignment gives it, exactly as if the whole list were one C struct.
    """

    def __init__(self, slots: Sequence[SlotKind]) -> None:
        fmt = "@" + "".join(s.fmt for s in slots)
        self.struct = struct.Struct(fmt)
        self.offsets: list[int] = []  # per slot: its first byte
        self.sizes: list[int] = []
        self.part_offsets: list[int] = []  # per part, all slots in order
        self.part_sizes: list[int] = []
        self.slot_parts: list[list[tuple[str, int]]] = []  # per slot: (part fmt, offset)
        prefix = "@"
        for s in slots:
            start = struct.calcsize(prefix)
            parts = []
            for part in s.parts:
                off = struct.calcsize(prefix + "0" + _first_code(part))
                prefix += part
                parts.append((part, off))
                self.part_offsets.append(off)
                self.part_sizes.append(struct.calcsize("@" + part))
            self.slot_parts.append(parts)
            first = parts[0][1] if parts else start
            self.offsets.append(first)
            self.sizes.append(struct.calcsize(prefix) - first)
        # round up so the block can be reused verbatim by clones
        self.size = max(8, (self.struct.size + 7) // 8 * 8)


def flatten(slots: Sequence[SlotKind], packed: Sequence[Any]) -> list[Any]:
    """The struct items of per-slot packed values (multi-item slots pack tuples)."""
    out: list[Any] = []
    for slot, value in zip(slots, packed):
        if not slot.packs_tuple:
            out.append(value)
        else:
            out.extend(value)
    return out
