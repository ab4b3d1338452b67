"""Cold vs warm ``cute.compile`` calls of tutorial 3 (``tutorials/03_porting.py``, unmodified) through the hook.

Each round runs the tutorial in a fresh process with ``CUTE_BIND_COMPILE_HOOK=1`` against an empty
cache folder (cold), then again against the same folder (warm); it prints the medians over rounds of
each ``cute.compile`` the tutorial makes (the cache's event time: key + compile, or key + load) and of
the whole process. ``python benchmarks/compile_cache_tutorial.py [--rounds 5]`` (CPU: device kernels
compile for ``CUTE_DSL_ARCH=sm_90a``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = """
import io, json, runpy, sys, contextlib
import cute_bind
with contextlib.redirect_stdout(io.StringIO()):
    runpy.run_path(sys.argv[1], run_name="__main__")
print("RESULT " + json.dumps([(e.kernel, e.outcome, e.seconds) for e in cute_bind.cache.history()]))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--script", default=os.path.join(ROOT, "tutorials", "03_porting.py"))
    args = ap.parse_args()
    env = dict(os.environ, CUTE_BIND_COMPILE_HOOK="1", PYTHONPATH=ROOT)
    env.setdefault("CUTE_DSL_ARCH", "sm_90a")
    per: dict[tuple[str, int], dict[str, list[float]]] = {}
    whole: dict[str, list[float]] = {"cold": [], "warm": []}
    for _ in range(args.rounds):
        env["CUTE_BIND_CACHE_DIR"] = tempfile.mkdtemp(prefix="cb_tut_")
        for phase in ("cold", "warm"):
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", CHILD, args.script], env=env, capture_output=True, text=True, timeout=900)
            whole[phase].append(time.perf_counter() - t)
            line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
            if line is None:
                raise RuntimeError(p.stderr[-3000:])
            seen: dict[str, int] = {}
            for kernel, outcome, seconds in json.loads(line[7:]):
                n = seen[kernel] = seen.get(kernel, 0) + 1
                per.setdefault((kernel, n), {"cold": [], "warm": [], "outcomes": []})
                per[(kernel, n)][phase].append(seconds)
                per[(kernel, n)]["outcomes"].append(outcome)
    print("| cute.compile of | cold (ms) | warm (ms) | outcomes |")
    print("|---|---:|---:|---|")
    for (kernel, n), d in per.items():
        print(
            f"| {kernel.rsplit('.', 1)[-1]} #{n} | {statistics.median(d['cold']) * 1e3:.0f} | {statistics.median(d['warm']) * 1e3:.1f} | {sorted(set(d['outcomes']))} |"
        )
    print(f"| whole process | {statistics.median(whole['cold']):.2f} s | {statistics.median(whole['warm']):.2f} s | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
