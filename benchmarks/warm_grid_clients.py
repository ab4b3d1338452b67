"""A warm-up grid of quack's kernels for ``cute-bind cache warm`` (issue 41 item 5: 1, 2 and all cores).

Each configuration drives one of quack's public entries the way tests/clients/recorder.py does on
the CPU (its compiles real, its launches recorded): ``CONFIGS`` lists them. Run from the project
root with the clients' environment (tests/clients/recorder.py ``ENV``)::

    env CUTE_DSL_ARCH=sm_90a QUACK_CACHE_ENABLED=0 QUACK_ARCH=sm_90 CUTE_BIND_CACHE_DIR=$(mktemp -d) \\
        python -m cute_bind cache warm benchmarks/warm_grid_clients.py:CONFIGS --workers 2
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

CASES = (
    "quack.softmax_fwd",
    "quack.softmax_bwd",
    "quack.rmsnorm_fwd",
    "quack.rmsnorm_bwd",
    "quack.layernorm_fwd",
    "quack.layernorm_bwd",
    "quack.cross_entropy",
    "quack.topk",
    "quack.rotary",
    "quack.rms_final_reduce",
    "quack.gemm",
    "quack.gemm_act",
)


def drive(case: str) -> None:
    """Run one client case (its compiles go through the hook ``cute-bind cache warm`` installs)."""
    from tests.clients import recorder

    _, problems = recorder.record([case], tempfile.mkdtemp(prefix="cb_grid_"), snapshots=False)
    if problems:
        raise RuntimeError(problems[case])


CONFIGS = [functools.partial(drive, case) for case in CASES]
