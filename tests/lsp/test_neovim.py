"""A real editor: Neovim's built-in LSP client runs ``python -m cute_bind lsp`` on a file with
ineligible annotations and reports the diagnostics, quick fixes and hover it received.

Skipped where ``nvim`` is not on PATH, unless ``CUTE_BIND_REQUIRE_NVIM=1`` (CI sets it, after
installing Debian's ``neovim``): there a missing nvim fails instead of skipping.

The run records when the first diagnostics arrived (issue 44 item 6), from the editor's start and
from the file's opening (its FileType, which starts the server), with the documented configuration
(no client debounce): printed as ``first diagnostics: ...`` (CI shows it with ``-s``) and appended
as a JSON line to ``$CUTE_BIND_LSP_TIMES`` where that is set. Recorded, not judged: timings are
no pass/fail condition.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cute_bind.static.rules import analyze_source
from tests.child import child_env

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURE = HERE / "nvim" / "ineligible.py"
INIT = HERE / "nvim" / "init.lua"

pytest.importorskip("pygls", reason="the lsp extra is not installed (pip install -e '.[lsp]')")


def _nvim() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        if os.environ.get("CUTE_BIND_REQUIRE_NVIM") == "1":
            pytest.fail("CUTE_BIND_REQUIRE_NVIM=1 but nvim is not on PATH (apt-get install neovim)")
        pytest.skip("nvim is not on PATH (Debian: apt-get install neovim)")
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[1]  # "v0.7.2"
    major, minor = (int(x) for x in version.lstrip("v").split(".")[:2])
    if (major, minor) < (0, 7):
        pytest.skip(f"nvim {version}: the init.lua needs 0.7+ (vim.lsp.start_client, nvim_create_autocmd)")
    return nvim


def test_neovim_receives_the_codes_fixes_and_hover(tmp_path: Path) -> None:
    nvim = _nvim()
    out = tmp_path / "report.json"
    env = child_env(
        CUTE_BIND_NVIM_OUT=str(out),
        CUTE_BIND_PYTHON=sys.executable,
        CUTE_BIND_ROOT=str(ROOT),
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # nothing of a user's configuration
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    proc = subprocess.run(
        [nvim, "--headless", "-n", "-i", "NONE", "-u", str(INIT), "-c", "lua CuteBindReport()", str(FIXTURE)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.exists(), f"nvim wrote no report (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    report = json.loads(out.read_text())
    assert report.get("error") is None, report["error"]
    expected = analyze_source(FIXTURE.read_text()).diagnostics()
    got = sorted((d["lnum"] + 1, d["col"], d["code"]) for d in report["diagnostics"])
    assert got == sorted((d.line, d.column, d.code) for d in expected)
    assert {d["code"] for d in report["diagnostics"]} == {"CB101", "CB104", "CB113", "CB114"}
    assert all(d["source"] == "cute-bind" and d["href"] for d in report["diagnostics"])
    # the quick fixes Neovim was offered: an edit for each of these codes
    with_edit = {a["code"] for a in report["actions"] if a["has_edit"] and a["kind"] == "quickfix"}
    assert with_edit == {"CB104", "CB113", "CB114"}  # 'n' has no default and no call: the fix is words only
    assert report["hover"] and "CB" in report["hover"]
    # the configuration docs/editors.md gives: the client adds no debounce of its own to the server's
    assert report["debounce_text_changes"] == 0
    first = report["first_diagnostics_s"]
    assert 0 < first["from_open"] <= first["from_start"], first
    line = {"nvim": "{major}.{minor}.{patch}".format(**report["nvim"]), **first}
    print(f"first diagnostics: {first['from_open']:.3f} s after the file opened, {first['from_start']:.3f} s after nvim started")
    if os.environ.get("CUTE_BIND_LSP_TIMES"):
        with open(os.environ["CUTE_BIND_LSP_TIMES"], "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


def test_the_documented_neovim_configurations_add_no_client_debounce() -> None:
    """docs/editors.md's Neovim configurations (0.11+, and 0.7-0.10 as this test's init.lua runs it) turn the
    client's own 150 ms debounce off: the server coalesces changes itself (issue 44 item 6)."""
    import re

    page = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    neovim = page[page.index("## Neovim") : page.index("## Helix")]
    blocks = re.findall(r"```lua\n(.*?)```", neovim, re.S)
    configs = [b for b in blocks if '"cute_bind", "lsp"' in b]
    assert len(configs) == 2, configs
    for block in configs:
        assert "flags = { debounce_text_changes = 0 }" in block, block
    assert "flags = { debounce_text_changes = 0 }" in INIT.read_text(encoding="utf-8")
