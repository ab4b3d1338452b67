#!/usr/bin/env bash
# One call on the GPU machine: check and time everything, logs under $OUT.
#
#   ../shared/device/stage.sh            # once, on the development machine
#   device run (carry .device):  bash benchmarks/device_job.sh
#
# Writes env.txt, pytest.txt, tutorials.txt, bench.txt/json (C fast path),
# bench_pure.txt/json (pure-Python fast path) and calls.txt (the kernel(...)
# targets checked against bench.json) under $OUT (or ./device-out), and prints
# a short summary last.
set -u
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
source .device/bootstrap.sh || exit 1
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import sys, torch, platform, os; print(sys.version); print('torch', torch.__version__, torch.cuda.get_device_name(), torch.cuda.device_count(), 'GPU(s)'); print(os.cpu_count(), 'cores')"
  grep -m1 'model name' /proc/cpuinfo
  if [ ! -e cute_bind/launch/_claunch.abi3.so ] || [ ! -e cute_bind/jit/_cdispatch.abi3.so ]; then python3 setup.py -q build_ext --inplace 2>&1 | tail -n 3; fi
  python3 -c "import cute_bind.launch as p; print("launch fast path:", p.fast_path())"
  python3 -c "from cute_bind.jit import dispatch; print('call path:', dispatch.call_path())"
  python3 -c "import triton; print('triton', triton.__version__)" 2>&1 | tail -n 1
  python3 -m cute_bind contract
} > "$OUT/env.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider -rs tests/gpu tests/launch/test_prepared.py tests/slots/test_slots.py tests/jit/test_decorator.py \
  tests/launch/test_prepare.py tests/dsl/test_contract.py tests/jit/test_signature.py tests/slots/test_tensor.py \
  tests/slots/test_half_and_sequence.py tests/slots/test_dlpack.py tests/jit/test_dispatch.py > "$OUT/pytest.txt" 2>&1
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
# kernel(...) targets, from the same run: within 0.5 us of handle.launch (pointers; tensors with the
# stream left out), faster than the DSL's TVM-FFI path with torch tensors, >= 3x faster than Triton.
python3 - "$OUT/bench.json" > "$OUT/calls.txt" 2>&1 <<'PY'
import json, sys
try:
    reports = json.load(open(sys.argv[1]))
except Exception as exc:
    print(f"FAIL no bench.json: {type(exc).__name__}: {exc}"); sys.exit(0)
def med(workload, path):
    for r in reports.get(workload, {}).get("rows", []):
        if r["path"] == path:
            return r["median_us"]
    return None
def check(name, ok, detail):
    print(f"{'PASS' if ok else ('SKIP' if ok is None else 'FAIL')} {name}: {detail}")
launch, call = med("pointers", "PreparedLaunch.launch"), med("pointers", "kernel(...) call")
if None not in (launch, call):
    check("pointers: kernel(...) - launch <= 0.5 us", call - launch <= 0.5, f"{call:.3f} - {launch:.3f} = {call - launch:+.3f} us")
tlaunch = med("tensors", "PreparedLaunch.launch, new tensors each step")
tcall = med("tensors", "kernel(out, inp, a) call, stream left out")
tvm = med("tensors", "DSL TVM-FFI path, torch tensors + env stream")
triton = med("tensors", "Triton kernel[grid](...), torch tensors")
if None not in (tlaunch, tcall):
    check("tensors: kernel(...) - launch <= 0.5 us", tcall - tlaunch <= 0.5, f"{tcall:.3f} - {tlaunch:.3f} = {tcall - tlaunch:+.3f} us")
check("tensors: kernel(...) < TVM-FFI (torch tensors, env stream)", None if tvm is None or tcall is None else tcall < tvm,
      "no TVM-FFI row" if tvm is None else f"{tcall:.3f} vs {tvm:.3f} us")
check("tensors: Triton / kernel(...) >= 3", None if triton is None or tcall is None else triton / tcall >= 3,
      "no Triton row" if triton is None else f"{triton:.3f} / {tcall:.3f} = {triton / tcall:.1f}x")
for r in reports.get("specialize", {}).get("rows", []):
    print(f"INFO {r['path']}: {r['median_us']:.2f} us (median)")
PY
echo "---- env";       cat "$OUT/env.txt"
echo "---- pytest rc=$pytest_rc (pure-Python tests/gpu rc=$pure_rc)"; grep -E "passed|failed|error" "$OUT/pytest.txt" | tail -n 4
echo "---- tutorials failed=$tut_fail"; grep -E "^=== .*: (ok|FAILED)" "$OUT/tutorials.txt"
echo "---- bench rc=$bench_rc"; cat "$OUT/bench.txt"
echo "---- bench, pure-Python fast path"; grep -E "^##|PreparedLaunch|kernel\(|bare engine call|TVM|^launch|^direct" "$OUT/bench_pure.txt"
echo "---- kernel(...) targets (calls.txt)"; cat "$OUT/calls.txt"
