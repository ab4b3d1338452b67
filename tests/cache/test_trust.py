"""The cache's trust model (docs/concepts/safety.md, "Threat model"): whose folders and files are used, what a
planted file can do (nothing), the shared team cache's signatures, and where an object file is loaded from.

The attack of issue 22, row 1, is real: the control rows show a forged entry (another compile's object under
the victim's key) IS loaded from a folder the model trusts. Every other row plants the same forgery where the
model refuses it, and the kernel must compute the right value.
"""

from __future__ import annotations

import os
import stat
import tempfile
from types import SimpleNamespace

import pytest

import cute_bind
from cute_bind import dsl
from cute_bind.cache import store as store_module
from cute_bind.cache.store import Store, UntrustedPath, decode, encode, load_key
from tests.kernels import cached

from .conftest import (
    TEAM_KEY,
    _no_disk_cache,
    affine,
    affine_result,
    deadline,
    give_away,
    needs_root,
)

KEY = "ab" * 32
OTHER_KEY = b"another team's key, 32 bytes...."


def _row_id(row):
    """A table row's first column (a pytest.param's too) as its test id."""
    return row.values[0] if hasattr(row, "marks") else row[0]


# ------------------------------------------------------------------ the folder
def _levels(root):
    base = root / "v1"
    return {"root": root, "v1": base, "entries": base / "entries", "locks": base / "locks"}


def _damage_mode(mode):
    return lambda path: os.chmod(path, mode)


FOLDER_DAMAGE = [
    # (name, damage, refused in a private cache, refused in a shared cache)
    ("writable by every user", _damage_mode(0o777), True, True),
    ("writable by every user, sticky", _damage_mode(0o1777), True, True),
    ("writable by its group", _damage_mode(0o770), True, False),
    pytest.param("another user's", give_away, True, False, marks=needs_root),
]


@pytest.mark.parametrize("level", ["root", "v1", "entries", "locks"])
@pytest.mark.parametrize("name, damage, private_refused, shared_refused", FOLDER_DAMAGE)
@pytest.mark.parametrize("shared", [False, True], ids=["private", "shared"])
def test_each_folder_level_is_checked(tmp_path, level, name, damage, private_refused, shared_refused, shared):
    root = tmp_path / "cache"
    Store(root).ensure()
    damage(_levels(root)[level])
    s = Store(root, key=TEAM_KEY if shared else None)
    if shared_refused if shared else private_refused:
        with pytest.raises(UntrustedPath) as info:
            s.ensure()
        assert info.value.path == str(_levels(root)[level])
        assert info.value.fix and info.value.what == "folder"
        with pytest.raises(UntrustedPath):  # listing it is refused too (cache info, prune, clear)
            s.scan()
    else:
        s.ensure()
        s.write(KEY, {"key": KEY, "size": 3, "env": {}}, b"abc")
        assert s.read(KEY, {}).status == "hit"
    s.close()


@pytest.mark.parametrize("level", ["v1", "entries", "locks"])
def test_a_level_replaced_by_a_link_is_refused(tmp_path, level):
    """Below the root nothing is reached through a link (the root itself is the user's own choice of path)."""
    root = tmp_path / "cache"
    Store(root).ensure()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    path = _levels(root)[level]
    os.rename(path, elsewhere / "moved")
    os.symlink(elsewhere / "moved", path)
    with pytest.raises(UntrustedPath, match="symbolic link") as info:
        Store(root).ensure()
    assert info.value.path == str(path)


