"""Filling the cache ahead of time: :func:`warm` compiles a kernel for a list of argument examples, here or in worker processes."""

from __future__ import annotations

import importlib
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .. import diagnostics as D
from .lookup import history

__all__ = ["Args", "WarmResult", "warm"]


class Args:
    """One argument example for :func:`warm`: ``Args(*args, **kwargs)`` (a plain tuple means positionals only)."""

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.args = args
        self.kwargs = kwargs

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"Args({', '.join(parts)})"

    def __reduce__(self) -> tuple[Callable[[tuple[object, ...], dict[str, object]], Args], tuple[tuple[object, ...], dict[str, object]]]:
        return (_make_args, (self.args, self.kwargs))


def _make_args(args: tuple[object, ...], kwargs: dict[str, object]) -> Args:
    return Args(*args, **kwargs)


@dataclass(frozen=True)
class WarmResult:
    """What warming one example did: ``outcome`` is ``"hit"`` (already cached), ``"compiled"`` (compiled and stored),
    ``"uncached"`` (compiled, but the disk cache is off or cannot hold it) or ``"memory"`` (already compiled in this process)."""

    example: int
    outcome: str
    seconds: float
    key: str | None


def _compile_one(kernel: Any, index: int, example: Args) -> WarmResult:
    before = len(history())
    t = time.perf_counter()
    kernel.compile(*example.args, **example.kwargs)
    seconds = time.perf_counter() - t
    events = [e for e in history()[before:] if e.kernel == kernel.name]
    if not events:
        return WarmResult(index, "memory" if kernel.cache else "uncached", seconds, None)
    return WarmResult(index, events[-1].outcome, seconds, events[-1].key)


def _resolve(module: str, qualname: str) -> object:
    obj: object = sys.modules.get(module) or importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _worker(module: str, qualname: str, index: int, example: Args) -> WarmResult:
    return _compile_one(_resolve(module, qualname), index, example)


def warm(kernel: object, examples: Iterable[Args | tuple[object, ...]], *, workers: int = 0) -> list[WarmResult]:
    """Compile ``kernel`` for each argument example so that its entries are in the disk cache; nothing is launched.

    ``examples`` holds :class:`Args` (or tuples of positional arguments), the
    same values ``kernel.bind(...)`` would get (pointers may be any aligned
    address: only their kind is compiled in). With ``workers`` > 1 the
    examples compile in that many fresh worker processes (``spawn``), which
    import the kernel by module and name, so it must be a module-level
    ``@cute_bind.kernel`` and the examples picklable; a deployment can then
    ship the cache folder. Returns one :class:`WarmResult` per example, in order.
    """
    items = [e if isinstance(e, Args) else Args(*e) for e in examples]
    if workers <= 1 or len(items) <= 1:
        return [_compile_one(kernel, i, e) for i, e in enumerate(items)]
    module = getattr(kernel, "__module__", None) or ""
    qualname = getattr(kernel, "__qualname__", "") or ""
    try:
        found = _resolve(module, qualname)
    except Exception:
        found = None
    if found is not kernel:
        raise D.error(
            D.CACHE_SETTING_INVALID,
            kernel=str(getattr(kernel, "name", "kernel")),
            parameter="workers",
            expected="a kernel importable by module and name (a module-level @cute_bind.kernel) for worker processes",
            got=f"{module}.{qualname} is {'missing' if found is None else 'another object'}",
        )
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(items), os.cpu_count() or 1), mp_context=context) as pool:
        futures = [pool.submit(_worker, module, qualname, i, e) for i, e in enumerate(items)]
        return [f.result() for f in futures]
