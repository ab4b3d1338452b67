"""The persistent compile cache: compiled functions on disk, shared by processes, reloaded as preparable functions.

``Kernel.bind()``/``compile()``/calling consult it before compiling (one
:class:`~cute_bind.cache.lookup.Claim` per compile key, in
``Compiler.compiled`` (cute_bind/jit/compiler.py)). An entry is the DSL's exported object file of one
compile (``export_to_c``), keyed by everything that compile depends on
(:mod:`~cute_bind.cache.key`), and is reloaded with the DSL's loader as the
same kind of compiled function ``cute.compile`` returns, so ``bind()`` builds
the very same prepared handle from it.

On by default; ``CUTE_BIND_CACHE=0`` or ``@cute_bind.kernel(cache=False)``
turns it off, ``CUTE_BIND_CACHE_DIR`` moves it, ``CUTE_BIND_CACHE_SIZE``
bounds it, ``CUTE_BIND_CACHE_SHARED`` makes it a shared team cache.
``python -m cute_bind cache info|clear|prune`` manages it and :func:`warm`
fills it ahead of time. :data:`compile` is ``cute.compile`` through the same
cache, and :func:`install` routes every ``cute.compile`` of the process
through it (:mod:`~cute_bind.cache.cute_compile`). Only a folder the trust model accepts is used
(docs/concepts/safety.md). See docs/concepts/cache.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import settings
from .key import FORMAT, Uncacheable, canonical, entry_key, environment
from .lookup import HISTORY_SIZE, Claim, Event, claim, history, mark
from .settings import cache_dir, default_dir, enabled, size_limit
from .store import EntryInfo, Store, UntrustedPath, load_key
from .warm import Args, WarmResult, warm
from .bundle import export_bundle, import_bundle, read_bundle
from .cute_compile import CachedFunction, Compile, adopt, compile, install, installed, is_installed, uninstall

__all__ = [
    "Args",
    "CachedFunction",
    "adopt",
    "Compile",
    "compile",
    "export_bundle",
    "import_bundle",
    "read_bundle",
    "install",
    "installed",
    "is_installed",
    "uninstall",
    "Claim",
    "EntryInfo",
    "Event",
    "FORMAT",
    "Store",
    "Uncacheable",
    "UntrustedPath",
    "WarmResult",
    "cache_dir",
    "canonical",
    "claim",
    "clear",
    "default_dir",
    "enabled",
    "entry_key",
    "environment",
    "history",
    "mark",
    "HISTORY_SIZE",
    "info",
    "prune",
    "settings",
    "size_limit",
    "warm",
]


def _store(root: str | Path | None) -> Store:
    """The folder as the settings make it: private, or shared under ``CUTE_BIND_CACHE_SHARED``'s key (checked first)."""
    path = settings.folder_argument(os.fspath(root), "root") if root is not None else cache_dir()
    key_file = settings.shared_key_file()
    return Store(path, key=None if key_file is None else load_key(key_file, path))


def info(root: str | Path | None = None) -> list[EntryInfo]:
    """Every entry of the cache folder (default: :func:`cache_dir`), oldest use first.

    An entry that is not a regular file of this user's is listed with status
    ``"unsafe"`` (never read); :class:`UntrustedPath` (a ``PermissionError``)
    when the folder or the shared key file may not be used (as for the other
    functions here).
    """
    with _store(root) as store:
        return sorted(store.scan(environment()), key=lambda e: e.last_used)


def clear(root: str | Path | None = None) -> int:
    """Remove every entry; returns how many were removed."""
    with _store(root) as store:
        return store.clear()


def prune(
    root: str | Path | None = None, *, max_size: int | None = None, older_than_s: float | None = None, other: bool = False
) -> list[str]:
    """Remove corrupt, unsafe and unsigned entries, entries unused for ``older_than_s`` seconds, with ``other``
    the entries this process cannot use (statuses ``other-arch`` and ``other-version``), then the least
    recently used beyond ``max_size`` bytes (default: :func:`size_limit`); returns the keys removed."""
    limit = size_limit() if max_size is None else max_size
    with _store(root) as store:
        return store.prune(limit, older_than_s, environment(), other=other)
