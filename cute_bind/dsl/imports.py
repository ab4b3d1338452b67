"""Importing the DSL (once, lazily) and importing torch past the DSL's own ``torch.py``.

The DSL is imported lazily so that ``import cute_bind`` (and the static
checker) work on machines without it; :func:`dsl` raises CB502 where it is
missing. :func:`_resolve` and :func:`_present` find a dotted internal without
compiling anything (the contract and the feature checks use them).
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .. import diagnostics as D

__all__ = [
    "DSL",
    "dsl",
    "import_torch",
]


@dataclass(frozen=True)
class DSL:
    """The DSL's public modules and the private objects cute_bind uses."""

    cutlass: ModuleType
    cute: ModuleType
    cuda_driver: ModuleType
    runtime: ModuleType  # cutlass.cute.runtime
    typing: ModuleType  # cutlass.base_dsl.typing
    jit_executor: ModuleType  # cutlass.base_dsl.jit_executor
    runtime_pointer_class: type  # cutlass.cute.runtime._Pointer
    constexpr: type | None  # cutlass.Constexpr
    numeric_meta: type  # cutlass.NumericMeta


@functools.lru_cache(maxsize=None)
def dsl() -> DSL:
    """Import the DSL once; raise CB502 when it is missing."""
    try:
        import cuda.bindings.driver as cuda_driver
        import cutlass
        import cutlass.base_dsl.jit_executor as jit_executor
        import cutlass.base_dsl.typing as dsl_typing
        import cutlass.cute as cute
        import cutlass.cute.runtime as runtime
    except ImportError as exc:
        raise D.error(D.DSL_MISSING, expected=f"nvidia-cutlass-dsl{D.SUPPORTED_DSL_VERSIONS}", detail=str(exc)) from exc
    return DSL(
        cutlass=cutlass,
        cute=cute,
        cuda_driver=cuda_driver,
        runtime=runtime,
        typing=dsl_typing,
        jit_executor=jit_executor,
        runtime_pointer_class=getattr(runtime, "_Pointer", type(None)),
        constexpr=getattr(cutlass, "Constexpr", None),
        numeric_meta=getattr(cutlass, "NumericMeta", type(None)),
    )


def _resolve(owner: str) -> object:
    """Import the longest module prefix of ``owner``, then walk the remaining attributes."""
    import importlib

    parts = owner.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            if cut == 1:
                raise
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(owner)  # pragma: no cover - the loop returns or raises


def _present(owner: str, attr: str) -> bool:
    try:
        return hasattr(_resolve(owner), attr)
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def _dsl_folders() -> frozenset[str]:
    """The DSL's ``cutlass/base_dsl`` folders (found without importing the DSL)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("cutlass")
    except (ImportError, ValueError):
        return frozenset()
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return frozenset(os.path.realpath(os.path.join(loc, "base_dsl")) for loc in locations)


def _in_dsl_folder(path: str | None) -> bool:
    """Whether the file ``path`` lies directly in one of the DSL's ``base_dsl`` folders."""
    return bool(path) and os.path.dirname(os.path.realpath(str(path))) in _dsl_folders()


# Any, not ModuleType: callers assign ``torch = None`` in its place where torch is missing (bench/specialize.py)
def import_torch() -> Any:
    """``import torch``, never reaching the DSL's own ``base_dsl/torch.py``.

    DSL 4.5 to 4.7 append ``base_dsl/`` to ``sys.path`` when imported, and from
    4.6 on that folder holds a ``torch.py`` (the DSL's dtype helpers, which
    import torch themselves). Where torch is not installed, a plain ``import
    torch`` then runs that file and fails with a bare ``ImportError`` instead of
    ``ModuleNotFoundError``. Every lazy torch import in the package goes
    through here: it raises ``ModuleNotFoundError`` when torch is not
    installed, and loads the real torch even if the DSL's file comes first on
    the path.
    """
    return _import_outside_dsl("torch")


def _import_outside_dsl(name: str) -> ModuleType:
    """Import the top-level module ``name`` from anywhere but the DSL's ``base_dsl`` folders."""
    import importlib
    import importlib.machinery
    import importlib.util

    if name in sys.modules and sys.modules[name] is None:  # import blocked on purpose (the import system's own rule)
        raise ModuleNotFoundError(f"import of {name} halted; None in sys.modules", name=name)
    module = sys.modules.get(name)
    if module is not None and not _in_dsl_folder(getattr(module, "__file__", None)):
        return module
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and not _in_dsl_folder(spec.origin):
        return importlib.import_module(name)
    # Missing, or shadowed by the DSL's file: look past the DSL's folders.
    path = [p for p in sys.path if not (p and os.path.realpath(p) in _dsl_folders())]
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
