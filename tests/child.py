"""The environment of a process a test starts: this checkout first on ``PYTHONPATH``, then what was set.

A machine may put packages outside the venv on ``PYTHONPATH`` (the CuTe DSL,
for one), so a child process must keep the ``PYTHONPATH`` it inherits; and it
must import ``cute_bind`` and ``tests`` from this checkout, not from another
copy, so the checkout goes first. Every test that starts a Python process builds
its environment here instead of repeating the expression.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

#: The repository root (the same value as tests/conftest.py's ``ROOT``).
ROOT: str = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pythonpath(*first: str | os.PathLike[str]) -> str:
    """``PYTHONPATH`` for a child: the paths ``first``, then this checkout, then the ``PYTHONPATH`` already set.

    Empty paths are left out, and so is an unset or empty ``PYTHONPATH`` (an empty entry would mean the
    child's working directory).
    """
    paths = [os.fspath(p) for p in first]
    paths.append(ROOT)
    paths.append(os.environ.get("PYTHONPATH", ""))
    return os.pathsep.join(p for p in paths if p)


def child_env(*first: str | os.PathLike[str], **overrides: str) -> dict[str, str]:
    """This process's environment with ``PYTHONPATH`` = ``pythonpath(*first)``, then ``overrides`` set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = pythonpath(*first)
    env.update(overrides)
    return env


def run_isolated(body: str, path: str, timeout: int = 300) -> str:
    """Run ``body`` in a fresh interpreter on fast path ``path``; it must exit 0 and print OK. Returns its stdout.

    ``path == "python"`` sets ``CUTE_BIND_PURE_PYTHON=1`` in the child; any other path unsets it.
    """
    env = dict(os.environ)
    env.pop("CUTE_BIND_PURE_PYTHON", None)
    if path == "python":
        env["CUTE_BIND_PURE_PYTHON"] = "1"
    script = f"import sys\nsys.path.insert(0, {ROOT!r})\n" + textwrap.dedent(body) + "\nprint('OK')\n"
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0 and "OK" in proc.stdout, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout
