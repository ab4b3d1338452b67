#!/usr/bin/env bash
# The GPU machine's job, in parts that each fit one device call (10 minutes):
#
#   ../shared/device/stage.sh                 # once, on the development machine
#   device run (carry .device):  bash benchmarks/device_job.sh tests     # the core suites, tutorials
#                                bash benchmarks/device_job.sh rooms     # graphs, torch ops, cache, hostile input, forms
#                                bash benchmarks/device_job.sh bench     # every timing, with its bitwise checks
#                                bash benchmarks/device_job.sh fuzz      # the long fuzzing runs (-m fuzz_long): every slot kind, the cache's hostile folder
#                                bash benchmarks/device_job.sh clients   # quack and FlashAttention-4 through both doors, bitwise
#                                                                        # against their own calls, and their decode benchmark
#   (no argument: all five, for a machine without the 10-minute limit)
#   The clients part needs their wheels in .device/clients (bash benchmarks/stage_clients.sh, after stage.sh).
#
# Logs go under $OUT (or ./device-out); each part prints a short summary last.
set -u
PART=${1:-all}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
source .device/bootstrap.sh || exit 1
# faulthandler: a step that aborts (session 21: "free(): invalid pointer" at exit, rc 134) prints every thread's Python stack
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONFAULTHANDLER=1
R=${BENCH_REPEATS:-21} I=${BENCH_ITERS:-2000}
T=${STEP_TIMEOUT:-540}
run() { local name=$1; shift; timeout "$T" "$@" > "$OUT/$name.txt" 2>&1; echo "$?" > "$OUT/$name.rc"; }
rc() { cat "$OUT/$1.rc" 2>/dev/null || echo "not run"; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import sys, torch, os; print(sys.version); print('torch', torch.__version__, torch.cuda.get_device_name(), torch.cuda.device_count(), 'GPU(s)'); print(os.cpu_count(), 'cores')"
  grep -m1 'model name' /proc/cpuinfo
  if [ ! -e cute_bind/launch/_claunch.abi3.so ] || [ ! -e cute_bind/launch/_ctvmffi.abi3.so ] || [ ! -e cute_bind/jit/_cdispatch.abi3.so ] || [ ! -e cute_bind/graph/_cgraph.abi3.so ]; then
    python3 setup.py -q build_ext --inplace 2>&1 | tail -n 3
  fi
  python3 -c "import cute_bind.launch as p; print('launch fast path:', p.fast_path())"
  python3 -c "import cute_bind.launch._ctvmffi; print('TVM-FFI launch fast path: c')" || echo "TVM-FFI launch fast path: not built"
  python3 -c "from cute_bind.jit import dispatch; print('call path:', dispatch.call_path())"
  python3 -c "import triton; print('triton', triton.__version__)" 2>&1 | tail -n 1
  python3 -m cute_bind contract
} > "$OUT/env.txt" 2>&1
echo "---- env"; cat "$OUT/env.txt"

if [ "$PART" = tests ] || [ "$PART" = all ]; then
  run pytest python3 -m pytest -q -p no:cacheprovider -rs tests/gpu tests/launch tests/slots/test_slots.py tests/slots/test_tensor.py \
    tests/slots/test_half_and_sequence.py tests/slots/test_dlpack.py tests/jit tests/dsl
  run pytest_pure env CUTE_BIND_PURE_PYTHON=1 python3 -m pytest -q -p no:cacheprovider tests/gpu
  : > "$OUT/tutorials.txt"
  tut_fail=0
  for t in tutorials/[0-9]*.py; do
    echo "=== $t" >> "$OUT/tutorials.txt"
    if timeout 300 python3 "$t" >> "$OUT/tutorials.txt" 2>&1; then echo "=== $t: ok" >> "$OUT/tutorials.txt"; else echo "=== $t: FAILED" >> "$OUT/tutorials.txt"; tut_fail=$((tut_fail+1)); fi
  done
  echo "---- pytest rc=$(rc pytest)"; grep -E "passed|failed|error" "$OUT/pytest.txt" | tail -n 3
  echo "---- pure-Python fast path, tests/gpu rc=$(rc pytest_pure)"; grep -E "passed|failed|error" "$OUT/pytest_pure.txt" | tail -n 2
  echo "---- tutorials failed=$tut_fail"; grep -E "^=== .*: (ok|FAILED)" "$OUT/tutorials.txt"
fi

