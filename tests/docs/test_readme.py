"""Every Python example in README.md and docs/ runs (or, where it needs a GPU, compiles) as copied.

README blocks are complete programs: each is written to a file and run in a
subprocess. A block that needs a GPU is preceded by an HTML comment (invisible
on the rendered page) saying where a machine without one stops and what it
runs instead, a compile of the same kernel for sm_90a::

    <!-- docs test, no GPU: runs up to "x = torch.randn", then: scale.compile(...) -->

On a machine with a CUDA device the whole block runs. Python blocks under
docs/ are includes of the tutorial scripts (``--8<-- "tutorials/..."``), which
``test_tutorials.py`` runs whole; that is checked here too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.optional import torch_or_skip

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
NO_GPU = re.compile(r'<!-- docs test, no GPU: runs up to "(?P<stop>[^"]+)", then: (?P<then>.+?) -->\s*$')


def _blocks(path: Path) -> list[tuple[int, str, re.Match[str] | None]]:
    """``(line, body, no-GPU comment)`` of every Python block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append((text.count("\n", 0, m.start()) + 1, m["body"], NO_GPU.search(before)))
    return found


README_BLOCKS = _blocks(ROOT / "README.md")


def _has_gpu() -> bool:
    from tests.conftest import HAS_GPU

    return bool(HAS_GPU)


def test_readme_has_examples() -> None:
    assert len(README_BLOCKS) >= 2


@pytest.mark.parametrize("line, body, no_gpu", README_BLOCKS, ids=[f"README.md:{b[0]}" for b in README_BLOCKS])
def test_readme_example_runs_as_copied(line: int, body: str, no_gpu: re.Match[str] | None, tmp_path: Path) -> None:
    if "import torch" in body:
        torch_or_skip()
    env = {k: v for k, v in os.environ.items() if k != "CUTE_BIND_CHECKED"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    code = body
    if no_gpu is not None and not _has_gpu():
        lines = body.splitlines()
        stop = next((i for i, text in enumerate(lines) if text.startswith(no_gpu["stop"])), None)
        assert stop is not None, f"README.md:{line}: no line starts with {no_gpu['stop']!r}"
        code = "\n".join(lines[:stop] + [no_gpu["then"], ""])
        env["CUTE_DSL_ARCH"] = "sm_90a"  # compile the device kernel without a device
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"README.md:{line} failed:\n--- code\n{code}\n--- stderr\n{proc.stderr[-3000:]}"


#: Concept pages whose every Python block a test of their own runs in order as one script.
RUN_BY_THEIR_OWN_TEST = {
    "docs/concepts/cache.md": "tests/docs/test_concept_pages.py",
    "docs/concepts/graphs.md": "tests/docs/test_graphs_page.py",
    "docs/concepts/eligibility.md": "tests/docs/test_concept_pages.py",
    "docs/concepts/tensors.md": "tests/docs/test_concept_pages.py",
}


def test_every_python_block_in_docs_is_a_tutorial_that_runs() -> None:
    from tests.docs.test_tutorials import RUNS

    run = {script for script, _ in RUNS}
    for page_name, runner in RUN_BY_THEIR_OWN_TEST.items():  # each runner really names its page
        assert page_name in (ROOT / runner).read_text(), (page_name, runner)
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if str(page.relative_to(ROOT)) in RUN_BY_THEIR_OWN_TEST:
            continue
        for line, body, _ in _blocks(page):
            include = re.fullmatch(r'\s*--8<-- "tutorials/(?P<script>[\w.]+?)(?::[\w-]+)?"\s*', body)
            assert include is not None, f"{page.relative_to(ROOT)}:{line}: a Python block that no test runs (include it from a tutorial)"
            assert include["script"] in run, f"{page.relative_to(ROOT)}:{line}: {include['script']} is not run by test_tutorials"
