"""Every diagnostics catalog example raises its own code.

Each entry's ``example`` is written to a file and run with the current
interpreter in a subprocess (the CuTe DSL needs functions defined in source
files), with the repository root on PYTHONPATH. It must fail with the entry's
exception class and a message containing ``[CODE]``. Examples that only
``raise cute_bind.error(...)`` (the condition cannot be produced on an ordinary
machine; the docs label them as illustrations) are run the same way.

The examples run in parallel (one worker per core) in a module fixture; the
table-driven test then checks each result.
"""

from __future__ import annotations

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
from cute_bind._dsl import cuda_device_count, features  # noqa: E402
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
    **{code: "disk_cache" for code in ("CB605", "CB606", "CB607", "CB608", "CB609")},
}

#: Examples that need torch (the library does not): skipped where it is not installed.
_TORCH = re.compile(r"^\s*(import torch\b|from torch\b|import cute_bind\.torch\b|from cute_bind\.torch\b|from cute_bind import torch\b)", re.M)


def _run(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    script = folder / f"example_{code.lower()}.py"
    script.write_text(CATALOG[code].example, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("CUTE_BIND_CHECKED", None)
    return subprocess.run(
        [sys.executable, str(script)], cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("catalog_examples")
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        done = dict(zip(CODES, pool.map(lambda c: _run(c, folder), CODES)))
    return done


def test_catalog_is_not_empty() -> None:
    assert len(CODES) >= 30
    assert all(CATALOG[c].example.strip() for c in CODES)


@pytest.mark.parametrize("code", [c for c in CODES if not CATALOG[c].retired])
def test_example_raises_its_code(code: str, results: dict[str, subprocess.CompletedProcess[str]]) -> None:
    if code in NEEDS_NO_GPU and cuda_device_count() > 0:
        pytest.skip(f"{code}: {NEEDS_NO_GPU[code]}")
    if code in NEEDS_FEATURE and not getattr(features(), NEEDS_FEATURE[code]):
        pytest.skip(f"{code}: the installed DSL has no {NEEDS_FEATURE[code]}")
    if _TORCH.search(CATALOG[code].example):
        torch_or_skip()
    proc = results[code]
    entry = CATALOG[code]
    output = f"--- example\n{entry.example}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode != 0, f"{code}: the example ran without raising\n{output}"
    # The traceback's last exception line: "<module>.<Class>: [CODE] message".
    assert f"{entry.error_class.__name__}: [{code}]" in proc.stderr, output


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
