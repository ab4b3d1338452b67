"""Every code block of every page runs as pasted: README.md and docs/**/*.md.

A page's Python blocks run in order as one script in one process (a block may
use what an earlier block of the same page defined, never what the page does
not show); snippet includes (``--8<-- "tutorials/01_quickstart.py:cpu"``) are
replaced by the text the site shows. Its shell blocks (``bash``, ``sh``,
``shell``, ``console``) then run line by line from the repository root, each
line a ``python ...`` command. Other fences (``text``, ``ini``, output without a
language) are not code.

Markers, on the line before a block (HTML comments, invisible on the site):

- ``<!-- docs test, no GPU: runs up to "LINE", then: CODE -->`` (Python): on a
  machine without a CUDA device the block runs up to its first line starting
  with ``LINE``, then ``CODE`` (a compile of the same kernel for ``sm_90a``);
  with a device the whole block runs.
- ``<!-- docs test: not run: REASON -->`` (shell only): commands that install,
  need root, run the test suite itself or take minutes; the reason is shown
  to whoever reads the page source.

A Python block whose first line is ``# needs a GPU`` is, without a device,
only compiled to bytecode (its syntax checked). Without a device every page
runs with ``CUTE_DSL_ARCH=sm_90a``, so device kernels compile.

Tutorial pages (docs/tutorials/NN-*.md) show sections of one script and
include the whole script at the end; the script is what runs: each of their
Python blocks must be a section of that script, which test_tutorials.py runs
whole (with and without torch).

On pages listed in ``STATE_THEIR_OUTPUT`` a ``print(...)  # value`` line
states its output: the page's printed lines must equal those comments, in
order (text after a colon in the comment is commentary).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import tests.child
from tests.optional import torch_or_skip

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
NO_GPU = re.compile(r'<!-- docs test, no GPU: runs up to "(?P<stop>[^"]+)", then: (?P<then>.+?) -->\s*$')
NOT_RUN = re.compile(r"<!-- docs test: not run: (?P<reason>.*?) -->\s*$")
INCLUDE = re.compile(r'^[ \t]*--8<-- "(?P<file>[^":]+)(?::(?P<section>[\w-]+))?"[ \t]*$')
GPU_MARKER = "# needs a GPU"
SHELL = ("bash", "sh", "shell", "console")
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
TUTORIAL_PAGE = re.compile(r"docs/tutorials/\d\d-[\w-]+\.md")
#: Pages whose every printed line is stated by a ``print(...)  # value`` comment.
STATE_THEIR_OUTPUT = [
    "docs/concepts/cache.md",
    "docs/concepts/eligibility.md",
    "docs/concepts/package-compiles.md",
    "docs/concepts/tensors.md",
]


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    raw: str  # as written in the Markdown
    code: str  # as the site shows it (includes resolved)
    no_gpu: re.Match[str] | None
    not_run: re.Match[str] | None


def include(file: str, section: str | None) -> str:
    """What ``pymdownx.snippets`` puts in place of ``--8<-- "file:section"`` (``dedent_subsections: true``)."""
    lines = (ROOT / file).read_text(encoding="utf-8").splitlines()
    marker = re.compile(r"^\s*# --8<-- \[(start|end):([\w-]+)\]\s*$")
    if section is None:
        return "\n".join(ln for ln in lines if not marker.match(ln)) + "\n"
    start = next(i for i, ln in enumerate(lines) if (m := marker.match(ln)) and m.groups() == ("start", section))
    end = next(i for i, ln in enumerate(lines) if (m := marker.match(ln)) and m.groups() == ("end", section))
    body = [ln for ln in lines[start + 1 : end] if not marker.match(ln)]
    return textwrap.dedent("\n".join(body) + "\n")


def resolve(raw: str) -> str:
    out = []
    for ln in raw.splitlines():
        m = INCLUDE.match(ln)
        out.append(include(m["file"], m["section"]).rstrip("\n") if m else ln)
    return "\n".join(out) + "\n"


def blocks(page: str, root: Path = ROOT) -> list[Block]:
    """The page's Python and shell blocks, in order."""
    text = (root / page).read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        lang = m["lang"].lower()
        if lang != "python" and lang not in SHELL:
            continue
        body = textwrap.dedent(m["body"])
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        line = text.count("\n", 0, m.start()) + 1
        found.append(Block(page, line, lang, body, resolve(body), NO_GPU.search(before), NOT_RUN.search(before)))
    return found


def _has_gpu() -> bool:
    from tests.conftest import HAS_GPU

    return bool(HAS_GPU)


