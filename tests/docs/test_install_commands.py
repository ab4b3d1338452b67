"""The install and test commands the pages give work as typed (issue 44 item 2).

- cute-bind is not on the package index: no page or requirements file may tell a reader to
  ``pip install "cute-bind[...]"``; the project is installed from the checkout (``-e ".[extra]"``),
  and every extra named that way exists in pyproject.toml (the editors page said
  ``pip install "cute-bind[lsp]"``, which fails);
- the torch command for the CPU build is given plainly, and it is the one CI runs, the ``torch``
  extra's pin and the clients' requirements' first line;
- the test suite's duration is said where its command is, with the quick subset, and
  ``-m quick`` selects tests from every file the subset lists.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import QUICK

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if p.name != "changelog.md")]
TEXTS = [*PAGES, "tests/clients/requirements.txt", "cute_bind/lsp/__init__.py"]
PIP = re.compile(r"pip install (?P<args>[^`\n#]+)")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def pip_installs() -> list[tuple[str, list[str]]]:
    """Every ``pip install ...`` the pages and the lsp's message show: (where, its arguments)."""
    found = []
    for name in TEXTS:
        for m in PIP.finditer((ROOT / name).read_text(encoding="utf-8")):
            try:
                found.append((name, shlex.split(m["args"].replace('\\"', '"'))))
            except ValueError:
                found.append((name, m["args"].split()))
    return found


def test_the_commands_are_found() -> None:
    assert any(name == "docs/editors.md" for name, _ in pip_installs())


@pytest.mark.parametrize("where, args", pip_installs(), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_the_project_is_installed_from_the_checkout(where: str, args: list[str]) -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    for arg in args:
        assert not re.match(r"cute[-_]bind\b", arg, re.I), f"{where}: pip install {arg!r}: cute-bind is not on the package index"
        local = re.fullmatch(r"\.(?:\[(?P<extras>[\w,-]+)\])?", arg.strip("'\""))
        if local and local["extras"]:
            assert set(local["extras"].split(",")) <= extras, f"{where}: {arg}: no such extra in pyproject.toml"


def test_the_torch_cpu_command_is_the_one_ci_runs() -> None:
    (pin,) = PYPROJECT["project"]["optional-dependencies"]["torch"]
    command = f"python -m pip install {pin}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"{command}   # PyTorch's CPU build" in readme
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert f"python -m pip install -q {pin}" in ci and f'"$CVENV/bin/python" -m pip install -q {pin}' in ci
    requirements = (ROOT / "tests/clients/requirements.txt").read_text(encoding="utf-8")
    assert f"pip install {pin}            # PyTorch's CPU build, first" in requirements
    assert [ln.split("#")[0].strip() for ln in requirements.splitlines() if ln.split("#")[0].strip()][0] == pin


def test_the_suite_says_how_long_it_takes_and_offers_the_quick_subset() -> None:
    for page in ("README.md", "docs/index.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert re.search(r"python -m pytest\s+# the whole test suite \(no GPU needed\): \d+-\d+ minutes on 2 cores", text), page
        assert re.search(r"python -m pytest -m quick\s+# a quick subset first", text), page
    markers = " ".join(PYPROJECT["tool"]["pytest"]["ini_options"]["markers"])
    assert "quick:" in markers


def test_the_quick_subset_selects_every_listed_file() -> None:
    assert all((ROOT / path).is_file() for path in QUICK)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "quick", *QUICK],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    files = {ln.split("::")[0] for ln in proc.stdout.splitlines() if "::" in ln}
    assert files == set(QUICK), set(QUICK) ^ files
