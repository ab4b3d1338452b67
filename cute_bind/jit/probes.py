"""Probes: a cheap hint of a call's specialization, read from its values without building DSL objects.

A kernel's probe is the target architecture plus one part per key parameter (a pointer's type
and dtype, a tensor's dtype, device and unit-stride pattern, a Constexpr value exactly): the
dispatcher looks a specialization up by it before computing the full compile key. It is only a
hint: a specialization found by probe that refuses the values sends the call through the full key.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

from .. import dsl, settings
from ..cache.key import constexpr_key
from ..slots import Bound, PointerKind, ScalarKind, StreamKind, TensorKind
from ..slots import dlpack as _dlpack
from .streams import _CUDA_DEVICE_TYPES

__all__ = ["ARCH", "Probe", "Unprobeable", "describe", "device_of", "probes_for"]

#: one parameter's probe: its value -> a hashable part (raises for a value it cannot read)
Probe = Callable[[Any], Hashable]


class Unprobeable(Exception):
    """A value no probe reads: the full compile key decides."""


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


def constexpr_probe(value: Any) -> Hashable:
    hash(value)  # an unhashable value is unprobeable (the full path raises CB209 for it)
    # exact, as in the compile key: a -0.0 must not find 0.0's specialization, a NaN must find its own
    return (value.__class__, constexpr_key(value))


def pointer_probe(value: Any) -> Hashable:
    cls = value.__class__
    if cls is int:
        return int
    if dsl.is_runtime_pointer(value):
        _, dtype, space, align = dsl.runtime_pointer_fields(value)
        return (cls, dtype, int(getattr(space, "value", 0)), align)
    if callable(getattr(value, "data_ptr", None)) and hasattr(value, "dtype"):
        return (cls, str(value.dtype), bool(getattr(value, "is_cuda", False)))
    for attr in ("__cuda_array_interface__", "__array_interface__"):
        iface = getattr(value, attr, None)
        if isinstance(iface, dict):
            return (cls, attr, str(iface.get("typestr", "")))
    raise Unprobeable


def tensor_probe(layout: Any) -> Probe:
    def probe(value: Any) -> Hashable:
        if dsl.is_dsl_tensor(value) or isinstance(value, (bool, int, float, str, bytes)) or value is None:
            raise Unprobeable  # a from_dlpack tensor's own marking decides: the full path reads it
        try:
            view = _dlpack.read(value)
        except Exception:
            raise Unprobeable from None
        if layout == "static":
            return (value.__class__, view.dtype, view.device, view.shape, view.strides)
        # mark_layout_dynamic deduces the leading dimension from which modes have
        # unit stride and which extent exceeds 1; nothing else of the values shapes the layout
        units = tuple((s == 1, e > 1) for e, s in zip(view.shape, view.strides))
        return (value.__class__, view.dtype, view.device, units)

    return probe


def probes_for(params: Sequence[Any]) -> tuple[tuple[str, Probe], ...] | None:
    """Each key parameter's probe, by name (a signature's parameters: ``name``, ``slot``), or
    None where one has no probe (sequences, kinds from elsewhere): the full key decides every call."""
    probes: list[tuple[str, Probe]] = []
    for p in params:
        if p.slot is None:
            probes.append((p.name, constexpr_probe))
        elif isinstance(p.slot, (ScalarKind, StreamKind)):
            continue  # never part of the key
        elif isinstance(p.slot, PointerKind):
            probes.append((p.name, pointer_probe))
        elif isinstance(p.slot, TensorKind):
            probes.append((p.name, tensor_probe(p.slot.spec.layout)))
        else:
            return None
    return tuple(probes)


def device_of(bound: Bound) -> set[int]:
    """The CUDA device indices a bound slot's tensors are on (sequences: their elements)."""
    slot = bound.slot
    found: set[int] = set()
    stack: list[Any] = [slot]
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
