"""docs/concepts/graphs.md: every Python example compiles; those that run without a GPU run.

A block whose first line is ``# needs a GPU`` is compiled only (on a GPU
machine the device job runs the same calls in tests/gpu/test_graph.py); every
other block runs in a subprocess (the CuTe DSL needs its functions in source
files) with the repository root on PYTHONPATH, and must exit cleanly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "concepts" / "graphs.md"
GPU_MARKER = "# needs a GPU"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_gpu_and_cpu_examples():
    gpu = [b for b in BLOCKS if b.startswith(GPU_MARKER)]
    assert gpu and len(gpu) < len(BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example(index: int, tmp_path: Path) -> None:
    block = BLOCKS[index]
    compile(block, f"graphs.md block {index}", "exec")
    if block.startswith(GPU_MARKER):
        return
    script = tmp_path / f"graphs_example_{index}.py"
    script.write_text(block, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("CUTE_DSL_ARCH", "sm_90a")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"--- example\n{block}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
