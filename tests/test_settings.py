"""The settings registry (``cute_bind/settings.py``): every environment variable the package
reads is registered, read through it, and documented in one table that matches it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cute_bind
from cute_bind import settings
from tests.child import child_env

PKG = Path(cute_bind.__file__).resolve().parent
ROOT = PKG.parent
PAGE = ROOT / "docs" / "concepts" / "settings.md"
ROW = re.compile(r"^\| `(?P<name>[A-Z_]+)` \| (?P<type>[^|]+?) \| (?P<default>[^|]+?) \| (?P<read>[^|]+?) \| (?P<doc>[^|]+?) \|$", re.M)

#: Files that touch a registered variable through ``os.environ`` on purpose, and why.
ENVIRON_USERS = {
    "settings.py": "the one reader",
    "bench/coldstart.py": "sets CUTE_BIND_CACHE_DIR around an in-process run and restores what was there",
}


def _table() -> dict[str, tuple[str, str, str, str]]:
    rows = {m["name"]: (m["type"], m["default"], m["read"], m["doc"]) for m in ROW.finditer(PAGE.read_text(encoding="utf-8"))}
    assert rows, f"{PAGE.relative_to(ROOT)} has no settings table"
    return rows


def test_the_docs_table_is_the_registry() -> None:
    registry = {s.name: (s.type, s.default, s.read, s.doc) for s in settings.SETTINGS.values()}
    assert _table() == registry
    assert list(_table()) == list(registry), "the table lists the settings in the registry's order"


def test_the_docs_page_is_in_the_navigation() -> None:
    assert "concepts/settings.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_every_cute_bind_variable_the_package_names_is_registered() -> None:
    named = {}
    for path in sorted(PKG.rglob("*.py")):
        for name in re.findall(r"\bCUTE_BIND_[A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")):
            named.setdefault(name, str(path.relative_to(PKG)))
    missing = {n: where for n, where in named.items() if n not in settings.SETTINGS}
    assert not missing, f"CUTE_BIND_* variables not in cute_bind/settings.py: {missing}"


def _environ_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name or '?')`` of each ``os.environ.get(...)``, ``os.getenv(...)`` and ``os.environ[...]``."""
    found = []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            f = node.func
            if f.attr == "get" and isinstance(f.value, ast.Attribute) and f.value.attr == "environ":
                target = node.args[0]
            elif f.attr == "getenv":
                target = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "environ":
            target = node.slice
        if target is not None:
            name = target.value if isinstance(target, ast.Constant) and isinstance(target.value, str) else "?"
            found.append((node.lineno, name))
    return found


def test_no_module_reads_a_setting_around_the_registry() -> None:
    """A registered variable, or a name only known at run time (a generic reader), is read in settings.py only."""
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel in ENVIRON_USERS:
            continue
        for line, name in _environ_reads(ast.parse(path.read_text(encoding="utf-8"))):
            if name == "?" or name in settings.SETTINGS or name.startswith("CUTE_BIND_"):
                offenders.append(f"{rel}:{line}: {name}")
    assert not offenders, "read these through cute_bind.settings:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "code, found",
    [
        ("os.environ.get('CUTE_BIND_CHECKED', '')", [(1, "CUTE_BIND_CHECKED")]),
        ("os.getenv(name)", [(1, "?")]),
        ("x = os.environ['CUTE_DSL_ARCH']", [(1, "CUTE_DSL_ARCH")]),
        ("os.environ.get('HOME')", [(1, "HOME")]),
        ("settings.CHECKED.flag()", []),
    ],
)
def test_the_reader_finder(code: str, found: list[tuple[int, str]]) -> None:
    assert _environ_reads(ast.parse(code)) == found


@pytest.mark.parametrize(
    "value, flag",
    [(None, False), ("", False), ("0", False), ("1", True), ("yes", True), ("false", True), (" 0", True)],
)
def test_a_flag_is_on_unless_empty_or_zero(value: str | None, flag: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv(settings.CHECKED.name, raising=False)
    else:
        monkeypatch.setenv(settings.CHECKED.name, value)
    assert settings.CHECKED.flag() is flag
    assert settings.CHECKED.text() == (value or "")


def test_settings_read_when_what_they_govern_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read live (not cached at import): the cache's view and a handle's default mode follow the environment."""
    from cute_bind.cache import settings as cache_settings
    from cute_bind.launch import prepared

    monkeypatch.setenv("CUTE_BIND_CACHE", "0")
    assert cache_settings.enabled() is False
    monkeypatch.setenv("CUTE_BIND_CACHE", "1")
    assert cache_settings.enabled() is True
    monkeypatch.setenv("CUTE_BIND_CHECKED", "1")
    assert prepared._checked_default() is True
    monkeypatch.delenv("CUTE_BIND_CHECKED")
    assert prepared._checked_default() is False


def test_the_call_path_is_read_once_at_import() -> None:
    """``CUTE_BIND_PURE_PYTHON`` picks ``kernel(...)``'s call path at import; changing it later changes nothing."""
    code = (
        "import os\n"
        "from cute_bind.jit import dispatch\n"
        "before = dispatch.call_path()\n"
        "os.environ['CUTE_BIND_PURE_PYTHON'] = '0'\n"
        "print(before, dispatch.call_path(), dispatch.CallBase is dispatch.PythonCallBase)\n"
    )
    env = child_env(CUTE_BIND_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["python", "python", "True"]


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        settings._register(settings.Setting("CUTE_BIND_CHECKED", "flag", "0", "never", "a duplicate"))
    assert settings.SETTINGS["CUTE_BIND_CHECKED"] is settings.CHECKED
