"""``[tool.cute-bind]`` in ``pyproject.toml``: the settings of ``cute-bind check`` and ``cute-bind lsp``.

One table configures both tools, so a file gets the same verdict from the
command line, the pre-commit hook and the editor::

    [tool.cute-bind]
    ignore = ["CB101"]            # codes not reported (check --ignore)
    exclude = ["legacy/*.py"]     # files not checked, globs relative to this folder (check --exclude)
    show-fix = true               # the catalog's fix under each problem (check --show-fix; in the
                                  # editor, appended to the diagnostic's message)

The table is read from the nearest ``pyproject.toml`` at or above the
starting folder that has one (``cute-bind check``: the current folder; the
language server: the checked file's folder). Command-line options add to it.
An unknown key or a value of the wrong type is a :class:`ConfigError`, never
ignored in silence.
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from .rules import DECORATOR_CODES, REPORTED_CODES

__all__ = ["ConfigError", "Settings", "find_pyproject", "load_settings", "settings_from_table"]

_KEYS = ("ignore", "exclude", "show-fix")


class ConfigError(ValueError):
    """``[tool.cute-bind]`` cannot be used as written (the message says where and why)."""


@dataclass(frozen=True)
class Settings:
    """The settings in force for a file."""

    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    show_fix: bool = False
    #: the folder of the ``pyproject.toml`` they come from (``exclude`` is relative to it)
    root: str | None = None
    source: str | None = field(default=None, compare=False)  # that file, for messages

    def excludes(self, path: str) -> bool:
        """Whether ``path`` matches one of :attr:`exclude` (relative to :attr:`root`)."""
        if not self.exclude:
            return False
        absolute = os.path.abspath(path)
        rel = os.path.relpath(absolute, self.root) if self.root else path
        rel = rel.replace(os.sep, "/")
        return any(
            fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(os.path.basename(absolute), pattern) for pattern in self.exclude
        )

    def merged(self, ignore: frozenset[str] = frozenset(), exclude: tuple[str, ...] = (), show_fix: bool = False) -> Settings:
        """These settings with command-line options added."""
        return Settings(self.ignore | ignore, self.exclude + exclude, self.show_fix or show_fix, self.root, self.source)


def find_pyproject(start: str) -> str | None:
    """The nearest ``pyproject.toml`` at or above folder ``start`` with a ``[tool.cute-bind]`` table."""
    folder = os.path.abspath(start)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                with open(candidate, "rb") as f:
                    if b"cute-bind" in f.read():
                        return candidate
            except OSError:
                pass
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib as toml
    else:  # Python 3.10: tomli is the same parser, not in the standard library yet
        try:
            toml = importlib.import_module("tomli")
        except ImportError as exc:
            raise ConfigError(f"{path}: reading [tool.cute-bind] on Python 3.10 needs 'tomli' (pip install tomli)") from exc
    try:
        with open(path, "rb") as f:
            data: dict[str, Any] = toml.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except ValueError as exc:  # TOMLDecodeError
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return data


def settings_from_table(table: Any, where: str = "[tool.cute-bind]", root: str | None = None) -> Settings:
    """Validate one ``[tool.cute-bind]`` table (a dict) into :class:`Settings`."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table, got {type(table).__name__}")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    ignore = table.get("ignore", [])
    if not (isinstance(ignore, list) and all(isinstance(c, str) for c in ignore)):
        raise ConfigError(f"{where}: 'ignore' must be a list of codes, e.g. [\"CB101\"]")
    known = REPORTED_CODES | DECORATOR_CODES
    bad = sorted(c for c in ignore if c.upper() not in known)
    if bad:
        raise ConfigError(
            f"{where}: 'ignore' names code(s) the static tools do not report: {', '.join(bad)}; they report {', '.join(sorted(known))}"
        )
    exclude = table.get("exclude", [])
    if not (isinstance(exclude, list) and all(isinstance(p, str) for p in exclude)):
        raise ConfigError(f"{where}: 'exclude' must be a list of glob patterns")
    show_fix = table.get("show-fix", False)
    if not isinstance(show_fix, bool):
        raise ConfigError(f"{where}: 'show-fix' must be true or false")
    return Settings(frozenset(c.upper() for c in ignore), tuple(exclude), show_fix, root)


def load_settings(start: str) -> Settings:
    """The settings for files under folder ``start`` (defaults when no ``pyproject.toml`` has the table)."""
    path = find_pyproject(start)
    if path is None:
        return Settings()
    tool = _toml(path).get("tool", {})
    table = tool.get("cute-bind") if isinstance(tool, dict) else None
    if table is None:
        return Settings()
    settings = settings_from_table(table, f"{path}: [tool.cute-bind]", os.path.dirname(path))
    return Settings(settings.ignore, settings.exclude, settings.show_fix, settings.root, path)
