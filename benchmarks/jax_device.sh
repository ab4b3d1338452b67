#!/usr/bin/env bash
# cute_bind.jax on the GPU machine, in one device call (issue 42):
#   run(command="source .device/bootstrap.sh && bash benchmarks/jax_device.sh", carry=[".device", "cute_bind/jax/_cxla.abi3.so"])
# 1. builds the C extensions there (cute_bind/jax/_cxla against the machine's jaxlib headers; the carried
#    build is the fallback), 2. tests/jax (CPU tests under the machine's JAX, then tests/jax/test_gpu.py:
#    bitwise against the torch path and cutlass_call, donation, command buffers, two threads),
# 3. benchmarks/jax_bench.py host with XLA's default flags and with command buffers off, 4. cold and warm
# start of both bridges in fresh processes. Logs and JSON under $OUT (one tar); a short summary last.
set -u
OUT=${OUT:-$PWD/device-out}
L=${JAX_LOGS:-/tmp/cute_bind_jax_logs}   # logs here; $OUT gets one tar of them (results come back as few files)
rm -rf "$L" && mkdir -p "$L" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONFAULTHANDLER=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
# each step's log and rc, then the tar again: a run cut short still brings back what finished
step() {
  local name=$1 t=$2; shift 2
  timeout "$t" "$@" > "$L/$name.txt" 2>&1; echo "$?" > "$L/$name.rc"
  tar czf "$OUT/jax_logs.tgz" -C "$(dirname "$L")" --exclude='cache_*' "$(basename "$L")"
}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import sys, jax, jaxlib; print(sys.version); print('jax', jax.__version__, jaxlib.__version__, jax.devices())"
  grep -m1 'model name' /proc/cpuinfo
  python3 setup.py -q build_ext --inplace 2>&1 | grep -iE "cxla|error" | tail -n 5
  python3 -c "import cute_bind.jax._cxla as c; print('cute_bind.jax._cxla built, FFI API', c.API_MAJOR, c.API_MINOR)"
} > "$L/env.txt" 2>&1
step tests 110 python3 -m pytest -q -p no:cacheprovider -rs tests/jax -s
export CUTE_BIND_CACHE_DIR=$L/cache_bench
step host_default 80 python3 benchmarks/jax_bench.py host --json "$L/host_default.json"
step host_nocmdbuf 45 env XLA_FLAGS=--xla_gpu_enable_command_buffer= python3 benchmarks/jax_bench.py host --iters 100 --repeats 5 --json "$L/host_nocmdbuf.json"
for b in cute_bind cutlass_call; do
  export CUTE_BIND_CACHE_DIR=$L/cache_start_$b
  rm -rf "$CUTE_BIND_CACHE_DIR"
  step "start_${b}_cold" 25 python3 benchmarks/jax_bench.py start --bridge $b
  step "start_${b}_warm" 25 python3 benchmarks/jax_bench.py start --bridge $b
done
rm -rf "$L"/cache_*
tar czf "$OUT/jax_logs.tgz" -C "$(dirname "$L")" "$(basename "$L")"
echo "---- env"; cat "$L/env.txt"
echo "---- tests rc=$(cat "$L/tests.rc")"; grep -E "passed|failed|error|graph=|SKIP" "$L/tests.txt" | tail -n 8
for h in host_default host_nocmdbuf; do echo "---- $h rc=$(cat "$L/$h.rc")"; grep -E "^chain|issued|Error|error" "$L/$h.txt" | tail -n 12; done
for f in "$L"/start_*.txt; do echo "---- $(basename "$f" .txt) rc=$(cat "${f%.txt}.rc")"; grep -E "first_call_s|second_call_s|bitwise|cache_entries|Error" "$f" | tr -d '\n'; echo; done
