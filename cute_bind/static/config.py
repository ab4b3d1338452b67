"""``[tool.cute-bind]`` in ``pyproject.toml``: the settings of ``cute-bind check`` and ``cute-bind lsp``.

One table configures both tools, so a file gets the same verdict from the
command line, the pre-commit hook and the editor::

    [tool.cute-bind]
    ignore = ["CB101"]            # codes not reported (check --ignore)
    exclude = ["legacy/*.py"]     # files not checked, globs relative to this folder (check --exclude)
    show-fix = true               # the catalog's fix under each problem (check --show-fix; in the
                                  # editor, appended to the diagnostic's message)

The table is read from the nearest ``pyproject.toml`` at or above the
checked file's folder that holds a ``[tool.cute-bind]`` table (one that only
names cute-bind, as a dependency, is passed over), by :class:`Resolver`: the
same for ``cute-bind check``, the language server and the mypy plugin.
``exclude`` patterns are relative to the table's folder. Command-line options
add to it; ``--exclude`` patterns are relative to the folder the command runs
in (or match the path as written), with or without a table. Either kind also
matches the file's name alone.
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

from ..diagnostics import CuteBindError
from .rules import DECORATOR_CODES, REPORTED_CODES
from .source import read_source

__all__ = ["ConfigError", "Resolver", "Settings", "find_pyproject", "load_settings", "settings_from_table"]

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
    #: ``--exclude`` patterns of the command line, relative to the folder it ran in (:attr:`extra_root`)
    extra_exclude: tuple[str, ...] = ()
    extra_root: str | None = None

    def excludes(self, path: str) -> bool:
        """Whether ``path`` matches one of :attr:`exclude` (relative to :attr:`root`) or of
        :attr:`extra_exclude` (relative to :attr:`extra_root`, or as the path is written); a
        pattern also matches the file's name alone (``exclude = ["generated_*.py"]``)."""
        if not (self.exclude or self.extra_exclude):
            return False
        absolute = os.path.abspath(path)
        name = os.path.basename(absolute)

        def matches(patterns: tuple[str, ...], *forms: str) -> bool:
            return any(fnmatch.fnmatchcase(form, pattern) for pattern in patterns for form in (*forms, name))

        table = _relative(absolute, self.root) if self.root else path.replace(os.sep, "/")
        if matches(self.exclude, table):
            return True
        if not self.extra_exclude:
            return False
        written = os.path.normpath(path).replace(os.sep, "/")
        return matches(self.extra_exclude, _relative(absolute, self.extra_root or os.getcwd()), written)

    def merged(
        self, ignore: frozenset[str] = frozenset(), exclude: tuple[str, ...] = (), show_fix: bool = False, base: str | None = None
    ) -> Settings:
        """These settings with command-line options added; ``exclude`` patterns are relative to
        folder ``base`` (default: the current folder), where the command runs."""
        return Settings(
            self.ignore | ignore,
            self.exclude,
            self.show_fix or show_fix,
            self.root,
            self.source,
            self.extra_exclude + exclude,
            os.path.abspath(base or os.getcwd()) if exclude else self.extra_root,
        )


def _relative(absolute: str, root: str) -> str:
    return os.path.relpath(absolute, root).replace(os.sep, "/")


def _table(path: str) -> dict[str, Any] | None:
    """The ``[tool.cute-bind]`` table of the ``pyproject.toml`` at ``path``; ``None`` where it has
    none. A file that cannot be read or parsed is a :class:`ConfigError` only where its text
    names cute-bind (it may hold the table); otherwise it is passed over, as one without it."""
    try:
        data = read_source(path)
    except (OSError, CuteBindError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from exc
    try:
        document = _toml(path, data)
    except ConfigError:
        if b"cute-bind" in data or b"cute_bind" in data:
            raise
        return None
    tool = document.get("tool")
    table = tool.get("cute-bind") if isinstance(tool, dict) else None
    return table if table is not None else None


def _find(start: str) -> tuple[str, Any] | None:
    folder = os.path.abspath(start)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            table = _table(candidate)
            if table is not None:
                return candidate, table
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def find_pyproject(start: str) -> str | None:
    """The nearest ``pyproject.toml`` at or above folder ``start`` that holds a ``[tool.cute-bind]``
    table (one that only names cute-bind, as a dependency, is passed over)."""
    found = _find(start)
    return found[0] if found is not None else None


def _toml(path: str, data: bytes) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib as toml
    else:  # Python 3.10: tomli is the same parser, not in the standard library yet
        try:
            toml = importlib.import_module("tomli")
        except ImportError as exc:
            raise ConfigError(f"{path}: reading [tool.cute-bind] on Python 3.10 needs 'tomli' (pip install tomli)") from exc
    try:
        document: dict[str, Any] = toml.loads(data.decode("utf-8"))
    except ValueError as exc:  # TOMLDecodeError, UnicodeDecodeError
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return document


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
    """The settings for files under folder ``start``: the nearest ``[tool.cute-bind]`` table at or
    above it (defaults when there is none)."""
    found = _find(start)
    if found is None:
        return Settings()
    path, table = found
    settings = settings_from_table(table, f"{path}: [tool.cute-bind]", os.path.dirname(path))
    return Settings(settings.ignore, settings.exclude, settings.show_fix, settings.root, path)


class Resolver:
    """The settings of each file: :func:`load_settings` from the file's own folder, read once per
    folder. ``cute-bind check``, the language server and the mypy plugin all resolve settings
    this way, so a file gets the same verdict from each, wherever it is run from."""

    def __init__(self) -> None:
        self._folders: dict[str, Settings | ConfigError] = {}

    def for_folder(self, folder: str) -> Settings:
        """The settings of files in ``folder``; raises :class:`ConfigError` as :func:`load_settings`."""
        key = os.path.abspath(folder)
        found = self._folders.get(key)
        if found is None:
            try:
                found = load_settings(key)
            except ConfigError as exc:
                found = exc
            if len(self._folders) >= 4096:
                self._folders.clear()
            self._folders[key] = found
        if isinstance(found, ConfigError):
            raise found
        return found

    def for_file(self, path: str | None) -> Settings:
        """The settings of file ``path`` (``None``: an unsaved file, the current folder's)."""
        return self.for_folder(os.path.dirname(os.path.abspath(path)) if path else os.getcwd())

    def clear(self) -> None:
        """Forget what was read (a ``pyproject.toml`` changed)."""
        self._folders.clear()
