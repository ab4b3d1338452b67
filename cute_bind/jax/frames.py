"""Frames: a kernel's prepared launch, copied into the XLA FFI handler when a JAX call is lowered.

At lowering, XLA's buffers do not exist yet, but everything else a launch
writes is known: the arrays' shapes and dtypes (static in a JAX program), the
static values, the platform. :func:`frame_for` binds the kernel with
stand-ins of exactly those facts (:class:`Placeholder`: a DLPack tensor at a
distinctive, highly aligned address that is never dereferenced; a pointer
parameter gets the address as an int; the stream a distinctive int), which
compiles the specialization the usual way (cute_bind's compiler: in-process
table, disk cache, compile), and reads the handle's storage, argv layout and
entry point. Each stand-in's address is then searched where its slot's bytes
are (the descriptor's data address, the pointer, the stream): a patch is only
made where the handle holds exactly that value, so the frame never writes a
byte the handle's layout does not say is that address.

The handle is kept for the life of the process (a lowered program may run as
long), holding its compiled module loaded; frames are cached per op by the
lowering's facts, so re-lowering (another jit of the same shapes, a 100-call
chain of one kernel) makes none.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Final

from ..jit import Kernel
from ..launch import PreparedLaunch
from ..slots import PointerKind, TensorKind
from ..slots.dlpack import DLTensor, dtype_code
from ..slots.dlpack import capsule_new as _capsule_new  # our own: another library may set PyCapsule_New's argtypes
from .plan import JAX_DTYPES, JaxPlan, jax_missing, unsupported

__all__ = ["Frame", "Placeholder", "frame_for", "load_handler", "handler_module"]

#: where stand-in addresses start (1 MiB aligned, far from any real allocation's low pages) and their spacing
_BASE: Final = 0x7C0000000000
_STEP: Final = 1 << 32
_STREAM: Final = 0x5EED0000C0DE
#: DLPack device types
_CPU, _CUDA = 1, 2


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class Placeholder:
    """A DLPack tensor with an address, a shape and a dtype and no memory: what bind() reads at lowering.

    Its ``__dlpack__`` exports a capsule (no deleter: the placeholder owns the
    structures, kept alive with it) describing a compact row-major tensor, as
    XLA's buffers are (jax.ffi's default layout).
    """

    def __init__(self, address: int, shape: tuple[int, ...], dtype: tuple[int, int, int], device: tuple[int, int]) -> None:
        self.address = address
        self.shape = shape
        self.dtype = dtype
        self.device = device
        strides: list[int] = []
        acc = 1
        for extent in reversed(shape):
            strides.append(acc)
            acc *= max(extent, 1)
        self.strides = tuple(reversed(strides))
        self._shape = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        self._strides = (ctypes.c_int64 * max(1, len(shape)))(*self.strides)
        self._exports: list[_DLManaged] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, stream: object = None, **kwargs: object) -> object:  # a PyCapsule
        m = _DLManaged()
        t = m.dl_tensor
        t.data = self.address
        t.device_type, t.device_id = self.device
        t.ndim = len(self.shape)
        t.code, t.bits, t.lanes = self.dtype
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        t.byte_offset = 0
        self._exports.append(m)
        return _capsule_new(ctypes.addressof(m), b"dltensor", None)

    def __repr__(self) -> str:
        return f"<cute_bind.jax placeholder {self.shape} dtype={self.dtype} at {self.address:#x}>"


@dataclass(frozen=True)
class Frame:
    """A registered frame: its id (the custom call's attribute) and the handle it copies."""

    id: int
    handle: PreparedLaunch[...]
    kernel: str

    def launches(self) -> int:
        """How many executions of this frame called the kernel's entry point (read from C)."""
        return int(handler_module().launches(self.id))


_MODULE: list[ModuleType] = []
_LOCK = threading.Lock()
#: every frame's handle, kept for the process's life (a lowered program may run it until then)
_KEPT: list[Frame] = []


def handler_module() -> ModuleType:
    """``cute_bind.jax._cxla``, or CB901 where it was not built."""
    if _MODULE:
        return _MODULE[0]
    try:
        from . import _cxla
    except ImportError as exc:
        raise jax_missing("its XLA FFI handler, cute_bind.jax._cxla (built where jaxlib's FFI headers are found)", exc) from exc
    _MODULE.append(_cxla)
    return _cxla


def load_handler() -> ModuleType:
    """The handler module (see :func:`handler_module`)."""
    return handler_module()


def _dtype_of(name: str) -> tuple[int, int, int]:
    cute = JAX_DTYPES[name]
    code = dtype_code(cute)
    if code is None:  # every JAX_DTYPES entry has one; a bug here, said as such
        raise ValueError(f"cute_bind.jax: no DLPack code for {cute}")
    return code


def frame_for(
    kernel: Kernel[...],
    plan: JaxPlan,
    statics: dict[str, object],
    arrays: dict[str, tuple[tuple[int, ...], str]],
    sources: dict[str, tuple[int, int]],
    counts: tuple[int, int],
    platform: str,
    device: int = 0,
) -> Frame:
    """Bind ``kernel`` for these facts and register its launch with the handler.

    ``arrays``: each array parameter's (shape, JAX dtype name); ``sources``:
    each array parameter's buffer, ``(0, operand index)`` or ``(1, result
    index)``; ``counts``: how many operands and results the custom call has; ``platform``:
    ``"cuda"`` or ``"cpu"``.
    """
    cxla = handler_module()
    cuda = platform == "cuda"
    dev = (_CUDA, device) if cuda else (_CPU, 0)
    values: dict[str, object] = {}
    addresses: dict[str, int] = {}
    held: list[Placeholder] = []
    k = 1
    for p in plan.params:
        if p.is_array and p.name in arrays:
            shape, dtype = arrays[p.name]
            address = _BASE + k * _STEP
            k += 1
            addresses[p.name] = address
            if isinstance(p.slot, PointerKind):
                values[p.name] = address
            else:
                ph = Placeholder(address, shape, _dtype_of(dtype), dev)
                held.append(ph)
                values[p.name] = ph
        elif p.role == "static" or p.name in statics:
            values[p.name] = statics[p.name]
        elif p.role == "stream":
            values[p.name] = _STREAM
    with _LOCK:
        handle = kernel.bind(**values)
        snap = handle.snapshot()
        if snap.guarded:
            raise unsupported(
                plan.kernel,
                ", ".join(snap.names),
                "a compiled function its entry point launches directly",
                "a function the DSL re-validates before every call (its Python guard cannot run inside XLA)",
            )
        storage = snap.storage
        names = list(snap.names)
        patches = []
        stream_offset = -1
        for p in plan.params:
            if p.role == "stream":
                stream_offset = _find(storage, snap.offsets[names.index(p.name)], _STREAM, plan.kernel, p.name)
            if not p.is_array or p.name not in arrays:
                continue
            i = names.index(p.name)
            offset = _find(storage, snap.offsets[i], addresses[p.name], plan.kernel, p.name)
            slot = snap.slots[i]
            inner = getattr(slot, "inner", None) or slot
            align = int(getattr(inner, "align", None) or 1) if isinstance(inner, (TensorKind, PointerKind)) else 1
            source, index = sources[p.name]
            patches.append((offset, source, index, align if align & (align - 1) == 0 else 1))
        nargs, nrets = counts
        frame_id = cxla.register(
            snap.entry_address,
            storage,
            snap.part_offsets,
            snap.has_result,
            snap.extra_pointers,
            nargs,
            nrets,
            tuple(patches),
            stream_offset,
            cuda,
            plan.kernel,
            device,
        )
        frame = Frame(int(frame_id), handle, plan.kernel)
        _KEPT.append(frame)
    return frame


def _find(storage: bytes, offset: int, value: int, kernel: str, parameter: str) -> int:
    """Where ``value`` sits in ``storage``: at the slot's first byte (a pointer, a stream, a tensor
    descriptor's data address); anything else means this module misreads the layout (CB906)."""
    if offset + 8 <= len(storage) and struct.unpack_from("@Q", storage, offset)[0] == value:
        return offset
    raise unsupported(
        kernel,
        parameter,
        "a slot whose storage holds the value's address (or stream) as its first 8 bytes",
        f"a slot whose bytes at offset {offset} are not the value bound ({value:#x})",
    )
