"""The disk cache under attack and under pressure: hostile entries (property-based), eight concurrent writers,
a full disk.

``test_hostile_folder_never_loads_a_bad_entry`` drives the real :class:`~cute_bind.cache.lookup.Claim` (the
compile key, the DSL's export and load stood in for by bytes, so each example takes milliseconds) through
random sequences of what an attacker with write access, or a careless user, can leave in a cache folder:
random bytes, truncations, flipped bytes, symbolic links (to a file, to ``/dev/zero``, dangling, to a copy of
a valid entry), hard links, FIFOs, folders, sparse giant files, other modes and other owners, on entries,
hit counters, locks and each folder level. A reference model says whether the original entry may still be
loaded; the claim must agree both ways, never raise, never block, never write through a link.
``CUTE_BIND_CACHE_FUZZ_EXAMPLES`` sets the number of examples (200 by default, a few seconds: with 60, a check
removed was missed in some runs); ``pytest -m fuzz_long tests/cache/test_hostile_cache.py`` runs 5000
(``test_hostile_folder_long``: CI's fuzz step in ``.ci/run`` checks that it ran and passed, and
``benchmarks/device_job.sh fuzz`` runs it on the GPU machine).
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import stat
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cute_bind import dsl
from cute_bind.cache import lookup
from cute_bind.cache.store import Store, UntrustedPath, decode
from tests.child import child_env

from .conftest import IS_ROOT, OTHER_UID, TEAM_KEY, _no_disk_cache, deadline

EXAMPLES = int(os.environ.get("CUTE_BIND_CACHE_FUZZ_EXAMPLES", "200"))
LONG_EXAMPLES = 5000
KEY = "c0" * 32
GOOD = b"\x7fELF the compiled object " * 8

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only (FIFOs, links, owners)")


# ------------------------------------------------------------------ the reference model
class World:
    """One cache folder, the hostile things done to it, and what must still hold."""

    def __init__(self, base: Path, shared: bool) -> None:
        self.root = Path(tempfile.mkdtemp(dir=base))
        self.outside = Path(tempfile.mkdtemp(dir=base))  # where links point: must never change
        self.shared = shared
        if shared:
            os.chmod(self.root, 0o2770)
        self.levels = {
            "root": self.root,
            "v1": self.root / "v1",
            "entries": self.root / "v1" / "entries",
            "locks": self.root / "v1" / "locks",
        }
        self.level_ok = dict.fromkeys(self.levels, True)
        self.entry = "good"  # good, bad, absent, unsafe, folder
        self.entry_mode_ok = True
        self.precious: dict[Path, bytes] = {}
        self.never_created: list[Path] = []
        self.good_bytes = b""

    def path(self, target: str) -> Path:
        return {
            "entry": self.levels["entries"] / f"{KEY}.entry",
            "hits": self.levels["entries"] / f"{KEY}.hits",
            "lock": self.levels["locks"] / f"{KEY}.lock",
        }[target]

    def mode_ok(self, mode: int, foreign: bool) -> bool:
        if mode & 0o002:
            return False
        return self.shared or (not foreign and not mode & 0o020)

    def loadable(self) -> bool:
        return all(self.level_ok.values()) and self.entry == "good" and self.entry_mode_ok


def _clear(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        os.rmdir(p)
    elif os.path.lexists(p):
        os.unlink(p)


def _precious(w: World, name: str) -> Path:
    target = w.outside / name
    target.write_bytes(b"precious " + name.encode())
    w.precious[target] = target.read_bytes()
    return target


def _file_action(w: World, target: str, action: str, arg: int, data: bytes) -> None:
    p = w.path(target)
    is_entry = target == "entry"
    regular = os.path.lexists(p) and stat.S_ISREG(os.lstat(p).st_mode)
    if action == "bytes":
        _clear(p)
        p.write_bytes(data)
        os.chmod(p, 0o600)
        if is_entry:
            w.entry_mode_ok = True
    elif action == "truncate" and regular:
        size = p.stat().st_size
        os.truncate(p, arg % size if size else 0)
    elif action == "flip" and regular and p.stat().st_size:
        b = bytearray(p.read_bytes())
        b[arg % len(b)] ^= 1 << (arg % 8)
        p.write_bytes(bytes(b))
    elif action == "link_to_file":
        _clear(p)
        os.symlink(_precious(w, f"{target}-{arg}"), p)
        if is_entry:
            w.entry = "unsafe"
    elif action == "link_dangling":
        _clear(p)
        t = w.outside / f"never-{target}-{arg}"
        w.never_created.append(t)
        os.symlink(t, p)
        if is_entry:
            w.entry = "unsafe"
    elif action == "link_dev_zero":
        _clear(p)
        os.symlink("/dev/zero", p)
        if is_entry:
            w.entry = "unsafe"
    elif action == "link_to_good_copy":
        _clear(p)
        copy = w.outside / f"copy-{arg}.entry"
        copy.write_bytes(w.good_bytes)
        os.chmod(copy, 0o600)
        os.symlink(copy, p)
        if is_entry:
            w.entry = "unsafe"  # a valid entry, but reached through a link: never
    elif action == "hard_link":
        _clear(p)
        os.link(_precious(w, f"hard-{target}-{arg}"), p)
        if is_entry:
            w.entry_mode_ok = w.mode_ok(stat.S_IMODE(os.lstat(p).st_mode), False)
    elif action == "fifo":
        _clear(p)
        os.mkfifo(p, 0o600)
        if is_entry:
            w.entry = "unsafe"
    elif action == "folder":
        _clear(p)
        os.mkdir(p, 0o700)
        if is_entry:
            w.entry = "folder"
    elif action == "sparse_giant" and is_entry:
        _clear(p)
        with open(p, "wb") as f:
            f.truncate((1 << 30) + 1 + arg)
        os.chmod(p, 0o600)
        w.entry = "unsafe"
    elif action == "chmod" and regular:
        mode = (0o600, 0o640, 0o644, 0o660, 0o620, 0o666, 0o602)[arg % 7]
        os.chmod(p, mode)
        if is_entry:
            w.entry_mode_ok = w.mode_ok(mode, os.lstat(p).st_uid != os.geteuid())
    elif action == "chown" and regular and IS_ROOT:
        os.chown(p, OTHER_UID, OTHER_UID)
        if is_entry:
            w.entry_mode_ok = w.mode_ok(stat.S_IMODE(os.lstat(p).st_mode), True)
    elif action == "remove":
        _clear(p)
        if is_entry:
            w.entry = "absent"
    if is_entry and action in ("bytes", "truncate", "flip", "hard_link") and os.path.lexists(p) and stat.S_ISREG(os.lstat(p).st_mode):
        w.entry = "good" if p.read_bytes() == w.good_bytes else "bad"  # (two flips of one bit undo each other)


def _level_action(w: World, level: str, action: str, arg: int) -> None:
    p = w.levels[level]
    if action == "chmod":
        mode = (0o700, 0o755, 0o750, 0o770, 0o2770, 0o777, 0o1777, 0o703)[arg % 8]
        os.chmod(p, mode)
        st_ = os.stat(p)
        w.level_ok[level] = w.mode_ok(mode, st_.st_uid != os.geteuid())
    elif action == "chown" and IS_ROOT:
        os.chown(p, OTHER_UID, OTHER_UID)
        w.level_ok[level] = w.mode_ok(stat.S_IMODE(os.stat(p).st_mode), True)


FILE_ACTIONS = ["bytes", "truncate", "flip", "link_to_file", "link_dangling", "link_dev_zero", "link_to_good_copy", "hard_link", "fifo", "folder", "sparse_giant", "chmod", "chown", "remove"]  # fmt: skip
ACTIONS = st.one_of(
    st.tuples(st.sampled_from(["entry", "hits", "lock"]), st.sampled_from(FILE_ACTIONS), st.integers(0, 1 << 16), st.binary(max_size=300)),
    st.tuples(
        st.sampled_from(["root", "v1", "entries", "locks"]), st.sampled_from(["chmod", "chown"]), st.integers(0, 1 << 16), st.just(b"")
    ),
)


# ------------------------------------------------------------------ the claim, with bytes for compiled functions
@pytest.fixture
def claims(tmp_path, monkeypatch):
    """``Claim`` with its compile key, environment, export and load stood in for: a compiled function is its bytes."""
    if _no_disk_cache():
        pytest.skip("the installed DSL has no export/reload of compiled functions: the disk cache is off")
    monkeypatch.setattr(lookup, "entry_key", lambda kernel, compile_key: (KEY, []))
    monkeypatch.setattr(lookup, "environment", lambda: {})
    monkeypatch.setattr(lookup, "load_payload", lambda payload, prefix, store=None: ("loaded", payload))
    monkeypatch.setattr(dsl, "export_object", lambda compiled, prefix: compiled)
    # its own history: thousands of claims would push the other tests' events out of the bounded one
    monkeypatch.setattr(lookup, "_HISTORY", collections.deque(maxlen=1024))
    monkeypatch.delenv("CUTE_BIND_CACHE", raising=False)
    monkeypatch.delenv("CUTE_BIND_CACHE_SIZE", raising=False)
    key_dir = tmp_path / "keys"
    key_dir.mkdir(mode=0o700)
    key_file = key_dir / "team.key"
    key_file.write_bytes(TEAM_KEY)
    os.chmod(key_file, 0o600)
    kernel = SimpleNamespace(name="hostile", cache=True, fn=None)

    def use(w: World, compiled: bytes | None = None) -> object:
        """One claim as ``Kernel._compiled`` makes it: load, and on a miss store ``compiled``."""
        monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(w.root))
        if w.shared:
            monkeypatch.setenv("CUTE_BIND_CACHE_SHARED", str(key_file))
        else:
            monkeypatch.delenv("CUTE_BIND_CACHE_SHARED", raising=False)
        with lookup.claim(kernel, ("ck",)) as c:
            got = c.load()
            if got is None and compiled is not None:
                c.store(compiled)
        return got

    return SimpleNamespace(use=use, base=tmp_path)


def _hostile(examples: int):
    return lambda check: settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))(
        given(shared=st.booleans(), actions=st.lists(ACTIONS, min_size=1, max_size=5))(check)
    )


def test_hostile_folder_never_loads_a_bad_entry(claims):
    _hostile(EXAMPLES)(_check_hostile)(claims)


@pytest.mark.fuzz_long
def test_hostile_folder_long(claims, request):
    if "fuzz_long" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the long fuzzing run: pytest -m fuzz_long")
    _hostile(LONG_EXAMPLES)(_check_hostile)(claims)


def _check_hostile(claims, shared, actions):
    w = World(claims.base, shared)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CacheWarnings are tests/cache/test_trust.py's; here: no raise, no hang
        with deadline(30):  # milliseconds when nothing blocks; 5 s was too short for an ASan build on a loaded machine
            assert claims.use(w, GOOD) is None  # a cold claim: compiled and stored
            w.good_bytes = w.path("entry").read_bytes()
            assert claims.use(w) == ("loaded", GOOD)
            for target, action, arg, data in actions:
                if target in w.levels:
                    _level_action(w, target, action, arg)
                else:
                    _file_action(w, target, action, arg, data)
            # from here on nothing may change the files outside (the actions themselves write through hard links)
            w.precious = {t: t.read_bytes() for t in w.precious}
            got = claims.use(w, GOOD)  # must not raise
            # the claim agrees with the model, both ways: a bad entry never loads, a good one always does
            assert got == (("loaded", GOOD) if w.loadable() else None), (w.entry, w.entry_mode_ok, w.level_ok)
            if all(w.level_ok.values()) and w.entry != "folder":
                assert claims.use(w) == ("loaded", GOOD)  # the miss above stored a fresh entry over the name
            with Store(w.root, key=TEAM_KEY if shared else None) as s:  # cache info and prune: never raise but to refuse
                try:
                    s.scan({})
                    s.prune(1 << 30, None, {})
                except UntrustedPath:
                    assert not all(w.level_ok.values())
    for target, content in w.precious.items():
        assert target.read_bytes() == content, target  # nothing written through a link
    for target in w.never_created:
        assert not os.path.lexists(target), target  # nothing created at a link's target


# ------------------------------------------------------------------ concurrent writers
def _writer(root: str, shared: bool, keys: list[str], rounds: int, me: int, barrier, out) -> None:
    statuses: dict[str, int] = {}
    try:
        _write_and_read(Path(root), shared, keys, rounds, me, barrier, statuses)
    except BaseException as exc:  # reported, not a silent exit: the parent waits for one result per writer
        statuses[f"raised {exc!r}"] = 1
    out.put(statuses)


def _write_and_read(root: Path, shared: bool, keys: list[str], rounds: int, me: int, barrier, statuses: dict[str, int]) -> None:
    s = Store(root, key=TEAM_KEY if shared else None)
    s.ensure()
    barrier.wait(timeout=60)
    for r in range(rounds):
        for key in keys:
            payload = bytes([me]) * (500 + 37 * me + r)  # each writer's own bytes and length
            s.write(key, {"key": key, "size": len(payload), "env": {}}, payload)
            s.touch(key)
            got = s.read(key, {})
            # a whole entry of some writer: its bytes all that writer's number, its length one that writer wrote
            whole = got.status == "hit" and len(set(got.payload)) == 1 and 0 <= len(got.payload) - 500 - 37 * got.payload[0] < rounds
            status = got.status if whole else f"part: {got.status} {got.reason}"
            statuses[status] = statuses.get(status, 0) + 1
            with s.lock(key):
                pass
    s.close()


@pytest.mark.parametrize("shared", [False, True], ids=["private", "shared"])
@pytest.mark.parametrize("layout", ["one key", "many keys"])
def test_eight_concurrent_writers(tmp_path, shared, layout):
    root = tmp_path / "cache"
    root.mkdir(mode=0o2770 if shared else 0o700)
    os.chmod(root, 0o2770 if shared else 0o700)
    n = 8
    keys = [KEY] if layout == "one key" else [f"{i:02x}" * 32 for i in range(16)]
    rounds = 40 if layout == "one key" else 4
    ctx = multiprocessing.get_context("fork")  # the workers only use os and hashlib: no import per process
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(root), shared, keys, rounds, me, barrier, out)) for me in range(1, n + 1)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    total: dict[str, int] = {}
    for r in results:
        for k, v in r.items():
            total[k] = total.get(k, 0) + v
    assert total == {"hit": n * rounds * len(keys)}  # every read found a whole entry of some writer, never a part
    with Store(root, key=TEAM_KEY if shared else None) as s:
        infos = s.scan({})
        assert sorted(e.key for e in infos) == sorted(keys) and {e.status for e in infos} == {"ok"}
        for key in keys:
            r = decode(s.entry_path(key).read_bytes(), key, {}, TEAM_KEY if shared else None)
            assert r.status == "hit" and len(set(r.payload)) == 1
    left = [name for name in os.listdir(root / "v1" / "entries") if name.endswith(".tmp")]
    assert left == []  # no temporary file left behind


# ------------------------------------------------------------------ a full disk
FULL_DISK = """\
import ctypes, os, resource, sys, warnings
import cute_bind
from cute_bind.cache.store import Store
from tests.kernels import cached

