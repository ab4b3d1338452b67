"""Codes are listed in order wherever a user sees them: ``explain`` of an unknown code, ``explain --list``,
and the documentation site's diagnostics navigation, whose every group has a name."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cute_bind
from cute_bind.diagnostics import CATALOG, lookup

ROOT = Path(__file__).resolve().parents[2]


def test_unknown_code_lists_known_codes_in_order() -> None:
    with pytest.raises(KeyError) as info:
        lookup("CB999")
    listed = info.value.args[0].split("known codes: ")[1].split(", ")
    assert listed == sorted(CATALOG) and len(listed) == len(CATALOG)


@pytest.mark.parametrize("argv", [["explain", "CB999"], ["explain", "--list"]])
def test_explain_lists_codes_in_order(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "cute_bind", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    codes = re.findall(r"\bCB\d{3}\b", (proc.stdout + proc.stderr).split("known codes:")[-1])
    assert len(codes) >= len(CATALOG) and codes == sorted(codes), argv


def _hook():  # type: ignore[no-untyped-def]
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    spec = importlib.util.spec_from_file_location("_catalog_hook", ROOT / "docs" / "hooks" / "catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_navigation_group_has_a_name() -> None:
    hook = _hook()
    nav = hook._nav_entries(dict(cute_bind.CATALOG))
    titles = [next(iter(group)) for group in nav[1:]]
    assert len(titles) == len({code[2] for code in CATALOG})
    for title in titles:
        m = re.fullmatch(r"CB(\d)xx (?P<name>.+)", title)
        assert m is not None and not re.fullmatch(r"CB\dxx", m["name"]), title
    index = hook.render_index(dict(cute_bind.CATALOG))
    for heading in re.findall(r"^## (.+)$", index, re.M):
        assert not re.fullmatch(r"CB(\d)xx: CB\1xx", heading), heading


def test_a_range_without_a_name_fails_the_build() -> None:
    hook = _hook()
    # every digit 1-9 names a range now (CB9xx: JAX integration): CB0xx has none
    with pytest.raises(RuntimeError, match="CB0xx has no name"):
        hook._nav_entries({"CB001": CATALOG[sorted(CATALOG)[0]]})
