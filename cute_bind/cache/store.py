"""The cache folder: one file per entry, written atomically, checked on every read, evicted least recently used first.

Layout under the cache folder (``v<FORMAT>/`` so another format never reads these)::

    v1/entries/<key>.entry   magic, header length, JSON header, object file, SHA-256 of all before it
    v1/entries/<key>.hits    one byte appended per load: its size is the hit count, its mtime the last use
    v1/locks/<key>.lock      fcntl lock held while one process compiles that key

Writers write a temporary file in the same folder and ``os.replace`` it, so a
reader sees the old file, the new file or none, never a part; a reader that
finds a file failing its checksum treats it as corrupt (the writer replaces
it). Many processes may share one folder.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import struct
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .key import FORMAT

fcntl: Any  # POSIX; elsewhere concurrent cold compiles are not coordinated (writes stay atomic)
try:
    import fcntl as _fcntl

    fcntl = _fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = ["MAGIC", "Store", "EntryInfo", "Read", "encode", "decode"]

MAGIC = b"CUTE_BIND_CACHE\n"
_LEN = struct.Struct("<I")
_DIGEST = 32
_TMP_MAX_AGE_S = 3600.0


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    """The process's umask, read once (reading it means setting it, so set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@dataclass(frozen=True)
class Read:
    """What reading one entry found: ``status`` is ``"hit"``, ``"miss"``, ``"corrupt"`` or ``"mismatch"``."""

    status: str
    header: dict[str, Any] = field(default_factory=dict)
    payload: bytes = b""
    reason: str = ""


def encode(header: dict[str, Any], payload: bytes) -> bytes:
    """An entry's bytes: magic, header length, JSON header, payload, SHA-256 of everything before it."""
    head = json.dumps(header, sort_keys=True).encode()
    body = MAGIC + _LEN.pack(len(head)) + head + payload
    return body + hashlib.sha256(body).digest()


def decode(data: bytes, key: str, expected: dict[str, str]) -> Read:
    """Check an entry's bytes: checksum first (corrupt), then that it is this key's entry for this environment (mismatch)."""
    if len(data) < len(MAGIC) + _LEN.size + _DIGEST:
        return Read("corrupt", reason=f"truncated ({len(data)} bytes)")
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if not body.startswith(MAGIC):
        return Read("corrupt", reason="not a cute_bind cache entry (bad magic)")
    if hashlib.sha256(body).digest() != digest:
        return Read("corrupt", reason="checksum mismatch (truncated or modified)")
    (n,) = _LEN.unpack_from(body, len(MAGIC))
    start = len(MAGIC) + _LEN.size
    try:
        header = json.loads(body[start : start + n])
    except ValueError:
        return Read("corrupt", reason="unreadable header")
    if not isinstance(header, dict):
        return Read("corrupt", reason="unreadable header")
    payload = body[start + n :]
    if header.get("key") != key:
        return Read("mismatch", header, reason=f"the file holds key {str(header.get('key'))[:16]}")
    env = header.get("env", {})
    for name, value in expected.items():
        if env.get(name) != value:
            return Read("mismatch", header, reason=f"written for {name} {env.get(name)!r}, this process has {value!r}")
    if header.get("size") != len(payload):
        return Read("corrupt", header, reason="payload size differs from its header")
    return Read("hit", header, payload)


@dataclass(frozen=True)
class EntryInfo:
    """One entry, as ``python -m cute_bind cache info`` lists it."""

    key: str
    kernel: str
    function: str
    size: int
    created: float
    last_used: float
    hits: int
    status: str  # "ok", "corrupt", or "other" (another format, DSL, Python...)
    path: Path


