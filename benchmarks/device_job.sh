#!/usr/bin/env bash
# One call on the GPU machine: check and time everything, logs under $OUT.
#
#   ../shared/device/stage.sh            # once, on the development machine
#   device run (carry .device):  bash benchmarks/device_job.sh
#
# Writes env.txt, pytest.txt, authoring.txt, tutorials.txt, bench.txt/json (C fast path) and
# Writes env.txt, pytest.txt, hostile.txt, tutorials.txt, bench.txt/json (C fast path) and
# Writes env.txt, pytest.txt, tutorials.txt, bench.txt/json (C fast path),
# multi_gpu.txt/json (with two or more GPUs only) and
# bench_pure.txt/json (pure-Python fast path) under $OUT (or ./device-out),
# Writes env.txt, pytest.txt, tutorials.txt, bench.txt/json (C fast path),
# bench_pure.txt/json (pure-Python fast path) and tvm_ffi.txt/json (prepared
# TVM-FFI launches vs the TVM-FFI call) under $OUT (or ./device-out),
# and prints a short summary last.
# Writes env.txt, pytest.txt, tutorials.txt, bench.txt/json (C fast path),
# bench_pure.txt/json (pure-Python fast path) and graph_bench.txt/json
# (cute_bind.graph host cost per kernel) under $OUT (or ./device-out), and
# prints a short summary last.
# Writes env.txt, pytest.txt, tutorials.txt, bench.txt/json (C fast path),
# bench_pure.txt/json (pure-Python fast path) and bench_torch.txt/json (kernels as
# cute_bind.torch ops: eager, torch.compile, reduce-overhead) plus
# torch_op_overhead.txt under $OUT (or ./device-out), and prints a short summary last.
# Writes env.txt, pytest.txt, tutorials.txt, bench.txt/json (C fast path),
# bench_pure.txt/json (pure-Python fast path) and calls.txt (the kernel(...)
# targets checked against bench.json) under $OUT (or ./device-out), and prints
# a short summary last.
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
  python3 -c "import cute_bind.launch as p; print('launch fast path:', p.fast_path())"
  if [ ! -e cute_bind/launch/_claunch.abi3.so ] || [ ! -e cute_bind/launch/_ctvmffi.abi3.so ]; then python3 setup.py -q build_ext --inplace 2>&1 | tail -n 3; fi
  python3 -c "import cute_bind.launch as p; print("launch fast path:", p.fast_path())"
  python3 -c "import cute_bind.launch._ctvmffi; print('TVM-FFI launch fast path: c')" || echo "TVM-FFI launch fast path: not built"
  if [ ! -e cute_bind/launch/_claunch.abi3.so ] || [ ! -e cute_bind/jit/_cdispatch.abi3.so ]; then python3 setup.py -q build_ext --inplace 2>&1 | tail -n 3; fi
  python3 -c "import cute_bind.launch as p; print("launch fast path:", p.fast_path())"
  python3 -c "from cute_bind.jit import dispatch; print('call path:', dispatch.call_path())"
  python3 -c "import triton; print('triton', triton.__version__)" 2>&1 | tail -n 1
  python3 -m cute_bind contract
} > "$OUT/env.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider -rs tests/gpu tests/launch/test_prepared.py tests/slots/test_slots.py tests/jit/test_decorator.py \
  tests/launch/test_prepare.py tests/dsl/test_contract.py tests/jit/test_signature.py tests/slots/test_tensor.py \
  tests/slots/test_half_and_sequence.py tests/slots/test_dlpack.py tests/torch > "$OUT/pytest.txt" 2>&1
  tests/slots/test_half_and_sequence.py tests/slots/test_dlpack.py tests/launch/test_conformance.py tests/launch/test_tvm_ffi.py > "$OUT/pytest.txt" 2>&1
  tests/slots/test_half_and_sequence.py tests/slots/test_dlpack.py tests/jit/test_dispatch.py > "$OUT/pytest.txt" 2>&1
  tests/slots/test_half_and_sequence.py tests/slots/test_dlpack.py tests/cache > "$OUT/pytest.txt" 2>&1
pytest_rc=$?
# authoring: the README's examples run whole on the GPU (without one they only compile), and every
# decorator form launches a device kernel as plain @cute.jit does (CPU forms x bodies too)
python3 -m pytest -q -p no:cacheprovider -rs tests/docs/test_readme.py tests/jit/test_decorator_forms.py \
  tests/gpu/test_decorator_forms_gpu.py > "$OUT/authoring.txt" 2>&1
authoring_rc=$?
echo "==== graph recording through the fake driver: tests/graph (own run: needs numpy and hypothesis)" >> "$OUT/pytest.txt"
python3 -m pytest -q -p no:cacheprovider tests/graph >> "$OUT/pytest.txt" 2>&1
graph_tests_rc=$?
# hostile input (issue 19): regression tests, fuzzing and device checks (tests/gpu/test_hostile_gpu.py ran above)
python3 -m pytest -q -p no:cacheprovider -rs -s tests/launch/test_hostile.py tests/slots/test_hostile_values.py tests/slots/test_fuzz.py \
  tests/gpu/test_hostile_gpu.py > "$OUT/hostile.txt" 2>&1
