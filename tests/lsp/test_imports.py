"""The language server imports neither the DSL nor torch, and cute_bind imports without pygls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("cutlass", "torch", "cuda", "numpy", "tvm_ffi")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_server_and_a_full_check_import_no_dsl_or_torch() -> None:
    """Start-up and one check of a file that imports the DSL and torch (the checked code is never imported)."""
    pytest.importorskip("pygls", reason="the lsp extra is not installed")
    code = f"""
import json, sys
from cute_bind.lsp.server import make_server
from cute_bind.static.incremental import Document
from cute_bind.static.describe import describe_parameter
from tests.lsp.cases import CASES
make_server()
for case in CASES:
    doc = Document(None)
    doc.update(case.source)
    for f in doc.findings:
        doc.fixes(f)
heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})
print(json.dumps(heavy))
"""
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_package_imports_and_lsp_says_what_to_install_without_pygls() -> None:
    """pygls is imported by the subcommand only: without it, cute_bind and cute_bind.lsp import,
    and `cute-bind lsp` exits 2 naming the extra."""
    code = """
import sys
sys.modules['pygls'] = None  # as if not installed: `import pygls` raises ImportError
import cute_bind, cute_bind.lsp
from cute_bind.__main__ import main
sys.exit(main(['lsp']))
"""
    proc = _run(code)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert 'pip install -e ".[lsp]"' in proc.stderr


def test_lsp_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "cute_bind", "lsp", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--debounce-ms" in proc.stdout
