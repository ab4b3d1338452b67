import contextlib
import ctypes
import importlib
import linecache
import os
import signal
import sys
import textwrap
import warnings

import pytest

import cute_bind


def _no_disk_cache() -> bool:
    from cute_bind import dsl

    return not dsl.features().disk_cache


#: for tests that set the cache folder themselves instead of taking ``cache_dir``
needs_disk_cache = pytest.mark.skipif(
    _no_disk_cache(), reason="the installed DSL has no export/reload of compiled functions: the disk cache is off"
)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private, empty cache folder for one test (and the cache on).

    Skips where the installed DSL cannot export and reload a compiled
    function (nvidia-cutlass-dsl 4.5): there the disk cache is off.
    """
    if _no_disk_cache():
        pytest.skip("the installed DSL has no export/reload of compiled functions: the disk cache is off")
    d = tmp_path / "cache"
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(d))
    monkeypatch.delenv("CUTE_BIND_CACHE", raising=False)
    monkeypatch.delenv("CUTE_BIND_CACHE_SIZE", raising=False)
    return d


class Modules:
    """Write kernel modules as source files and import them afresh (the DSL compiles from source files)."""

    def __init__(self, root, monkeypatch):
        self.root = root
        monkeypatch.syspath_prepend(str(root))
        monkeypatch.setattr(sys, "dont_write_bytecode", True)  # every import reads the source just written
        self.names = set()

    def load(self, name, source, **more):
        for n in list(self.names):
            sys.modules.pop(n, None)
        for mod_name, text in {name: source, **more}.items():
            (self.root / f"{mod_name}.py").write_text(textwrap.dedent(text))
            self.names.add(mod_name)
        linecache.clearcache()
        importlib.invalidate_caches()
        return importlib.import_module(name)

    def cleanup(self):
        for n in self.names:
            sys.modules.pop(n, None)


@pytest.fixture
def modules(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    m = Modules(src, monkeypatch)
    yield m
    m.cleanup()


def outcomes_since(before):
    return [e.outcome for e in cute_bind.cache.history(since=before)]


# ------------------------------------------------------------------ the trust model's tests (test_trust.py, test_hostile_cache.py)
#: as root a file can really be given to another user; elsewhere those rows skip (test_trust.py's
#: test_a_cache_of_someone_else pretends instead, through store.current_uid)
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
OTHER_UID = 54321
needs_root = pytest.mark.skipif(not IS_ROOT, reason="giving a file another owner needs root")
TEAM_KEY = b"7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a"


def give_away(path):
    """Make ``path`` (not following a link) another user's, for real (root only)."""
    os.lchown(path, OTHER_UID, OTHER_UID)


class StillBlocked(BaseException):
    """Raised by :func:`deadline`: a BaseException, so that no ``except OSError`` (TimeoutError is one) or
    ``except Exception`` on the way swallows it and blocks again."""


@contextlib.contextmanager
def deadline(seconds):
    """Fail instead of blocking for good (a FIFO opened for reading blocks until a writer comes); the alarm
    repeats every second after the first, in case something still swallows it."""

    def on_alarm(signum, frame):
        raise StillBlocked(f"still blocked after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def key_file(tmp_path):
    """A team key file outside any cache folder: 0600, 64 hex digits."""
    d = tmp_path / "keys"
    d.mkdir(mode=0o700)
    k = d / "team.key"
    k.write_bytes(TEAM_KEY + b"\n")
    os.chmod(k, 0o600)
    return k


def affine(bias=1, value=4):
    """Bind and launch ``cached.affine``: (what it wrote, the cache outcomes, the CacheWarning codes issued)."""
    from tests.kernels import cached

    buf = (ctypes.c_int32 * 1)()
    before = cute_bind.cache.mark()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", cute_bind.CacheWarning)
        handle = cached.affine.bind(ctypes.addressof(buf), value, bias)
        handle.launch(ctypes.addressof(buf), value)
    codes = [w.message.code for w in record if isinstance(w.message, cute_bind.CacheWarning)]
    return buf[0], outcomes_since(before), codes


def affine_result(bias=1, value=4):
    from tests.kernels import cached

    return 2 * value + bias + cached.STEP


# ------------------------------------------------------------------ checks as an unprivileged user (root reads any folder)
def unprivileged_ids():
    """``(uid, gid)`` of an unprivileged user to switch to (``nobody``, else 65534), or None when not root."""
    if not IS_ROOT:
        return None
    try:
        import pwd

        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except (ImportError, KeyError):
        return 65534, 65534


def run_unprivileged(check, ids, seconds=240):
    """Run ``check()`` in a forked child that dropped root for ``ids`` (no supplementary groups) and return
    what it returned (JSON data). The child never returns into pytest: it writes its result and ``_exit``s.

    Skips (saying why) only where the switch itself is refused, as in a user namespace without that uid;
    anything ``check`` raises fails the test with the child's traceback. Everything the check imports should
    be imported before (a child of another user may not read the interpreter's own files)."""
    import json
    import traceback

    uid, gid = ids
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing here may return into pytest
        status = 0
        try:
            os.close(r)
            try:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
            except OSError as exc:
                result = {"skip": f"cannot switch to uid {uid}/gid {gid}: {exc}"}
            else:
                result = {"uid": os.geteuid(), "value": check()}
        except BaseException:
            result = {"error": traceback.format_exc()}
        try:
            data = json.dumps(result).encode()
            while data:
                data = data[os.write(w, data) :]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(w)
    chunks = []
    try:
        with deadline(seconds):
            while chunk := os.read(r, 1 << 16):
                chunks.append(chunk)
            _, status = os.waitpid(pid, 0)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(r)
    assert status == 0, f"the unprivileged child exited with status {status}"
    result = json.loads(b"".join(chunks) or b"{}")
    if "skip" in result:
        pytest.skip(result["skip"])
    assert "error" not in result, result["error"]
    assert result.get("uid") == uid, result
    return result["value"]
