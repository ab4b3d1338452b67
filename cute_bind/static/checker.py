"""``cute-bind check PATH...``: static eligibility check of ``@cute_bind.kernel`` functions.

Reads source files with :mod:`ast` (nothing is imported or executed, no GPU
and no DSL needed), finds functions decorated with ``@cute_bind.kernel`` in any
spelling the file's imports allow, and prints one line per problem::

    path/to/file.py:12:5: CB113 kernel 'scale', parameter 'sizes': sequence annotation ...

The rules, tables and messages are those of the runtime check
(:mod:`cute_bind.static.rules` reads :mod:`cute_bind._whitelist` and the
catalog). Exit status: 0 nothing found, 1 problems found, 2 usage error or a
file that could not be read, parsed or analysed. A file that is not a regular
file (a FIFO, a device, a link to one), holds more than 8 MiB, or nests an
expression too deeply to analyse is reported with CB126, and the other files
are still checked. Meant for pre-commit
(``.pre-commit-hooks.yaml``, hook id ``cute-bind-check``) and CI.

Settings come from ``[tool.cute-bind]`` in the nearest ``pyproject.toml``
holding one, above each checked file (:class:`cute_bind.static.config.Resolver`,
shared with ``cute-bind lsp`` and the mypy plugin), and options add to them.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Iterator, Sequence, TextIO

from .config import ConfigError, Resolver, Settings
from ..diagnostics import CuteBindError
from .rules import NOT_CHECKED, DECORATOR_CODES, REPORTED_CODES, StaticDiagnostic, check_source, module_name_for_path, refused
from .source import read_source

__all__ = ["main", "check_file", "iter_python_files"]

# Every way of reaching the decorator goes through an import that names the
# package, so a file without this text has no kernel and is not even parsed.
_MARKER = b"cute_bind"

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})


def iter_python_files(paths: Sequence[str]) -> Iterator[str]:
    """Files to check: explicit files as given, ``*.py`` under directories (hidden ones skipped).

    Raises :class:`FileNotFoundError` for a path that does not exist.
    """
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield os.path.join(root, name)
        elif os.path.exists(path):
            # Given explicitly (pre-commit passes files it identified as Python,
            # extensionless scripts included): checked whatever the name.
            yield path
        else:
            raise FileNotFoundError(path)


def _check(path: str) -> tuple[list[StaticDiagnostic], bool]:
    """Diagnostics of one file and whether it names cute_bind; CB126 for a file that is not a
    regular file, is too large (:func:`~cute_bind.static.source.read_source`) or nested too
    deeply to analyse. Raises :class:`OSError` or :class:`SyntaxError`."""
    try:
        data = read_source(path)
    except CuteBindError as exc:
        return [refused(path, exc)], True
    if _MARKER not in data:
        return [], False
    return check_source(data, path, module_name_for_path(path)), True


def check_file(path: str) -> list[StaticDiagnostic]:
    """Diagnostics of one file, by position (CB126 for the file where it cannot be read or
    analysed: see :func:`~cute_bind.static.source.read_source`). Raises :class:`OSError` or
    :class:`SyntaxError`."""
    return _check(path)[0]


def _print(path: str, found: list[StaticDiagnostic], show_fix: bool, out: TextIO) -> None:
    for d in found:
        out.write(f"{path}:{d.line}:{d.column + 1}: {d.code} {d.text}\n")
        if show_fix:
            for i, line in enumerate(d.fix.splitlines()):
                out.write(f"    {'fix: ' if i == 0 else '     '}{line}\n")


def _parser(prog: str = "cute-bind check") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Report @cute_bind.kernel parameters that are not eligible runtime slots "
        f"({', '.join(sorted(REPORTED_CODES | DECORATOR_CODES))}), without importing the code.",
        epilog="Exit status: 0 nothing found, 1 problems found, 2 usage error or unreadable file. "
        "'python -m cute_bind explain CODE' explains a code.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="Python files, or directories searched for *.py")
    parser.add_argument("--show-fix", action="store_true", help="print the catalog's fix under each problem")
    parser.add_argument(
        "--ignore", metavar="CODES", default="", help="comma-separated codes not to report (adds to [tool.cute-bind] ignore)"
    )
    parser.add_argument(
        "--exclude",
        metavar="GLOB",
        action="append",
        default=[],
        help="skip files matching GLOB (repeatable; adds to [tool.cute-bind] exclude)",
    )
    parser.add_argument("--no-config", action="store_true", help="do not read [tool.cute-bind] from pyproject.toml")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line (on standard error) at the end")
    return parser


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _summary(files: int, decorated: int, problems: int) -> str:
    """The last line, on standard error: what was checked and found. A file that never names
    cute_bind has no decorator to check; a kernel made by calling ``cute_bind.kernel(fn)`` is
    not seen statically (it is checked when it is made), which the line says when nothing was."""
    text = f"cute-bind check: {_plural(files, 'file')} ({decorated} naming cute_bind), {_plural(problems, 'problem')}"
    if files and not decorated:
        text += " (no file names cute_bind: only @cute_bind.kernel definitions are checked statically)"
    return text


def main(argv: Sequence[str] | None = None, prog: str = "cute-bind check") -> int:
    """Run ``cute-bind check``; returns the exit status (``prog``: the usage line's command).

    ``argv`` are the arguments after ``check`` (default: ``sys.argv[1:]``); a
    leading ``check`` is dropped too, so the function can be wired as the whole
    command line or as the ``check`` subcommand.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["check"]:
        args = args[1:]
    try:
        ns = _parser(prog).parse_args(args)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return exc.code if isinstance(exc.code, int) else 2
    ignore = frozenset(c.strip().upper() for c in ns.ignore.split(",") if c.strip())
    unknown = sorted(ignore - REPORTED_CODES - DECORATOR_CODES)
    if unknown:
        print(f"cute-bind check: --ignore: code(s) the check does not report: {', '.join(unknown)}", file=sys.stderr)
        return 2
    resolver = Resolver()
    here = os.getcwd()

    def settings_of(path: str) -> Settings:
        base = Settings() if ns.no_config else resolver.for_file(path)
        return base.merged(ignore=ignore, exclude=tuple(ns.exclude), show_fix=ns.show_fix, base=here)

    try:
        files = [(f, s) for f in iter_python_files(ns.paths) for s in [settings_of(f)] if not s.excludes(f)]
    except FileNotFoundError as exc:
        print(f"cute-bind check: {exc.args[0]}: no such file or directory", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"cute-bind check: {exc}", file=sys.stderr)
        return 2
    problems = decorated = 0
    unreadable = False
    for path, settings in files:
        try:
            found, names = _check(path)
        except SyntaxError as exc:
            print(f"{path}:{exc.lineno or 0}:{exc.offset or 0}: cannot parse: {exc.msg}", file=sys.stderr)
            unreadable = True
            continue
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: null bytes in source
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
            unreadable = True
            continue
        found = [d for d in found if d.code not in settings.ignore]
        _print(path, found, settings.show_fix, sys.stdout)
        problems += len(found)
        decorated += names
        unreadable = unreadable or any(d.code == NOT_CHECKED for d in found)
    if not ns.quiet:
        sys.stdout.flush()  # the problems first, then the summary, also where both streams go to one place
        print(_summary(len(files), decorated, problems), file=sys.stderr)
    if unreadable:
        return 2
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
