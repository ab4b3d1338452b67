"""The cache folder under damage and pressure: corruption, version mismatch, an unusable folder, eviction, the CLI."""

from __future__ import annotations

import ctypes
import os
import warnings
from pathlib import Path

import pytest

import cute_bind
from cute_bind.cache import store as store_module
from cute_bind.cache.store import decode, encode
from tests.kernels import cached

from .conftest import needs_disk_cache, outcomes_since, run_unprivileged, unprivileged_ids


def _bind(bias=1, value=4):
    buf = (ctypes.c_int32 * 1)()
    before = cute_bind.cache.mark()
    handle = cached.affine.bind(ctypes.addressof(buf), value, bias)
    handle.launch(ctypes.addressof(buf), value)
    assert buf[0] == 2 * value + bias + cached.STEP
    return outcomes_since(before)


@pytest.fixture
def entry(cache_dir):
    """The cache holding affine's entry, and the kernel forgetting its in-process compile."""
    cached.affine.clear_cache()
    assert _bind() == ["compiled"]
    (e,) = cute_bind.cache.info()
    cached.affine.clear_cache()
    yield e
    cached.affine.clear_cache()


def _truncate(path, data):
    path.write_bytes(data[: len(data) // 2])


def _flip(path, data):
    b = bytearray(data)
    b[len(b) // 2] ^= 0xFF
    path.write_bytes(bytes(b))


def _flip_checksum(path, data):
    b = bytearray(data)
    b[-1] ^= 0x01
    path.write_bytes(bytes(b))


def _garbage(path, data):
    path.write_bytes(b"not an entry")


def _empty(path, data):
    path.write_bytes(b"")


def _other_version(path, data):
    r = decode(data, path.stem, {})
    r.header["env"]["dsl"] = "4.7.0 cu12"
    path.write_bytes(encode(r.header, r.payload))


def _other_key(path, data):
    r = decode(data, path.stem, {})
    r.header["key"] = "0" * 64
    path.write_bytes(encode(r.header, r.payload))


def _bad_object(path, data):
    r = decode(data, path.stem, {})
    payload = b"\x7fELF" + bytes(len(r.payload) - 4)  # a valid entry whose object file the DSL cannot load
    path.write_bytes(encode(r.header, payload))


# (damage, code of the warning)
DAMAGE = [
    (_truncate, "CB605"),
    (_flip, "CB605"),
    (_flip_checksum, "CB605"),
    (_garbage, "CB605"),
    (_empty, "CB605"),
    (_other_version, "CB606"),
    (_other_key, "CB606"),
    (_bad_object, "CB606"),
]


@pytest.mark.parametrize("damage, code", DAMAGE, ids=[d.__name__.strip("_") for d, _ in DAMAGE])
def test_a_damaged_entry_warns_once_recompiles_and_is_replaced(entry, damage, code):
    good = entry.path.read_bytes()
    damage(entry.path, good)
    with pytest.warns(cute_bind.CacheWarning, match=rf"\[{code}\]") as record:
        assert _bind() == ["compiled"]
    assert [w.message.code for w in record if isinstance(w.message, cute_bind.CacheWarning)] == [code]
    (after,) = cute_bind.cache.info()
    assert after.status == "ok" and after.key == entry.key
    cached.affine.clear_cache()
    assert _bind() == ["hit"]  # the replacement is a valid entry
    # the same damage again in this process: recompiled again, but not reported twice
    cached.affine.clear_cache()
    damage(entry.path, good)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cute_bind.CacheWarning)
        assert _bind() == ["compiled"]


@needs_disk_cache
def test_unusable_folder_compiles_without_the_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(blocker / "cache"))
    cached.affine.clear_cache()
    with pytest.warns(cute_bind.CacheWarning, match=r"\[CB607\]"):
        assert _bind(bias=5) == ["uncached"]  # compiled in-process, nothing stored
    cached.affine.clear_cache()


def _unreadable_cache(root):
    """A cache folder whose ``v1/entries`` nobody but root may read."""
    (root / "v1" / "entries").mkdir(parents=True, mode=0o700)
    (root / "v1" / "locks").mkdir(mode=0o700)
    os.chmod(root, 0o700)
    os.chmod(root / "v1", 0o700)
    return root / "v1" / "entries"


def _bind_into_the_unreadable_folder(root, entries):
    """Bind with the cache folder ``root``: (CacheWarning codes, outcomes, whether the entries were readable)."""
    os.environ["CUTE_BIND_CACHE_DIR"] = str(root)
    cached.affine.clear_cache()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", cute_bind.CacheWarning)
        outcomes = _bind(bias=6)
    codes = [w.message.code for w in record if isinstance(w.message, cute_bind.CacheWarning)]
    return {"codes": codes, "outcomes": outcomes, "readable": os.access(entries, os.R_OK)}


@needs_disk_cache
def test_unreadable_folder_compiles_without_the_cache(tmp_path, monkeypatch):
    """A cache folder this user cannot read: CB607, compiled in-process, nothing stored.

    Root reads any folder, and CI runs as root, so there the check runs in a forked child that switched to
    an unprivileged user (nobody); it skipped as root before (issue 39)."""
    ids = unprivileged_ids()
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(tmp_path / "unused"))  # restored after the test
    if ids is None:  # an ordinary user: in this process
        entries = _unreadable_cache(tmp_path / "locked")
        os.chmod(entries, 0)
        try:
            got = _bind_into_the_unreadable_folder(tmp_path / "locked", entries)
        finally:
            os.chmod(entries, 0o700)
            cached.affine.clear_cache()
    else:
        import shutil
        import tempfile

        # the child can reach neither pytest's folders (root's, 0700) nor, maybe, the interpreter's files:
        # a folder of its own under a fresh 0755 one, and every import done here first
        monkeypatch.setenv("CUTE_BIND_CACHE", "0")
        cached.affine.clear_cache()
        _bind(bias=6)
        cached.affine.clear_cache()
        monkeypatch.delenv("CUTE_BIND_CACHE")
        outer = tempfile.mkdtemp(prefix="cute-bind-unreadable-")
        try:
            os.chmod(outer, 0o755)
            root = Path(outer) / "locked"
            root.mkdir(mode=0o700)
            entries = _unreadable_cache(root)
            for path in (root, root / "v1", entries, root / "v1" / "locks"):
                os.chown(path, *ids)
            os.chmod(entries, 0)
            got = run_unprivileged(lambda: _bind_into_the_unreadable_folder(root, entries), ids)
        finally:
            shutil.rmtree(outer, ignore_errors=True)
            cached.affine.clear_cache()
    assert got == {"codes": ["CB607"], "outcomes": ["uncached"], "readable": False}, got


