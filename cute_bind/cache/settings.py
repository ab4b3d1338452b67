"""Where the disk cache lives, whether it is on, and how large it may grow: the cache's view of
its settings (:mod:`cute_bind.settings`), read on each use and checked (CB609).

- ``CUTE_BIND_CACHE``: ``1`` (default) or ``0`` to turn the disk cache off;
- ``CUTE_BIND_CACHE_DIR``: its folder, an absolute path (default:
  ``cute_bind`` under the user's cache folder, see :func:`default_dir`);
- ``CUTE_BIND_CACHE_SIZE``: the size limit, bytes or with a ``K``/``M``/``G``
  suffix (default 1G); least recently used entries are evicted beyond it;
- ``CUTE_BIND_CACHE_SHARED``: the absolute path of a key file outside the
  cache folder; set, the folder is a shared team cache (group-writable
  allowed, every entry signed with HMAC-SHA256 under that key and loaded only
  when its signature checks); unset (default), the folder must be the user's
  own and writable by nobody else. See docs/concepts/safety.md.
"""

from __future__ import annotations

import math

import os
import sys
from pathlib import Path

from .. import diagnostics as D
from ..settings import CACHE, CACHE_DIR, CACHE_SHARED, CACHE_SIZE, COMPILE_HOOK

__all__ = [
    "ENV_DIR",
    "ENV_ENABLE",
    "ENV_SHARED",
    "ENV_SIZE",
    "DEFAULT_SIZE",
    "MAX_ENTRY_SIZE",
    "enabled",
    "compile_hook",
    "default_dir",
    "cache_dir",
    "folder_argument",
    "size_limit",
    "parse_size",
    "shared_key_file",
]

ENV_ENABLE = CACHE.name
ENV_DIR = CACHE_DIR.name
ENV_SIZE = CACHE_SIZE.name
ENV_SHARED = CACHE_SHARED.name
DEFAULT_SIZE = 1 << 30
#: the largest entry file read or written: a bound on what one read may allocate, whatever the folder holds
MAX_ENTRY_SIZE = 1 << 30

_ON = ("", "1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "T": 1 << 40, "TB": 1 << 40}


def enabled(kernel: str | None = None) -> bool:
    """Whether the disk cache is on (``CUTE_BIND_CACHE``, default on); CB609 for a value that is neither."""
    text = CACHE.text()
    value = text.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise D.error(D.CACHE_SETTING_INVALID, kernel=kernel, parameter=ENV_ENABLE, expected="1 or 0", got=repr(text))


def compile_hook() -> bool:
    """Whether ``CUTE_BIND_COMPILE_HOOK`` asks for the ``cute.compile`` hook (default off); CB609 for a value that is neither."""
    text = COMPILE_HOOK.text()
    value = text.strip().lower()
    if not value or value in _OFF:
        return False
    if value in _ON:
        return True
    raise D.error(D.CACHE_SETTING_INVALID, parameter=COMPILE_HOOK.name, expected="1 or 0", got=repr(text))


def default_dir() -> Path:
    """The user's cache folder plus ``cute_bind``, as platformdirs would choose it.

    Linux and other Unix: ``$XDG_CACHE_HOME/cute_bind`` (``~/.cache/cute_bind``
    when unset or not absolute); macOS: ``~/Library/Caches/cute_bind``;
    Windows: ``%LOCALAPPDATA%\\cute_bind\\Cache``.
    """
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "cute_bind" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "cute_bind"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base_path = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".cache"
    return base_path / "cute_bind"


def cache_dir(kernel: str | None = None) -> Path:
    """The cache folder: ``CUTE_BIND_CACHE_DIR`` when set, else :func:`default_dir`.

    The path must be absolute (``~`` expands): a relative one would name
    another folder from each working directory, so the cache would move with
    it. A value of blanks only is no path either. Both are CB609, never used
    (an empty value is the variable unset: the default folder).
    """
    text = CACHE_DIR.text()
    given = text.strip()
    if not text:
        return default_dir()
    path = Path(given).expanduser() if given else None
    if path is None or not path.is_absolute():
        raise D.error(
            D.CACHE_SETTING_INVALID,
            kernel=kernel,
            parameter=ENV_DIR,
            expected=f"the absolute path of the cache folder (a relative one names another folder from each working "
            f"directory); unset it for the default {default_dir()}",
            got=repr(text),
        )
    return path


def folder_argument(text: str, parameter: str = "--dir") -> Path:
    """A cache folder given on the command line or to :func:`cute_bind.cache.clear` and the others.

    An empty or blank one is CB609, never the default folder (a script's unset
    variable, ``--dir "$CACHE"``, must not clear the user's cache); a relative
    one is taken from the working directory now, as any path argument is.
    """
    if not text.strip():
        raise D.error(
            D.CACHE_SETTING_INVALID,
            parameter=parameter,
            expected=f"a cache folder's path (leave {parameter} out for {ENV_DIR} or the default folder)",
            got=repr(text),
        )
    return Path(os.path.abspath(os.path.expanduser(text)))


def parse_size(text: str, parameter: str = ENV_SIZE, kernel: str | None = None) -> int:
    """``"512M"`` -> bytes; CB609 for anything else."""
    t = text.strip().upper().replace(" ", "").removesuffix("IB").removesuffix("I")
    digits = t.rstrip("KMGTB")
    unit = t[len(digits) :]
    try:
        number = float(digits)
    except ValueError:
        number = -1.0
    # float() takes "nan", "inf" and "1e400" (inf): no size (int() of them raised ValueError/OverflowError)
    if not math.isfinite(number) or number < 0 or unit not in _UNITS or not math.isfinite(number * _UNITS[unit]):
        raise D.error(
            D.CACHE_SETTING_INVALID, kernel=kernel, parameter=parameter, expected="a size such as 1073741824, 512M or 2G", got=repr(text)
        )
    return int(number * _UNITS[unit])


def size_limit(kernel: str | None = None) -> int:
    """The size limit in bytes (``CUTE_BIND_CACHE_SIZE``, default 1 GiB)."""
    text = CACHE_SIZE.text().strip()
    return parse_size(text, ENV_SIZE, kernel) if text else DEFAULT_SIZE


def shared_key_file(kernel: str | None = None) -> Path | None:
    """The key file of a shared team cache (``CUTE_BIND_CACHE_SHARED``), or ``None`` for a private cache.

    The path must be absolute (``~`` expands): a relative one would name a
    different file from each working directory. CB609 otherwise.
    """
    text = CACHE_SHARED.text().strip()
    if not text:
        return None
    path = Path(text).expanduser()
    if not path.is_absolute():
        raise D.error(
            D.CACHE_SETTING_INVALID,
            kernel=kernel,
            parameter=ENV_SHARED,
            expected="the absolute path of the team's key file (outside the cache folder)",
            got=repr(text),
        )
    return path
