"""``[tool.cute-bind]`` (cute_bind/static/config.py): one table for ``cute-bind check`` and the
language server, and the check's options that add to it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from cute_bind.static.checker import main
from cute_bind.static.config import ConfigError, Settings, load_settings, settings_from_table

KERNELS = """\
import cutlass
import cute_bind

@cute_bind.kernel
def k(n, alpha: cutlass.Float8E4M3FN):
    pass
"""


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n" + textwrap.dedent(table))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "kernels.py").write_text(KERNELS)
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(KERNELS)
    return tmp_path


def codes(out: str) -> list[str]:
    return sorted(line.split()[1] for line in out.splitlines() if ": CB" in line)


@pytest.mark.parametrize(
    "table, argv, expected",
    [
        ("", [], ["CB101", "CB101", "CB104", "CB104"]),
        ("[tool.cute-bind]\nignore = ['CB101']\n", [], ["CB104", "CB104"]),
        ("[tool.cute-bind]\nexclude = ['legacy/*']\n", [], ["CB101", "CB104"]),
        ("[tool.cute-bind]\nexclude = ['legacy/*']\n", ["--ignore", "cb104"], ["CB101"]),
        ("", ["--exclude", "legacy/*", "--ignore", "CB101,CB104"], []),
        ("[tool.cute-bind]\nignore = ['CB101']\n", ["--no-config"], ["CB101", "CB101", "CB104", "CB104"]),
    ],
    ids=["none", "ignore", "exclude", "table-plus-option", "options-only", "no-config"],
)
def test_check_reads_the_table_and_options_add_to_it(
    tmp_path: Path, table: str, argv: list[str], expected: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, table)
    monkeypatch.chdir(root / "pkg")  # the table is found above the current folder
    rc = main([*argv, str(root)])
    out = capsys.readouterr().out
    assert codes(out) == expected
    assert rc == (1 if expected else 0)


def test_show_fix_from_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, "[tool.cute-bind]\nshow-fix = true\n")
    monkeypatch.chdir(root)
    main([str(root / "pkg")])
    assert "    fix: " in capsys.readouterr().out


@pytest.mark.parametrize(
    "table, message",
    [
        ({"ignored": ["CB101"]}, "unknown key(s) ignored"),
        ({"ignore": "CB101"}, "'ignore' must be a list"),
        ({"ignore": ["CB999"]}, "do not report: CB999"),
        ({"exclude": [1]}, "'exclude' must be a list of glob patterns"),
        ({"show-fix": "yes"}, "'show-fix' must be true or false"),
    ],
)
def test_bad_tables_are_errors(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_table(table)
    assert message in str(info.value)


def test_a_bad_table_fails_the_check_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, "[tool.cute-bind]\nshow_fix = true\n")
    monkeypatch.chdir(root)
    assert main([str(root)]) == 2
    assert "unknown key(s) show_fix" in capsys.readouterr().err


def test_nearest_table_wins_and_exclude_is_relative_to_it(tmp_path: Path) -> None:
    outer = project(tmp_path, "[tool.cute-bind]\nignore = ['CB101']\n")
    inner = outer / "pkg"
    (inner / "pyproject.toml").write_text("[tool.cute-bind]\nexclude = ['kernels.py']\n")
    s = load_settings(str(inner))
    assert s.ignore == frozenset() and s.excludes(str(inner / "kernels.py")) and not s.excludes(str(outer / "legacy" / "old.py"))
    assert load_settings(str(outer / "legacy")).ignore == {"CB101"}
    assert load_settings(os.path.abspath(os.sep)) == Settings()