def test_a_reader_never_sees_a_partial_write(cache_dir):
    """Writes go to a temporary file and are renamed: the entry path holds a whole file or none."""
    s = store_module.Store(cache_dir)
    s.ensure()
    key = "ab" * 32
    header = {"key": key, "size": 3, "env": {}}
    s.write(key, header, b"abc")
    assert decode(s.entry_path(key).read_bytes(), key, {}).status == "hit"
    assert [n for n in os.listdir(s.entries) if n.endswith(".tmp")] == []


def _fill(keys, sizes, store):
    for i, (k, n) in enumerate(zip(keys, sizes)):
        store.write(k, {"key": k, "size": n, "env": {}, "kernel": f"k{i}"}, bytes(n))
        t = 1_000_000 + i  # explicit, increasing last-use times
        os.utime(store.entry_path(k), (t, t))


@pytest.mark.parametrize(
    "used_last, limit, kept",
    [
        (None, 10_000, {"a", "b", "c", "d"}),  # under the limit: nothing evicted
        (None, 5_000, {"c", "d"}),  # oldest first
        ("a", 5_000, {"a", "d"}),  # a hit makes an entry recent again
        ("b", 2_500, {"b"}),
    ],
)
def test_eviction_is_least_recently_used_first(cache_dir, used_last, limit, kept):
    s = store_module.Store(cache_dir)
    s.ensure()
    keys = {c: c * 64 for c in "abcd"}
    _fill(list(keys.values()), [2000] * 4, s)
    if used_last:
        s.touch(keys[used_last])
    s.evict(limit)
    left = {e.key[0] for e in s.scan()}
    assert left == kept
    assert s.total_size() <= limit or len(left) == 1


