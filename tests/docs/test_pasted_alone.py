"""The newcomer's pages work block by block, as a reader pastes them (issue 44 item 5).

test_pages.py runs a page's blocks in order as one script; a reader pastes one block into a fresh
interpreter. On the pages a newcomer starts from, a Python block either stands alone (it imports
and defines every name it uses, and then runs alone: checked here, each block in a fresh process)
or directly continues the block before it (every name it takes from elsewhere is defined there).
A block that borrows names from further up the page (the home page's "No GPU at hand?" block used
``cute_bind`` from the first example and failed pasted alone with ``NameError``) fails here.

And a block that needs a GPU says so before the code, not after it.
"""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
from pathlib import Path

import pytest
from tests.docs.test_pages import ROOT, Block, blocks, child_env, python_script
from tests.optional import torch_or_skip

#: the pages a newcomer starts from: the README, the home page, the editors page, the benchmarks page
NEWCOMER_PAGES = ["README.md", "docs/index.md", "docs/editors.md", "docs/benchmarks.md"]


def uses_and_defines(code: str) -> tuple[set[str], set[str]]:
    """The names ``code`` reads that it does not define (builtins aside), and the names it defines."""
    tree = ast.parse(code)
    defined: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            defined.add(node.name)
    return read - defined - set(dir(builtins)), defined


def _python(page: str) -> list[Block]:
    return [b for b in blocks(page) if b.lang == "python"]


def standalone_or_continuation(page_blocks: list[Block]) -> list[str]:
    """Each block that neither stands alone nor takes its missing names from the block right before it."""
    problems = []
    before: set[str] = set()  # what the block right before defines (or itself took from the one before it)
    for b in page_blocks:
        free, defined = uses_and_defines(b.code)
        if free - before:
            problems.append(f"{b.page}:{b.line}: uses {sorted(free - before)}, defined neither in the block nor in the one right before it")
        before = defined | free
    return problems


@pytest.mark.parametrize("page", NEWCOMER_PAGES)
def test_each_block_stands_alone_or_continues_the_one_before(page: str) -> None:
    assert not standalone_or_continuation(_python(page))


def test_the_check_finds_a_block_borrowing_from_further_up(tmp_path: Path) -> None:
    """The home page's old "No GPU at hand?" block: it used names of the first block, two blocks up."""
    (tmp_path / "page.md").write_text(
        "```python\nimport cute_bind\nN = 10\n```\n\n```python\nprint(N)\n```\n\n```python\nk = cute_bind.kernel\n```\n", encoding="utf-8"
    )
    found = blocks("page.md", tmp_path)
    assert standalone_or_continuation(found) == [
        f"page.md:{found[2].line}: uses ['cute_bind'], defined neither in the block nor in the one right before it"
    ]


STANDALONE = [pytest.param(b, id=f"{b.page}:{b.line}") for page in NEWCOMER_PAGES for b in _python(page) if not uses_and_defines(b.code)[0]]


@pytest.mark.parametrize("block", STANDALONE)
def test_a_block_that_stands_alone_runs_alone(block: Block, tmp_path: Path) -> None:
    from tests.docs.test_pages import _has_gpu

    gpu = _has_gpu()
    script = python_script([block], gpu)
    if "import torch" in script:
        torch_or_skip()
    env = child_env(tmp_path)
    if not gpu:
        env.setdefault("CUTE_DSL_ARCH", "sm_90a")
    path = tmp_path / "block.py"
    path.write_text(script, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{block.page}:{block.line} pasted alone fails:\n{proc.stderr[-3000:]}"


def test_the_home_pages_no_gpu_block_stands_alone() -> None:
    (block,) = [b for b in _python("docs/index.md") if "01_quickstart.py:cpu" in b.raw]
    assert block in [p.values[0] for p in STANDALONE]


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_a_block_needing_a_gpu_says_so_before_its_code(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    gpu_blocks = [b for b in _python(page) if 'device="cuda"' in b.code]
    assert gpu_blocks, page
    for b in gpu_blocks:
        opening = text.index(b.raw) - len("```python\n")
        prose = text[:opening].rsplit("```", 1)[-1]  # the text between the block before and this one
        assert "GPU" in prose, f"{page}:{b.line} needs a GPU; the text before it does not say so"