def python_script(page_blocks: list[Block], gpu: bool) -> str:
    """The page's Python blocks, in order, as the one script a machine with (or without) a device runs."""
    parts = []
    for b in page_blocks:
        if b.lang != "python":
            continue
        code = b.code
        if not gpu and b.no_gpu is not None:
            lines = code.splitlines()
            stop = next((i for i, text in enumerate(lines) if text.startswith(b.no_gpu["stop"])), None)
            assert stop is not None, f"{b.page}:{b.line}: no line starts with {b.no_gpu['stop']!r}"
            code = "\n".join(lines[:stop] + [b.no_gpu["then"], ""])
        elif not gpu and code.startswith(GPU_MARKER):
            compile(code, f"{b.page}:{b.line}", "exec")  # syntax only; a GPU machine runs it
            code = f"# {b.page}:{b.line}: needs a GPU, not run here\n"
        parts.append(f"# ---- {b.page}:{b.line}\n{code}")
    return "\n".join(parts)


def _tutorial_script(page: str, page_blocks: list[Block]) -> str | None:
    """The tutorial script a tutorial page includes whole, if it does."""
    for b in page_blocks:
        m = INCLUDE.match(b.raw.strip())
        if b.lang == "python" and m and m["section"] is None and m["file"].startswith("tutorials/"):
            return m["file"]
    return None


def test_every_page_is_found() -> None:
    assert "docs/index.md" in PAGES and "docs/concepts/cache.md" in PAGES and "docs/tutorials/index.md" in PAGES
    for page in STATE_THEIR_OUTPUT:
        assert page in PAGES, page


@pytest.mark.parametrize("page", [p for p in PAGES if TUTORIAL_PAGE.fullmatch(p)])
def test_tutorial_page_blocks_are_sections_of_the_script_that_runs(page: str) -> None:
    from tests.docs.test_tutorials import RUNS

    page_blocks = blocks(page)
    script = _tutorial_script(page, page_blocks)
    assert script is not None, f"{page}: a tutorial page includes its whole script (which test_tutorials runs)"
    assert Path(script).name in {s for s, _ in RUNS}, f"{page}: {script} is not run by test_tutorials"
    for b in page_blocks:
        if b.lang in SHELL:
            assert b.not_run is not None, f"{page}:{b.line}: a shell block on a tutorial page needs a not-run marker"
            continue
        lines = [ln for ln in b.raw.splitlines() if ln.strip()]
        for ln in lines:
            m = INCLUDE.match(ln)
            assert m is not None and m["file"] == script, f"{page}:{b.line}: Python that is not a section of {script}"


RUN_PAGES = [p for p in PAGES if not TUTORIAL_PAGE.fullmatch(p) and blocks(p)]