def test_the_size_limit_applies_when_storing(cache_dir, monkeypatch):
    monkeypatch.setenv("CUTE_BIND_CACHE_SIZE", "10K")
    cached.affine.clear_cache()
    for bias in range(6):
        assert _bind(bias=bias) == ["compiled"]
    entries = cute_bind.cache.info()
    assert sum(e.size for e in entries) <= 10 * 1024
    assert 1 <= len(entries) < 6
    cached.affine.clear_cache()
    assert _bind(bias=5) == ["hit"]  # the newest entry stayed
    cached.affine.clear_cache()


@pytest.mark.parametrize(
    "setting, value",
    [
        ("CUTE_BIND_CACHE", "maybe"),
        ("CUTE_BIND_CACHE_SIZE", "lots"),
        ("CUTE_BIND_CACHE_SIZE", "-5M"),
        # float() takes these: bind() raised a raw ValueError/OverflowError
        ("CUTE_BIND_CACHE_SIZE", "nan"),
        ("CUTE_BIND_CACHE_SIZE", "inf"),
        ("CUTE_BIND_CACHE_SIZE", "1e400"),
        ("CUTE_BIND_CACHE_SIZE", "NaNG"),
        ("CUTE_BIND_CACHE_SIZE", "1e308G"),
    ],
)
def test_invalid_settings_raise_cb609(cache_dir, monkeypatch, setting, value):
    monkeypatch.setenv(setting, value)
    cached.affine.clear_cache()
    with pytest.raises(cute_bind.CacheSettingError, match=r"\[CB609\].*" + setting) as info:
        _bind(bias=7)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", ["cache", "./cache", "sub/dir", "   "], ids=["bare name", "dot", "nested", "blanks"])