def test_the_root_may_be_a_link_to_a_folder_of_ones_own(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(real, tmp_path / "link")
    with Store(tmp_path / "link") as s:
        s.ensure()
        s.write(KEY, {"key": KEY, "size": 3, "env": {}}, b"abc")
        assert s.read(KEY, {}).status == "hit"


def test_a_cache_of_someone_else(tmp_path, monkeypatch):
    """Any user (root or not): a folder whose owner is not the process's user is refused. The check asks
    store.current_uid, pretended here to be another user; as root, the rows above also give files away for real."""
    root = tmp_path / "cache"
    Store(root).ensure()
    monkeypatch.setattr(store_module, "current_uid", lambda: os.geteuid() + 1)
    with pytest.raises(UntrustedPath, match="owned by uid") as info:
        Store(root).ensure()
    assert info.value.path == str(root)
    Store(root, key=TEAM_KEY).ensure()  # a shared cache may be another member's


def test_created_folders_are_private_even_under_a_permissive_umask(tmp_path):
    old = os.umask(0)
    try:
        Store(tmp_path / "a" / "cache").ensure()
    finally:
        os.umask(old)
    for path in _levels(tmp_path / "a" / "cache").values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path


# ------------------------------------------------------------------ a forged entry, through bind()
@pytest.fixture(scope="module")
def forgery(tmp_path_factory):
    """Two real entries of ``cached.affine`` (bias 1 and bias 2) and the attack of issue 22: bias 2's compiled
    object under bias 1's key, with a valid checksum. Loaded, it makes bias=1 compute bias 2's value."""
    if _no_disk_cache():
        pytest.skip("the installed DSL has no export/reload of compiled functions: the disk cache is off")
    folder = tmp_path_factory.mktemp("forge")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CUTE_BIND_CACHE_DIR", str(folder))
        mp.delenv("CUTE_BIND_CACHE_SHARED", raising=False)
        keys = {}
        for bias in (1, 2):
            cached.affine.clear_cache()
            assert affine(bias)[1] == ["compiled"]
            keys[bias] = cute_bind.cache.history()[-1].key
        cached.affine.clear_cache()
    path = Store(folder).entry_path(keys[2])
    b = decode(path.read_bytes(), keys[2], {})
    assert b.status == "hit"
    header = {**b.header, "key": keys[1]}
    return SimpleNamespace(
        key=keys[1],
        unsigned=encode(header, b.payload),
        signed=lambda k: encode(header, b.payload, k),
    )


def _plant(root, key, data, shared=False):
    """The forged entry, as an attacker with write access would leave it (then the row's condition)."""
    s = Store(root, key=TEAM_KEY if shared else None)
    s.ensure()
    s.close()
    path = s.entry_path(key)
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return path


def _symlink_to_copy(path):
    copy = path.parent.parent.parent.parent / "planted.entry"
    os.replace(path, copy)
    os.symlink(copy, path)


PRIVATE_ROWS = [
    # (row, condition applied after planting (root folder, entry path), CacheWarning code; None: loaded)
    ("control: a trusted folder and entry (the forgery loads: the attack is real)", lambda root, e: None, None),
    ("folder writable by every user", lambda root, e: os.chmod(root, 0o777), "CB610"),
    ("entries folder writable by its group", lambda root, e: os.chmod(e.parent, 0o770), "CB610"),
    ("entry writable by every user", lambda root, e: os.chmod(e, 0o666), "CB611"),
    ("entry writable by its group", lambda root, e: os.chmod(e, 0o620), "CB611"),
    ("entry a link to the forgery elsewhere", lambda root, e: _symlink_to_copy(e), "CB611"),
    pytest.param("entry of another user", lambda root, e: give_away(e), "CB611", marks=needs_root),
    pytest.param("folder of another user", lambda root, e: give_away(root), "CB610", marks=needs_root),
]


@pytest.mark.parametrize("row, condition, code", PRIVATE_ROWS, ids=[_row_id(r) for r in PRIVATE_ROWS])
def test_a_planted_entry_is_never_loaded_where_others_can_write(cache_dir, forgery, row, condition, code):
    entry = _plant(cache_dir, forgery.key, forgery.unsigned)
    condition(cache_dir, entry)
    cached.affine.clear_cache()
    value, outcomes, codes = affine(bias=1)
    cached.affine.clear_cache()
    if code is None:
        assert (value, outcomes, codes) == (affine_result(bias=2), ["hit"], [])
        return
    assert value == affine_result(bias=1)
    assert codes == [code] and outcomes in (["compiled"], ["uncached"])


SHARED_ROWS = [
    ("control: signed with the team key (a key holder is trusted)", lambda f: f.signed(TEAM_KEY), None),
    ("unsigned (a private cache's checksum)", lambda f: f.unsigned, "CB612"),
    ("signed with another key", lambda f: f.signed(OTHER_KEY), "CB612"),
    ("signed, then one byte changed", lambda f: f.signed(TEAM_KEY)[:-40] + b"!" + f.signed(TEAM_KEY)[-39:], "CB612"),
]


@pytest.mark.parametrize("row, forge, code", SHARED_ROWS, ids=[r[0] for r in SHARED_ROWS])
def test_a_shared_cache_loads_only_entries_signed_with_the_team_key(cache_dir, key_file, monkeypatch, forgery, row, forge, code):
    monkeypatch.setenv("CUTE_BIND_CACHE_SHARED", str(key_file))
    key_file.write_bytes(TEAM_KEY)
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o2770)  # a team folder: group-writable, setgid (docs/concepts/cache.md)
    _plant(cache_dir, forgery.key, forge(forgery), shared=True)
    cached.affine.clear_cache()
    value, outcomes, codes = affine(bias=1)
    cached.affine.clear_cache()
    if code is None:
        assert (value, outcomes, codes) == (affine_result(bias=2), ["hit"], [])
        return
    assert (value, outcomes, codes) == (affine_result(bias=1), ["compiled"], [code])
    value, outcomes, codes = affine(bias=1)  # the replacement is signed: loaded
    assert (value, outcomes, codes) == (affine_result(bias=1), ["hit"], [])
    cached.affine.clear_cache()