if [ "$PART" = rooms ] || [ "$PART" = all ]; then
  # prepared graphs (fake driver and real), torch ops (eager, compile, reduce-overhead, CUDA graphs), the disk cache
  run rooms python3 -m pytest -q -p no:cacheprovider -rs tests/graph tests/torch tests/cache
  # hostile input: regression tests, fuzzing and the device checks
  run hostile python3 -m pytest -q -p no:cacheprovider -rs -s tests/launch/test_hostile.py tests/slots/test_hostile_values.py tests/slots/test_fuzz.py tests/gpu/test_hostile_gpu.py
  # the README's examples whole on the GPU, and every decorator form with a device kernel
  run authoring python3 -m pytest -q -p no:cacheprovider -rs tests/docs/test_pages.py tests/jit/test_decorator_forms.py tests/gpu/test_decorator_forms_gpu.py
  multi="skipped (fewer than two CUDA devices)"
  if python3 -c "import sys, torch; sys.exit(0 if torch.cuda.device_count() >= 2 else 1)" > /dev/null 2>&1; then
    run multi_gpu python3 -m pytest -q -p no:cacheprovider -rs tests/gpu/test_multi_gpu.py
    multi="pytest rc=$(rc multi_gpu)"
  fi
  echo "---- graphs, torch ops, cache rc=$(rc rooms)"; grep -E "passed|failed|error" "$OUT/rooms.txt" | tail -n 4
  echo "---- hostile input rc=$(rc hostile)"; grep -E "passed|failed|error|refused with CB403" "$OUT/hostile.txt" | tail -n 4
  echo "---- README examples + decorator forms rc=$(rc authoring)"; grep -E "passed|failed|error" "$OUT/authoring.txt" | tail -n 3
  echo "---- multi-GPU: $multi"
fi

if [ "$PART" = fuzz ] || [ "$PART" = all ]; then
  # 4000 examples per slot kind and fast path (CUTE_BIND_FUZZ_LONG_EXAMPLES); the default runs above use 60
  run fuzz_long python3 -m pytest -q -p no:cacheprovider -rs -m fuzz_long tests/slots/test_fuzz.py
  # the disk cache's hostile-folder fuzzing, 5000 examples (test_hostile_folder_long; about 30 s on 2 cores)
  run cache_fuzz_long python3 -m pytest -q -p no:cacheprovider -rs -m fuzz_long tests/cache/test_hostile_cache.py
  echo "---- long fuzzing run rc=$(rc fuzz_long)"; grep -E "passed|failed|error|skipped" "$OUT/fuzz_long.txt" | tail -n 3
  echo "---- cache hostile-folder long fuzzing run rc=$(rc cache_fuzz_long)"; grep -E "passed|failed|error|skipped" "$OUT/cache_fuzz_long.txt" | tail -n 3
fi

