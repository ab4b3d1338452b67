"""The documentation site builds strictly and contains what it must.

Builds with ``mkdocs build --strict`` (broken links, missing files and
unresolved API cross-references fail) into a temporary folder, then checks:

- every ``cute_bind.CATALOG`` code has its generated page (and the index
  links them all), with the entry's text and the right example label;
- every tutorial page contains its tutorial script, verbatim (the page includes
  the file; it is never copied);
- the API reference and the other nav pages exist.

``CUTE_BIND_DOCS_CONFIG`` names another mkdocs config to build (default: the
repository's ``mkdocs.yml``). Skipped when the docs extra (mkdocs, mkdocs-material, mkdocstrings) is not
installed.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("material", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("mkdocstrings", reason="the docs extra is not installed (pip install -e '.[docs]')")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cute_bind import CATALOG  # noqa: E402

ILLUSTRATION_LABEL = "illustration (condition cannot be produced here)"
ILLUSTRATION_MARKER = "raise cute_bind.error("
SNIPPET_MARKER = re.compile(r"^\s*# --8<-- \[(start|end):[\w-]+\]\s*$")
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
CONFIG = Path(os.environ.get("CUTE_BIND_DOCS_CONFIG") or ROOT / "mkdocs.yml")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("docs") / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(CONFIG), "-d", str(dest)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return dest


def _page(site: Path, path: str) -> str:
    file = site / path / "index.html"
    assert file.is_file(), f"missing page {path}/"
    return file.read_text(encoding="utf-8")


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _code_blocks(page: str) -> list[str]:
    """The text of every highlighted code block of a page."""
    blocks = re.findall(r'<div class="highlight">.*?<code>(.*?)</code>', page, flags=re.S)
    return [_text(b) for b in blocks]


def test_every_catalog_code_has_its_page(site: Path) -> None:
    for code, entry in CATALOG.items():
        page = _page(site, f"diagnostics/{code}")
        text = _text(page)
        assert code in text and entry.slug in text, code
        assert " ".join(entry.summary.split()) in " ".join(text.split()), code
        assert entry.error_class.__name__ in text, code
        # the example is on the page, verbatim
        assert any(b.rstrip() == entry.example.rstrip() for b in _code_blocks(page)), code


def test_example_labels(site: Path) -> None:
    for code, entry in CATALOG.items():
        text = _text(_page(site, f"diagnostics/{code}"))
        illustration = ILLUSTRATION_MARKER in entry.example
        assert (ILLUSTRATION_LABEL in text) == illustration, code
        assert ("runnable example" in text) != illustration, code


def test_catalog_index_links_every_code(site: Path) -> None:
    page = _page(site, "diagnostics")
    for code in CATALOG:
        assert f'href="{code}/"' in page, code


def test_catalog_pages_are_in_the_navigation(site: Path) -> None:
    page = _page(site, "diagnostics")
    nav = page[page.index('class="md-nav') :]
    for code in CATALOG:
        assert f"{code} {CATALOG[code].slug}" in nav, code


def test_tutorial_pages_contain_the_tutorial_source(site: Path) -> None:
    assert len(TUTORIALS) == 12
    for script in TUTORIALS:
        slug = script.stem.replace("_", "-")
        page = _page(site, f"tutorials/{slug}")
        source = "\n".join(line for line in script.read_text(encoding="utf-8").splitlines() if not SNIPPET_MARKER.match(line))
        blocks = _code_blocks(page)
        assert any(b.rstrip() == source.rstrip() for b in blocks), f"{script.name} is not included whole in {slug}"
        assert "--8<--" not in _text(page), f"a snippet marker or include leaked into {slug}"
        # the page shows parts of the script in its prose sections too
        assert len(blocks) >= 3, slug


def test_home_example_comes_from_the_quickstart(site: Path) -> None:
    page = _page(site, "")
    quickstart = (ROOT / "tutorials" / "01_quickstart.py").read_text(encoding="utf-8")
    blocks = [b for b in _code_blocks(page) if "cute_bind.kernel" in b]
    assert blocks and all(line in quickstart for b in blocks for line in b.splitlines() if line.strip())


def test_api_reference(site: Path) -> None:
    page = _page(site, "reference/api")
    for name in ("kernel", "prepare", "Kernel", "PreparedLaunch", "Pointer", "CATALOG", "Diagnostic", "CuteBindError"):
        assert f'id="cute_bind.{name}"' in page, name
    assert 'id="cute_bind.PreparedLaunch.clone"' in page
    assert ":func:`" not in page and ":class:`" not in page  # reST roles were converted


def test_nav_pages_exist(site: Path) -> None:
    for path in (
        "",
        "concepts/prepared-launch",
        "concepts/eligibility",
        "concepts/tensors",
        "concepts/threading",
        "concepts/graphs",
        "concepts/versions",
        "concepts/calling",
        "tutorials",
        "benchmarks",
        "changelog",
    ):
        _page(site, path)
    assert not (site / "hooks").exists(), "the hook modules must not be published"
