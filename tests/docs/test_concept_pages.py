"""The code on concept pages runs: a page's ``python`` blocks, in order, are one script; ``bash`` lines run too.

A ``print(...)  # value`` line in a block states its output: the script's
printed lines must equal those comments, in order.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)

#: Pages whose code blocks are executed (others have none).
PAGES = ["docs/concepts/cache.md"]
#: Pages whose Python blocks are executed (they have no bash lines).
PYTHON_PAGES = [*PAGES, "docs/concepts/eligibility.md", "docs/concepts/tensors.md"]


def _blocks(page: str, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall((ROOT / page).read_text(encoding="utf-8")) if kind == lang]


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run_and_print_what_they_say(page, tmp_path):
    blocks = _blocks(page, "python")
    assert blocks, page
    script = tmp_path / "page.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p), "CUTE_BIND_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("CUTE_BIND_CACHE", None)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    stated = [m.group(1).split(":")[0].strip() for b in blocks for m in re.finditer(r"^\s*print\(.*\)\s+#\s*(.+)$", b, re.M)]
    assert proc.stdout.strip().splitlines() == stated


@pytest.mark.parametrize("page", PAGES)
def test_bash_lines_run(page, tmp_path):
    lines = [ln.split("#")[0].strip() for b in _blocks(page, "bash") for ln in b.splitlines()]
    lines = [ln for ln in lines if ln]
    assert lines, page
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p), "CUTE_BIND_CACHE_DIR": str(tmp_path / "cache")}
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "python", line
        proc = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{line}\n{proc.stderr}"
