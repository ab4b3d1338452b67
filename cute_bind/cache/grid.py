"""``cute-bind cache warm``: fill the cache over a grid of configurations, in parallel worker processes.

A *target* names code that compiles: ``module:attribute`` (or
``path/to/file.py:attribute``, imported by its own name from its folder, as
the program that later loads the entries would import it). The attribute is either

- a function, called once per point of the grid ``--grid name=JSON-list``
  (the product of every axis: ``--grid head_dim=[64,128] --grid causal=[false,true]``
  is four calls with those keyword arguments; no axis: one call), or
- a list of configurations: each a callable taking no arguments, or a
  ``(callable, args)`` / ``(callable, args, kwargs)`` tuple.

Each configuration runs with the ``cute.compile`` hook installed
(:func:`cute_bind.cache.install`), so every ``cute.compile`` it makes, a
package's own included, is stored; an exception it raises after compiling
(a launch on a machine without a GPU, say) is reported and what it compiled
stays stored. With ``workers`` > 1 the configurations run in that many fresh
processes (``spawn``), which import the target themselves.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import json
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Iterable, TextIO, cast

from .. import diagnostics as D

__all__ = ["GridResult", "configurations", "parse_axis", "warm_grid"]


@dataclass(frozen=True)
class GridResult:
    """What one configuration did: its label, the cache's outcome of each ``cute.compile`` it made
    (``hit``, ``compiled``, ``uncached``), its time, and the first line of the exception it raised (or None)."""

    index: int
    label: str
    outcomes: tuple[str, ...]
    seconds: float
    error: str | None


def parse_axis(text: str) -> tuple[str, list[object]]:
    """``name=JSON-list`` (``head_dim=[64,128]``) as ``(name, values)``; CB609 when it is not one."""
    name, sep, values = text.partition("=")
    try:
        parsed = json.loads(values) if sep else None
    except ValueError:
        parsed = None
    if not name.isidentifier() or type(parsed) is not list or not parsed:
        raise D.error(D.CACHE_SETTING_INVALID, parameter="--grid", expected="NAME=JSON-list, e.g. head_dim=[64,128]", got=repr(text))
    return name, parsed


def _resolve(target: str) -> object:
    module_name, sep, attribute = target.rpartition(":")
    if not sep or not module_name or not attribute:
        raise D.error(
            D.CACHE_SETTING_INVALID, parameter="target", expected="module:attribute or path/to/file.py:attribute", got=repr(target)
        )
    if module_name.endswith(".py"):
        # imported by its own name from its folder, as the program that later loads the entries imports it
        # (the module's name is part of every key it makes)
        folder, base = os.path.split(os.path.abspath(module_name))
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_name = os.path.splitext(base)[0]
    module = importlib.import_module(module_name)
    obj: object = module
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def configurations(target: str, axes: Iterable[tuple[str, list[object]]] = ()) -> list[tuple[str, Callable[[], object]]]:
    """The target's configurations, in order: ``(label, a call taking no arguments)``."""
    obj = _resolve(target)
    axes = list(axes)
    if callable(obj):
        names = [n for n, _ in axes]
        out: list[tuple[str, Callable[[], object]]] = []
        for point in itertools.product(*(values for _, values in axes)):
            kwargs = dict(zip(names, point))
            label = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "()"
            out.append((label, functools.partial(obj, **kwargs)))
        return out
    if axes:
        raise D.error(D.CACHE_SETTING_INVALID, parameter="--grid", expected="a function target (a list target is its own grid)", got=target)
    out = []
    for i, item in enumerate(cast(Iterable[object], obj)):  # a list target (anything else raises TypeError here)
        if isinstance(item, functools.partial):
            shown = ", ".join([repr(a) for a in item.args] + [f"{k}={v!r}" for k, v in item.keywords.items()])
            out.append((f"#{i} {getattr(item.func, '__name__', '?')}({shown})", item))
        elif callable(item):
            out.append((f"#{i} {getattr(item, '__name__', type(item).__name__)}", item))
        elif isinstance(item, tuple) and 2 <= len(item) <= 3 and callable(item[0]):
            fn, args, kwargs = item[0], tuple(item[1]), dict(item[2]) if len(item) == 3 else {}
            out.append((f"#{i} {getattr(fn, '__name__', '?')}", functools.partial(fn, *args, **kwargs)))
        else:
            raise D.error(
                D.CACHE_SETTING_INVALID,
                parameter="target",
                expected="a list of callables or (callable, args[, kwargs]) tuples",
                got=f"item {i}: a {type(item).__name__}",
            )
    return out


def _run_one(target: str, axes: list[tuple[str, list[object]]], index: int) -> GridResult:
    from . import cute_compile, lookup

    label, call = configurations(target, axes)[index]
    cute_compile.install()
    mark = lookup.mark()
    started = time.perf_counter()
    error = None
    try:
        call()
    except Exception as exc:  # reported; what it compiled before raising stays stored
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1][:300]
    finally:
        cute_compile.uninstall()
    seconds = time.perf_counter() - started
    return GridResult(index, label, tuple(e.outcome for e in lookup.history(since=mark)), seconds, error)


class _Progress:
    """A one-line progress bar on a stream (a line per configuration where the stream is not a terminal)."""

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total, self.stream, self.done = total, stream, 0
        self.counts = {"compiled": 0, "hit": 0, "uncached": 0, "failed": 0}
        self.started = time.perf_counter()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def update(self, r: GridResult) -> None:
        self.done += 1
        for o in r.outcomes:
            if o in self.counts:
                self.counts[o] += 1
        if r.error is not None:
            self.counts["failed"] += 1
        if self.stream is None:
            return
        width = 24
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (width - filled)
        counts = "  ".join(f"{k} {v}" for k, v in self.counts.items())
        line = f"[{bar}] {self.done}/{self.total}  {counts}  {time.perf_counter() - self.started:.1f}s"
        if self.tty:
            self.stream.write("\r" + line + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(f"{line}  {r.label}" + (f"  ({r.error})" if r.error else "") + "\n")
        self.stream.flush()


def warm_grid(
    target: str, axes: Iterable[tuple[str, list[object]]] = (), *, workers: int = 1, progress: TextIO | None = None
) -> list[GridResult]:
    """Run every configuration of ``target`` (see the module docstring) with the ``cute.compile`` hook on, in
    ``workers`` fresh processes (1 or less: in this process); a progress bar on ``progress``. Returns one
    :class:`GridResult` per configuration, in order."""
    axes = list(axes)
    count = len(configurations(target, axes))
    bar = _Progress(count, progress)
    results: list[GridResult] = []
    if workers <= 1 or count <= 1:
        for i in range(count):
            r = _run_one(target, axes, i)
            bar.update(r)
            results.append(r)
        return results
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, count), mp_context=context) as pool:
        futures = [pool.submit(_run_one, target, axes, i) for i in range(count)]
        for f in as_completed(futures):
            r = f.result()
            bar.update(r)
            results.append(r)
    return sorted(results, key=lambda r: r.index)
