"""Every tutorial script runs to completion (each asserts its own results).

Table-driven: one subprocess per script, with the repository root on
PYTHONPATH. On a machine with a CUDA GPU and PyTorch the scripts launch real
device kernels; elsewhere they compile device kernels for sm_90a and run
host-only variants. ``04_streams_torch.py``, ``08_tensors.py``, ``09_calling.py`` and
``10_torch_ops.py`` also run with torch hidden, since the tutorials must work
without it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child import child_env

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"

#: (script, hide torch?) -- the table of runs.
RUNS = [
    ("01_quickstart.py", False),
    ("02_eligibility.py", False),
    ("03_porting.py", False),
    ("04_streams_torch.py", False),
    ("04_streams_torch.py", True),
    ("05_cuda_graphs.py", False),
    ("06_threads_lifetime.py", False),
    ("07_launch_overhead.py", False),
    ("08_tensors.py", False),
    ("08_tensors.py", True),
    ("09_calling.py", False),
    ("09_calling.py", True),
    ("10_torch_ops.py", False),
    ("10_torch_ops.py", True),
    ("11_porting_clients.py", False),
    ("12_jax.py", False),
]
TIMEOUT_S = 300
#: a Python warning as printed ("...: UserWarning: ...") or a torch C++ one ("[W1203 13:55:53.2 StorageImpl.cpp:34] Warning: ...")
WARNING = re.compile(r"\b\w*Warning: |^\[W\d{4} ")
#: scripts with nothing to show without torch: their last line then says "skipped", never "ok"
NEEDS_TORCH = {"10_torch_ops.py"}
#: scripts that need packages the main environment does not have: (script, distributions, where they run)
NEEDS = {
    "12_jax.py": (("jax",), "CI's JAX step (.ci/run) and the device job's benchmarks/jax_device.sh"),
    "11_porting_clients.py": (
        ("quack-kernels", "flash-attn-4"),
        "the clients' own venv in CI (.ci/run, tests/clients/requirements.txt) and the device job's clients part",
    ),
}


def _missing(dists: tuple[str, ...]) -> list[str]:
    from importlib import metadata

    out = []
    for dist in dists:
        try:
            metadata.version(dist)
        except metadata.PackageNotFoundError:
            out.append(dist)
    return out


def _torch_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _env(extra_path: list[Path]) -> dict[str, str]:
    env = child_env(*extra_path)
    env.pop("CUTE_BIND_CHECKED", None)  # the scripts choose their modes themselves
    return env


def test_the_table_lists_every_tutorial() -> None:
    on_disk = sorted(p.name for p in TUTORIALS.glob("[0-9][0-9]_*.py"))
    assert on_disk == sorted({script for script, _ in RUNS})
    assert [s[:2] for s in on_disk] == [f"{i:02d}" for i in range(1, len(on_disk) + 1)]


@pytest.mark.parametrize(("script", "hide_torch"), RUNS, ids=[s + ("-without-torch" if h else "") for s, h in RUNS])
def test_tutorial_runs(script: str, hide_torch: bool, tmp_path: Path) -> None:
    if script in NEEDS:
        dists, where = NEEDS[script]
        missing = _missing(dists)
        if missing:
            pytest.skip(f"{script} needs {', '.join(missing)} (not installed here); it runs in {where}")
    extra: list[Path] = []
    if hide_torch:
        if not _torch_installed():
            pytest.skip("torch is not installed: the plain run already covers this")
        blocker = tmp_path / "no_torch"
        blocker.mkdir()
        (blocker / "torch.py").write_text('raise ImportError("torch is hidden for this test")\n')
        extra.append(blocker)
    proc = subprocess.run(
        [sys.executable, str(TUTORIALS / script)],
        cwd=tmp_path,  # nothing may depend on the working directory
        env=_env(extra),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, output
    # a newcomer meets no unexplained warning (issue 44 item 3: tutorial 11 printed two upstream ones)
    warned = [ln for ln in proc.stderr.splitlines() if WARNING.search(ln)]
    assert not warned, f"{script} printed warnings its page does not explain:\n" + "\n".join(warned)
    last = proc.stdout.rstrip().splitlines()[-1] if proc.stdout.strip() else ""
    if script in NEEDS_TORCH and (hide_torch or not _torch_installed()):  # nothing of it can run: it says so, never "ok"
        assert last.startswith("skipped: torch is not installed"), output
    else:
        assert last.endswith("ok"), output
    if hide_torch:
        assert "torch is not installed" in proc.stdout, output
