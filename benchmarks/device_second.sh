#!/usr/bin/env bash
# The second device call of a session, after benchmarks/clients_device.sh (same machine while it is warm,
# or a fresh one: the clients are installed again when /tmp/clients is missing):
#   run(command="source .device/bootstrap.sh && bash benchmarks/device_second.sh", carry=[".device"])
# 1. issue 44 item 7: the left-out stream before/after (benchmarks/stream_left_out_ab.sh against
#    .device/base.tar.xz, `git archive 5b58c4d^ | xz`), when that tarball is carried;
# 2. issue 41 item 5: benchmarks/compile_cache_clients.py on the GPU machine (cold and warm first
#    calls of every client case through the cute.compile hook, fresh processes; ROUNDS, CASES).
# Everything lands in $OUT/second.tgz; the tables are printed last.
set -u
OUT=${OUT:-$PWD/device-out}
LOG=/tmp/second_logs
rm -rf "$LOG" && mkdir -p "$OUT" "$LOG"
source .device/bootstrap.sh || exit 1
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
pack() { tar czf "$OUT/second.tgz" -C "$LOG" . 2>/dev/null; }
python3 setup.py -q build_ext --inplace > "$LOG/build.txt" 2>&1
if [ -f .device/base.tar.xz ]; then
  OUT=$LOG/ab ROUNDS=${AB_ROUNDS:-2} timeout "${T_AB:-200}" bash benchmarks/stream_left_out_ab.sh .device/base.tar.xz > "$LOG/ab.txt" 2>&1
  pack
fi
if [ ! -d /tmp/clients ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/clients .device/clients/*.whl \
    > "$LOG/clients_install.txt" 2>&1
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/clients
export CUTE_DSL_ARCH=sm_90a FLASH_ATTENTION_ARCH=sm_90 QUACK_ARCH=sm_90
timeout "${T_COMPILE:-330}" python3 benchmarks/compile_cache_clients.py --rounds "${ROUNDS:-1}" --cases "${CASES:-}" \
  > "$LOG/compile_cache.txt" 2>&1
echo "rc=$?" >> "$LOG/compile_cache.txt"
pack
nproc > "$LOG/env.txt"; nvidia-smi --query-gpu=name,driver_version --format=csv >> "$LOG/env.txt"; grep -m1 'model name' /proc/cpuinfo >> "$LOG/env.txt"
pack
echo "---- env"; cat "$LOG/env.txt"
[ -f "$LOG/ab.txt" ] && { echo "---- stream left out, before/after"; tail -n 12 "$LOG/ab.txt"; }
echo "---- compile cache"; tail -n 40 "$LOG/compile_cache.txt"
