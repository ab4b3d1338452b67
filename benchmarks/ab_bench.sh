#!/usr/bin/env bash
# Before/after host cost of a hot-path change, on one machine in one run (device or CPU):
#
#   git archive <base-commit> | xz > .device/base.tar.xz   # the tree before the change
#   bash benchmarks/ab_bench.sh .device/base.tar.xz [workloads...]   (default: pointers tensors)
#
# Builds the C fast paths of both trees, then runs `python -m cute_bind bench --workload W` for
# each workload, alternating base / this tree ROUNDS times (default 3), so drift of the machine
# falls on both sides alike; prints every run's medians side by side, per path. Logs and JSON go
# to $OUT (or ./ab-out).
set -u
BASE_TAR=$1; shift
WORKLOADS=${*:-pointers tensors}
OUT=${OUT:-$PWD/ab-out}
ROUNDS=${ROUNDS:-3} R=${BENCH_REPEATS:-21} I=${BENCH_ITERS:-2000}
mkdir -p "$OUT"
# shellcheck source=benchmarks/ab_trees.sh
source "$(dirname "$0")/ab_trees.sh"
ab_trees "$BASE_TAR"
for w in $WORKLOADS; do
  for r in $(seq 1 "$ROUNDS"); do
    for side in base main; do
      tree=$([ "$side" = base ] && echo "$base" || echo "$PWD")
      (cd "$tree" && PYTHONPATH="$tree${PYTHONPATH:+:$PYTHONPATH}" python3 -m cute_bind bench --workload "$w" --repeats "$R" --iters "$I" \
        --json "$OUT/$w-$side-$r.json" > "$OUT/$w-$side-$r.txt" 2>&1)
    done
  done
done
python3 - "$OUT" $WORKLOADS <<'PY'
import glob, json, os, statistics, sys
out, workloads = sys.argv[1], sys.argv[2:]
for w in workloads:
    rows = {}
    for side in ("base", "main"):
        for f in sorted(glob.glob(os.path.join(out, f"{w}-{side}-*.json"))):
            try:
                report = json.load(open(f))
            except Exception as exc:
                print(f"{f}: unreadable ({exc})")
                continue
            for row in report.get(w, {}).get("rows", []):
                rows.setdefault(row["path"], {}).setdefault(side, []).append(row["median_us"])
    print(f"== {w}: median us per launch, each run (base = before, main = after)")
    for path, sides in rows.items():
        b, m = sides.get("base", []), sides.get("main", [])
        fmt = lambda xs: " ".join(f"{x:7.3f}" for x in xs)
        delta = f"{statistics.median(m) - statistics.median(b):+.3f}" if b and m else "n/a"
        print(f"  {path:45s} base {fmt(b)} | main {fmt(m)} | median delta {delta}")
PY
rm -rf "$base"
