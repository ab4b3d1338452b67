"""benchmarks/graph_bench.py keeps working: a tiny run through the fake driver (numbers unused)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# (chains, iterations): tiny; and the documented 100-kernel chain at the fake run's most iterations
# (50), which overflowed the fake driver's mailbox (4096 launches) before it was drained per call
RUNS = [([1, 3], 3), ([100], 50)]


@pytest.mark.parametrize("chains,iters", RUNS)
def test_graph_bench_smoke_run(tmp_path: Path, chains: list[int], iters: int) -> None:
    out = tmp_path / "graph.json"
    env = dict(os.environ, CUTE_DSL_ARCH=os.environ.get("CUTE_DSL_ARCH", "sm_90a"))
    arg = ",".join(map(str, chains))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "graph_bench.py"), "--fake", "--chains", arg, "--iters", str(iters), "--repeats", "1", "--json", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["chain"] for r in rows] == chains and all(r["bitwise"] for r in rows)
    assert all(r[k] > 0 for r in rows for k in ("launch", "replay", "replay_one_pointer", "replay_one_pointer_batched", "replay_all_slots"))
    assert all(v > 0 for r in rows for v in r["pieces"].values())