def child_env(tmp_path: Path) -> dict[str, str]:
    """The environment a page's script runs in: this checkout first on ``PYTHONPATH``, ahead of
    what is there already (where a machine puts the DSL it installed outside the venv), and a
    disk cache of its own."""
    return tests.child.child_env(CUTE_BIND_CACHE_DIR=str(tmp_path / "cache"))


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_runs_as_pasted(page: str, tmp_path: Path) -> None:
    page_blocks = blocks(page)
    gpu = _has_gpu()
    env = child_env(tmp_path)
    for name in ("CUTE_BIND_CHECKED", "CUTE_BIND_CACHE"):
        env.pop(name, None)
    if not gpu:
        env.setdefault("CUTE_DSL_ARCH", "sm_90a")  # device kernels compile without a device
    for b in page_blocks:
        if b.not_run is not None:
            assert b.lang in SHELL, f"{page}:{b.line}: only shell blocks may be left unrun; Python blocks run"
            assert b.not_run["reason"].strip(), f"{page}:{b.line}: say why the block is not run"
    script = python_script(page_blocks, gpu)
    if script:
        if "import torch" in script:
            torch_or_skip()
        if re.search(r"^import jax\b", script, re.M):
            pytest.importorskip("jax")  # an optional extra (CI's JAX step installs it)
        path = tmp_path / "page.py"
        path.write_text(script, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (
            f"{page}: its Python blocks, run in order, failed:\n--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-3000:]}"
        )
        if page in STATE_THEIR_OUTPUT:
            stated = [m.group(1).split(":")[0].strip() for m in re.finditer(r"^\s*print\(.*\)\s+#\s*(.+)$", script, re.M)]
            assert proc.stdout.strip().splitlines() == stated, page
    for b in page_blocks:
        if b.lang not in SHELL or b.not_run is not None:
            continue
        for line in (ln.split("#")[0].strip() for ln in b.code.splitlines()):
            if not line:
                continue
            argv = shlex.split(line)
            assert argv[0] == "python", f"{page}:{b.line}: {line!r} is not a python command: run it here or mark the block not run"
            proc = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"{page}:{b.line}: {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


def test_a_block_using_what_the_page_does_not_show_fails(tmp_path: Path) -> None:
    """The runner's own check: a page whose block uses a name no earlier block defines does not pass."""
    (tmp_path / "page.md").write_text("```python\nx = 1\n```\n\nThen:\n\n```python\nprint(x + y)\n```\n", encoding="utf-8")
    found = blocks("page.md", tmp_path)
    assert [b.code for b in found] == ["x = 1\n", "print(x + y)\n"]
    proc = subprocess.run([sys.executable, "-c", python_script(found, gpu=False)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "NameError: name 'y'" in proc.stderr


NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
TUTORIAL_COUNT = re.compile(r"\b(?P<n>" + "|".join(NUMBERS) + r"|\d+)\s+(?:short |runnable )*(?:scripts|tutorials)\b", re.I)


@pytest.mark.parametrize("page", ["README.md", "docs/index.md", "docs/tutorials/index.md"])
def test_pages_count_the_tutorials_there_are(page: str) -> None:
    count = len(list((ROOT / "tutorials").glob("[0-9][0-9]_*.py")))
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    for m in TUTORIAL_COUNT.finditer(text):
        n = m["n"].lower()
        assert (int(n) if n.isdigit() else NUMBERS.index(n)) == count, f"{page}: {m[0]!r}, but tutorials/ has {count} scripts"


def _section_blocks(page: str, heading: str) -> list[Block]:
    text = (ROOT / page).read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end if end >= 0 else len(text)) + 1
    return [b for b in blocks(page) if first <= b.line <= last]


def test_the_home_page_installs_as_the_readme_does() -> None:
    readme = [b.raw for b in _section_blocks("README.md", "## First commands") if b.lang in SHELL]
    home = [b.raw for b in _section_blocks("docs/index.md", "## Install") if b.lang in SHELL]
    assert readme and home == readme


def test_every_stated_dsl_range_is_pyprojects() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("nvidia-cutlass-dsl"))[len("nvidia-cutlass-dsl") :]
    stated = re.compile(r"nvidia-cutlass-dsl[\s:`(]*(?P<spec>[<>=!~][^\s)`;]*)")
    seen = 0
    for page in PAGES:
        for m in stated.finditer((ROOT / page).read_text(encoding="utf-8")):
            seen += 1
            assert m["spec"].rstrip(",.") == spec, f"{page}: nvidia-cutlass-dsl {m['spec']!r}, pyproject.toml says {spec!r}"
    assert seen >= 3


def test_readme_reason_is_logged_as_it_says(tmp_path: Path) -> None:
    """README: a new key's reason is in specializations() and, with logging at INFO, logged by ``cute_bind``."""
    block = next(b for b in blocks("README.md") if "specializations()[-1].reason" in b.code)
    assert "logging.basicConfig(level=logging.INFO)" in (ROOT / "README.md").read_text(encoding="utf-8")
    script = tmp_path / "example.py"
    script.write_text("import logging\nlogging.basicConfig(level=logging.INFO)\n" + block.code, encoding="utf-8")
    env = child_env(tmp_path)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    reason = proc.stdout.splitlines()[0]
    assert reason.startswith("parameter ") and "Float64" in reason, proc.stdout
    logged = [ln for ln in proc.stderr.splitlines() if ln.startswith("INFO:cute_bind") and reason in ln]
    assert logged, proc.stderr


BLOCK_TORCH = "import sys\nsys.modules['torch'] = None  # the README's install leaves PyTorch out\n"


def test_readme_blocks_that_do_not_import_torch_run_without_it(tmp_path: Path) -> None:
    """README: a block that does not import torch runs after the README's own install (no PyTorch),
    each block alone; a block that needs torch says so in the text before it or uses it for GPU memory."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    readme = [b for b in blocks("README.md") if b.lang == "python"]
    plain = [b for b in readme if not re.search(r"^\s*(import|from) torch\b", b.code, re.M)]
    assert plain, "the README shows no example that runs without PyTorch"
    env = child_env(tmp_path)
    env.setdefault("CUTE_DSL_ARCH", "sm_90a")
    for b in plain:
        path = tmp_path / f"block_{b.line}.py"
        path.write_text(BLOCK_TORCH + b.code, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"README.md:{b.line} needs PyTorch:\n{proc.stderr[-3000:]}"
    for b in readme:
        if b in plain or b.no_gpu is not None:  # the GPU examples: PyTorch for GPU memory, said under the first
            continue
        opening = text[: text.index(b.raw)].rindex("```")
        before = text[:opening].rsplit("```", 1)[-1]  # the prose between the block before and this one
        assert "[torch]" in before, f"README.md:{b.line} imports torch; the text before it must say to install it"


def test_readme_describes_the_tables_the_bench_prints(tmp_path: Path) -> None:
    """README "First commands": as many tables as ``python -m cute_bind bench`` prints, each explained by name."""
    env = child_env(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "cute_bind", "bench", "--repeats", "1", "--iters", "10"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    # its checks are tests/bench's; here only what it prints
    tables = [ln[3:] for ln in proc.stdout.splitlines() if ln.startswith("## ")]
    assert tables, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    said = re.search(r"`python -m cute_bind bench` prints (\w+) tables", text)
    assert said is not None and NUMBERS.index(said[1]) == len(tables), (said and said[0], tables)
    for title in tables:
        name = re.split(r" \(|:", title)[0]  # "pointer workload (...)", "kernel(...) calls: ..."
        assert f"**{name}**" in text, f"README explains no table {name!r}"
