"""The documented device run the bench quotes has one source (issue 44 item 1).

cute_bind.bench.reference.DEVICE_RUN is what ``python -m cute_bind bench`` prints as the GPU
comparison. It must be the table docs/benchmarks.md shows under its section, row for row, and the
medians of the recorded run that table came from (benchmarks/results/h200_c.json), so a re-recorded
run that updates one and not the others fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from cute_bind.bench.reference import DEVICE_RUN, format_device_run

ROOT = Path(__file__).resolve().parents[2]


def _page_table() -> list[tuple[str, float]]:
    text = (ROOT / DEVICE_RUN.page).read_text(encoding="utf-8")
    start = text.index(f"\n## {DEVICE_RUN.section}\n")
    section = text[start : text.index("\n## ", start + 1)]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\| (?P<path>[^|]+?) \| (?P<median>[\d.]+) \|", line)
        if m:
            rows.append((m["path"], float(m["median"])))
    return rows


def test_the_quoted_run_is_the_pages_table() -> None:
    assert _page_table() == list(DEVICE_RUN.rows)


def test_the_quoted_run_is_the_recorded_one() -> None:
    recorded = json.loads((ROOT / DEVICE_RUN.source).read_text(encoding="utf-8"))["pointers"]["rows"]
    assert [(r["path"], round(r["median_us"], 2)) for r in recorded] == list(DEVICE_RUN.rows)


def test_the_page_names_the_machine_the_bench_quotes() -> None:
    env = (ROOT / "benchmarks/results/h200_env.txt").read_text(encoding="utf-8")
    assert "H200" in env and "580.159.04" in env and "580.159.04" in DEVICE_RUN.machine


def test_the_quote_states_the_ratio_from_its_rows() -> None:
    text = format_device_run()
    direct, launch = DEVICE_RUN.median("direct call, args reused"), DEVICE_RUN.median("PreparedLaunch.launch")
    assert f"is {direct / launch:.1f}x cheaper than the direct call" in text
    assert all(f"| {path} | {us:.2f} |" in text for path, us in DEVICE_RUN.rows)
