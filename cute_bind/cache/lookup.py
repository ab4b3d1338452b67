"""The one place ``Compiler.compiled`` (cute_bind/jit/compiler.py) asks the disk cache: :class:`Claim`.

A claim is held around one compile of one key (``with claim(kernel, key) as c``):
``c.load()`` returns the entry's compiled function or ``None``; on ``None`` the
caller compiles and calls ``c.store(compiled)``. Between a missed ``load`` and
the end of the ``with`` the claim holds the key's file lock, so processes
compiling the same key at the same moment wait for the first one and load its
entry instead of compiling again. Every failure of the cache itself is a coded
warning (once) and a compile without it; it never raises into ``bind()``.
Folders, entries and locks the trust model refuses (docs/concepts/safety.md)
are warnings too (CB610-CB613): never loaded, never written.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import re
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from .. import dsl
from .. import diagnostics as D
from . import settings
from .key import KernelLike, Uncacheable, entry_key, environment
from .store import Store, UntrustedPath, load_key

__all__ = ["Claim", "Event", "HISTORY_SIZE", "claim", "history", "load_payload", "mark"]


#: the process's event numbers: 1, 2, ..., taken under _RECORD_LOCK with the append (see _record)
_SEQ = itertools.count(1)


@dataclass(frozen=True)
class Event:
    """One consultation of the disk cache: ``outcome`` is ``"hit"`` (loaded), ``"compiled"`` (and stored) or ``"uncached"``.

    ``seq`` numbers the process's events from 1 in the order they were recorded, never reused:
    ``history(since=e.seq)`` is what was recorded after ``e`` (of the events still kept).
    """

    kernel: str
    key: str | None
    outcome: str
    seconds: float
    seq: int


#: how many events :func:`history` keeps
HISTORY_SIZE = 1024
_HISTORY: collections.deque[Event] = collections.deque(maxlen=HISTORY_SIZE)
_WARNED: set[tuple[str, str]] = set()
_WARN_LOCK = threading.Lock()
#: numbering and appending are one step: the history is in ``seq`` order, and mark() the highest
_RECORD_LOCK = threading.Lock()


def _reset_warn_lock() -> None:
    """After ``os.fork()``: new locks in the child (one held by another thread at the fork stays held)."""
    global _WARN_LOCK, _RECORD_LOCK
    _WARN_LOCK = threading.Lock()
    _RECORD_LOCK = threading.Lock()


def _record(kernel: str, key: str | None, outcome: str, seconds: float) -> Event:
    """Number an event and append it to the history, as one step."""
    with _RECORD_LOCK:
        event = Event(kernel, key, outcome, seconds, next(_SEQ))
        _HISTORY.append(event)
    return event


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork
    os.register_at_fork(after_in_child=_reset_warn_lock)


def mark() -> int:
    """The number of the last event so far (0: none yet): ``history(since=mark())``, asked later,
    lists what came after this call."""
    with _RECORD_LOCK:
        return _HISTORY[-1].seq if _HISTORY else 0


def history(since: int = 0) -> list[Event]:
    """This process's recent cache consultations, oldest first: the last :data:`HISTORY_SIZE` (1024),
    and of those only the ones numbered after ``since`` (an :attr:`Event.seq`; 0: all kept).

    To see what one piece of code did, take :func:`mark` before it and ask for the events since:
    a count by ``len(history())`` stops growing at the cap. Only the last :data:`HISTORY_SIZE`
    events are kept: where more came after ``since``, the oldest of them are gone (the first
    event listed then has a ``seq`` above ``since + 1``)."""
    events = list(_HISTORY)
    if since:
        events = [e for e in events if e.seq > since]
    return events


def _warn_once(diagnostic: D.Diagnostic, about: str, **fields: Any) -> None:
    with _WARN_LOCK:
        if (diagnostic.code, about) in _WARNED:
            return
        _WARNED.add((diagnostic.code, about))
    warning = D.error(diagnostic, **fields)
    if isinstance(warning, Warning):  # CacheWarning: issued, never raised
        warnings.warn(warning, stacklevel=5)


#: the catalog code of an entry :meth:`Store.read` refused, by its status
_REFUSED_ENTRY = {
    "corrupt": D.CACHE_ENTRY_CORRUPT,
    "mismatch": D.CACHE_ENTRY_MISMATCH,
    "unsafe": D.CACHE_ENTRY_UNTRUSTED,
    "unsigned": D.CACHE_ENTRY_UNSIGNED,
}


def _first_line(exc: BaseException) -> str:
    """An exception's first line, without the DSL's terminal colours."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__


