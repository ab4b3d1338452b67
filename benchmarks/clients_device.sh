#!/usr/bin/env bash
# The production clients on the GPU in one device call (issue 40): every case of tests/clients/recorder.py
# through every door of tests/clients/bitwise.py (prepare, kernel, kernel-bind, kernel-stream: an explicit
# stream; hook: the client's cute.compile under cute_bind.cache.installed(), served from the disk cache), bit for bit against the client's own call, in SPLIT processes side by side; then benchmarks/clients_bench.py (quack GEMM at small shapes, FlashAttention-4 decode).
#   run(command="source .device/bootstrap.sh && bash benchmarks/clients_device.sh", carry=[".device"])
# Needs the clients' wheels in .device/clients (bash benchmarks/stage_clients.sh). Everything lands in
# $OUT/clients.tgz; the summary is printed last. BENCH=0 skips the benchmark; ONLY="case ..." runs those cases.
set -u
OUT=${OUT:-$PWD/device-out}
LOG=/tmp/clients_logs
rm -rf "$LOG" && mkdir -p "$OUT" "$LOG"
source .device/bootstrap.sh || exit 1
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONFAULTHANDLER=1
pack() { tar czf "$OUT/clients.tgz" -C "$LOG" . 2>/dev/null; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import sys, torch, os; print(sys.version); print('torch', torch.__version__, torch.cuda.get_device_name(), os.cpu_count(), 'cores')"
  grep -m1 'model name' /proc/cpuinfo
  python3 setup.py -q build_ext --inplace 2>&1 | tail -n 3
  python3 -c "import cute_bind.launch as p; print('launch fast path:', p.fast_path())"
  python3 -c "from cute_bind.jit import dispatch; print('call path:', dispatch.call_path())"
} > "$LOG/env.txt" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/clients .device/clients/*.whl \
  >> "$LOG/env.txt" 2>&1 || echo "clients install failed" >> "$LOG/env.txt"
export PYTHONPATH=$PYTHONPATH:/tmp/clients
export CUTE_DSL_ARCH=sm_90a FLASH_ATTENTION_ARCH=sm_90 QUACK_ARCH=sm_90 QUACK_CACHE_ENABLED=0 FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=0
# the cases (all, or ONLY="case ...") dealt round-robin into SPLIT groups (default 4), one process each
chunk() {
  python3 -c "import sys; from tests.clients.recorder import CASES; n, i = int(sys.argv[1]), int(sys.argv[2]); only = sys.argv[3].split(); print(' '.join((only or list(CASES))[i::n]))" "$1" "$2" "${ONLY:-}"
}
SPLIT=${SPLIT:-4}
for g in $(seq 0 $((SPLIT - 1))); do
  list=$(chunk "$SPLIT" "$g")
  [ -n "$list" ] || continue
  # shellcheck disable=SC2086
  # each process its own cache folder: the hook door (issue 41) stores, then is served, from it
  CUTE_BIND_CACHE_DIR=/tmp/cute_bind_cache_$g timeout "${T_BITWISE:-420}" python3 -m tests.clients.bitwise --json "$LOG/bitwise_$g.json" --markdown $list > "$LOG/bitwise_$g.txt" 2>&1 &
done
wait
pack
if [ "${BENCH:-1}" = 1 ]; then
  timeout "${T_BENCH:-150}" python3 benchmarks/clients_bench.py --repeats "${REPEATS:-11}" --iters 300 --only "${BENCH_ONLY:-gemm,fa4}" \
    --json "$LOG/bench.json" > "$LOG/bench.txt" 2>&1
  pack
fi
echo "---- env"; cat "$LOG/env.txt"
for f in "$LOG"/bitwise_*.txt; do
  echo "---- $(basename "$f")"; grep -E "^\|" "$f" | head -n 60; grep -E "Error|Traceback" "$f" | head -n 5
done
[ -f "$LOG/bench.txt" ] && { echo "---- bench"; grep -vE "^# " "$LOG/bench.txt" | tail -n 40; }
