"""The built site in a real headless browser: navigation and code highlighting.

Runs the checks of ``scripts/docs_screenshot.py`` (build, serve on 127.0.0.1,
``chromium --dump-dom`` of the home page, a tutorial and a catalog page) without
taking screenshots. Skipped when Chromium (Debian: ``apt-get install -y
chromium``) or the docs extra is absent. ``CUTE_BIND_DOCS_CONFIG`` names
another mkdocs config to build, as in ``tests/docs/test_docs.py``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("material", reason="the docs extra is not installed (pip install -e '.[docs]')")

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_screenshot", ROOT / "scripts" / "docs_screenshot.py")
assert _spec is not None and _spec.loader is not None
docs_screenshot = importlib.util.module_from_spec(_spec)
sys.modules["docs_screenshot"] = docs_screenshot
_spec.loader.exec_module(docs_screenshot)

pytestmark = pytest.mark.skipif(docs_screenshot.find_chromium() is None, reason="chromium is not installed")


def test_site_in_headless_chromium(tmp_path: Path) -> None:
    config = os.environ.get("CUTE_BIND_DOCS_CONFIG")
    report = docs_screenshot.run(tmp_path / "out", screenshots=False, config=Path(config) if config else None)
    failed = {f"{name}: {check}" for name, page in report["pages"].items() for check, ok in page["checks"].items() if not ok}
    assert not failed, f"failed checks: {sorted(failed)}; DOM dumps in {tmp_path / 'out'}"
    assert set(report["pages"]) == {"home", "tutorial", "catalog"}


def test_dom_check_detects_missing_highlighting() -> None:
    """The checker itself: a page without nav or highlighted code fails."""
    plain = "<html><body><pre><code>def f(): pass</code></pre></body></html>"
    checks = docs_screenshot.check_dom(plain, "def f")
    assert checks["page shows 'def f'"]
    assert not checks["navigation present"]
    assert not checks["code highlighted (Pygments token spans)"]