def load_payload(payload: bytes, prefix: str, store: Store | None = None, loader: Callable[[str, str], object] | None = None) -> object:
    """Load an entry's object file; the DSL loads from a path.

    The path is an anonymous in-memory file of this process
    (``memfd_create``, named ``/proc/self/fd/N``): nothing is written to a
    folder, so no other user can swap or read the object between the check
    and the load. Where that is missing, a new private file in ``store``'s
    checked folder. Never the shared temporary folder. ``loader(path, prefix)`` loads it
    (default: ``dsl.load_object``, a plain compiled function).
    """
    load = dsl.load_object if loader is None else loader
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        try:
            fd = os.memfd_create("cute_bind_entry", getattr(os, "MFD_CLOEXEC", 0))
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                view = memoryview(payload)
                while view:
                    view = view[os.write(fd, view) :]
                return load(f"/proc/self/fd/{fd}", prefix)  # the loader reads the whole file at once
            finally:
                os.close(fd)
    if store is None:
        raise OSError("no private place to write the object file for the DSL's loader (no memfd_create, no cache folder)")
    with store.scratch(payload) as path:
        return load(path, prefix)


class Claim:
    """One compile key's use of the disk cache (see the module docstring).

    ``exporter(compiled, prefix)`` makes an entry's object file and ``loader(path, prefix)`` loads one
    (default: the plain compiled functions of ``dsl.export_object``/``dsl.load_object``; ``cute_bind.compile``
    passes TVM-FFI ones); ``header`` adds fields to a stored entry's header, and :attr:`header` is the
    loaded entry's header after a hit.
    """

    def __init__(
        self,
        kernel: KernelLike,
        compile_key: object,
        *,
        exporter: Callable[[object, str], bytes] | None = None,
        loader: Callable[[str, str], object] | None = None,
        header: dict[str, object] | None = None,
    ) -> None:
        self.kernel = kernel
        self.compile_key = compile_key
        self.exporter = exporter
        self.loader = loader
        self.extra = dict(header or {})
        self.header: dict[str, Any] = {}  # JSON read back from the entry (what each caller stored)
        self.key: str | None = None
        self.outcome = "off"
        self._store: Store | None = None
        self._held: contextlib.ExitStack | None = None
        self._started = 0.0
        self._depends: list[str] = []

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None
        if self._store is not None:
            self._store.close()

    def load(self) -> object:
        """The cached compiled function, or ``None`` (then compile and :meth:`store`)."""
        self._started = time.perf_counter()
        name = str(getattr(self.kernel, "name", "kernel"))
        if not getattr(self.kernel, "cache", True) or not settings.enabled(name):
            return None
        if not dsl.features().disk_cache:  # a DSL that cannot export and reload compiled functions
            return None
        settings.size_limit(name)  # a bad setting is reported before compiling, not after
        root = settings.cache_dir(name)
        key_file = settings.shared_key_file(name)
        try:
            self.key, self._depends = entry_key(self.kernel, self.compile_key)
        except Uncacheable as exc:
            _warn_once(
                D.CACHE_SKIPPED,
                f"{name}:{exc}",
                kernel=name,
                expected="a compile whose inputs all have a stable spelling",
                got=str(exc),
            )
            self.outcome = "uncached"
            return None
        mac_key = None
        if key_file is not None:
            try:
                mac_key = load_key(key_file, root)
            except UntrustedPath as exc:
                _warn_once(
                    D.CACHE_KEY_UNTRUSTED, f"{key_file}:{exc.problem}", kernel=name, got=exc.problem, detail=str(key_file), expected=exc.fix
                )
                self.outcome = "uncached"
                return None
        store = Store(root, key=mac_key)
        try:
            store.ensure()
        except UntrustedPath as exc:
            store.close()
            _warn_once(
                D.CACHE_FOLDER_UNTRUSTED, f"{exc.path}:{exc.problem}", kernel=name, got=exc.problem, detail=exc.path, expected=exc.fix
            )
            self.outcome = "uncached"
            return None
        except OSError as exc:
            store.close()
            _warn_once(
                D.CACHE_UNAVAILABLE,
                str(root),
                kernel=name,
                expected=f"a readable, writable folder {root}",
                got=f"{type(exc).__name__}: {exc}",
            )
            self.outcome = "uncached"
            return None
        self._store = store
        compiled = self._read(store)
        if compiled is not None:
            return compiled
        try:
            self._held = store.acquire(self.key)
        except UntrustedPath as exc:  # a planted link or FIFO where the lock belongs: never followed
            _warn_once(D.CACHE_ENTRY_UNTRUSTED, f"{exc.path}:{exc.problem}", kernel=name, got=exc.problem, detail=exc.path)
            return None  # no lock: compile anyway (the write stays atomic)
        except OSError:
            return None  # no lock: compile anyway (the write stays atomic)
        # another process may have finished the same compile while we waited
        return self._read(store)

    def _read(self, store: Store) -> object:
        assert self.key is not None
        name = str(getattr(self.kernel, "name", "kernel"))
        path = store.entry_path(self.key)
        try:
            r = store.read(self.key, environment())
        except OSError as exc:
            _warn_once(D.CACHE_UNAVAILABLE, str(path), kernel=name, expected=f"a readable entry {path}", got=f"{type(exc).__name__}: {exc}")
            return None
        if r.status == "miss":
            return None
        code = _REFUSED_ENTRY.get(r.status)
        if code is not None:  # corrupt, mismatch, unsafe, unsigned: said once, then compiled as if missing
            _warn_once(code, f"{path}:{r.reason}", kernel=name, got=r.reason, detail=str(path))
            return None
        if r.status != "hit":  # pragma: no cover - every status is handled above
            return None
        try:
            prefix = str(r.header.get("prefix", ""))
            if self.loader is None:  # the decorator's entries: the plain loader (a test may stand in for load_payload)
                compiled = load_payload(r.payload, prefix, store)
            else:
                compiled = load_payload(r.payload, prefix, store, self.loader)
        except Exception as exc:
            first = _first_line(exc)
            _warn_once(D.CACHE_ENTRY_MISMATCH, f"{path}:load", kernel=name, got=f"the DSL cannot load it ({first})", detail=str(path))
            return None
        store.touch(self.key)
        self.header = r.header
        self.outcome = "hit"
        _record(name, self.key, "hit", time.perf_counter() - self._started)
        return compiled

    def store(self, compiled: object) -> None:
        """Export a fresh compile into the cache (the claim's lock is still held)."""
        seconds = time.perf_counter() - self._started
        name = str(getattr(self.kernel, "name", "kernel"))
        if self.key is None or self._store is None:
            if self.outcome == "uncached":
                _record(name, None, "uncached", seconds)
            return
        prefix = f"cute_bind_{self.key[:24]}"
        try:
            payload = (dsl.export_object if self.exporter is None else self.exporter)(compiled, prefix)
        except Exception as exc:
            first = _first_line(exc)
            _warn_once(
                D.CACHE_SKIPPED,
                f"{name}:export",
                kernel=name,
                expected="a compiled function the DSL can export",
                got=f"{type(exc).__name__}: {first}",
            )
            self.outcome = "uncached"
            _record(name, self.key, "uncached", seconds)
            return
        fn = getattr(self.kernel, "fn", None)
        header = {
            "key": self.key,
            "kernel": name,
            "function": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}",
            "depends": self._depends,
            "prefix": prefix,
            "created": time.time(),
            "compile_s": round(seconds, 6),
            "size": len(payload),
            "env": environment(),
            **self.extra,
        }
        try:
            self._store.write(self.key, header, payload)
            self._store.evict(settings.size_limit(name), keep=self.key)
        except IsADirectoryError:
            # a folder planted under this entry's name (CB611 said so at the lookup): the one entry
            # cannot be stored, the cache works for every other, and the folder is never removed
            self.outcome = "uncached"
        except OSError as exc:
            root = self._store.root
            _warn_once(
                D.CACHE_UNAVAILABLE, str(root), kernel=name, expected=f"a writable folder {root}", got=f"{type(exc).__name__}: {exc}"
            )
            self.outcome = "uncached"
        else:
            self.outcome = "compiled"
        _record(name, self.key, self.outcome, seconds)


def claim(kernel: KernelLike, compile_key: object, **options: Any) -> Claim:
    """A :class:`Claim` for one compile of ``kernel`` (used as a context manager; ``options``: see :class:`Claim`)."""
    return Claim(kernel, compile_key, **options)
