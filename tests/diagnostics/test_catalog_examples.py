"""Every diagnostics catalog example raises its own code.

Each entry's ``example`` is written to a file and run with the current
interpreter in a subprocess (the CuTe DSL needs functions defined in source
files), with the repository root on PYTHONPATH. It must fail with the entry's
exception class and a message containing ``[CODE]``. Examples that only
``raise cute_bind.error(...)`` (the condition cannot be produced on an ordinary
machine; the docs label them as illustrations) are run the same way.

The examples run in parallel (one worker per core) in a module fixture; the
table-driven test then checks each result. Each runs as ``__main__`` under a
small bootstrap (``_BOOT``) that records the exception it ends with (its code,
``fix`` and message) beside it, so the error a user would get is checked too:
its ``fix`` is the entry's fix, rendered, and its message shows it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cute_bind import CATALOG  # noqa: E402
from cute_bind.diagnostics import WRONG_KIND_CONVERSIONS  # noqa: E402
from cute_bind.dsl import cuda_device_count, features  # noqa: E402
from tests.child import child_env  # noqa: E402
from tests.optional import torch_or_skip  # noqa: E402

CODES = sorted(CATALOG)
ILLUSTRATION_MARKER = "raise cute_bind.error("
TIMEOUT_S = 180

#: Examples whose condition exists only on a machine without a usable GPU.
NEEDS_NO_GPU = {
    "CB304": "the example's module loads fine where a GPU is present, so bind() succeeds",
}


#: Examples of conditions only some supported DSL versions can produce (a Features flag).
NEEDS_FEATURE = {
    "CB504": "spec_reentry",
    # the disk cache's warnings: a DSL without export/reload (4.5) runs with the cache off
    **{code: "disk_cache" for code in ("CB605", "CB606", "CB607", "CB608", "CB609", "CB610", "CB611", "CB612", "CB613")},
}

#: Examples that need torch (the library does not): skipped where it is not installed.
_TORCH = re.compile(
    r"^\s*(import torch\b|from torch\b|import cute_bind\.torch\b|from cute_bind\.torch\b|from cute_bind import torch\b)", re.M
)


#: Runs the example (argv[1]) as ``__main__``; the exception it ends with is written to argv[2]
#: as JSON, then reported as usual (same traceback on stderr, same exit status).
_BOOT = """
import json, runpy, sys
script, record = sys.argv[1], sys.argv[2]
def hook(kind, exc, tb):
    fields = ("code", "fix", "kernel", "parameter", "expected", "got")
    with open(record, "w", encoding="utf-8") as f:
        json.dump({"type": kind.__name__, "message": str(exc), **{n: getattr(exc, n, None) for n in fields}}, f, default=str)
    sys.__excepthook__(kind, exc, tb)
sys.excepthook = hook
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""


def _record(folder: Path, code: str) -> Path:
    return folder / f"example_{code.lower()}.raised.json"


def _run(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    script = folder / f"example_{code.lower()}.py"
    script.write_text(CATALOG[code].example, encoding="utf-8")
    env = child_env()
    env.pop("CUTE_BIND_CHECKED", None)
    return subprocess.run(
        [sys.executable, "-c", _BOOT, str(script), str(_record(folder, code))],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("catalog_examples")


@pytest.fixture(scope="module")
def results(folder: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        done = dict(zip(CODES, pool.map(lambda c: _run(c, folder), CODES)))
    return done


#: Examples that need JAX (an optional extra): skipped where it is not installed.
_JAX = re.compile(r"^\s*import jax\b", re.M)


def _skip_unless_runnable(code: str) -> None:
    if code in NEEDS_NO_GPU and cuda_device_count() > 0:
        pytest.skip(f"{code}: {NEEDS_NO_GPU[code]}")
    if code in NEEDS_FEATURE and not getattr(features(), NEEDS_FEATURE[code]):
        pytest.skip(f"{code}: the installed DSL has no {NEEDS_FEATURE[code]}")
    if _TORCH.search(CATALOG[code].example):
        torch_or_skip()
    if _JAX.search(CATALOG[code].example):
        pytest.importorskip("jax")


def test_catalog_is_not_empty() -> None:
    assert len(CODES) >= 30
    assert all(CATALOG[c].example.strip() for c in CODES)


@pytest.mark.parametrize("code", [c for c in CODES if not CATALOG[c].retired])
def test_example_raises_its_code(code: str, results: dict[str, subprocess.CompletedProcess[str]]) -> None:
    _skip_unless_runnable(code)
    proc = results[code]
    entry = CATALOG[code]
    output = f"--- example\n{entry.example}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode != 0, f"{code}: the example ran without raising\n{output}"
    # The traceback's last exception line: "<module>.<Class>: [CODE] message".
    assert f"{entry.error_class.__name__}: [{code}]" in proc.stderr, output


class _Unfilled(dict[str, str]):
    """A field the occurrence left out reads "?", as in every message."""

    def __missing__(self, key: str) -> str:
        return "?"


@pytest.mark.parametrize("code", [c for c in CODES if not CATALOG[c].retired])
def test_example_error_carries_its_fix(code: str, results: dict[str, subprocess.CompletedProcess[str]], folder: Path) -> None:
    """The exception a user gets has ``.fix``: the entry's fix for this occurrence, also in its message."""
    _skip_unless_runnable(code)
    assert results[code].returncode != 0
    raised = json.loads(_record(folder, code).read_text(encoding="utf-8"))
    entry = CATALOG[code]
    assert raised["code"] == code, raised
    fields = _Unfilled({n: str(raised[n]) for n in ("kernel", "parameter", "expected", "got") if raised[n] is not None})
    if "{conversion}" in entry.fix:  # CB204: the refusing kind's sentence, one of the catalog's
        fields["conversion"] = next((c for c in WRONG_KIND_CONVERSIONS.values() if raised["fix"].endswith(c)), "?")
    rendered = " ".join(entry.fix.format_map(fields).split())  # the catalog's fix, on one line
    assert rendered and raised["fix"] == rendered, raised
    assert f"\n  fix: {rendered}\n" in raised["message"], raised["message"]


@pytest.mark.parametrize("code", [c for c in CODES if CATALOG[c].retired])
def test_retired_example_no_longer_raises(code: str, results: dict[str, subprocess.CompletedProcess[str]]) -> None:
    """A retired entry's example shows what used to raise it: it now runs cleanly."""
    proc = results[code]
    assert proc.returncode == 0, f"{code}: the retired example still fails\n{proc.stderr}"
    assert f"[{code}]" not in proc.stderr


def test_illustrations_are_the_raise_only_examples() -> None:
    """What the docs label 'illustration': examples that raise the error themselves."""
    illustrations = sorted(c for c in CODES if ILLUSTRATION_MARKER in CATALOG[c].example)
    for code in illustrations:
        # an illustration raises exactly its own entry
        assert f'CATALOG["{code}"]' in CATALOG[code].example, code
