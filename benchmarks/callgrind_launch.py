"""Instructions per C launch, for callgrind: ``Launcher_launch`` over N launches of a host-only kernel.

Usage (from the repository root, on the CPU machine):

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=Launcher_launch \
        --callgrind-out-file=/tmp/cg.out python benchmarks/callgrind_launch.py ints
    callgrind_annotate /tmp/cg.out | head      # total Ir / N = instructions per launch

``ints``: both pointer slots take int addresses; ``torch``: both take CPU torch tensors. The kernel is
``cute_bind.bench.kernels.scale_host`` (5 slots: two pointers, a float, an int, a stream), so the count
includes the host-only kernel body (n = 4 elements). Counts are repeatable to a few instructions.
"""

from __future__ import annotations

import sys

N = 2000


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ints"
    import numpy as np

    from cute_bind import kernel
    from cute_bind.bench.kernels import scale_host

    xa, oa = np.zeros(64, np.float32), np.zeros(64, np.float32)
    if mode == "torch":
        import torch

        out, inp = torch.zeros(64), torch.zeros(64)
    else:
        out, inp = oa.ctypes.data, xa.ctypes.data
    h = kernel(scale_host).bind(out, inp, 2.0, 4, 0)
    launch = h.launch
    for _ in range(50):  # warm: the launcher's per-slot caches settle before collection counts
        launch(out, inp, 2.0, 4, 0)
    for _ in range(N):
        launch(out, inp, 2.0, 4, 0)
    print(f"{mode}: {N} launches (+50 warm-up)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
