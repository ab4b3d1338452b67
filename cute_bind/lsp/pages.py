"""The language server's local diagnostic pages, in a folder only the user can write.

Without a documentation site (``--docs-url``, ``CUTE_BIND_DOCS_URL``), a diagnostic links to a
Markdown page rendered from the catalog entry (what ``python -m cute_bind explain CODE``
prints). Another local user must not be able to make the server write through a link they
planted, or serve pages they wrote, so the pages live in the user's cache folder
(``$XDG_CACHE_HOME/cute-bind/lsp-<version>``, ``~/.cache/...`` where that is unset or not
absolute), never in the shared temporary folder:

- each folder from the cache folder down is created with mode 0700 and then checked: a real
  folder (not a link), owned by the current user, not writable by group or others; a folder
  that fails is not used (no pages: the diagnostic carries its code without a link, and the
  server says why once);
- a page is written to a fresh random name with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (never
  through an existing file or link) and moved over the page's name with :func:`os.replace`.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys

__all__ = ["pages_folder", "private_folder", "write_page"]

_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _cache_base() -> str:
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches")
    if sys.platform == "win32":
        return os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")


def pages_folder(version: str) -> tuple[str, tuple[str, ...]]:
    """The user's cache folder and the folders under it that hold the pages of ``version``."""
    safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in version) or "0"
    return _cache_base(), ("cute-bind", f"lsp-{safe}")


def _problem(path: str) -> str | None:
    """Why ``path`` may not hold the pages (``None``: it may)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path} cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder"
    if hasattr(os, "getuid"):
        if st.st_uid != os.getuid():
            return f"{path} is owned by user id {st.st_uid}, not by this user ({os.getuid()})"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def private_folder(base: str, parts: tuple[str, ...]) -> tuple[str | None, str]:
    """``base/parts...``, each part created (mode 0700) where missing, and every folder from
    ``base`` down checked (see the module's text). Returns ``(the folder, "")``, or ``(None, why
    not)`` where one of them may not be used."""
    path = os.path.abspath(base)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as exc:
        return None, f"{path} cannot be created ({exc.strerror or exc})"
    why = _problem(path)
    if why is not None:
        return None, why
    for part in parts:
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            return None, f"{path} cannot be created ({exc.strerror or exc})"
        why = _problem(path)
        if why is not None:
            return None, why
    return path, ""


def write_page(folder: str, name: str, text: str) -> str:
    """Write ``text`` as ``folder/name`` (a fresh temporary file moved over it); returns its path.
    Raises :class:`OSError` where it cannot be written (nothing is left behind)."""
    path = os.path.join(folder, name)
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, _WRITE, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
