"""The package's layout: no import circles between its modules.

Each relative import (at any depth, including function-local and
``TYPE_CHECKING`` imports) is an edge from the importing module to the module
it names; a submodule importing its own package is not an edge (the package
is initialised first). A cycle anywhere in that graph fails the test, naming
the modules on it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cute_bind

PKG = Path(cute_bind.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PKG.rglob("*.py"):
        name = ".".join(("cute_bind", *path.relative_to(PKG).with_suffix("").parts))
        mods[name.removesuffix(".__init__")] = path
    return mods


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cute_bind"):
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else str(node.module) for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("cute_bind")]
            for t in targets:
                if t in mods and t != mod and not mod.startswith(t + "."):
                    edges[mod].add(t)
    return edges


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize(
    "edges, cycles",
    [
        ({"a": {"b"}, "b": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_cycle_finder(edges, cycles):
    assert find_cycles(edges) == cycles


def test_no_import_circles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles in cute_bind:\n" + "\n".join(" <-> ".join(c) for c in cycles)


#: Which packages (and single modules) each may import (its own modules aside); the architecture page draws this.
ALLOWED = {
    "diagnostics": set(),
    "_whitelist": set(),
    "settings": set(),
    "_generated": set(),
    "dsl": {"diagnostics", "settings"},
    "_types": {"diagnostics", "dsl"},
    "slots": {"diagnostics", "_generated", "dsl", "_whitelist", "_types"},
    "launch": {"diagnostics", "settings", "_generated", "dsl", "_whitelist", "slots"},
    "cache": {"diagnostics", "settings", "dsl", "_whitelist"},
    "jit": {"diagnostics", "settings", "dsl", "_whitelist", "slots", "launch", "cache"},
    "static": {"diagnostics", "_whitelist"},
    "mypy": {"static"},
    "lsp": {"diagnostics", "settings", "static"},
    "graph": {"diagnostics", "settings", "dsl", "slots", "launch"},
    "bench": {"diagnostics", "_generated", "dsl", "_types", "slots", "launch", "jit", "torch"},
    "torch": {"diagnostics", "settings", "_generated", "dsl", "slots", "launch", "jit"},
    "jax": {"diagnostics", "settings", "dsl", "slots", "launch", "jit"},
}


def test_packages_import_downwards_only():
    bad = []
    for mod, targets in import_graph().items():
        parts = mod.split(".")
        package = parts[1] if len(parts) > 1 else None
        if package not in ALLOWED:
            continue
        for t in targets:
            target = t.split(".")[1] if t.count(".") else None
            if target is not None and target != package and target not in ALLOWED[package]:
                bad.append(f"{mod} -> {t}")
    assert not bad, "imports against the layout (docs/concepts/architecture.md):\n" + "\n".join(sorted(bad))


def test_the_architecture_page_draws_these_rules():
    """docs/concepts/architecture.md's table has one row per entry of ALLOWED, and each row's last
    column names exactly what that entry may import ("nothing": none), so the page and the rules
    cannot drift apart."""
    import re

    page = PKG.parent / "docs" / "concepts" / "architecture.md"
    if not page.is_file():
        pytest.skip("not a checkout")
    drawn: dict[str, set[str]] = {}
    for line in page.read_text().splitlines():
        row = re.match(r"^\| `(\w+)(?:/|\.py)` \|.*\| ([^|]*) \|$", line)
        if row:
            cell = row.group(2).strip()
            drawn[row.group(1)] = set() if cell == "nothing" else set(re.findall(r"`(\w+)`", cell))
    assert drawn == ALLOWED


def test_a_built_wheel_holds_every_module(tmp_path):
    """An installed cute_bind (not the checkout) imports every package: a package
    missing from the wheel breaks ``import cute_bind`` only outside the repo."""
    import subprocess
    import sys
    import zipfile

    pytest.importorskip("setuptools")
    root = PKG.parent
    if not (root / "pyproject.toml").is_file():
        pytest.skip("not a checkout")
    # A copy of what the build reads, so a stale build/ folder in the
    # checkout cannot supply modules the configuration leaves out.
    import shutil

    src = tmp_path / "src"
    shutil.copytree(PKG, src / "cute_bind", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        if (root / name).is_file():
            shutil.copy(root / name, src / name)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(src), "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0 and "No module named pip" in proc.stderr:
        pytest.skip("pip is not available")
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("cute_bind-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {
        path.relative_to(root).as_posix()
        for path in PKG.rglob("*")
        if "__pycache__" not in path.parts
        if path.suffix in {".py", ".pyi", ".c"} or path.name == "py.typed"
    }
    assert sorted(wanted - names) == []


def test_the_gpu_job_names_only_test_paths_that_exist():
    """``benchmarks/device_job.sh`` runs on a machine this suite never sees: a test file it names
    that was renamed or removed makes its pytest step fail there (rc 4) and nowhere else."""
    import re

    root = PKG.parent
    job = root / "benchmarks" / "device_job.sh"
    if not job.is_file():
        pytest.skip("not a checkout")
    named = sorted(set(re.findall(r"\btests/[\w/.]+", job.read_text())))
    assert named, "the GPU job names no test paths: the pattern above no longer matches how it runs pytest"
    missing = [p for p in named if not (root / p.rstrip(".")).exists()]
    assert not missing, f"benchmarks/device_job.sh names test paths that do not exist: {missing}"
