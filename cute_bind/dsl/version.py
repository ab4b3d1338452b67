"""The installed nvidia-cutlass-dsl: its version number, and what it has (:func:`features`).

What the package does differently between the supported versions is decided
by what the installed DSL has (:class:`Features`), never by its number: every
version branch asks :func:`features` (or a function of this package that
does). The number only decides the one-time CB503 warning (:mod:`.contract`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
from dataclasses import dataclass

from .. import diagnostics as D
from .imports import _dsl_folders, _present, dsl

__all__ = [
    "SUPPORTED_VERSIONS",
    "dsl_version",
    "version_supported",
    "Features",
    "features",
]


#: The nvidia-cutlass-dsl versions cute_bind supports (mirrors pyproject.toml;
#: .ci/dsl_matrix tests the newest patch of every minor in it).
SUPPORTED_VERSIONS = D.SUPPORTED_DSL_VERSIONS
_SUPPORTED_MIN = (4, 5, 3)
_SUPPORTED_MAX_EXCLUSIVE = (4, 9, 0)


def dsl_version() -> str:
    try:
        return importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def version_supported(version: str | None = None) -> bool:
    v = _version_tuple(version or dsl_version())
    return _SUPPORTED_MIN <= v < _SUPPORTED_MAX_EXCLUSIVE


# The disk cache's DSL internals: optional (nvidia-cutlass-dsl 4.5 has no
# ``cutlass.runtime``); where one is missing the cache is off and every
# process compiles (``features().disk_cache``).
_CACHE_REQUIRED: tuple[tuple[str, str], ...] = (
    ("cutlass.runtime", "load_module"),
    ("cutlass.base_dsl.jit_executor.JitCompiledFunction", "dump_to_object"),
)


@dataclass(frozen=True)
class Features:
    """Where the supported DSL versions really differ, read from the installed DSL itself.

    - ``spec_reentry`` (4.8): a compiled function may carry a specialization
      record (``_pyir_spec``, sealed by a trace under the DSL's PyIR frontend)
      that every direct call re-checks against live state, refusing on drift;
      cute_bind runs the same check (:func:`specialization_guard`).
    - ``unload_callback`` (4.8): ``register_library_unload_callback``. It is
      keyed by CUDA library handle and fires only for modules that hold a
      device library (never for host-only functions), so the unload listener
      (:func:`.compiled.add_unload_listener`) wraps ``JitModule.unload`` on every version instead.
    - ``base_dsl_on_path`` (4.5 to 4.7): importing the DSL appended its
      ``base_dsl/`` folder to ``sys.path``; from 4.6 on that folder holds a
      ``torch.py`` (see :func:`import_torch`).
    """

    spec_reentry: bool
    unload_callback: bool
    base_dsl_on_path: bool
    #: ``cutlass.runtime.load_module`` and ``dump_to_object`` (4.6 on): without them the disk cache is off
    disk_cache: bool = True


@functools.lru_cache(maxsize=None)
def features() -> Features:
    """The :class:`Features` of the installed DSL (imports it)."""
    je = dsl().jit_executor
    return Features(
        spec_reentry=callable(getattr(je, "_pyir_validate_spec_reentry", None)),
        unload_callback=callable(getattr(je, "register_library_unload_callback", None)),
        base_dsl_on_path=any(os.path.realpath(p) in _dsl_folders() for p in sys.path if p),
        disk_cache=all(_present(owner, attr) for owner, attr in _CACHE_REQUIRED),
    )
