"""The documented device run the bench quotes: what its figures become on a GPU.

On a machine without a CUDA device the bench times host-only functions: every path's figure is CPU
time with no GPU driver in it, so the ratios (a prepared launch 50-100x cheaper than the direct call)
are far above what a GPU run shows, where the CUDA driver's launch (a few microseconds) is added to
every path. The bench quotes this run so that a reader sees both.

:data:`DEVICE_RUN` is the one copy the bench reads: the pointer table of docs/benchmarks.md's
"H200 machine, C fast path" section, medians in host microseconds per launch, as recorded in
``benchmarks/results/h200_c.json``. tests/bench/test_reference.py checks the page's table and the
JSON against it, so the three cannot drift apart.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["DEVICE_RUN", "DeviceRun", "format_device_run"]


class DeviceRun(NamedTuple):
    """A documented run: where it ran, where it is documented, and its rows ``(path, median us)``."""

    machine: str
    page: str
    section: str
    source: str
    rows: tuple[tuple[str, float], ...]

    def median(self, path: str) -> float:
        """The documented median of ``path`` (a row label of the bench's pointer table)."""
        return dict(self.rows)[path]


DEVICE_RUN: Final = DeviceRun(
    machine="one NVIDIA H200 (16-core Intel Xeon host, Python 3.12, driver 580.159.04)",
    page="docs/benchmarks.md",
    section="H200 machine, C fast path",
    source="benchmarks/results/h200_c.json",
    rows=(
        ("direct call, args reused", 13.15),
        ("direct call, args rebuilt", 18.25),
        ("PreparedLaunch.launch", 3.91),
        ("bare engine call", 4.28),
        ("bare engine call, int address", 4.18),
        ("bare entry call, cheapest ctypes form", 4.17),
        ("DSL TVM-FFI path", 4.60),
        ("torch eager torch.mul(x, a, out=o)", 7.81),
        ("cuda-bindings cuLaunchKernel", 4.25),
        ("DSL TVM-FFI path, torch tensors + env stream", 4.95),
    ),
)


def format_device_run(run: DeviceRun = DEVICE_RUN) -> str:
    """The documented run as the bench prints it: the table, then what it means in one sentence."""
    direct, launch = run.median("direct call, args reused"), run.median("PreparedLaunch.launch")
    driver = run.median("cuda-bindings cuLaunchKernel")
    lines = [
        f"The documented GPU run ({run.page}, section '{run.section}'; {run.machine}), pointer workload:",
        "",
        "| path | host us/launch (median) | direct reused / path |",
        "|---|---:|---:|",
        *(f"| {path} | {us:.2f} | {direct / us:.1f}x |" for path, us in run.rows),
        "",
        f"There the CUDA driver's own launch (the cuLaunchKernel row, {driver:.2f} us) is in every path, so a prepared "
        f"launch ({launch:.2f} us) is {direct / launch:.1f}x cheaper than the direct call ({direct:.2f} us), not the "
        "tens of times a host-only run shows; what cute_bind removes (the direct call's argument handling, "
        f"{direct - launch:.1f} us there) is the same work on both.",
    ]
    return "\n".join(lines)
