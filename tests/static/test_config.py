"""``[tool.cute-bind]`` (cute_bind/static/config.py): one table for ``cute-bind check`` and the
language server, and the check's options that add to it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from cute_bind.static import source
from cute_bind.static.checker import main
from cute_bind.static.config import ConfigError, Resolver, Settings, load_settings, settings_from_table

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


# --------------------------------------------------------------------------- one resolution (issue 39, row 11)
DEPENDENCY_ONLY = "[project]\nname = 'inner'\ndependencies = ['cute-bind>=0.3']\n"

#: Nested projects: (the outer pyproject's text, the inner one's (None: none), the settings a file
#: in the inner project gets: its ignore, and the folder exclude patterns are relative to).
NESTED = [
    ("[tool.cute-bind]\nignore = ['CB101']\n", DEPENDENCY_ONLY, {"CB101"}, "outer"),
    ("[tool.cute-bind]\nignore = ['CB101']\n", None, {"CB101"}, "outer"),
    ("[tool.cute-bind]\nignore = ['CB101']\n", "[tool.cute-bind]\nignore = ['CB104']\n", {"CB104"}, "inner"),
    ("[tool.cute-bind]\nignore = ['CB101']\n", "[tool.cute-bind]\n", set(), "inner"),
    ("[project]\nname = 'outer'\n", DEPENDENCY_ONLY, set(), None),
    ("[tool.cute-bind]\nignore = ['CB101']\n", "# mentions cute-bind in a comment only\n[project]\nname = 'x'\n", {"CB101"}, "outer"),
]


@pytest.mark.parametrize(
    "outer, inner, ignore, root", NESTED, ids=["dependency-only", "no-inner", "inner-table", "empty-inner-table", "no-table", "comment"]
)
def test_nested_projects_resolve_the_nearest_table(
    tmp_path: Path,
    outer: str,
    inner: str | None,
    ignore: set[str],
    root: str | None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The nearest pyproject.toml that holds a [tool.cute-bind] table, not one that only names
    cute-bind; the same for the check (from any folder), the server and the mypy plugin (Resolver)."""
    (tmp_path / "pyproject.toml").write_text(outer)
    project = tmp_path / "inner"
    (project / "src").mkdir(parents=True)
    if inner is not None:
        (project / "pyproject.toml").write_text(inner)
    kernels = project / "src" / "kernels.py"
    kernels.write_text(KERNELS)
    expected_root = {"outer": str(tmp_path), "inner": str(project), None: None}[root]
    settings = load_settings(str(kernels.parent))
    assert (set(settings.ignore), settings.root) == (ignore, expected_root)
    assert Resolver().for_file(str(kernels)) == settings
    # the check gives the file the same settings wherever it runs from
    for cwd in (tmp_path, project, kernels.parent, tmp_path.parent):
        monkeypatch.chdir(cwd)
        main([str(kernels)])
        assert codes(capsys.readouterr().out) == sorted({"CB101", "CB104"} - ignore)


@pytest.mark.parametrize(
    "table", ["", "[tool.cute-bind]\n", "[tool.cute-bind]\nignore = ['CB101']\n"], ids=["no-table", "empty-table", "table"]
)
@pytest.mark.parametrize("spelling", [".", "{root}"], ids=["dot", "absolute"])
def test_exclude_option_works_with_and_without_a_table(
    tmp_path: Path, table: str, spelling: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, table)
    monkeypatch.chdir(root)
    main(["--exclude", "legacy/*", spelling.format(root=root)])
    out = capsys.readouterr().out
    assert "old.py" not in out and "kernels.py" in out


def test_exclude_option_is_relative_to_where_the_check_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, "")
    monkeypatch.chdir(root / "pkg")
    main(["--exclude", "../legacy/*", str(root)])
    assert "old.py" not in capsys.readouterr().out
    main(["--exclude", "*.py", str(root)])  # a file's name alone
    assert codes(capsys.readouterr().out) == []


def test_settings_never_read_a_pyproject_that_is_no_regular_file_or_huge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("FIFOs are POSIX")
    (tmp_path / "pyproject.toml").write_text("[tool.cute-bind]\nignore = ['CB101']\n")
    inner = tmp_path / "fifo"
    inner.mkdir()
    os.mkfifo(inner / "pyproject.toml")  # passed over, never opened (an open would wait for a writer)
    assert load_settings(str(inner)).ignore == {"CB101"}
    big = tmp_path / "big"
    big.mkdir()
    (big / "pyproject.toml").write_text("[tool.cute-bind]\n" + "#" * 200 + "\n")
    monkeypatch.setattr(source, "MAX_SOURCE_BYTES", 100)
    with pytest.raises(ConfigError, match="over the 100 bytes"):
        load_settings(str(big))


def test_a_broken_pyproject_that_does_not_name_cute_bind_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.cute-bind]\nignore = ['CB101']\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text("[project\nname = 'broken'\n")
    assert load_settings(str(tmp_path / "sub")).ignore == {"CB101"}
    (tmp_path / "sub" / "pyproject.toml").write_text("[tool.cute-bind\nignore = ['CB104']\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(str(tmp_path / "sub"))