limit = int(sys.argv[1])
write = Store.write

def write_to_a_full_disk(self, *args):
    # the disk fills up as the entry is written (LLVM writes files of its own while compiling, and aborts on EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # writes past this size fail (EFBIG)
    return write(self, *args)

if limit:
    Store.write = write_to_a_full_disk
buf = (ctypes.c_int32 * 1)()
with warnings.catch_warnings(record=True) as record:
    warnings.simplefilter("always", cute_bind.CacheWarning)
    handle = cached.affine.bind(ctypes.addressof(buf), 4, 9)
    handle.launch(ctypes.addressof(buf), 4)
codes = [w.message.code for w in record if isinstance(w.message, cute_bind.CacheWarning)]
entries = os.path.join(os.environ["CUTE_BIND_CACHE_DIR"], "v1", "entries")
print(repr((buf[0] == 2 * 4 + 9 + cached.STEP, [e.outcome for e in cute_bind.cache.history()], codes, sorted(os.listdir(entries)))))
"""


def test_a_full_disk_fails_the_write_cleanly(tmp_path):
    import ast

    if _no_disk_cache():
        pytest.skip("the installed DSL has no export/reload of compiled functions: the disk cache is off")
    script = tmp_path / "full.py"
    script.write_text(FULL_DISK)
    env = child_env()
    env["CUTE_BIND_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("CUTE_BIND_CACHE_SHARED", None)
    env.pop("CUTE_BIND_CACHE", None)

    def run(limit: int) -> tuple:
        proc = subprocess.run([sys.executable, str(script), str(limit)], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return ast.literal_eval(proc.stdout.strip().splitlines()[-1])

    ok, outcomes, codes, names = run(512)
    assert ok and outcomes == ["uncached"] and codes == ["CB607"]  # the kernel works; the write failed with a warning
    assert [n for n in names if n.endswith((".entry", ".tmp"))] == []  # no partial entry, no temporary file
    with Store(tmp_path / "cache") as s:  # room again: the same folder takes entries
        s.write(KEY, {"key": KEY, "size": len(GOOD), "env": {}}, GOOD)
        assert s.read(KEY, {}).payload == GOOD
