"""The catalog's entries, one module per range of codes, each in code order.

``cbNxx.py`` holds the entries ``CBN01``... of one range, each bound to its
name (``WRONG_KIND = _entry("CB204", ...)`` in ``cb2xx.py``); ``examples.py``
holds the example preludes several ranges share. A range module binds no other
public name (``cute_bind.diagnostics`` star-imports it), except
``WRONG_KIND_CONVERSIONS`` in ``cb2xx.py`` (CB204's fix by slot kind) and
``SUPPORTED_DSL_VERSIONS`` in ``cb5xx.py``.

:data:`RANGES` names each range and says when its diagnostics are raised; the
docs site groups its pages under those headings (docs/hooks/catalog.py). A new
range is a new module here, a row of :data:`RANGES` and its star import in
``cute_bind/diagnostics/__init__.py``.
"""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple

from . import cb1xx, cb2xx, cb3xx, cb4xx, cb5xx, cb6xx, cb7xx, cb8xx, cb9xx

__all__ = ["RANGES", "Range"]


class Range(NamedTuple):
    """One range of codes (``CB2xx``): the module of its entries, its name, and when its diagnostics are raised."""

    module: ModuleType
    title: str
    when: str


#: The ranges by their digit (``"2"`` for CB2xx), in code order.
RANGES: dict[str, Range] = {
    "1": Range(cb1xx, "Definition", "raised when `@cute_bind.kernel` reads the function's signature"),
    "2": Range(cb2xx, "Arguments", "raised while binding or launching, when a value does not fit its slot"),
    "3": Range(cb3xx, "Preparing", "raised by `bind()` / `prepare()` while preparing a compiled function"),
    "4": Range(cb4xx, "Launch runtime", "raised by `launch()` when the handle cannot launch or CUDA reports an error"),
    "5": Range(cb5xx, "Environment", "raised when the installed CuTe DSL is missing or incompatible"),
    "6": Range(cb6xx, "Compiling and caching", "raised when calling a kernel specializes it, and by the disk compile cache"),
    "7": Range(cb7xx, "PyTorch integration", "raised by `cute_bind.torch` when a kernel is made a torch op or the op is called"),
    "8": Range(
        cb8xx,
        "Prepared graphs",
        "raised by `cute_bind.graph` while recording, mapping slots to kernel-node parameters and replaying",
    ),
    "9": Range(
        cb9xx,
        "JAX integration",
        "raised by `cute_bind.jax` when a kernel is made a JAX op, traced, lowered or transformed, and by its XLA FFI handler",
    ),
}
