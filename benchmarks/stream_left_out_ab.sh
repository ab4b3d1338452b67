#!/usr/bin/env bash
# Before/after of the left-out stream (issue 44 item 7) on one machine in one run, for the device:
#
#   git archive 5b58c4d^ | xz > .device/base.tar.xz        # the tree before the C stream reader
#   source .device/bootstrap.sh && bash benchmarks/stream_left_out_ab.sh .device/base.tar.xz
#
# Builds both trees' C fast paths, then runs benchmarks/stream_left_out.py (this tree's copy, which
# uses only public API, against each tree by PYTHONPATH) alternating base / this tree ROUNDS times,
# and this tree's bench pointer table (its kernel(...) rows with the stream given and left out).
# Logs and JSON go to $OUT (or ./ab-out).
set -u
BASE_TAR=$1
OUT=${OUT:-$PWD/ab-out}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
# shellcheck source=benchmarks/ab_trees.sh
source "$(dirname "$0")/ab_trees.sh"
ab_trees "$BASE_TAR"
SCRIPT=$PWD/benchmarks/stream_left_out.py
for r in $(seq 1 "$ROUNDS"); do
  for side in base main; do
    tree=$([ "$side" = base ] && echo "$base" || echo "$PWD")
    (cd "$tree" && PYTHONPATH="$tree${PYTHONPATH:+:$PYTHONPATH}" python3 "$SCRIPT" --repeats 11 --iters 2000 \
      --json "$OUT/left-out-$side-$r.json" > "$OUT/left-out-$side-$r.txt" 2>&1)
    tail -n 3 "$OUT/left-out-$side-$r.txt" | sed "s/^/$side $r: /"
  done
done
python3 -m cute_bind bench --workload pointers --repeats 11 --iters 2000 --json "$OUT/bench_pointers.json" > "$OUT/bench_pointers.txt" 2>&1
grep -E "stream left out - given|kernel\(\.\.\.\) call, .*stream" "$OUT/bench_pointers.txt"
