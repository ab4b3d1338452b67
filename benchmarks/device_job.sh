#!/usr/bin/env bash
# One call on the GPU machine: check and time everything, logs under $OUT.
#
#   ../shared/device/stage.sh            # once, on the development machine
#   device run (carry .device):  bash benchmarks/device_job.sh
#
# Writes env.txt, pytest.txt, tutorials.txt, bench.txt/json (C fast path),
# bench_pure.txt/json (pure-Python fast path) and coldstart.txt/json (disk
# compile cache: fresh processes off/cold/warm, reloaded device kernels
# checked bitwise against fresh compiles) under $OUT (or ./device-out), and
# prints a short summary last.
set -u
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
source .device/bootstrap.sh || exit 1
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import sys, torch, platform, os; print(sys.version); print('torch', torch.__version__, torch.cuda.get_device_name(), torch.cuda.device_count(), 'GPU(s)'); print(os.cpu_count(), 'cores')"
  grep -m1 'model name' /proc/cpuinfo
  if [ ! -e cute_bind/launch/_claunch.abi3.so ]; then python3 setup.py -q build_ext --inplace 2>&1 | tail -n 3; fi
  python3 -c "import cute_bind.launch as p; print("launch fast path:", p.fast_path())"
  python3 -m cute_bind contract
} > "$OUT/env.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider -rs tests/gpu tests/launch/test_prepared.py tests/slots/test_slots.py tests/jit/test_decorator.py \
  tests/launch/test_prepare.py tests/dsl/test_contract.py tests/jit/test_signature.py tests/slots/test_tensor.py \
  tests/slots/test_half_and_sequence.py tests/slots/test_dlpack.py tests/cache > "$OUT/pytest.txt" 2>&1
pytest_rc=$?
echo "==== pure-Python fast path: tests/gpu" >> "$OUT/pytest.txt"
CUTE_BIND_PURE_PYTHON=1 python3 -m pytest -q -p no:cacheprovider tests/gpu >> "$OUT/pytest.txt" 2>&1
pure_rc=$?
: > "$OUT/tutorials.txt"
tut_fail=0
for t in tutorials/[0-9]*.py; do
  [ -e "$t" ] || continue
  echo "=== $t" >> "$OUT/tutorials.txt"
  if python3 "$t" >> "$OUT/tutorials.txt" 2>&1; then echo "=== $t: ok" >> "$OUT/tutorials.txt"; else echo "=== $t: FAILED" >> "$OUT/tutorials.txt"; tut_fail=$((tut_fail+1)); fi
done
R=${BENCH_REPEATS:-21} I=${BENCH_ITERS:-2000}
python3 -m cute_bind bench --repeats "$R" --iters "$I" --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
bench_rc=$?
CUTE_BIND_PURE_PYTHON=1 python3 -m cute_bind bench --repeats "$R" --iters "$I" --json "$OUT/bench_pure.json" > "$OUT/bench_pure.txt" 2>&1
# the disk compile cache in a private folder: cold/warm fresh processes, reloaded device kernels bitwise == fresh
CUTE_BIND_CACHE_DIR="$OUT/cache-folder" python3 -m cute_bind bench --workload coldstart --repeats "${COLD_REPEATS:-5}" --iters "$I" \
  --json "$OUT/coldstart.json" > "$OUT/coldstart.txt" 2>&1
cold_rc=$?
rm -rf "$OUT/cache-folder"
echo "---- env";       cat "$OUT/env.txt"
echo "---- pytest rc=$pytest_rc (pure-Python tests/gpu rc=$pure_rc)"; grep -E "passed|failed|error" "$OUT/pytest.txt" | tail -n 4
echo "---- tutorials failed=$tut_fail"; grep -E "^=== .*: (ok|FAILED)" "$OUT/tutorials.txt"
echo "---- bench rc=$bench_rc"; cat "$OUT/bench.txt"
echo "---- bench, pure-Python fast path"; grep -E "^##|PreparedLaunch|bare engine call|TVM|^launch|^direct" "$OUT/bench_pure.txt"
echo "---- coldstart (disk compile cache) rc=$cold_rc"; grep -E "^\||^targets|^mode" "$OUT/coldstart.txt"
echo "---- reloaded device kernels vs fresh compiles"; tr ',' '\n' < "$OUT/coldstart.txt" | grep -E "bitwise|launch bytes|loaded from disk" | sed 's/^ *//'