def test_a_relative_cache_folder_setting_is_refused_not_used(cache_dir, tmp_path, monkeypatch, value):
    """CUTE_BIND_CACHE_DIR=cache made a folder under each working directory: the cache moved with the cwd
    (issue 39 row 15). CB609 names the setting and the fix, before compiling; nothing is created."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", value)
    cached.affine.clear_cache()
    with pytest.raises(cute_bind.CacheSettingError, match=r"\[CB609\].*CUTE_BIND_CACHE_DIR.*absolute path") as info:
        _bind(bias=8)
    assert "unset it for the default" in str(info.value)
    assert os.listdir(work) == []  # no folder made under the working directory
    cached.affine.clear_cache()


@pytest.mark.parametrize(
    "text, size", [("0", 0), ("1024", 1024), ("4K", 4096), ("1.5M", 3 << 19), ("2G", 2 << 30), ("2GiB", 2 << 30), (" 8 kb ", 8192)]
)
def test_size_settings(text, size):
    assert cute_bind.cache.settings.parse_size(text) == size


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"CUTE_BIND_CACHE_DIR": "/x/y"}, "/x/y"),
        ({"XDG_CACHE_HOME": "/xdg"}, "/xdg/cute_bind"),
        ({"XDG_CACHE_HOME": "relative"}, "~/.cache/cute_bind"),
        ({}, "~/.cache/cute_bind"),
    ],
)
def test_cache_folder(monkeypatch, env, expected):
    import sys

    if sys.platform != "linux":
        pytest.skip("the XDG rules are the Linux ones")
    for name in ("CUTE_BIND_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert str(cute_bind.cache.cache_dir()) == os.path.expanduser(expected)


def test_cli_info_clear_prune(cache_dir, capsys):
    from cute_bind.__main__ import main

    cached.affine.clear_cache()
    _bind(bias=1)
    _bind(bias=2)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "2 entries" in out and out.count("affine") == 2 and str(cache_dir) in out
    (cache_dir / "v1" / "entries" / ("f" * 64 + ".entry")).write_bytes(b"junk")
    assert main(["cache", "prune"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert main(["cache", "prune", "--max-size", "0"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    _bind(bias=3)
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert cute_bind.cache.info() == []
    cached.affine.clear_cache()


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["cache", "prune", "--max-size", "banana"], "the disk cache setting --max-size is invalid: expected a size"),
        (["cache", "prune", "--older-than", "-3"], "the age must be 0 days or more"),
        (["cache", "prune", "--older-than", "soon"], "is not a number of days"),
        (["cache", "prune", "--max-size", "nan"], "the disk cache setting --max-size is invalid: expected a size"),
        (["cache", "prune", "--max-size", "inf"], "the disk cache setting --max-size is invalid: expected a size"),
    ],
    ids=["size", "negative age", "not a number", "nan size", "infinite size"],
)
def test_cli_refuses_nonsense_in_one_line(tmp_path, monkeypatch, capsys, argv, fragment):
    from cute_bind.__main__ import main

    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(tmp_path))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and "Traceback" not in err


def _cli(argv, capsys):
    from cute_bind.__main__ import main

    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# (row, argv after "cache ACTION", what stderr names): each refused in one line, exit 2, nothing removed
EMPTY_ARGUMENTS = [
    ("--dir empty", ["--dir", ""], "the disk cache setting --dir is invalid"),
    ("--dir blanks", ["--dir", "  "], "the disk cache setting --dir is invalid"),
]


@pytest.mark.parametrize("action", ["info", "clear", "prune"])
@pytest.mark.parametrize("row, extra, fragment", EMPTY_ARGUMENTS, ids=[r[0] for r in EMPTY_ARGUMENTS])
def test_an_empty_dir_argument_is_refused_not_the_default_folder(cache_dir, capsys, action, row, extra, fragment):
    """``cute-bind cache clear --dir "$CACHE"`` with CACHE unset cleared the default folder (issue 39 row 15)."""
    cached.affine.clear_cache()
    _bind(bias=21)  # an entry in the folder an empty --dir fell back to
    code, out, err = _cli(["cache", action, *extra], capsys)
    assert code == 2 and fragment in err and "Traceback" not in err, (row, code, err)
    assert "leave --dir out" in err
    assert "removed" not in out
    assert len(cute_bind.cache.info()) == 1  # still there
    cached.affine.clear_cache()


def test_an_empty_max_size_is_refused_not_the_default_limit(cache_dir, capsys):
    cached.affine.clear_cache()
    _bind(bias=22)
    code, out, err = _cli(["cache", "prune", "--max-size", ""], capsys)
    assert code == 2 and "the disk cache setting --max-size is invalid" in err and "Traceback" not in err
    assert len(cute_bind.cache.info()) == 1
    cached.affine.clear_cache()


@pytest.mark.parametrize("action", ["info", "clear", "prune"])
def test_the_cli_refuses_a_relative_cache_folder_setting(tmp_path, monkeypatch, capsys, action):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", "relative-cache")
    code, out, err = _cli(["cache", action], capsys)
    assert code == 2 and "CUTE_BIND_CACHE_DIR is invalid" in err and "absolute path" in err and "Traceback" not in err, err
    assert os.listdir(tmp_path) == []


def test_a_relative_dir_argument_is_the_working_directory_s(tmp_path, monkeypatch, capsys):
    """A path on the command line is taken from the working directory, as any path argument (and printed whole)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(["cache", "info", "--dir", "here"], capsys)
    assert code == 0, err
    assert f"cache folder: {tmp_path / 'here'}" in out


