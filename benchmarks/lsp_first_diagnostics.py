"""Where the time to the first diagnostics of ``cute-bind lsp`` goes (issue 44 item 6).

Starts the server as an editor does (``python -m cute_bind lsp``), and at once, as Neovim does, sends
``initialize``, ``initialized`` and ``textDocument/didOpen`` of tests/lsp/nvim/ineligible.py; records,
from the moment the process is started:

- ``initialize``: when the server answers ``initialize`` (its start-up: the interpreter, the
  imports, the server's construction);
- ``diagnostics``: when the first ``publishDiagnostics`` of that file arrives (the first check).

And, in separate interpreters, the import times of what start-up imports (``-X importtime``,
cumulative, the top entries). Plain JSON-RPC over pipes, no client library, so nothing of the
client's own start is counted.

    python benchmarks/lsp_first_diagnostics.py [--runs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "lsp" / "nvim" / "ineligible.py"


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    assert proc.stdin is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def _read(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    length = 0
    while True:
        line = proc.stdout.readline()
        if not line:
            raise EOFError("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))  # type: ignore[no-any-return]


def first_diagnostics(command: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> dict[str, float]:
    """Seconds from the process start to the initialize answer and to the first diagnostics."""
    text = FIXTURE.read_text(encoding="utf-8")
    uri = FIXTURE.as_uri()
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    times: dict[str, float] = {}
    try:
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": os.getpid(), "rootUri": ROOT.as_uri(), "capabilities": {}},
            },
        )
        _send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        open_doc = {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
        _send(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": open_doc})
        while "diagnostics" not in times:
            message = _read(proc)
            if message.get("id") == 1 and "initialize" not in times:
                times["initialize"] = time.perf_counter() - t0
            elif message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                if message["params"]["diagnostics"]:
                    times["diagnostics"] = time.perf_counter() - t0
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
        _send(proc, {"jsonrpc": "2.0", "method": "exit", "params": None})
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    return times


def import_times(module: str, top: int = 8) -> list[tuple[str, float]]:
    """The slowest imports (cumulative seconds) of ``import module`` in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, cwd=ROOT)
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line[len("import time:") :].split("|")
            if cumulative.strip().isdigit():
                rows.append((name.strip(), int(cumulative) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--tree", metavar="DIR", type=Path, default=ROOT, help="the checkout whose server runs (default: this one)")
    a = p.parse_args()
    command = [sys.executable, "-m", "cute_bind", "lsp"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(a.tree), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    runs = [first_diagnostics(command, env, a.tree) for _ in range(a.runs)]
    result: dict[str, Any] = {
        "command": " ".join(command),
        "tree": str(a.tree),
        "runs": runs,
        "median_s": {k: statistics.median(r[k] for r in runs) for k in runs[0]},
        "python_start_s": statistics.median(
            first - start
            for start, first in ((time.perf_counter(), None),)
            for first in [(subprocess.run([sys.executable, "-c", "pass"]), time.perf_counter())[1]]
        ),
        "imports_s": {m: import_times(m, 6) for m in ("cute_bind", "cute_bind.lsp.server")},
    }
    print(f"{result['command']}: {a.runs} runs, median seconds from the process start")
    for key, value in result["median_s"].items():
        print(f"  {key:12s} {value:.3f} s   (runs: {', '.join(f'{r[key]:.3f}' for r in runs)})")
    print(f"  python -c pass: {result['python_start_s']:.3f} s")
    for module, rows in result["imports_s"].items():
        print(f"  import {module}: " + ", ".join(f"{n} {s:.3f} s" for n, s in rows))
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
