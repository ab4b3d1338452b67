"""Cold vs warm first calls of quack and FlashAttention-4 through the ``cute.compile`` hook (issue 41 item 5).

Each case of ``tests/clients/recorder.py`` (the clients' own public entries, driven on
the CPU with ``CUTE_DSL_ARCH=sm_90a``: their compiles are real, their launches recorded
and not run) runs in a fresh process with ``cute_bind.cache.install()``; quack's own
``.o`` cache is off (``QUACK_CACHE_ENABLED=0``) so that every compile reaches the hook.
Each ``cute.compile`` the client makes is timed (the recorder's wrapper around it). A
cold round starts from an empty cache folder, a warm round reuses it.

Usage (the clients' venv, tests/clients/requirements.txt)::

    python benchmarks/compile_cache_clients.py [--rounds 3] [--cases quack.softmax_fwd,...]

Prints a Markdown table: per case, the medians over rounds of the sum of its compiles'
times, cold and warm, and of the whole process (start to the last first call).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time, tempfile
t0 = time.perf_counter()
sys.path.insert(0, ROOT)
import cute_bind
cute_bind.cache.install()
from tests.clients import recorder
# the recorder hands the client a proxy in place of each compiled function (nothing is launched on the CPU);
# a package's in-memory cache of them is then visible to the key, which spells compiled functions by kind:
# say the proxy stands for one (cute_bind.cache.CachedFunction and the DSL's own are known already)
recorder._Proxy.__cute_bind_compiled__ = None
cases = CASES
rec, problems = recorder.record(cases, tempfile.mkdtemp(), snapshots=False)
total = time.perf_counter() - t0
out = {"total_s": total, "problems": problems, "compiles": [(r.case, r.label, r.seconds) for r in rec.records if r.host is not None],
       "events": [e.outcome for e in cute_bind.cache.history()]}
print("RESULT " + json.dumps(out))
"""


def run_once(cases: list[str], folder: str) -> dict:
    from tests.clients.recorder import ENV

    # this tree first, then the caller's path (where the DSL and the clients may be installed, as on the GPU machine)
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, **ENV, CUTE_BIND_CACHE_DIR=folder, PYTHONPATH=path)
    code = CHILD.replace("ROOT", repr(ROOT)).replace("CASES", repr(cases))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(p.stderr[-3000:])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="")
    args = ap.parse_args()
    from tests.clients.recorder import CASES

    cases = [c for c in (args.cases.split(",") if args.cases else CASES) if c != "quack.disk_cache"]
    per: dict[str, dict[str, list[float]]] = {}
    totals: dict[str, list[float]] = {"cold": [], "warm": []}
    events: dict[str, list[str]] = {}
    for _ in range(args.rounds):
        folder = tempfile.mkdtemp(prefix="cb_bench_")
        for phase in ("cold", "warm"):
            r = run_once(cases, folder)
            totals[phase].append(r["total_s"])
            events[phase] = r["events"]
            sums: dict[str, float] = {}
            for case, _label, seconds in r["compiles"]:
                sums[case] = sums.get(case, 0.0) + seconds
            for case, s in sums.items():
                per.setdefault(case, {"cold": [], "warm": [], "n": []})[phase].append(s)
            for case in sums:
                per[case]["n"] = [sum(1 for c, _, _ in r["compiles"] if c == case)]
            if r["problems"]:
                print("problems:", r["problems"], file=sys.stderr)
    print("| case | compiles | cold (s) | warm (s) | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for case, d in per.items():
        cold, warm = statistics.median(d["cold"]), statistics.median(d["warm"]) if d["warm"] else float("nan")
        print(f"| {case} | {d['n'][0]} | {cold:.3f} | {warm:.3f} | {cold / warm:.0f}x |")
    print(
        f"| whole process (start to last first call) | | {statistics.median(totals['cold']):.1f} | {statistics.median(totals['warm']):.1f} | |"
    )
    print(
        "events cold:",
        {k: events["cold"].count(k) for k in set(events["cold"])},
        "warm:",
        {k: events["warm"].count(k) for k in set(events["warm"])},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