@pytest.mark.parametrize("call", ["info", "clear", "prune"])
@pytest.mark.parametrize("root", ["", "   "], ids=["empty", "blanks"])
def test_the_api_refuses_an_empty_folder(cache_dir, call, root):
    """``cute_bind.cache.clear("")`` cleared the working directory's cache folder (Path("") is ".")."""
    cached.affine.clear_cache()
    _bind(bias=23)
    with pytest.raises(cute_bind.CacheSettingError, match=r"\[CB609\].*root"):
        getattr(cute_bind.cache, call)(root)
    assert len(cute_bind.cache.info()) == 1
    cached.affine.clear_cache()


def test_cli_output_into_a_closed_pipe_stops_quietly(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "CUTE_BIND_CACHE_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "cute_bind", "cache", "info"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader went away before the first line (as `| head -0` does)
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "BrokenPipeError" not in err and "Traceback" not in err, err
    assert proc.returncode in (0, 141)


@pytest.mark.parametrize("umask", [0o000, 0o002, 0o022, 0o077])
def test_entries_and_folders_are_private_whatever_the_umask(cache_dir, umask):
    """0600 files in 0700 folders: a private cache is nobody else's to read or write (a team shares one
    through CUTE_BIND_CACHE_SHARED, tests/cache/test_trust.py), and a permissive umask must not open it up."""
    import stat

    cached.affine.clear_cache()
    old = os.umask(umask)
    try:
        _bind(bias=41)
        cached.affine.clear_cache()
        assert _bind(bias=41) == ["hit"]  # writes the hit counter too
    finally:
        os.umask(old)
    (entry,) = [e for e in cute_bind.cache.info() if e.status == "ok"]
    base = cache_dir / "v1"
    for folder in (cache_dir, base, base / "entries", base / "locks"):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder
    for file in (entry.path, entry.path.with_suffix(".hits"), base / "locks" / f"{entry.key}.lock"):
        assert stat.S_IMODE(os.stat(file).st_mode) == 0o600, file
    cached.affine.clear_cache()


@pytest.mark.parametrize("action", ["info", "clear", "prune"])
def test_cli_on_a_file_instead_of_a_folder_says_so_in_one_line(tmp_path, capsys, action):
    """info and clear printed a NotADirectoryError traceback for --dir naming a file."""
    from cute_bind.__main__ import main

    not_a_folder = tmp_path / "f"
    not_a_folder.write_text("hi")
    code = main(["cache", action, "--dir", str(not_a_folder)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if action != "prune":  # prune finds no cache there (nothing to remove) and says so on stdout
        assert code == 2 and str(not_a_folder) in err and "cannot use" in err
    assert not_a_folder.read_text() == "hi"


def test_prune_counts_only_what_it_removed(cache_dir, capsys):
    """A folder planted under an entry's name is never removed (cute_bind removes no tree it did not make):
    prune said "removed 1 entries" on every run while the folder stayed."""
    from cute_bind.__main__ import main

    cached.affine.clear_cache()
    _bind(bias=1)
    planted = cache_dir / "v1" / "entries" / ("e" * 64 + ".entry")
    planted.mkdir()
    for _ in range(2):
        assert main(["cache", "prune"]) == 0
        assert "removed 0 entries" in capsys.readouterr().out
    assert planted.is_dir()
    assert main(["cache", "info"]) == 0
    assert "unsafe" in capsys.readouterr().out  # still listed, as what it is
    cached.affine.clear_cache()


def test_a_folder_under_an_entry_name_is_reported_once_not_as_an_unusable_cache(cache_dir):
    """The lookup warns CB611 (a folder, not read); storing the fresh compile then failed with IsADirectoryError,
    reported as CB607 "the disk compile cache is unavailable", though every other entry still worked."""
    cached.affine.clear_cache()
    _bind(bias=11)
    (entry,) = [p for p in (cache_dir / "v1" / "entries").iterdir() if p.suffix == ".entry"]
    entry.unlink()
    entry.mkdir()
    cached.affine.clear_cache()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _bind(bias=11)
    codes = [getattr(w.message, "code", None) for w in seen]
    assert "CB611" in codes and "CB607" not in codes, codes
    assert entry.is_dir()
    cached.affine.clear_cache()