if [ "$PART" = clients ] || [ "$PART" = all ]; then
  # the pinned client wheels (pure Python; no network here), installed once per machine beside the DSL
  if [ ! -f /tmp/clients/.ok ]; then
    if ls .device/clients/*.whl > /dev/null 2>&1; then
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/clients .device/clients/*.whl \
        > "$OUT/clients_install.txt" 2>&1 && touch /tmp/clients/.ok
    else
      echo "no wheels in .device/clients: run bash benchmarks/stage_clients.sh on the development machine" > "$OUT/clients_install.txt"
    fi
  fi
  if [ -f /tmp/clients/.ok ]; then
    export PYTHONPATH=$PYTHONPATH:/tmp/clients
    # every compile the clients make, through prepare / kernel / kernel.bind, bitwise against the client's own
    # call; the table is in clients_gpu.txt, the JSON in clients_gpu.json
    CUTE_BIND_CLIENTS_GPU_JSON="$OUT/clients_gpu.json" T=${CLIENTS_TEST_TIMEOUT:-330} \
      run clients_gpu python3 -m pytest -q -p no:cacheprovider -rfEsX -s tests/gpu/test_clients_gpu.py tests/clients/test_bitwise.py
    # tutorial 11 with the clients: both doors launched and compared with the packages' own functions
    T=120 run clients_tutorial python3 tutorials/11_porting_clients.py
    # FlashAttention-4 decode and quack at small shapes: the package's function vs cute_bind, host us per call
    T=${CLIENTS_BENCH_TIMEOUT:-200} run clients_bench python3 benchmarks/clients_bench.py \
      --repeats "${CLIENTS_REPEATS:-11}" --iters "${CLIENTS_ITERS:-300}" --json "$OUT/clients_bench.json"
  fi
  echo "---- clients install"; cat "$OUT/clients_install.txt" 2>/dev/null | tail -n 3; ls /tmp/clients 2>/dev/null | grep -E "dist-info" | tr '\n' ' '; echo
  echo "---- clients through both doors, bitwise on the GPU rc=$(rc clients_gpu)"
  grep -E "^\| |passed|failed|error" "$OUT/clients_gpu.txt" 2>/dev/null | tail -n 40
  echo "---- tutorial 11 with the clients rc=$(rc clients_tutorial)"; tail -n 4 "$OUT/clients_tutorial.txt" 2>/dev/null
  echo "---- clients benchmark rc=$(rc clients_bench)"; grep -vE "^# " "$OUT/clients_bench.txt" 2>/dev/null | tail -n 60
fi

if [ "$PART" = bench ] || [ "$PART" = all ]; then
  run bench python3 -m cute_bind bench --repeats "$R" --iters "$I" --json "$OUT/bench.json"
  run bench_pure env CUTE_BIND_PURE_PYTHON=1 python3 -m cute_bind bench --workload pointers --repeats "$R" --iters "$I" --json "$OUT/bench_pure.json"
  run graph_bench python3 benchmarks/graph_bench.py --chains 1,10,100 --repeats "${GRAPH_REPEATS:-7}" --iters "${GRAPH_ITERS:-300}" --json "$OUT/graph_bench.json"
  # the same chains with the Python replay loop (one cuda.bindings call per rewritten node): before/after of the C loop
  CUTE_BIND_PURE_PYTHON=1 run graph_bench_pure python3 benchmarks/graph_bench.py --chains 1,10,100 --repeats "${GRAPH_REPEATS:-7}" --iters "${GRAPH_ITERS:-300}" --json "$OUT/graph_bench_pure.json"
  run bench_torch python3 -m cute_bind bench --workload torch --repeats "${TORCH_REPEATS:-11}" --iters "$I" --json "$OUT/bench_torch.json"
  run tvm_ffi python3 benchmarks/tvm_ffi_prepared.py --repeats "$R" --iters "$I" --json "$OUT/tvm_ffi.json"
  CUTE_BIND_CACHE_DIR="$OUT/cache-folder" run coldstart python3 -m cute_bind bench --workload coldstart --repeats "${COLD_REPEATS:-5}" --iters "$I" --json "$OUT/coldstart.json"
  rm -rf "$OUT/cache-folder"
  if python3 -c "import sys, torch; sys.exit(0 if torch.cuda.device_count() >= 2 else 1)" > /dev/null 2>&1; then
    run multi_gpu_bench python3 benchmarks/multi_gpu.py --repeats "$R" --iters "$I" --json "$OUT/multi_gpu.json"
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
tpassed = med("tensors", "kernel(out, inp, a, stream) call, stream passed")
tvm = med("tensors", "DSL TVM-FFI path, torch tensors + env stream")
triton = med("tensors", "Triton kernel[grid](...), torch tensors")
if None not in (tlaunch, tcall):
    check("tensors: kernel(...) - launch <= 0.5 us", tcall - tlaunch <= 0.5, f"{tcall:.3f} - {tlaunch:.3f} = {tcall - tlaunch:+.3f} us")
if None not in (tpassed, tcall):
    check("tensors: stream left out - stream passed <= 0.5 us", tcall - tpassed <= 0.5, f"{tcall:.3f} - {tpassed:.3f} = {tcall - tpassed:+.3f} us")
for form in ("torch tensors", "ctypes c_void_p", "torch stream object", "by keyword"):
    fl, fc = med("pointers", f"PreparedLaunch.launch, {form}"), med("pointers", f"kernel(...) call, {form}")
    if None not in (launch, fl, fc):
        check(f"pointers: {form} within 0.3 us of ints", max(fl - launch, fc - call) <= 0.3,
              f"launch {fl - launch:+.3f} us, kernel(...) {fc - call:+.3f} us")
check("tensors: kernel(...) < TVM-FFI (torch tensors, env stream)", None if tvm is None or tcall is None else tcall < tvm,
      "no TVM-FFI row" if tvm is None else f"{tcall:.3f} vs {tvm:.3f} us")
check("tensors: Triton / kernel(...) >= 3", None if triton is None or tcall is None else triton / tcall >= 3,
      "no Triton row" if triton is None else f"{triton:.3f} / {tcall:.3f} = {triton / tcall:.1f}x")
for r in reports.get("specialize", {}).get("rows", []):
    print(f"INFO {r['path']}: {r['median_us']:.2f} us (median)")
PY

  echo "---- bench rc=$(rc bench)"; cat "$OUT/bench.txt"
  echo "---- bench, pure-Python fast path rc=$(rc bench_pure)"; grep -E "^##|PreparedLaunch|kernel\(|bare engine call|TVM|^launch|^direct|^Verdict" "$OUT/bench_pure.txt"
  echo "---- kernel(...) targets (calls.txt)"; cat "$OUT/calls.txt"
  echo "---- graph bench rc=$(rc graph_bench)"; cat "$OUT/graph_bench.txt"
  echo "---- graph bench, Python replay loop rc=$(rc graph_bench_pure)"; cat "$OUT/graph_bench_pure.txt"
  echo "---- torch ops rc=$(rc bench_torch)"; cat "$OUT/bench_torch.txt"
  echo "---- prepared TVM-FFI rc=$(rc tvm_ffi)"; cat "$OUT/tvm_ffi.txt"
  echo "---- coldstart rc=$(rc coldstart)"; grep -E "^\||^targets|^mode|bitwise" "$OUT/coldstart.txt"
fi
