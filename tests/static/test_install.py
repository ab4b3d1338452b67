"""The README's install (``pip install -e .``) is one mypy can see.

mypy reads the path lines of ``.pth`` files in site-packages but cannot run
import hooks. setuptools makes an editable install a plain path line only when
``pyproject.toml`` says where the packages live (``package-dir``); otherwise it
installs an import hook and mypy reports ``cute_bind`` as missing (or, with
``ignore_missing_imports``, the plugin would check nothing). This builds the
editable wheel pip would install, from a copy of the tracked files, and reads
its ``.pth``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_editable_install_is_a_path_entry_mypy_reads(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to copy the tracked files")
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    src = tmp_path / "src"
    for name in listed:
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path / "wheel"
    code = f"from setuptools import build_meta; print(build_meta.build_editable({str(out)!r}))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        pth = [n for n in names if n.endswith(".pth")]
        assert len(pth) == 1, names
        lines = [line for line in zf.read(pth[0]).decode().splitlines() if line.strip()]
    assert lines == [str(src)], f"not a plain path entry: {lines}"
    assert not [n for n in names if "finder" in n], names