hostile_rc=$?
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
timeout 900 python3 benchmarks/graph_bench.py --chains 1,10,100 --repeats "${GRAPH_REPEATS:-7}" --iters "${GRAPH_ITERS:-300}" \
  --json "$OUT/graph_bench.json" > "$OUT/graph_bench.txt" 2>&1
graph_rc=$?
# torch ops: eager op vs kernel(...) vs handle.launch vs hand-written custom ops (handle.launch, TVM-FFI);
# torch.compile(fullgraph) and reduce-overhead against torch.mul; every path checked bitwise against handle.launch
python3 -m cute_bind bench --workload torch --repeats "$R" --iters "$I" --json "$OUT/bench_torch.json" > "$OUT/bench_torch.txt" 2>&1
torch_rc=$?
python3 benchmarks/torch_op_overhead.py --repeats "$R" --iters 5000 > "$OUT/torch_op_overhead.txt" 2>&1
# prepared TVM-FFI launch vs the TVM-FFI call itself (tensors + env stream, int pointers): bitwise checks, then timings
python3 benchmarks/tvm_ffi_prepared.py --repeats "$R" --iters "$I" --json "$OUT/tvm_ffi.json" > "$OUT/tvm_ffi.txt" 2>&1
tvm_rc=$?
# Multi-GPU, only with two or more devices: tests/gpu/test_multi_gpu.py and the per-device launch overhead.
multi="skipped (fewer than two CUDA devices)"
if python3 -c "import sys, torch; sys.exit(0 if torch.cuda.device_count() >= 2 else 1)" > /dev/null 2>&1; then
  python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_multi_gpu.py > "$OUT/multi_gpu.txt" 2>&1
  multi_rc=$?
  python3 benchmarks/multi_gpu.py --repeats "$R" --iters "$I" --json "$OUT/multi_gpu.json" >> "$OUT/multi_gpu.txt" 2>&1
  multi="pytest rc=$multi_rc, benchmark rc=$?"
fi
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
# the disk compile cache in a private folder: cold/warm fresh processes, reloaded device kernels bitwise == fresh
CUTE_BIND_CACHE_DIR="$OUT/cache-folder" python3 -m cute_bind bench --workload coldstart --repeats "${COLD_REPEATS:-5}" --iters "$I" \
  --json "$OUT/coldstart.json" > "$OUT/coldstart.txt" 2>&1
cold_rc=$?
rm -rf "$OUT/cache-folder"
echo "---- env";       cat "$OUT/env.txt"
echo "---- pytest rc=$pytest_rc (pure-Python tests/gpu rc=$pure_rc)"; grep -E "passed|failed|error" "$OUT/pytest.txt" | tail -n 4
echo "---- README examples on the GPU + decorator forms rc=$authoring_rc"; grep -E "passed|failed|error|SKIPPED" "$OUT/authoring.txt" | tail -n 5
echo "---- hostile input rc=$hostile_rc"; grep -E "passed|failed|error|refused with CB403" "$OUT/hostile.txt" | tail -n 4
echo "---- tutorials failed=$tut_fail"; grep -E "^=== .*: (ok|FAILED)" "$OUT/tutorials.txt"
echo "---- bench rc=$bench_rc"; cat "$OUT/bench.txt"
echo "---- bench, pure-Python fast path"; grep -E "^##|PreparedLaunch|bare engine call|TVM|^launch|^direct|^Verdict" "$OUT/bench_pure.txt"
echo "---- pytest rc=$pytest_rc (tests/graph rc=$graph_tests_rc, pure-Python tests/gpu rc=$pure_rc)"; grep -E "passed|failed|error" "$OUT/pytest.txt" | tail -n 6
echo "---- bench torch ops rc=$torch_rc"; cat "$OUT/bench_torch.txt"
echo "---- torch op overhead (no-op kernel)"; cat "$OUT/torch_op_overhead.txt"
echo "---- prepared TVM-FFI rc=$tvm_rc"; cat "$OUT/tvm_ffi.txt"
echo "---- bench, pure-Python fast path"; grep -E "^##|PreparedLaunch|bare engine call|TVM|^launch|^direct" "$OUT/bench_pure.txt"
echo "---- graph bench rc=$graph_rc (us per kernel, host; bitwise = replay vs one-by-one)"; cat "$OUT/graph_bench.txt"
echo "---- multi-GPU: $multi"
if [ -e "$OUT/multi_gpu.txt" ]; then grep -E "passed|failed|error|^##|^\||^check" "$OUT/multi_gpu.txt" || true; fi
echo "---- bench, pure-Python fast path"; grep -E "^##|PreparedLaunch|kernel\(|bare engine call|TVM|^launch|^direct" "$OUT/bench_pure.txt"
echo "---- kernel(...) targets (calls.txt)"; cat "$OUT/calls.txt"
echo "---- coldstart (disk compile cache) rc=$cold_rc"; grep -E "^\||^targets|^mode" "$OUT/coldstart.txt"
echo "---- reloaded device kernels vs fresh compiles"; tr ',' '\n' < "$OUT/coldstart.txt" | grep -E "bitwise|launch bytes|loaded from disk" | sed 's/^ *//'
