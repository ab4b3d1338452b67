"""What ``cache info`` calls each entry (the status column), relative to the process that looks; ``prune --other``.

Entries are written straight into a store (no compile): a header whose environment
differs from this process's in one field at a time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cute_bind
from cute_bind.cache import environment
from cute_bind.cache.store import STATUSES, Store

ROOT = Path(__file__).resolve().parents[2]


def _write(root: Path, key: str, env: dict[str, str], *, name: str | None = None) -> None:
    payload = b"\0" * 16
    header = {"key": key, "kernel": f"k_{key[:4]}", "function": "m.f", "created": 1.0, "size": len(payload), "env": env}
    with Store(root) as store:
        store.ensure()
        store.write(name or key, header, payload)


def _statuses(root: Path) -> dict[str, tuple[str, str]]:
    return {e.key: (e.status, e.reason) for e in cute_bind.cache.info(root)}


#: (environment field changed, value written, status, words the reason must hold)
ROWS = [
    ("dsl_env", "CUTE_DSL_ARCH=sm_100a", "other-arch", "CUTE_DSL_* settings CUTE_DSL_ARCH=sm_100a"),
    ("machine", "Linux aarch64 Grace", "other-arch", "machine Linux aarch64 Grace"),
    ("dsl", "4.5.3 cu12", "other-version", "nvidia-cutlass-dsl 4.5.3 cu12"),
    ("cute_bind", "0.1.0+0123456789abcdef", "other-version", "cute_bind 0.1.0+0123456789abcdef"),
    ("python", "cpython-39 3.9.1", "other-version", "Python cpython-39 3.9.1"),
    ("format", "0", "other-version", "cache format 0"),
]


@pytest.mark.parametrize(("field", "value", "status", "words"), ROWS, ids=[r[0] for r in ROWS])
def test_an_entry_of_another_environment_says_which_and_why(tmp_path, monkeypatch, field, value, status, words):
    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    here = environment()
    _write(tmp_path, "a" * 64, here)
    _write(tmp_path, "b" * 64, {**here, field: value})
    got = _statuses(tmp_path)
    assert got["a" * 64] == ("ok", "")
    assert got["b" * 64][0] == status and words in got["b" * 64][1] and "here" in got["b" * 64][1], got


def test_a_file_under_another_keys_name_is_corrupt(tmp_path):
    _write(tmp_path, "c" * 64, environment(), name="d" * 64)
    status, reason = _statuses(tmp_path)["d" * 64]
    assert status == "corrupt" and "holds key cccc" in reason


def test_statuses_follow_the_process_setting_and_say_so(tmp_path, monkeypatch, capsys):
    """An entry of CUTE_DSL_ARCH=sm_90a is ok for a process with that setting, other-arch for one without, and
    the other way round: the listing says what it compares with, so counts that change with the setting read right."""
    from cute_bind.__main__ import main

    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    _write(tmp_path, "a" * 64, environment())
    monkeypatch.delenv("CUTE_DSL_ARCH")
    _write(tmp_path, "b" * 64, environment())
    assert {k: s for k, (s, _) in _statuses(tmp_path).items()} == {"a" * 64: "other-arch", "b" * 64: "ok"}
    assert main(["cache", "info", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 entries" in out and "1 ok, 1 other-arch" in out and "CUTE_DSL_* settings: none" in out
    assert re.search(r"other-arch \(CUTE_DSL_\* settings CUTE_DSL_ARCH=sm_90a vs none here\)", out), out
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    assert {k: s for k, (s, _) in _statuses(tmp_path).items()} == {"a" * 64: "ok", "b" * 64: "other-arch"}
    assert main(["cache", "info", "--dir", str(tmp_path)]) == 0
    assert "CUTE_DSL_* settings: CUTE_DSL_ARCH=sm_90a" in capsys.readouterr().out


def test_prune_keeps_other_entries_unless_asked(tmp_path, monkeypatch, capsys):
    from cute_bind.__main__ import main

    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    here = environment()
    _write(tmp_path, "a" * 64, here)
    _write(tmp_path, "b" * 64, {**here, "dsl_env": "CUTE_DSL_ARCH=sm_90a"})
    _write(tmp_path, "c" * 64, {**here, "dsl": "4.6.3 cu12"})
    assert main(["cache", "prune", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "removed 0 entries" in out and "kept 2 entries of other settings or versions (prune --other removes them)" in out
    assert sorted(_statuses(tmp_path)) == ["a" * 64, "b" * 64, "c" * 64]
    assert main(["cache", "prune", "--other", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "removed 2 entries" in out and "1 other-arch" in out and "1 other-version" in out, out
    assert list(_statuses(tmp_path)) == ["a" * 64]


def test_prune_api_other(tmp_path):
    here = environment()
    _write(tmp_path, "a" * 64, here)
    _write(tmp_path, "b" * 64, {**here, "machine": "elsewhere"})
    assert cute_bind.cache.prune(tmp_path) == []
    assert cute_bind.cache.prune(tmp_path, other=True) == ["b" * 64]


def test_every_status_is_defined_in_the_docs():
    page = (ROOT / "docs" / "concepts" / "cache.md").read_text(encoding="utf-8")
    for status in STATUSES:
        assert re.search(rf"^\| `{re.escape(status)}` \|", page, re.M), f"docs/concepts/cache.md defines no status {status!r}"


def test_specializations_say_where_each_compile_came_from(cache_dir):
    """kernel.specializations(): a key compiled for the call, one loaded from the disk cache, one bind() made."""
    import ctypes

    from tests.kernels import cached

    buf = (ctypes.c_int32 * 1)()
    addr = ctypes.addressof(buf)
    cached.affine.clear_cache()
    try:
        cached.affine(addr, 4, 5)
        (first,) = cached.affine.specializations()
        assert (first.source, first.compiled) == ("compiled", True)
        cached.affine.clear_cache()  # a new process, as far as memory goes: the entry is on disk
        cached.affine(addr, 4, 5)
        (again,) = cached.affine.specializations()
        assert (again.source, again.compiled) == ("disk", False) and buf[0] == 2 * 4 + 5 + cached.STEP
        cached.affine.bind(addr, 4, 6)
        cached.affine(addr, 4, 6)
        assert [(s.source, s.compiled) for s in cached.affine.specializations()] == [("disk", False), ("memory", False)]
    finally:
        cached.affine.clear_cache()


def test_a_kernel_without_the_disk_cache_never_reports_disk(cache_dir):
    """Another kernel of the same function, name and key loaded the entry from disk: a kernel made with
    cache=False compiled its own (the bench's cold-compile row read 'disk' here once, from the cache's history)."""
    import ctypes

    from tests.kernels import cached

    buf = (ctypes.c_int32 * 1)()
    addr = ctypes.addressof(buf)
    cached.affine.clear_cache()
    try:
        cached.affine(addr, 4, 5)  # compiled and stored
        cached.affine.clear_cache()
        cached.affine(addr, 4, 5)  # loaded: the history's last word on this entry is "hit"
        assert [s.source for s in cached.affine.specializations()] == ["disk"]
        private = cute_bind.kernel(cached.affine.__wrapped__, name=cached.affine.name, cache=False)
        private(addr, 4, 5)
        assert [(s.source, s.compiled) for s in private.specializations()] == [("compiled", True)]
    finally:
        cached.affine.clear_cache()
