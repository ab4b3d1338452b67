"""``python -m cute_bind bench`` as a user runs it (issue 44 item 1), one short run read as printed.

- progress from the first line (stderr, merged here in the order it was written), each workload's
  line before its table;
- the figures say which machine they are for and, without a GPU, what they become on one: the
  documented device run (cute_bind.bench.reference) quoted before the first table, and in the verdict;
- the pointer table's comparison column is measured from the cheapest call, and a value below it
  comes with its explanation;
- the cold compile reads with its unit, not as a bare count of microseconds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cute_bind.bench.reference import format_device_run
from cute_bind.bench.timing import machine
from tests.child import child_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("bench")
    env = child_env(CUTE_BIND_CACHE_DIR=str(tmp / "cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "cute_bind", "bench", "--repeats", "2", "--iters", "20"],
        cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc.stdout


def test_progress_comes_first_and_before_each_table(printed: str) -> None:
    lines = printed.splitlines()
    assert lines[0].startswith("cute_bind bench: importing the DSL"), lines[:3]
    for workload, table in (
        ("pointer workload: compiling", "## pointer workload"),
        ("tensor workload: compiling", "## tensor workload"),
        ("kernel(...) calls: compiling", "## kernel(...) calls"),
    ):
        assert printed.index(workload) < printed.index(table), workload
    assert re.search(r"pointer workload: timing \d+ paths, 2 rounds x 20 calls: round 1,2", printed)


def test_the_figures_say_their_machine_and_what_a_gpu_makes_of_them(printed: str) -> None:
    head = printed[: printed.index("## pointer workload")]
    assert f"The figures below are for this machine: {machine()}" in head
    from cute_bind import dsl

    if dsl.cuda_device_count() == 0:
        assert "with no CUDA device" in head and "the ratios shrink" in head
    assert format_device_run() in head  # the documented GPU run, quoted whole
    pointer_verdict = next(ln for ln in printed.splitlines() if ln.startswith("Verdict: on this machine's"))
    if dsl.cuda_device_count() == 0:
        assert "CPU alone" in pointer_verdict and "the documented H200 run" in pointer_verdict and "3.4x" in pointer_verdict


def test_no_unexplained_value_below_the_cheapest_call(printed: str) -> None:
    table = printed[printed.index("## pointer workload") : printed.index("## tensor workload")]
    assert "| over cheapest call |" in table and "vs bare" not in table
    below = [ln for ln in table.splitlines() if ln.startswith("| ") and re.match(r"\| [^|]+ \| [\d.]+ \| [\d.]+ \| -", ln)]
    if below:
        assert "Below zero (" in table and "timing noise" in table, below


def test_the_cold_compile_reads_with_its_unit(printed: str) -> None:
    cold = next(ln for ln in printed.splitlines() if ln.startswith("| kernel(...) miss, cold compile"))
    median = cold.split("|")[2].strip()
    assert re.fullmatch(r"[\d.]+ (us|ms|s)", median) and not re.fullmatch(r"\d{4,}\.\d+ us", median), cold
    assert "one-off prices, paid once per new variant" in printed