def test_a_shared_cache_round_trip_and_its_modes(cache_dir, key_file, monkeypatch):
    monkeypatch.setenv("CUTE_BIND_CACHE_SHARED", str(key_file))
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o2770)
    cached.affine.clear_cache()
    assert affine(bias=3) == (affine_result(bias=3), ["compiled"], [])
    cached.affine.clear_cache()
    assert affine(bias=3) == (affine_result(bias=3), ["hit"], [])
    (entry,) = cute_bind.cache.info()
    assert entry.status == "ok" and entry.hits == 1
    base = cache_dir / "v1"
    for folder in (base, base / "entries", base / "locks"):  # the root's group access and setgid, inherited
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o2770, folder
    assert stat.S_IMODE(os.stat(entry.path).st_mode) == 0o640  # written once, read by the group
    assert stat.S_IMODE(os.stat(entry.path.with_suffix(".hits")).st_mode) == 0o660
    assert stat.S_IMODE(os.stat(base / "locks" / f"{entry.key}.lock").st_mode) == 0o660
    # the same folder without the key: group-writable, so a private cache refuses it
    monkeypatch.delenv("CUTE_BIND_CACHE_SHARED")
    cached.affine.clear_cache()
    assert affine(bias=3) == (affine_result(bias=3), ["uncached"], ["CB610"])
    cached.affine.clear_cache()


def test_a_shared_cache_still_refuses_a_folder_every_user_can_write(cache_dir, key_file, monkeypatch):
    monkeypatch.setenv("CUTE_BIND_CACHE_SHARED", str(key_file))
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o777)
    cached.affine.clear_cache()
    assert affine(bias=3) == (affine_result(bias=3), ["uncached"], ["CB610"])
    assert not (cache_dir / "v1").exists()  # nothing written
    cached.affine.clear_cache()


# ------------------------------------------------------------------ the key file
def _fifo_key(k):
    os.unlink(k)
    os.mkfifo(k.parent / "fifo", 0o600)
    os.symlink(k.parent / "fifo", k)


KEY_FILES = [
    # (row, change to the good key file (path) -> the path to use, part of the refusal; None: accepted)
    ("accepted: 0600", lambda k: k, None),
    ("accepted: 0640, group-readable", lambda k: (os.chmod(k, 0o640), k)[1], None),
    ("accepted: through a link", lambda k: (os.symlink(k, k.parent / "link"), k.parent / "link")[1], None),
    ("inside the cache folder", lambda k: None, "inside the cache folder"),
    ("writable by its group", lambda k: (os.chmod(k, 0o660), k)[1], "writable by others"),
    ("readable by every user", lambda k: (os.chmod(k, 0o644), k)[1], "readable by every user"),
    ("too short", lambda k: (k.write_bytes(b"short\n"), k)[1], "fewer than 16"),
    ("missing", lambda k: k.parent / "absent.key", "cannot be opened"),
    ("a folder", lambda k: k.parent, "is a directory"),
    ("a link to a FIFO", lambda k: (_fifo_key(k), k)[1], "is a FIFO"),
    pytest.param("another user's", lambda k: (give_away(k), k)[1], "owned by uid", marks=needs_root),
]


