"""The cache folder: one file per entry, written atomically, checked on every read, evicted least recently used first.

Layout under the cache folder (``v<FORMAT>/`` so another format never reads these)::

    v1/entries/<key>.entry   magic, header length, JSON header, object file, then a SHA-256 of all before it
                             (a private cache) or an HMAC-SHA256 of it under the team key (a shared cache)
    v1/entries/<key>.hits    one byte appended per load: its size is the hit count, its mtime the last use
    v1/locks/<key>.lock      fcntl lock held while one process compiles that key

Writers write a temporary file (``O_EXCL``, a random name) in the same
folder and ``os.replace`` it, so a reader sees the old file, the new file or
none, never a part; a reader that finds a file failing its checksum treats it
as corrupt (the writer replaces it). Many processes of one user share a
folder; users share one only as a team cache (a key file, see below).

The trust model (docs/concepts/safety.md, "Threat model"): every folder level
(the root, ``v1``, ``entries``, ``locks``) and every file is checked after it
is opened and before it is used. In a private cache (the default) each must
be owned by this process's user and writable by nobody else; in a shared
cache (:func:`load_key`) a level may be another member's and group-writable,
never writable by every user, and an entry is loaded only when its HMAC
checks. Folders are opened once and then used through their descriptors
(``dir_fd``), so a folder renamed or replaced after its check is never
followed; files are opened with ``O_NOFOLLOW`` (a symbolic link is refused,
never followed) and ``O_NONBLOCK`` (a FIFO cannot block the open), and must be
regular files of bounded size before one byte is read.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import struct
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .key import FORMAT
from .settings import ENV_DIR, ENV_SHARED, MAX_ENTRY_SIZE

fcntl: Any  # POSIX; elsewhere the disk cache is refused (it cannot open files safely there)
try:
    import fcntl as _fcntl

    fcntl = _fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = [
    "MAGIC",
    "LOCK_WAIT_S",
    "Store",
    "EntryInfo",
    "Read",
    "STATUSES",
    "UntrustedPath",
    "current_uid",
    "decode",
    "encode",
    "load_key",
    "other_status",
    "untrusted_reason",
]

MAGIC = b"CUTE_BIND_CACHE\n"
_LEN = struct.Struct("<I")
_DIGEST = 32
_TMP_MAX_AGE_S = 3600.0
#: a shared cache's lock can be held by any group member: past this wait a compile goes on without it
LOCK_WAIT_S = 300.0
_KEY_MIN = 16  # bytes of key material: 128 bits
_KEY_MAX = 4096

# Every cache file is opened without following a final symbolic link, without blocking on a FIFO (the
# descriptor is checked, then made blocking again) and without leaking into child processes.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_SAFE = _NOFOLLOW | _NONBLOCK | _CLOEXEC
_DIR = os.O_RDONLY | _DIRECTORY | _CLOEXEC
#: what the checks need: O_NOFOLLOW, descriptor-relative calls, flock
_POSIX = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd and fcntl is not None

_PRIVATE_DIR = 0o700
_PRIVATE_FILE = 0o600
_SHARED_ENTRY = 0o640  # written once, read by the group
_SHARED_FILE = 0o660  # hit counters and locks: every member appends and locks (NFS locks need write access)


def current_uid() -> int:
    """The user a private cache must belong to: this process's effective uid.

    The one place the trust check asks who "we" are, so that a test can
    pretend to be someone else (as root, every file is root's own).
    """
    return os.geteuid()


class UntrustedPath(PermissionError):
    """A cache folder, file or key file that the trust model refuses; ``problem`` says why, ``fix`` what to do.

    ``what`` is ``"folder"``, ``"file"`` or ``"key"``. A :class:`PermissionError`,
    so code that treats any ``OSError`` as "no cache" stays safe.
    """

    def __init__(self, path: str | Path, problem: str, fix: str, what: str = "folder") -> None:
        super().__init__(errno.EPERM, problem, str(path))
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        self.what = what


def _kind(st: os.stat_result) -> str | None:
    """What a non-regular file is (``None`` for a regular file)."""
    m = st.st_mode
    if stat.S_ISREG(m):
        return None
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(m):
            return name
    return "not a regular file"


def untrusted_reason(st: os.stat_result, shared: bool) -> str | None:
    """Why a cache folder or file with this ``stat`` may not be used, or ``None`` (the rule of the threat model).

    Private cache: owned by :func:`current_uid` and writable by nobody else.
    Shared cache: not writable by every user (the group, and members' files, are allowed).
    """
    mode = stat.S_IMODE(st.st_mode)
    shown = f"mode {stat.filemode(st.st_mode)}"
    if mode & stat.S_IWOTH:
        return f"writable by every user ({shown})"
    if shared:
        return None
    uid = current_uid()
    if st.st_uid != uid:
        return f"owned by uid {st.st_uid}, not by this process's user (uid {uid})"
    if mode & stat.S_IWGRP:
        return f"writable by its group, gid {st.st_gid} ({shown})"
    return None


def _folder_fix(path: Path, problem: str, shared: bool) -> str:
    if "every user" in problem:
        return f"`chmod o-w {path}` (a cache folder is never writable by every user; a team shares one through its group)"
    if "owned by" in problem:
        return (
            f"use a folder of your own ({ENV_DIR}), or `chown` this one to you if it is yours; "
            f"to share a folder with a team, set {ENV_SHARED} to a key file (docs/concepts/cache.md)"
        )
    if "group" in problem:
        return f"`chmod g-w {path}`, or, to share it with the group, set {ENV_SHARED} to the team's key file (docs/concepts/cache.md)"
    return f"remove {path} or point {ENV_DIR} at another folder"


def _file_fix(path: Path) -> str:
    return f"remove it (`rm {path}`, or `python -m cute_bind cache prune`); cute_bind writes a new one"


@dataclass(frozen=True)
class Read:
    """What reading one entry found: ``status`` is ``"hit"``, ``"miss"``, ``"corrupt"``, ``"mismatch"``,
    ``"unsafe"`` (not a regular file of ours, or oversized: never read) or ``"unsigned"`` (a shared
    cache's entry whose HMAC does not check)."""

    status: str
    header: dict[str, Any] = field(default_factory=dict)
    payload: bytes = b""
    reason: str = ""


def _tag(body: bytes | memoryview, key: bytes | None) -> bytes:
    if key is None:
        return hashlib.sha256(body).digest()
    return hmac.new(key, body, hashlib.sha256).digest()


def encode(header: dict[str, Any], payload: bytes, key: bytes | None = None) -> bytes:
    """An entry's bytes: magic, header length, JSON header, payload, then SHA-256 of everything before it
    (``key`` given: HMAC-SHA256 under that key, a shared cache's signature)."""
    head = json.dumps(header, sort_keys=True).encode()
    body = MAGIC + _LEN.pack(len(head)) + head + payload
    return body + _tag(body, key)


def decode(data: bytes, key: str, expected: dict[str, str], mac_key: bytes | None = None) -> Read:
    """Check an entry's bytes: checksum (or, with ``mac_key``, the HMAC: ``unsigned``) first, then that it is
    this key's entry for this environment (``mismatch``). Nothing of an unsigned entry is parsed."""
    if len(data) < len(MAGIC) + _LEN.size + _DIGEST:
        return Read("corrupt", reason=f"truncated ({len(data)} bytes)")
    view = memoryview(data)
    body, digest = view[:-_DIGEST], bytes(view[-_DIGEST:])
    if mac_key is not None and not hmac.compare_digest(_tag(body, mac_key), digest):
        if hmac.compare_digest(_tag(body, None), digest):
            return Read("unsigned", reason="it was written without the team key (by a private cache)")
        return Read("unsigned", reason="its HMAC does not match the team key (forged, signed with another key, or damaged)")
    if not data.startswith(MAGIC):
        return Read("corrupt", reason="not a cute_bind cache entry (bad magic)")
    if mac_key is None and not hmac.compare_digest(_tag(body, None), digest):
        return Read("corrupt", reason="checksum mismatch (truncated, modified, or signed for a shared cache)")
    (n,) = _LEN.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _LEN.size
    try:
        header = json.loads(bytes(body[start : start + n]))
    except ValueError:
        return Read("corrupt", reason="unreadable header")
    if not isinstance(header, dict):
        return Read("corrupt", reason="unreadable header")
    payload = bytes(body[start + n :])
    if header.get("key") != key:
        return Read("mismatch", header, reason=f"the file holds key {str(header.get('key'))[:16]}")
    env = header.get("env", {})
    if not isinstance(env, dict):
        return Read("corrupt", header, reason="unreadable header")
    for name, value in expected.items():
        if env.get(name) != value:
            return Read("mismatch", header, reason=f"written for {name} {env.get(name)!r}, this process has {value!r}")
    if header.get("size") != len(payload):
        return Read("corrupt", header, reason="payload size differs from its header")
    return Read("hit", header, payload)


def read_exact(fd: int, size: int) -> bytes:
    """At most ``size`` bytes (the size checked before reading): a file growing meanwhile cannot make the read unbounded."""
    chunks = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _blocking(fd: int) -> None:
    """Clear ``O_NONBLOCK`` (set only so that opening a FIFO could not block)."""
    if _NONBLOCK and fcntl is not None:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        if flags & _NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~_NONBLOCK)


def load_key(path: Path, root: Path) -> bytes:
    """The shared cache's HMAC key, read from ``path``; :class:`UntrustedPath` (``what="key"``) when it may not be used.

    The key file must live outside the cache folder (whoever can write the
    folder must not be able to choose the key), be a regular file owned by
    this user or root, writable by nobody else and not readable by every user
    (the key is what a forger needs), and hold 16 to 4096 bytes (surrounding
    blank space is ignored).
    """
    fix = (
        f"keep the key in a file outside the cache folder, owned by you or root, mode 0640 or 0600 "
        f"(e.g. `python -c 'import secrets; print(secrets.token_hex(32))' > /etc/cute_bind/team.key`), and set {ENV_SHARED} to it"
    )
    if not _POSIX:
        raise UntrustedPath(path, "this platform cannot open the key file without following links", fix, "key")
    real = Path(os.path.realpath(path))
    real_root = os.path.realpath(root)
    if str(real) == real_root or str(real).startswith(real_root.rstrip(os.sep) + os.sep):
        raise UntrustedPath(
            path, f"the key file is inside the cache folder {root}: anyone who can write the folder could replace it", fix, "key"
        )
    try:
        fd = os.open(real, os.O_RDONLY | _SAFE)
    except OSError as exc:
        raise UntrustedPath(path, f"the key file cannot be opened ({exc.strerror or exc})", fix, "key") from None
    try:
        st = os.fstat(fd)
        kind = _kind(st)
        mode = stat.S_IMODE(st.st_mode)
        problem = None
        if kind is not None:
            problem = f"the key file is {kind}"
        elif st.st_uid not in (current_uid(), 0):
            problem = f"the key file is owned by uid {st.st_uid}, neither this user (uid {current_uid()}) nor root"
        elif mode & (stat.S_IWGRP | stat.S_IWOTH):
            problem = f"the key file is writable by others (mode {stat.filemode(st.st_mode)})"
        elif mode & stat.S_IROTH:
            problem = f"the key file is readable by every user (mode {stat.filemode(st.st_mode)})"
        elif st.st_size > _KEY_MAX:
            problem = f"the key file holds {st.st_size} bytes, more than a key ({_KEY_MAX} at most)"
        if problem is not None:
            raise UntrustedPath(path, problem, fix, "key")
        _blocking(fd)
        material = read_exact(fd, _KEY_MAX).strip()
    finally:
        os.close(fd)
    if len(material) < _KEY_MIN:
        raise UntrustedPath(path, f"the key file holds {len(material)} bytes of key, fewer than {_KEY_MIN}", fix, "key")
    return material


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
    status: str  # one of STATUSES (see there)
    path: Path
    reason: str = ""


#: What ``EntryInfo.status`` can be, and what it means (docs/concepts/cache.md, "The command line"). An
#: entry's status is relative to the process that looks: an entry written under ``CUTE_DSL_ARCH=sm_90a`` is
#: ``ok`` for a process with that setting and ``other-arch`` for one without.
STATUSES = {
    "ok": "this process can load it",
    "other-arch": "written for another target: other CUTE_DSL_* settings (such as CUTE_DSL_ARCH) or another machine or CPU",
    "other-version": "written by another nvidia-cutlass-dsl, cute_bind, Python or cache format",
    "corrupt": "damaged: truncated, modified, not an entry, or under another key's name",
    "unsafe": "not a regular file of yours (a link, FIFO, folder or foreign file): never read",
    "unsigned": "in a shared team cache, not signed with the team's key: never loaded",
}
#: ``environment()`` fields whose difference makes an entry ``other-version`` (the others make it ``other-arch``).
VERSION_FIELDS = ("format", "dsl", "cute_bind", "python")


def other_status(header: dict[str, Any], expected: dict[str, str]) -> tuple[str, str]:
    """``(status, reason)`` of an entry this process cannot use (a ``mismatch``): every field that differs."""
    env = header.get("env")
    env = env if isinstance(env, dict) else {}
    differ = [name for name, value in expected.items() if env.get(name) != value]
    if not differ:  # the key in the file is not its name's
        return "corrupt", f"the file holds key {str(header.get('key'))[:16]}"

    def spell(value: object) -> str:
        text = str(value) if value not in (None, "") else "none"
        return text if len(text) <= 40 else text[:16] + "..."

    words = {"dsl_env": "CUTE_DSL_* settings", "dsl": "nvidia-cutlass-dsl", "python": "Python", "format": "cache format"}
    reason = "; ".join(f"{words.get(name, name)} {spell(env.get(name))} vs {spell(expected[name])} here" for name in differ)
    return ("other-version" if any(name in VERSION_FIELDS for name in differ) else "other-arch"), reason


def _close_all(fds: list[int]) -> None:
    while fds:
        try:
            os.close(fds.pop())
        except OSError:
            pass


_ROOT, _BASE, _ENTRIES, _LOCKS = range(4)


class Store:
    """One cache folder, checked when opened (see the module docstring).

    ``key``: the shared cache's HMAC key (:func:`load_key`); ``None`` for a
    private cache. ``max_entry``: the largest entry read or written, bytes.
    The folder's descriptors are opened on first use and held until
    :meth:`close` (or the end of a ``with`` block, or garbage collection).
    """

    def __init__(self, root: Path, *, key: bytes | None = None, max_entry: int = MAX_ENTRY_SIZE) -> None:
        self.root = Path(root)
        self.base = self.root / f"v{FORMAT}"
        self.entries = self.base / "entries"
        self.locks = self.base / "locks"
        self.key = key
        self.shared = key is not None
        self.max_entry = max_entry
        self._fds: list[int] = []
        self._finalizer = weakref.finalize(self, _close_all, self._fds)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the folder's descriptors (a later use opens and checks it again)."""
        _close_all(self._fds)

    # -------------------------------------------------------------- opening and checking the folder
    def ensure(self) -> None:
        """Create the folders (mode 0700) and check every level; :class:`UntrustedPath` when one may not be
        used, ``OSError`` when they cannot be read and written."""
        self._open(create=True)

    def check(self) -> bool:
        """Check the folder without creating it: ``False`` when it does not exist, :class:`UntrustedPath` when it may not be used."""
        return self._open(create=False)

    def _open(self, create: bool) -> bool:
        if self._fds:
            return True
        if not _POSIX:
            raise UntrustedPath(self.root, "this platform cannot open cache files without following links", "set CUTE_BIND_CACHE=0")
        fds: list[int] = []
        try:
            made = False
            try:
                fd = os.open(self.root, _DIR)  # the root may be reached through links: it is the user's own choice
            except FileNotFoundError:
                if not create:
                    return False
                self.root.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.mkdir(self.root, _PRIVATE_DIR)
                    made = True
                except FileExistsError:
                    pass
                fd = os.open(self.root, _DIR)
            fds.append(fd)
            if made:
                os.fchmod(fd, _PRIVATE_DIR)  # whatever the umask; a team folder is made by hand (docs/concepts/cache.md)
            root_st = os.fstat(fd)
            self._check_dir(root_st, self.root)
            # levels below the root inherit its group access (a team folder's 2770, a private one's 0700)
            mode = _PRIVATE_DIR | ((stat.S_IMODE(root_st.st_mode) & (stat.S_ISGID | 0o070)) if self.shared else 0)
            for parent, name, path in ((_ROOT, self.base.name, self.base), (_BASE, "entries", self.entries), (_BASE, "locks", self.locks)):
                sub = self._subdir(fds[parent], name, path, mode, create)
                if sub is None:  # not created yet (a check or a listing creates nothing)
                    _close_all(fds)
                    return False
                fds.append(sub)
            for level, path in ((_ENTRIES, self.entries), (_LOCKS, self.locks)):
                if not os.access(".", os.R_OK | os.W_OK | os.X_OK, dir_fd=fds[level]):
                    raise PermissionError(errno.EACCES, "cannot read and write", str(path))
        except BaseException:
            _close_all(fds)
            raise
        self._fds[:] = fds
        return True

    def _subdir(self, parent: int, name: str, path: Path, mode: int, create: bool) -> int | None:
        made = False
        try:
            fd = self._open_dir(parent, name, path)
        except FileNotFoundError:
            if not create:
                return None
            try:
                os.mkdir(name, mode, dir_fd=parent)
                made = True
            except FileExistsError:
                pass
            fd = self._open_dir(parent, name, path)
        try:
            if made:
                os.fchmod(fd, mode)
            self._check_dir(os.fstat(fd), path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_dir(self, parent: int, name: str, path: Path) -> int:
        """A folder level, opened without following a link (a link there is refused, not followed)."""
        try:
            return os.open(name, _DIR | _NOFOLLOW, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                try:
                    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
                except OSError:
                    raise exc from None
                raise UntrustedPath(path, f"{_kind(st) or 'a file'}, not a folder", _folder_fix(path, "", self.shared)) from None
            raise

    def _check_dir(self, st: os.stat_result, path: Path) -> None:
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path))
        problem = untrusted_reason(st, self.shared)
        if problem is not None:
            raise UntrustedPath(path, problem, _folder_fix(path, problem, self.shared))

    def _fd(self, level: int) -> int:
        self._open(create=True)
        return self._fds[level]

    def _open_file(
        self, level: int, name: str, flags: int, *, create: int | None = None, single_link: bool = False
    ) -> tuple[int, os.stat_result]:
        """Open one cache file safely and check it: no link followed, no FIFO waited on, a regular file that is
        trusted (owner and mode) and at most ``max_entry`` bytes. ``create``: the mode of a new file (made
        with ``O_EXCL``, so it is exactly this file). ``single_link``: refuse a file with other hard links
        (one written into in place must not be another file's name too)."""
        dir_fd = self._fd(level)
        fd = -1
        for _ in range(3):  # a file removed between the two opens below: try again
            try:
                if create is not None:
                    try:
                        fd = os.open(name, flags | os.O_CREAT | os.O_EXCL | _SAFE, create, dir_fd=dir_fd)
                    except FileExistsError:
                        pass
                    else:
                        os.fchmod(fd, create)  # exact mode, whatever the umask
                        break
                fd = os.open(name, flags | _SAFE, dir_fd=dir_fd)
                break
            except FileNotFoundError:
                if create is None:
                    raise
            except OSError as exc:
                self._explain(dir_fd, name, self._path(level, name), exc)
        if fd < 0:
            raise FileNotFoundError(errno.ENOENT, "removed while opened", str(self._path(level, name)))
        try:
            st = os.fstat(fd)
            kind = _kind(st)
            problem = kind and f"{kind}, not a regular file"
            problem = problem or untrusted_reason(st, self.shared)
            if problem is None and st.st_size > self.max_entry:
                problem = f"{st.st_size} bytes, over the limit of {self.max_entry} bytes"
            if problem is None and single_link and st.st_nlink != 1:
                problem = f"a file with {st.st_nlink} names (hard links)"
            if problem is not None:
                path = self._path(level, name)
                raise UntrustedPath(path, problem, _file_fix(path), "file")
            _blocking(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def _path(self, level: int, name: str) -> Path:
        return (self.entries if level == _ENTRIES else self.locks) / name

    def _explain(self, dir_fd: int, name: str, path: Path, exc: OSError) -> None:
        """Re-raise a failed open as :class:`UntrustedPath` when the name is a link or a file we may not use."""
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            raise exc from None
        kind = _kind(st)
        problem = (kind and f"{kind}, not a regular file") or untrusted_reason(st, self.shared)
        if exc.errno == errno.ELOOP and not problem:
            problem = "a symbolic link"
        if problem:
            raise UntrustedPath(path, problem, _file_fix(path), "file") from None
        raise exc

    def entry_path(self, key: str) -> Path:
        return self.entries / f"{key}.entry"

    def hits_path(self, key: str) -> Path:
        return self.entries / f"{key}.hits"

    # -------------------------------------------------------------- one entry
    def read(self, key: str, expected: dict[str, str]) -> Read:
        """Read and check one entry; ``OSError`` only for a folder that cannot be used."""
        if not self._open(create=False):
            return Read("miss")
        return self._read_name(f"{key}.entry", key, expected)

    def _read_name(self, name: str, key: str, expected: dict[str, str]) -> Read:
        try:
            fd, st = self._open_file(_ENTRIES, name, os.O_RDONLY)
        except FileNotFoundError:
            return Read("miss")
        except UntrustedPath as exc:
            return Read("unsafe", reason=exc.problem)
        try:
            data = read_exact(fd, st.st_size)
        finally:
            os.close(fd)
        return decode(data, key, expected, self.key)

    def write(self, key: str, header: dict[str, Any], payload: bytes) -> Path:
        """Write an entry atomically: a new temporary file (``O_EXCL``, a random name) in the entries folder, then ``os.replace``."""
        data = encode(header, payload, self.key)
        if len(data) > self.max_entry:
            raise OSError(
                errno.EFBIG, f"an entry of {len(data)} bytes is over the limit of {self.max_entry} bytes", str(self.entry_path(key))
            )
        dir_fd = self._fd(_ENTRIES)
        tmp = f".{key[:16]}.{secrets.token_hex(8)}.tmp"
        mode = _SHARED_ENTRY if self.shared else _PRIVATE_FILE
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
        try:
            try:
                os.fchmod(fd, mode)
                _write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, f"{key}.entry", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        with contextlib.suppress(OSError):
            os.unlink(f"{key}.hits", dir_fd=dir_fd)  # a new entry starts with no hits
        return self.entry_path(key)

    def touch(self, key: str) -> None:
        """Count one hit and mark the entry used now (an append is atomic between processes); a counter that is
        a link, not a regular file or not ours is left alone."""
        with contextlib.suppress(OSError):
            fd, _ = self._open_file(
                _ENTRIES, f"{key}.hits", os.O_WRONLY | os.O_APPEND, create=_SHARED_FILE if self.shared else _PRIVATE_FILE, single_link=True
            )
            try:
                os.write(fd, b"+")
            finally:
                os.close(fd)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold the key's file lock (blocks while another process compiles it; in a shared cache at most
        :data:`LOCK_WAIT_S`, then goes on without it). :class:`UntrustedPath` for a lock file that is a link,
        not a regular file or not ours."""
        fd, _ = self._open_file(_LOCKS, f"{key}.lock", os.O_RDWR, create=_SHARED_FILE if self.shared else _PRIVATE_FILE)
        try:
            if self.shared:
                # any member can open and hold a shared lock: wait for it, but not forever
                deadline = time.monotonic() + LOCK_WAIT_S
                pause = 0.001
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            break
                        time.sleep(pause)
                        pause = min(pause * 2, 0.05)
            else:
                fcntl.flock(fd, fcntl.LOCK_EX)  # only this user's processes can open a private lock
            yield
        finally:
            # unlock before closing: a child forked meanwhile holds a copy of the descriptor, and a
            # flock lives until its last copy closes, so close alone would keep the key locked for
            # as long as that child lives (its own compile of the key would wait forever)
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def acquire(self, key: str) -> contextlib.ExitStack:
        """The key's lock, held until the returned stack is closed."""
        stack = contextlib.ExitStack()
        stack.enter_context(self.lock(key))
        return stack

    # -------------------------------------------------------------- the folder
    def _names(self, level: int) -> list[str]:
        try:
            return os.listdir(self._fds[level])
        except OSError:
            return []

    def _lstat(self, level: int, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self._fds[level], follow_symlinks=False)
        except OSError:
            return None

    def scan(self, expected: dict[str, str] | None = None) -> list[EntryInfo]:
        """Every entry, with its header and use; ``status`` checks each file (reads it whole, with the checks
        of a load: a link, FIFO, folder or file not ours is listed as ``unsafe`` and never read)."""
        if not self._open(create=False):
            return []
        out = []
        for name in sorted(self._names(_ENTRIES)):
            if not name.endswith(".entry"):
                continue
            key = name[: -len(".entry")]
            st = self._lstat(_ENTRIES, name)
            if st is None:
                continue
            r = self._read_name(name, key, expected or {})
            if r.status == "miss":  # removed meanwhile
                continue
            status, reason = {"hit": "ok"}.get(r.status, r.status), r.reason
            if r.status == "mismatch":  # which kind of other: a setting or machine, or a version
                status, reason = other_status(r.header, expected or {})
            created = r.header.get("created", st.st_mtime)
            hits, used = 0, st.st_mtime
            hs = self._lstat(_ENTRIES, f"{key}.hits")
            if hs is not None and stat.S_ISREG(hs.st_mode):
                hits, used = hs.st_size, max(used, hs.st_mtime)
            out.append(
                EntryInfo(
                    key=key,
                    kernel=str(r.header.get("kernel", "?")),
                    function=str(r.header.get("function", "?")),
                    size=st.st_size,
                    created=float(created) if isinstance(created, (int, float)) else st.st_mtime,
                    last_used=used,
                    hits=hits,
                    status=status,
                    path=self.entries / name,
                    reason=reason,
                )
            )
        return out

    def _usage(self) -> list[tuple[float, int, str]]:
        """``(last use, size, key)`` of every entry that is a regular file, from ``lstat`` alone (no reads)."""
        if not self._open(create=False):
            return []
        out = []
        for name in self._names(_ENTRIES):
            if not name.endswith(".entry"):
                continue
            key = name[: -len(".entry")]
            st = self._lstat(_ENTRIES, name)
            if st is None or not stat.S_ISREG(st.st_mode):
                continue
            used = st.st_mtime
            hs = self._lstat(_ENTRIES, f"{key}.hits")
            if hs is not None:
                used = max(used, hs.st_mtime)
            out.append((used, st.st_size, key))
        return out

    def remove(self, key: str) -> bool:
        """Remove an entry and its hit count (names only: a link is removed, never its target).
        Whether the entry's name is gone (a folder planted under it stays: never removed)."""
        # the lock file stays: a process may be waiting on it (prune removes idle ones)
        if not self._open(create=False):
            return False
        gone = False
        for name in (f"{key}.entry", f"{key}.hits"):
            try:
                os.unlink(name, dir_fd=self._fds[_ENTRIES])
                gone = gone or name.endswith(".entry")
            except FileNotFoundError:
                gone = gone or name.endswith(".entry")
            except OSError:
                pass
        return gone

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
            if self.remove(key):
                total -= size
                removed.append(key)
        return removed

    def prune(
        self, limit: int, older_than_s: float | None = None, expected: dict[str, str] | None = None, *, other: bool = False
    ) -> list[str]:
        """Remove corrupt, unsafe and unsigned entries, stale temporary files, stray and unused locks, entries
        unused for ``older_than_s``, with ``other`` the entries this environment cannot use (``other-arch``,
        ``other-version``: not by default, another environment sharing the folder may need them), then evict
        to ``limit``."""
        if not self._open(create=False):
            return []
        now = time.time()
        removed = []
        for e in self.scan(expected):
            stale = older_than_s is not None and now - e.last_used > older_than_s
            if (e.status in ("corrupt", "unsafe", "unsigned") or (other and e.status.startswith("other-")) or stale) and self.remove(e.key):
                removed.append(e.key)  # only what is gone: a folder under an entry's name is listed, not removed
        entries = self._fds[_ENTRIES]
        names = set(self._names(_ENTRIES))
        for name in names:
            st = self._lstat(_ENTRIES, name)
            if st is None:
                continue
            stale_tmp = name.endswith(".tmp") and now - st.st_mtime > _TMP_MAX_AGE_S
            orphan_hits = name.endswith(".hits") and name[: -len(".hits")] + ".entry" not in names
            if stale_tmp or orphan_hits:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=entries)
        for name in self._names(_LOCKS):
            if name[: -len(".lock")] + ".entry" not in names:
                self._remove_idle_lock(name)
        return removed + self.evict(limit)

    def _remove_idle_lock(self, name: str) -> None:
        locks = self._fds[_LOCKS]
        st = self._lstat(_LOCKS, name)
        if st is None:
            return
        if not stat.S_ISREG(st.st_mode):  # a link or FIFO where a lock belongs: remove the name, never open it
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=locks)
            return
        with contextlib.suppress(OSError):
            fd, _ = self._open_file(_LOCKS, name, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # only a lock nobody holds
                os.unlink(name, dir_fd=locks)
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)  # see lock(): a forked child's copy must not keep it
                os.close(fd)

    def clear(self) -> int:
        """Remove every entry, hit count, lock and temporary file (names only); returns the number of entries removed."""
        if not self._open(create=False):
            return 0
        n = 0
        for level in (_ENTRIES, _LOCKS):
            for name in self._names(level):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=self._fds[level])
                    n += name.endswith(".entry")
        return n

    def total_size(self) -> int:
        return sum(size for _, size, _ in self._usage())

    @contextlib.contextmanager
    def scratch(self, data: bytes) -> Iterator[str]:
        """A private file holding ``data`` in the checked entries folder (a new ``O_EXCL`` name), removed on exit:
        for a loader that reads from a path, where no anonymous file (``memfd``) is available."""
        dir_fd = self._fd(_ENTRIES)
        name = f".load.{secrets.token_hex(8)}.tmp"
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, _PRIVATE_FILE, dir_fd=dir_fd)
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            yield str(self.entries / name)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)
