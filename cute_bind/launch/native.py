"""The C extensions as the rest of the package sees them: the one loader, and the C launcher's configuration.

:func:`load` is the one place that reads ``CUTE_BIND_PURE_PYTHON`` and catches the ``ImportError``
of an extension that was not built: every optional C fast path (the launchers, the dispatcher's
``CallBase``, the graph's replay loop and setters, the torch op's eager call) is looked up through
it, at the moment a handle, kernel, graph or op is made, so the setting can change between them.

The C launcher (``_claunch``) reads NumPy arrays, ctypes pointers and torch tensors itself once it
is given their verified layouts and torch's exchange reader (:func:`configure_c`, each once, once
found); :data:`C_LAYOUTS` is what it was given.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Callable, NamedTuple

if TYPE_CHECKING:
    from . import _claunch

from .. import settings
from ..slots.stream import stream_types

__all__ = [
    "TorchReader",
    "C_LAYOUTS",
    "c_launcher_class",
    "configure_c",
    "fast_path",
    "learn_torch_in_c",
    "learning_stream_reader",
    "load",
    "torch_reader",
]


def load(name: str) -> ModuleType | None:
    """The optional C extension module ``name`` (``"cute_bind.launch._claunch"``...), or ``None``:
    not built, or disabled with ``CUTE_BIND_PURE_PYTHON=1`` (read at every call)."""
    if settings.PURE_PYTHON.flag():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def c_launcher_class() -> type[_claunch.Launcher] | None:
    """The optional C fast path, unless absent or disabled with CUTE_BIND_PURE_PYTHON=1."""
    module = load("cute_bind.launch._claunch")
    if module is None:
        return None
    configure_c()
    launcher: type[_claunch.Launcher] = module.Launcher
    return launcher


#: what the C fast path was given (``_claunch.configure``): NumPy's and ctypes' layouts, torch's reader
C_LAYOUTS: list[object] = [None, None, None]


class TorchReader(NamedTuple):
    """What ``_claunch.configure`` reads (by field name) of torch: its DLPack exchange function
    (``dltensor_from_py_object_no_sync``'s address), the exact types pointer slots read through it,
    their exchange-API capsule (kept alive with it), and torch's stream classes stream slots read
    through ``cuda_stream`` (None: none)."""

    function: int
    types: tuple[type, ...]
    capsule: object
    streams: tuple[type, ...] | None


def torch_reader() -> TorchReader | None:
    """torch's exchange function with the exact types pointer slots read through it, and torch's stream
    classes stream slots read through ``cuda_stream``, once torch is imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    from ..slots import dlpack as _dlpack

    found = _dlpack.exchange_function(torch.Tensor)
    if found is None:
        return None
    types = tuple(t for t in (torch.Tensor, getattr(getattr(torch, "nn", None), "Parameter", None)) if isinstance(t, type))
    return TorchReader(found.address, types, found.capsule, stream_types()[0])


def learning_stream_reader(reader: Callable[[object], int]) -> Callable[[object], int]:
    """A stream slot's C reader for a handle bound before torch was imported: once torch is, the C
    fast path is configured with torch's stream classes (read in C from the next launch on)."""

    def read(value: object) -> int:
        learn_torch_in_c()
        return reader(value)

    return read


def learn_torch_in_c() -> None:
    """Configure the C fast path with torch's reader and stream classes if torch has been imported
    since it was configured (a handle bound before ``import torch``)."""
    if C_LAYOUTS[2] is None and "torch" in sys.modules:
        configure_c()


def configure_c() -> None:
    """Hand the C fast path the verified NumPy ndarray and ctypes layouts and torch's reader (each
    once, once found): NumPy arrays, ctypes pointers and torch tensors are then read in C (see
    cute_bind.slots.dlpack); also called by the slow path, for a torch imported after binding."""
    if all(x is not None for x in C_LAYOUTS):
        return
    from ..slots import dlpack as _dlpack

    _claunch = load("cute_bind.launch._claunch")
    if _claunch is None:
        return
    found = [_dlpack.array_layout(), _dlpack.ctypes_layout(), torch_reader()]
    new = [f if have is None else None for f, have in zip(found, C_LAYOUTS)]
    if any(x is not None for x in new):
        _claunch.configure(*new)
        for i, x in enumerate(new):
            if x is not None:
                C_LAYOUTS[i] = x


def fast_path() -> str:
    """Which launch fast path new handles use: "c" or "python"."""
    return "c" if c_launcher_class() is not None else "python"