@pytest.mark.parametrize("row, change, refusal", KEY_FILES, ids=[_row_id(r) for r in KEY_FILES])
def test_the_key_file_must_be_out_of_reach(tmp_path, key_file, row, change, refusal):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    path = change(key_file)
    if path is None:  # the key inside the cache folder
        path = root / "team.key"
        path.write_bytes(TEAM_KEY)
        os.chmod(path, 0o600)
    with deadline(10):
        if refusal is None:
            assert load_key(path, root) == TEAM_KEY
            return
        with pytest.raises(UntrustedPath, match=refusal) as info:
            load_key(path, root)
    assert info.value.what == "key" and info.value.fix


def test_an_unusable_key_file_means_no_cache(cache_dir, monkeypatch):
    cache_dir.mkdir(mode=0o700)
    inside = cache_dir / "team.key"
    inside.write_bytes(TEAM_KEY)
    os.chmod(inside, 0o600)
    monkeypatch.setenv("CUTE_BIND_CACHE_SHARED", str(inside))
    cached.affine.clear_cache()
    assert affine(bias=4) == (affine_result(bias=4), ["uncached"], ["CB613"])
    assert not (cache_dir / "v1").exists()  # nothing written
    cached.affine.clear_cache()


def test_a_relative_key_path_is_an_invalid_setting(cache_dir, monkeypatch):
    monkeypatch.setenv("CUTE_BIND_CACHE_SHARED", "team.key")
    cached.affine.clear_cache()
    with pytest.raises(cute_bind.CacheSettingError, match=r"\[CB609\].*CUTE_BIND_CACHE_SHARED"):
        affine(bias=4)


def test_signatures_at_the_store(tmp_path):
    root = tmp_path / "cache"
    with Store(root, key=TEAM_KEY) as s:
        s.write(KEY, {"key": KEY, "size": 3, "env": {}}, b"abc")
        assert s.read(KEY, {}).status == "hit"
    with Store(root, key=OTHER_KEY) as s:
        assert s.read(KEY, {}).status == "unsigned"
    with Store(root) as s:  # a private cache cannot check a signature: the checksum fails
        assert s.read(KEY, {}).status == "corrupt"
        s.write(KEY, {"key": KEY, "size": 3, "env": {}}, b"abc")
    with Store(root, key=TEAM_KEY) as s:
        r = s.read(KEY, {})
        assert (r.status, r.header, r.payload) == ("unsigned", {}, b"")  # nothing of it parsed
        assert "without the team key" in r.reason


# ------------------------------------------------------------------ files: links, FIFOs, sizes
@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "cache")
    s.ensure()
    s.write(KEY, {"key": KEY, "size": 3, "env": {}}, b"abc")
    yield s
    s.close()


def _outside(tmp_path, content=b"precious\n"):
    target = tmp_path / "outside.txt"
    target.write_bytes(content)
    return target


@pytest.mark.parametrize("dangling", [False, True], ids=["to a file", "dangling"])
def test_a_linked_hit_counter_is_not_followed(tmp_path, store, dangling):
    target = tmp_path / "created-by-the-victim" if dangling else _outside(tmp_path)
    os.symlink(target, store.hits_path(KEY))
    store.touch(KEY)
    assert store.read(KEY, {}).status == "hit"
    if dangling:
        assert not os.path.lexists(target)
    else:
        assert target.read_bytes() == b"precious\n"


def test_a_hard_linked_hit_counter_is_not_written(tmp_path, store):
    """A hard link cannot be refused by O_NOFOLLOW: a counter with another name is left alone."""
    target = _outside(tmp_path)
    os.link(target, store.hits_path(KEY))
    store.touch(KEY)
    assert target.read_bytes() == b"precious\n"


