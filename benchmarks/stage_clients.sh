#!/usr/bin/env bash
# Stage the client packages of tests/clients for the GPU machine into .device/clients/.
#
# The GPU machine (Python 3.12, torch with CUDA and triton, no network) gets the
# CuTe DSL and apache-tvm-ffi from .device/ (../shared/device/stage.sh, which
# empties .device/: run this after it). This adds the clients' wheels, at the
# versions tests/clients/requirements.txt pins: quack-kernels and flash-attn-4
# (pure Python) and einops (pure Python; flash_attn.cute.testing imports it).
# Not torch-c-dlpack-ext, though both clients declare it: a cp312 wheel of
# prebuilt addons for torch 2.4-2.9, a no-op with a torch that has the DLPack
# exchange API itself, as the GPU machine's 2.11 has, and no module of either
# client imports it; its 0.9 MB put .device and the tree over the 64 MiB a
# device run may carry. About 1.3 MB, beside the DSL's ~58 MB.
#
# Usage, from the project root:   bash benchmarks/stage_clients.sh
# Then: device run (carry .device):  bash benchmarks/device_job.sh clients
set -euo pipefail
cd "$(dirname "$0")/.."
pins=$(grep -E '^(quack-kernels|flash-attn-4|einops)==' tests/clients/requirements.txt | sed 's/[[:space:]]*#.*//')
[ "$(echo "$pins" | wc -l)" -eq 3 ] || { echo "stage_clients: expected 3 pins in tests/clients/requirements.txt, got: $pins" >&2; exit 1; }
rm -rf .device/clients && mkdir -p .device/clients
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .device/clients $pins
grep -qx '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
ls .device/clients
total=$(du -sb .device | cut -f1)
echo "staged the clients: $(du -sh .device/clients | cut -f1) in .device/clients; .device is $((total / 1048576)) MiB of the 64 MiB a run carries"
[ "$total" -lt $((64 * 1048576)) ] || { echo "stage_clients: .device is over 64 MiB" >&2; exit 1; }
