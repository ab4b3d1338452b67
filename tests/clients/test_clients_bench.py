"""benchmarks/clients_bench.py keeps working off the GPU: its structure, and its ``--check-only`` run.

The figures come from the H200 (``bash benchmarks/device_job.sh clients``).
Here: the workloads are the issue's shapes, the table prints what it must,
and ``--check-only`` runs in a subprocess. Without the client packages it
only checks imports and arguments; with them (the clients CI step) it
records each workload family's compile and call on the CPU for sm_90a and
builds every timed path, launching nothing: the package's own call and the
compiled function's direct call must build, and each cute_bind path either
builds or says ``n/a`` with its reason.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.child import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "clients_bench.py"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("clients_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["clients_bench"] = module  # dataclasses resolve their module
    spec.loader.exec_module(module)
    return module


def _clients_installed() -> bool:
    try:
        metadata.version("quack-kernels")
        metadata.version("flash-attn-4")
    except metadata.PackageNotFoundError:
        return False
    return True


def test_the_workloads_are_the_issues_shapes() -> None:
    b = _bench()
    fa4 = [w.shape for w in b.workloads({"fa4"})]
    assert fa4 == [(n, k) for n in (1, 4, 8) for k in (512, 4096, 32768)]
    assert (b.HEADS, b.HEAD_DIM) == (16, 128)
    assert [w.shape for w in b.workloads({"rmsnorm", "softmax"})] == [(1, 4096), (8, 4096)] * 2
    assert len({w.case for w in b.workloads()}) == len(b.workloads())  # one recorder case per workload


def test_the_table_says_na_for_paths_not_timed() -> None:
    b = _bench()
    result = {
        "label": "w",
        "median_us": {b.PACKAGE: 57.0, b.DIRECT: 6.0, b.OP: 11.4},
        "direct_event_us": 9.7,
        "checks": {b.PACKAGE: "bitwise (twice)", b.DIRECT: "bitwise", b.OP: "bitwise"},
    }
    head, rule, row = b.table([result]).splitlines()
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == len(head.strip("|").split("|")) == rule.count("---")
    assert cells[:6] == ["w", "57.0", "6.0", "n/a", "n/a", "11.4"]
    assert cells[6:8] == ["9.7", "5.0x"]


def test_check_only_runs_on_the_cpu(tmp_path: Path) -> None:
    env = child_env()
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check-only"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr[-6000:]
    assert "check-only: ok" in out, out
    if not _clients_installed():
        assert "structure only" in out
        return
    lines = [line for line in out.splitlines() if line.startswith("check-only: ") and ": compile " in line]
    assert len(lines) == 4, out  # one per family: FA4, rmsnorm, softmax, gemm
    for line in lines:
        paths = line.split("call arguments); ", 1)[1]
        assert paths.startswith("package, direct"), line  # the package's own paths always build
        for key in ("launch", "kernel", "op"):
            assert f", {key}" in paths, line  # built, or "<key> n/a: <why>"
        if "GEMM" not in line:
            assert "n/a" not in paths, line  # every path of these builds on the CPU
        else:  # the op: quack's 'mA: Union[cute.Tensor, TransformAOperand]' has no one torch schema type
            assert paths.startswith("package, direct, launch, kernel, op n/a: KernelDefinitionError: [CB702]"), line


def test_targets_are_the_issues() -> None:
    """handle.launch and kernel(...) at or below the direct call; for FA4 the op at most 12 us and 4.5x below the package."""
    b = _bench()
    fa4 = {"label": "FA4 fwd decode b=1 keys=512", "median_us": {b.PACKAGE: 57.0, b.DIRECT: 6.0, b.LAUNCH: 5.9, b.KERNEL: 6.1, b.OP: 12.5}}
    line = b.targets(fa4)
    assert line.count("PASS") == 2 and line.count("FAIL") == 2, line  # launch; package/op 4.6x | kernel; op > 12 us
    assert "FAIL `kernel(...)`" in line and "FAIL op <= 12 us" in line
    quack = {"label": "quack softmax 1x4096", "median_us": {b.PACKAGE: 25.0, b.DIRECT: 6.0}}
    line = b.targets(quack)
    assert line.count("n/a") == 2 and "op" not in line.split(":", 1)[1], line  # no op target outside FA4


def test_unproxy_puts_the_compiled_function_back_in_nested_plans() -> None:
    """The device run stopped: quack's GEMM keeps its compiled function in a NamedTuple plan in a plan
    dict, which the first unproxy() (dicts only) left holding the recorder's proxy."""
    from typing import NamedTuple

    from tests.clients.recorder import _Proxy

    bench = _bench()

    class Plan(NamedTuple):
        config: int
        compiled: Any

    class Record:
        compiled = staticmethod(len)

    proxy = _Proxy.__new__(_Proxy)
    object.__setattr__(proxy, "_record", Record())
    caches: dict[str, Any] = {"dict": {"k": proxy}, "list": [proxy], "plan": {"k": Plan(1, proxy)}, "deep": {"k": (2, Plan(3, proxy))}}
    assert bench.unproxy() >= 4
    assert caches["dict"]["k"] is len and caches["list"][0] is len
    assert caches["plan"]["k"] == Plan(1, len) and type(caches["plan"]["k"]) is Plan
    assert caches["deep"]["k"] == (2, Plan(3, len))
