"""The command line's help as a user reads it (issue 44 item 5): ``python -m cute_bind ... --help``.

Every subcommand of ours says what it does in a description (not only its option list), and the
usage line names the command the way the user started it: ``python -m cute_bind`` under ``-m``,
``cute-bind`` for the installed script.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: subcommand -> words its description must contain (what it does, in plain words)
DESCRIBED = {
    "explain": "catalog entry",
    "bench": "Time how long one launch",
    "contract": "installed nvidia-cutlass-dsl provides",
    "cache": "",
    "lsp": "Language server",
    "check": "Report @cute_bind.kernel parameters",
}


def _help(*argv: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "cute_bind", *argv, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_usage_line_names_python_dash_m() -> None:
    out = _help()
    assert out.startswith("usage: python -m cute_bind "), out.splitlines()[0]
    assert "cute-bind" not in out.splitlines()[0]


@pytest.mark.parametrize("command", sorted(DESCRIBED))
def test_each_subcommand_says_what_it_does(command: str) -> None:
    out = _help(command)
    first = out.splitlines()[0]
    assert first.startswith(f"usage: python -m cute_bind {command}"), first
    # argparse prints the description between the usage block and the first section heading
    between = re.split(r"\n(?:positional arguments|options|optional arguments):\n", out.split("\n\n", 1)[1])[0]
    assert len(between.split()) >= 5, f"`python -m cute_bind {command} --help` has no description:\n{out}"
    assert DESCRIBED[command] in " ".join(out.split()), out


def test_the_installed_script_says_cute_bind() -> None:
    code = "import sys; sys.argv[0] = '/usr/bin/cute-bind'; from cute_bind.__main__ import main; main(['--help'])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("usage: cute-bind "), proc.stdout[:200]