@pytest.mark.parametrize("dangling", [False, True], ids=["to a file", "dangling"])
def test_a_linked_lock_is_not_followed(tmp_path, store, dangling):
    target = tmp_path / "created-by-the-victim" if dangling else _outside(tmp_path)
    os.symlink(target, store.locks / f"{KEY}.lock")
    with pytest.raises(UntrustedPath, match="symbolic link"), store.lock(KEY):
        pass
    if dangling:
        assert not os.path.lexists(target)
    else:
        assert target.read_bytes() == b"precious\n"


def _fifo(path):
    os.mkfifo(path, 0o600)


def _dev_zero(path):
    os.symlink("/dev/zero", path)


def _folder(path):
    os.mkdir(path, 0o700)


def _sparse_2g(path):
    with open(path, "wb") as f:
        f.truncate((1 << 30) + 1)
    os.chmod(path, 0o600)


NOT_AN_ENTRY = [
    # (what is under the entry's name, part of the reason)
    (_fifo, "FIFO"),
    (_dev_zero, "symbolic link"),
    (_folder, "directory"),
    (_sparse_2g, "over the limit"),
]


@pytest.mark.parametrize("plant, reason", NOT_AN_ENTRY, ids=[p.__name__.strip("_") for p, _ in NOT_AN_ENTRY])
def test_what_is_not_an_entry_is_never_read_and_never_blocks(tmp_path, store, plant, reason, capsys, monkeypatch):
    from cute_bind.__main__ import main

    os.unlink(store.entry_path(KEY))
    plant(store.entry_path(KEY))
    with deadline(10):
        r = store.read(KEY, {})
        assert r.status == "unsafe" and reason in r.reason
        store.touch(KEY)
        (listed,) = store.scan()  # cache info lists it (a folder included)
        assert (listed.key, listed.status) == (KEY, "unsafe") and reason in listed.reason
        monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(store.root))
        assert main(["cache", "info"]) == 0
        out = capsys.readouterr().out
        assert "1 entries" in out and "unsafe (" in out
        assert main(["cache", "prune"]) == 0
    if plant is _folder:  # a folder is not removed (cute_bind never removes a tree it did not make)
        assert os.path.isdir(store.entry_path(KEY))
    else:
        assert not os.path.lexists(store.entry_path(KEY))


def test_an_entry_over_the_limit_is_neither_read_nor_written(tmp_path):
    with Store(tmp_path / "cache", max_entry=1000) as s:
        s.ensure()
        with pytest.raises(OSError, match="over the limit"):
            s.write(KEY, {"key": KEY, "size": 2000, "env": {}}, bytes(2000))
        assert os.listdir(s.entries) == []  # not even a temporary file
    with Store(tmp_path / "cache") as s:
        s.write(KEY, {"key": KEY, "size": 2000, "env": {}}, bytes(2000))
    with Store(tmp_path / "cache", max_entry=1000) as s:
        r = s.read(KEY, {})
        assert r.status == "unsafe" and "over the limit of 1000 bytes" in r.reason


@pytest.mark.parametrize("plant", [_fifo, _dev_zero], ids=["FIFO", "link to /dev/zero"])
def test_bind_does_not_block_on_a_planted_entry(cache_dir, plant):
    cached.affine.clear_cache()
    assert affine(bias=5)[1] == ["compiled"]
    (entry,) = cute_bind.cache.info()
    os.unlink(entry.path)
    plant(entry.path)
    cached.affine.clear_cache()
    with deadline(120):
        assert affine(bias=5) == (affine_result(bias=5), ["compiled"], ["CB611"])
    cached.affine.clear_cache()
    assert affine(bias=5)[1] == ["hit"]  # replaced by a regular entry
    cached.affine.clear_cache()


