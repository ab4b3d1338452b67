"""Probes: a cheap hint of a call's specialization, read from its values without building DSL objects.

A kernel's probe is the target architecture plus one part per key parameter: a Constexpr value
exactly, and each slot's own part, as its kind reads it (:meth:`SlotKind.probe
<cute_bind.slots.SlotKind.probe>`: a pointer's type and element type, a tensor's element type,
device and unit-stride pattern; numbers and streams are never part of the key). The dispatcher
looks a specialization up by it before computing the full compile key. It is only a hint: a
specialization found by probe that refuses the values sends the call through the full key. A kind
without a probe (``unprobeable``) keys every call of its kernels in full.
"""

from __future__ import annotations

from typing import Callable, Hashable, Sequence

from .. import dsl, settings
from ..cache.key import constexpr_key
from ..slots import Bound, TensorKind
from ..slots import dlpack as _dlpack
from ..slots.base import Unprobeable, unprobeable
from .signature import Param
from .streams import _CUDA_DEVICE_TYPES

__all__ = ["ARCH", "Probe", "Unprobeable", "describe", "device_of", "probes_for"]

#: one parameter's probe: its value -> a hashable part (raises for a value it cannot read)
Probe = Callable[[object], Hashable]


class _Arch:
    """The target architecture for probes, without a failing driver call per dispatch on a machine with no GPU."""

    devices: int | None = None

    def now(self) -> str | None:
        env = settings.DSL_ARCH.text()
        if env:
            return env
        if self.devices is None:
            self.devices = dsl.cuda_device_count()  # once: a process without a device never gets one
        return dsl.target_arch() if self.devices else None


ARCH = _Arch()


def constexpr_probe(value: object) -> Hashable:
    hash(value)  # an unhashable value is unprobeable (the full path raises CB209 for it)
    # exact, as in the compile key: a -0.0 must not find 0.0's specialization, a NaN must find its own
    return (value.__class__, constexpr_key(value))


def probes_for(params: Sequence[Param]) -> tuple[tuple[str, Probe], ...] | None:
    """Each key parameter's probe, by name (a signature's parameters: ``name``, ``slot``, None for a
    Constexpr one), or None where a slot's kind has no probe: the full key decides every call."""
    probes: list[tuple[str, Probe]] = []
    for p in params:
        probe = constexpr_probe if p.slot is None else p.slot.probe()
        if probe is unprobeable:
            return None
        if probe is not None:
            probes.append((p.name, probe))
    return tuple(probes)


def device_of(bound: Bound) -> set[int]:
    """The CUDA device indices a bound slot's tensors are on (sequences: their elements)."""
    slot = bound.slot
    found: set[int] = set()
    stack: list[object] = [slot]
    while stack:
        s = stack.pop()
        device = getattr(s, "device", None) if isinstance(s, TensorKind) else None
        if device is not None and device[0] in _CUDA_DEVICE_TYPES:
            found.add(int(device[1]))
        stack.extend(getattr(s, "elements", None) or ())
    return found


def describe(bound: Bound) -> str:
    """A key parameter's description in a specialization's record (a tensor's device included)."""
    text = bound.slot.describe()
    device = getattr(bound.slot, "device", None)
    if isinstance(bound.slot, TensorKind) and device is not None:
        text += f" on {_dlpack.describe_device(device)}"
    return text
