"""Every page that says how to turn checked mode on says what it costs (issue 44 item 4).

Checked mode's launch runs in Python (the C fast path is skipped): some 100 times a plain launch.
The pages that list its switches (``CUTE_BIND_CHECKED`` among them) give the per-launch cost, the
same figures as the section of docs/concepts/threading.md that explains it, and link there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if p.name != "changelog.md")]
SWITCHED_ON = [p for p in PAGES if "CUTE_BIND_CHECKED" in (ROOT / p).read_text(encoding="utf-8")]
COST = re.compile(r"about (\d+-\d+) us of host time per launch, (\d+-\d+)(?: times|x) a plain")
SECTION = "docs/concepts/threading.md"


def _flat(page: str) -> str:
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


def _section() -> str:
    text = _flat(SECTION)
    start = text.index("### Checked mode")
    return text[start : text.index("## Lifetime", start)]


def test_the_checked_mode_section_says_what_it_costs() -> None:
    section = _section()
    assert "**What it costs.**" in section and COST.search(section), section
    assert "tutorial 7" in section and "checked.launch" in section  # where a reader measures it


def test_the_pages_that_document_checked_mode_are_found() -> None:
    assert {"README.md", SECTION, "docs/concepts/settings.md", "docs/tutorials/06-threads-lifetime.md"} <= set(SWITCHED_ON)


@pytest.mark.parametrize("page", SWITCHED_ON)
def test_a_page_that_turns_checked_mode_on_gives_its_cost(page: str) -> None:
    text = _flat(page)
    found = COST.search(_section() if page == SECTION else text)
    assert found is not None, f"{page} says how to turn checked mode on but not what a checked launch costs"
    assert found.groups() == COST.search(_section()).groups(), f"{page}: {found[0]!r} differs from {SECTION}'s figures"  # type: ignore[union-attr]
    if page != SECTION:
        assert "threading.md#checked-mode" in text, f"{page}: link to the section that explains the cost"