class Store:
    """One cache folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.base = self.root / f"v{FORMAT}"
        self.entries = self.base / "entries"
        self.locks = self.base / "locks"

    def ensure(self) -> None:
        """Create the folders; raise ``OSError`` when they cannot be read and written."""
        for d in (self.entries, self.locks):
            d.mkdir(parents=True, exist_ok=True)
            if not os.access(d, os.R_OK | os.W_OK | os.X_OK):
                raise PermissionError(13, "cannot read and write", str(d))

    def entry_path(self, key: str) -> Path:
        return self.entries / f"{key}.entry"

    def hits_path(self, key: str) -> Path:
        return self.entries / f"{key}.hits"

    # -------------------------------------------------------------- one entry
    def read(self, key: str, expected: dict[str, str]) -> Read:
        try:
            with open(self.entry_path(key), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return Read("miss")
        return decode(data, key, expected)

    def write(self, key: str, header: dict[str, Any], payload: bytes) -> Path:
        """Write an entry atomically (temporary file in the same folder, then ``os.replace``)."""
        data = encode(header, payload)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=self.entries)
        try:
            # mkstemp makes the file 0600; an entry is read by every process and user sharing the
            # folder, so it gets the mode an ordinary new file would (0666 less the umask)
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.entry_path(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        with contextlib.suppress(OSError):
            os.unlink(self.hits_path(key))  # a new entry starts with no hits
        return self.entry_path(key)

    def touch(self, key: str) -> None:
        """Count one hit and mark the entry used now (an append is atomic between processes)."""
        with contextlib.suppress(OSError):
            fd = os.open(self.hits_path(key), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, b"+")
            finally:
                os.close(fd)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the key's file lock (blocks while another process compiles it)."""
        if fcntl is None:
            yield
            return
        fd = os.open(self.locks / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def acquire(self, key: str) -> contextlib.ExitStack:
        """The key's lock, held until the returned stack is closed."""
        stack = contextlib.ExitStack()
        stack.enter_context(self.lock(key))
        return stack

    # -------------------------------------------------------------- the folder
    def scan(self, expected: dict[str, str] | None = None) -> list[EntryInfo]:
        """Every entry, with its header and use; ``status`` checks each file (reads it whole)."""
        out = []
        try:
            names = sorted(os.listdir(self.entries))
        except OSError:
            return []
        for name in names:
            if not name.endswith(".entry"):
                continue
            key = name[: -len(".entry")]
            path = self.entries / name
            try:
                data = path.read_bytes()
                st = path.stat()
            except OSError:
                continue
            r = decode(data, key, expected or {})
            status = {"hit": "ok", "mismatch": "other"}.get(r.status, "corrupt")
            created = float(r.header.get("created", st.st_mtime))
            hits, used = 0, st.st_mtime
            try:
                hs = self.hits_path(key).stat()
                hits, used = hs.st_size, max(used, hs.st_mtime)
            except OSError:
                pass
            out.append(
                EntryInfo(
                    key=key,
                    kernel=str(r.header.get("kernel", "?")),
                    function=str(r.header.get("function", "?")),
                    size=st.st_size,
                    created=created,
                    last_used=used,
                    hits=hits,
                    status=status,
                    path=path,
                )
            )
        return out

    def _usage(self) -> list[tuple[float, int, str]]:
        """``(last use, size, key)`` of every entry, from ``stat`` alone (no reads)."""
        out = []
        try:
            names = os.listdir(self.entries)
        except OSError:
            return []
        for name in names:
            if not name.endswith(".entry"):
                continue
            key = name[: -len(".entry")]
            try:
                st = os.stat(self.entries / name)
            except OSError:
                continue
            used = st.st_mtime
            with contextlib.suppress(OSError):
                used = max(used, os.stat(self.hits_path(key)).st_mtime)
            out.append((used, st.st_size, key))
        return out

    def remove(self, key: str) -> None:
        # the lock file stays: a process may be waiting on it (prune removes idle ones)
        for p in (self.entry_path(key), self.hits_path(key)):
            with contextlib.suppress(OSError):
                p.unlink()

    def evict(self, limit: int, keep: str | None = None) -> list[str]:
        """Remove least recently used entries until the folder holds at most ``limit`` bytes (``keep`` stays)."""
        usage = sorted(self._usage())
        total = sum(size for _, size, _ in usage)
        removed = []
        for _, size, key in usage:
            if total <= limit:
                break
            if key == keep:
                continue
            self.remove(key)
            total -= size
            removed.append(key)
        return removed

    def prune(self, limit: int, older_than_s: float | None = None, expected: dict[str, str] | None = None) -> list[str]:
        """Remove corrupt entries, stale temporary files and unused locks, entries unused for ``older_than_s``, then evict to ``limit``."""
        now = time.time()
        removed = []
        for e in self.scan(expected):
            if e.status == "corrupt" or (older_than_s is not None and now - e.last_used > older_than_s):
                self.remove(e.key)
                removed.append(e.key)
        with contextlib.suppress(OSError):
            for name in os.listdir(self.entries):
                p = self.entries / name
                if name.endswith(".tmp") and now - p.stat().st_mtime > _TMP_MAX_AGE_S:
                    p.unlink()
                elif name.endswith(".hits") and not (self.entries / (name[: -len(".hits")] + ".entry")).exists():
                    p.unlink()
        with contextlib.suppress(OSError):
            for name in os.listdir(self.locks):
                if not (self.entries / (name[: -len(".lock")] + ".entry")).exists():
                    self._remove_idle_lock(self.locks / name)
        return removed + self.evict(limit)

    def _remove_idle_lock(self, path: Path) -> None:
        if fcntl is None:
            return
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # only a lock nobody holds
                path.unlink()
            finally:
                os.close(fd)

    def clear(self) -> int:
        """Remove every entry, hit count, lock and temporary file; returns the number of entries removed."""
        n = 0
        for folder in (self.entries, self.locks):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                with contextlib.suppress(OSError):
                    (folder / name).unlink()
                    n += name.endswith(".entry")
        return n

    def total_size(self) -> int:
        return sum(size for _, size, _ in self._usage())