def test_bind_through_planted_counter_and_lock_links(tmp_path, cache_dir):
    cached.affine.clear_cache()
    assert affine(bias=6)[1] == ["compiled"]
    (entry,) = cute_bind.cache.info()
    target = _outside(tmp_path)
    os.symlink(target, entry.path.with_suffix(".hits"))
    cached.affine.clear_cache()
    assert affine(bias=6) == (affine_result(bias=6), ["hit"], [])  # the hit is not counted through the link
    lock = cache_dir / "v1" / "locks" / f"{entry.key}.lock"
    os.unlink(lock)
    os.symlink(tmp_path / "made-by-the-lock", lock)
    os.unlink(entry.path)
    cached.affine.clear_cache()
    assert affine(bias=6) == (affine_result(bias=6), ["compiled"], ["CB611"])  # compiled without the lock
    assert target.read_bytes() == b"precious\n" and not os.path.lexists(tmp_path / "made-by-the-lock")
    cached.affine.clear_cache()


# ------------------------------------------------------------------ where the object file is loaded from
def _loads(monkeypatch):
    seen = []
    real = dsl.load_object

    def spy(path, prefix):
        seen.append(path)
        return real(path, prefix)

    monkeypatch.setattr(dsl, "load_object", spy)
    return seen


def test_an_entry_is_loaded_from_memory_not_the_shared_temporary_folder(cache_dir, monkeypatch):
    cached.affine.clear_cache()
    assert affine(bias=7)[1] == ["compiled"]
    seen = _loads(monkeypatch)
    cached.affine.clear_cache()
    assert affine(bias=7) == (affine_result(bias=7), ["hit"], [])
    (path,) = seen
    assert not path.startswith(tempfile.gettempdir() + os.sep), path
    assert path.startswith("/proc/self/fd/")
    cached.affine.clear_cache()


def test_without_memfd_an_entry_is_loaded_from_a_private_file_in_the_cache(cache_dir, monkeypatch):
    cached.affine.clear_cache()
    assert affine(bias=8)[1] == ["compiled"]
    seen = _loads(monkeypatch)

    def no_memfd(*args):
        raise OSError("memfd_create is not available here")

    monkeypatch.setattr(os, "memfd_create", no_memfd)
    cached.affine.clear_cache()
    assert affine(bias=8) == (affine_result(bias=8), ["hit"], [])
    (path,) = seen
    assert os.path.dirname(path) == str(cache_dir / "v1" / "entries")
    assert [n for n in os.listdir(cache_dir / "v1" / "entries") if n.endswith(".tmp")] == []  # removed after the load
    cached.affine.clear_cache()


def test_the_cli_refuses_an_untrusted_folder_in_one_line(tmp_path, monkeypatch, capsys):
    from cute_bind.__main__ import main

    root = tmp_path / "cache"
    Store(root).ensure()
    os.chmod(root, 0o777)
    for action in ("info", "prune", "clear"):
        assert main(["cache", action, "--dir", str(root)]) == 2
        err = capsys.readouterr().err
        assert f"cute-bind cache {action}: {root} is not trusted: it is writable by every user" in err and "fix: `chmod o-w" in err
    with pytest.raises(UntrustedPath):
        cute_bind.cache.info(root)


def test_a_shared_lock_held_by_another_member_is_waited_for_a_bounded_time(tmp_path, monkeypatch):
    """Any member can hold a shared cache's lock for good: the wait ends (the compile goes on without it)."""
    import fcntl

    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.2)
    with Store(tmp_path / "cache", key=TEAM_KEY) as s:
        s.ensure()
        with s.lock(KEY):  # creates the lock file
            pass
        holder = os.open(s.locks / f"{KEY}.lock", os.O_RDWR)  # another member's process, holding it
        try:
            fcntl.flock(holder, fcntl.LOCK_EX)
            with deadline(10), s.lock(KEY):
                pass
        finally:
            os.close(holder)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts this process's descriptors in /proc")
def test_checking_a_folder_creates_nothing_and_leaks_no_descriptor(tmp_path):
    root = tmp_path / "cache"
    (root / "v1").mkdir(parents=True, mode=0o700)  # a partial folder: no entries/ or locks/ yet
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        s = Store(root)
        assert s.check() is False and s.scan() == [] and s.read(KEY, {}).status == "miss"
        s.close()
    assert len(os.listdir("/proc/self/fd")) == before
    assert os.listdir(root / "v1") == []
