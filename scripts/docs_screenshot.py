#!/usr/bin/env python3
"""Build the docs, serve them on localhost, and look at them in headless Chromium.

Usage::

    python scripts/docs_screenshot.py                  # build, screenshot, check; prints the output folder
    python scripts/docs_screenshot.py --out /tmp/shots # choose the output folder (never inside the repo)
    python scripts/docs_screenshot.py --site SITE_DIR  # skip the build, use an already built site
    python scripts/docs_screenshot.py --config FILE    # build another mkdocs config
    python scripts/docs_screenshot.py --no-screenshots # DOM checks only (what the test runs)

What it does:

1. ``mkdocs build --strict`` into a temporary folder (not ``site/``);
2. serves that folder with ``http.server`` on 127.0.0.1 (a free port);
3. for three pages -- home, one tutorial, one diagnostics catalog page --
   takes a screenshot (``--screenshot``) and dumps the DOM after scripts ran
   (``--dump-dom``) with headless Chromium;
4. checks in each DOM that the site navigation is there (Material's nav with
   links to the other sections) and that code blocks are syntax-highlighted
   (Pygments token spans inside ``.highlight``), plus a page-specific marker.

Exit status 0 when every check passes; the report (JSON) lists the screenshots
and every check. Needs Debian's ``chromium`` (``apt-get install -y chromium``);
run as root it needs ``--no-sandbox``, which is always passed. Chromium makes
no network requests beyond localhost: background networking, component
updates, sync and QUIC are off, and the site loads no third-party fonts.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html.parser
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]

#: (name, path under the site, page-specific text that must be in the DOM)
PAGES: tuple[tuple[str, str, str], ...] = (
    ("home", "", "The 30-second example"),
    ("tutorial", "tutorials/01-quickstart/", "def scale_kernel("),
    ("catalog", "diagnostics/CB204/", "CB204"),
)

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)

#: Pygments token classes that only appear when code is highlighted.
TOKEN_CLASSES = frozenset({"k", "kn", "kd", "nf", "nc", "nd", "s", "s1", "s2", "mi", "mf", "c", "c1", "o", "ow", "n", "nb", "bp"})


def find_chromium() -> str | None:
    """Path of a Chromium binary, or None."""
    env = os.environ.get("CHROMIUM")
    if env and shutil.which(env):
        return shutil.which(env)
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def build_site(dest: Path, config: Path | None = None) -> Path:
    """``mkdocs build --strict`` of this repository (or ``config``) into ``dest``; returns ``dest``."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    config = config or ROOT / "mkdocs.yml"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(dest)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"mkdocs build failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return dest


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@contextlib.contextmanager
def serve(site: Path) -> Iterator[str]:
    """Serve ``site`` on 127.0.0.1 (free port) for the duration; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _chromium(chromium: str, profile: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def dump_dom(chromium: str, profile: Path, url: str) -> str:
    """The page's DOM after its scripts ran (``--dump-dom``)."""
    proc = _chromium(chromium, profile, "--virtual-time-budget=3000", "--dump-dom", url)
    if proc.returncode != 0 or "<html" not in proc.stdout:
        raise RuntimeError(f"chromium --dump-dom {url} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def screenshot(chromium: str, profile: Path, url: str, path: Path, size: str = "1280,1400") -> Path:
    """A PNG screenshot of ``url`` at ``path``."""
    proc = _chromium(chromium, profile, "--virtual-time-budget=3000", f"--window-size={size}", f"--screenshot={path}", url)
    if proc.returncode != 0 or not path.is_file() or path.stat().st_size == 0:
        raise RuntimeError(f"chromium --screenshot {url} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return path


class _DomFacts(html.parser.HTMLParser):
    """What the checks need from a DOM: nav links, highlighted code tokens, text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.nav_links: list[str] = []
        self.token_spans = 0
        self.highlight_blocks = 0
        self.text: list[str] = []
        self._stack: list[tuple[str, frozenset[str]]] = []

    _VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = frozenset((a.get("class") or "").split())
        in_nav = any(t == "nav" and "md-nav" in c for t, c in self._stack)
        in_highlight = any("highlight" in c for _, c in self._stack)
        if tag == "a" and in_nav and a.get("href"):
            self.nav_links.append(a["href"] or "")
        if tag == "div" and "highlight" in classes:
            self.highlight_blocks += 1
        if tag == "span" and in_highlight and classes & TOKEN_CLASSES:
            self.token_spans += 1
        if tag not in self._VOID:
            self._stack.append((tag, classes))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_dom(dom: str, marker: str, url: str = "http://127.0.0.1/") -> dict[str, bool]:
    """The checks for one page's DOM (served at ``url``): name -> passed."""
    facts = _DomFacts()
    facts.feed(dom)
    facts.close()
    text = "".join(facts.text)
    paths = {urllib.parse.urlsplit(urllib.parse.urljoin(url, href)).path for href in facts.nav_links}
    sections = ("/concepts/", "/tutorials/", "/diagnostics/", "/reference/api/", "/changelog/")
    return {
        "navigation present": len(facts.nav_links) >= 10,
        "navigation reaches every section": all(any(p.startswith(s) for p in paths) for s in sections),
        "code blocks present": facts.highlight_blocks >= 1,
        "code highlighted (Pygments token spans)": facts.token_spans >= 20,
        f"page shows {marker!r}": marker in text,
    }


def run(out: Path, site: Path | None = None, screenshots: bool = True, config: Path | None = None) -> dict[str, object]:
    """Build (unless ``site``), serve, screenshot and check; returns the report."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("no Chromium found (apt-get install -y chromium)")
    out.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {"chromium": chromium, "out": str(out), "pages": {}}
    with tempfile.TemporaryDirectory(prefix="cute-bind-docs-") as tmp:
        tmp_path = Path(tmp)
        if site is None:
            site = build_site(tmp_path / "site", config)
        report["site"] = str(site)
        with serve(site) as base:
            for name, path, marker in PAGES:
                url = base + path
                profile = tmp_path / f"profile-{name}"
                page: dict[str, object] = {"url": url}
                if screenshots:
                    page["screenshot"] = str(screenshot(chromium, profile, url, out / f"{name}.png"))
                dom = dump_dom(chromium, profile, url)
                (out / f"{name}.html").write_text(dom, encoding="utf-8")
                page["checks"] = check_dom(dom, marker, url)
                report["pages"][name] = page  # type: ignore[index]
    report["ok"] = all(all(p["checks"].values()) for p in report["pages"].values())  # type: ignore[union-attr,attr-defined]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="folder for screenshots and DOM dumps (default: a new temp folder)")
    parser.add_argument("--site", type=Path, help="an already built site to serve (skips the build)")
    parser.add_argument("--config", type=Path, help="mkdocs config to build (default: the repository's mkdocs.yml)")
    parser.add_argument("--no-screenshots", action="store_true", help="DOM checks only")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="cute-bind-shots-"))
    out = out.resolve()
    if out == ROOT or ROOT in out.parents:
        parser.error(f"--out must be outside the repository ({ROOT})")
    report = run(out, site=args.site, screenshots=not args.no_screenshots, config=args.config)
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
