"""The language server's diagnostic pages (cute_bind/lsp/pages.py, issue 39 row 4): written in a
folder the user owns, never through a link or into a folder another user can write."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed (pip install -e '.[lsp]')")

from cute_bind.lsp import pages  # noqa: E402
from cute_bind.lsp.server import _version, doc_url  # noqa: E402

VICTIM_TEXT = "the victim's own file\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own (XDG_CACHE_HOME) and a shared temporary folder (TMPDIR)."""
    cache = tmp_path / "cache"
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    return tmp_path


def _folder(home: Path) -> Path:
    base, parts = pages.pages_folder(_version())
    return Path(base).joinpath(*parts)


def test_pages_are_written_in_a_private_folder_of_the_user(home: Path) -> None:
    url = doc_url("CB101", None)
    assert url is not None and url.startswith("file://")
    page = Path(url.removeprefix("file://"))
    assert page.parent == _folder(home) and "CB101" in page.read_text()
    for folder in (page.parent, page.parent.parent):
        st = folder.lstat()
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    assert [p.name for p in page.parent.iterdir()] == ["CB101.md"]  # no temporary file left behind


def test_links_planted_at_the_old_shared_names_are_not_followed(home: Path) -> None:
    """The old server wrote $TMPDIR/cute-bind-lsp-<version>-<uid>/CODE.md through CODE.md.<pid>.tmp:
    links planted at both names (and at the new page's name) leave the victim's file as it was."""
    victim = home / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    old = Path(tempfile.gettempdir()) / f"cute-bind-lsp-{_version()}-{os.getuid() if hasattr(os, 'getuid') else 0}"
    old.mkdir()
    (old / "CB101.md").symlink_to(victim)
    (old / f"CB101.md.{os.getpid()}.tmp").symlink_to(victim)
    folder = _folder(home)
    folder.mkdir(parents=True, mode=0o700)
    (folder / "CB101.md").symlink_to(victim)
    url = doc_url("CB101", None)
    assert url is not None and not url.startswith("file://" + str(old))
    assert victim.read_text() == VICTIM_TEXT
    page = folder / "CB101.md"
    assert not page.is_symlink() and "CB101" in page.read_text()


def _link_to_elsewhere(home: Path, folder: Path) -> None:
    elsewhere = home / "attacker"
    elsewhere.mkdir(mode=0o700)
    folder.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    folder.symlink_to(elsewhere, target_is_directory=True)


def _loose(home: Path, folder: Path) -> None:
    folder.mkdir(parents=True, mode=0o700)
    folder.chmod(0o777)


def _loose_parent(home: Path, folder: Path) -> None:
    folder.mkdir(parents=True, mode=0o700)
    folder.parent.chmod(0o775)


def _someone_elses(home: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder.mkdir(parents=True, mode=0o700)
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)  # the folder is then another user's


#: Folders that may not hold the pages, and the words saying why.
REFUSED = [
    ("link", lambda h, f, m: _link_to_elsewhere(h, f), "symbolic link"),
    ("loose-mode", lambda h, f, m: _loose(h, f), "writable by other users"),
    ("loose-parent", lambda h, f, m: _loose_parent(h, f), "writable by other users"),
    ("someone-elses", lambda h, f, m: _someone_elses(h, f, m), "owned by user id"),
]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="owners and modes are POSIX")
@pytest.mark.parametrize("name, plant, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_folder_others_can_write_or_a_link_is_not_used(home: Path, monkeypatch: pytest.MonkeyPatch, name, plant, words) -> None:
    folder = _folder(home)
    plant(home, folder, monkeypatch)
    assert doc_url("CB101", None) is None  # no page: the diagnostic keeps its code, without a link
    found, why = pages.private_folder(*pages.pages_folder(_version()))
    assert found is None and words in why
    assert list(folder.iterdir()) == []  # nothing written there (nor, for the link, where it leads)


def test_write_page_never_writes_through_an_existing_name(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    (tmp_path / "CB204.md").symlink_to(victim)
    path = pages.write_page(str(tmp_path), "CB204.md", "page\n")
    assert Path(path).read_text() == "page\n" and not Path(path).is_symlink()
    assert victim.read_text() == VICTIM_TEXT
