"""Latency and memory of ``cute-bind lsp`` on a 2,000-line file, over the real protocol.

Starts the server as an editor does (``python -m cute_bind lsp``, stdin/stdout),
opens a generated 2,000-line file of ``@cute_bind.kernel`` functions (one in
four with ineligible annotations), and measures:

- **latency after a change**: the time from sending ``didChange`` (one edit,
  incremental sync) to receiving the ``publishDiagnostics`` of that version,
  for edits after a quiet period (the server checks the first change at once;
  the debounce only coalesces bursts). Edits inside a function body, edits of
  an annotation (the diagnostics change), lines inserted and deleted (every
  later position moves) and an edit of the imports (every function is checked
  again);
- **memory over 10,000 edits**: the server's resident set size every 1,000
  edits, each edit checked and published before the next is sent
  (``--debounce-ms 0``).

Run: ``python benchmarks/lsp_latency.py [--edits 10000] [--json out.json]``
(needs the lsp extra and psutil). Numbers vary with the machine and its load;
docs/editors.md quotes a run on the 2-core CPU machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil
from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]


def generate(lines: int = 2000) -> str:
    """A module of kernels: every fourth has a Float8 scalar (CB104), a nested tuple (CB113) and an Optional[str] (CB114)."""
    out = [
        "from typing import NamedTuple, Optional",
        "import cutlass",
        "import cutlass.cute as cute",
        "import cute_bind",
        "import cuda.bindings.driver as cuda",
        "",
    ]
    i = 0
    while len(out) < lines:
        bad = i % 4 == 0
        out += [
            "@cute_bind.kernel",
            f"def k{i}(out: cute_bind.Pointer[cutlass.Float32], x: cute.Tensor, n: cutlass.Int32, s: cuda.CUstream,",
            f"        alpha: {'cutlass.Float8E4M3FN' if bad else 'cutlass.Float32'}, sizes: tuple[int, {'tuple[int, int]' if bad else 'int'}],"
            f" m: Optional[{'str' if bad else 'cutlass.Int32'}]):",
            *[f"    v{j} = n + {j}" for j in range(14)],
            "    return None",
            "",
        ]
        i += 1
    return "\n".join(out[:lines]) + "\n"


class Bench:
    def __init__(self, debounce_ms: int) -> None:
        self.client = LanguageClient("lsp-latency", "1")
        self.debounce_ms = debounce_ms
        self.published: dict[int, tuple[float, int]] = {}
        self.event = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
            if params.version is not None:
                self.published[params.version] = (time.perf_counter(), len(params.diagnostics))
                self.event.set()

        self.uri = (ROOT / "benchmarks" / "_lsp_generated.py").as_uri()
        self.version = 1
        self.lines: list[str] = []

    async def start(self, text: str) -> None:
        await self.client.start_io(sys.executable, "-m", "cute_bind", "lsp", "--debounce-ms", str(self.debounce_ms))
        await self.client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=ROOT.as_uri()))
        self.client.initialized(types.InitializedParams())
        self.lines = text.splitlines(keepends=True)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=self.uri, language_id="python", version=1, text=text))
        )
        await self.wait(1)

    @property
    def pid(self) -> int:
        server = self.client._server  # the asyncio subprocess pygls started
        assert server is not None
        return int(server.pid)

    async def wait(self, version: int) -> tuple[float, int]:
        while version not in self.published:
            self.event.clear()
            await asyncio.wait_for(self.event.wait(), timeout=30)
        return self.published.pop(version)

    async def edit(self, line: int, start: int, end: int, new: str, end_line: int | None = None) -> float:
        """Replace characters [start, end) of ``line`` (through ``end_line``) by ``new``; returns ms to diagnostics."""
        end_line = line if end_line is None else end_line
        before = "".join(self.lines[line : end_line + 1])
        cut_end = sum(len(x) for x in self.lines[line:end_line]) + end
        after = before[:start] + new + before[cut_end:]
        self.lines[line : end_line + 1] = after.splitlines(keepends=True)
        self.version += 1
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(line, start), types.Position(end_line, end)), text=new
        )
        sent = time.perf_counter()
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version), [change])
        )
        got, _ = await self.wait(self.version)
        return (got - sent) * 1e3

    def rss_mib(self) -> float:
        return psutil.Process(self.pid).memory_info().rss / 2**20

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def body_lines(lines: list[str]) -> list[int]:
    """The assignment lines inside function bodies."""
    return [i for i, line in enumerate(lines) if line.startswith("    ") and " = " in line and not line.startswith("     ")]


async def latency(rounds: int, seed: int) -> dict[str, Any]:
    text = generate()
    bench = Bench(debounce_ms=150)
    await bench.start(text)
    rng = random.Random(seed)
    kinds: dict[str, list[float]] = {"body": [], "annotation": [], "insert/delete line": [], "imports": []}
    quiet = 0.2  # longer than the debounce: each edit is the first after a quiet period
    for r in range(rounds):
        await asyncio.sleep(quiet)
        i = rng.choice(body_lines(bench.lines))
        kinds["body"].append(await bench.edit(i, 4, 4, "w = 1; "))
        await asyncio.sleep(quiet)
        j = rng.choice([k for k, line in enumerate(bench.lines) if "alpha: " in line])
        line = bench.lines[j]
        old, new = (
            ("cutlass.Float32", "cutlass.Float8E4M3FN") if "cutlass.Float32, sizes" in line else ("cutlass.Float8E4M3FN", "cutlass.Float32")
        )
        c = line.index(old)
        kinds["annotation"].append(await bench.edit(j, c, c + len(old), new))
        await asyncio.sleep(quiet)
        k = rng.choice(body_lines(bench.lines))
        if r % 2 == 0:
            kinds["insert/delete line"].append(await bench.edit(k, 0, 0, "    extra = 0\n"))
        else:
            kinds["insert/delete line"].append(await bench.edit(k, 0, 0, "", end_line=k + 1))
        if r % 5 == 0:
            await asyncio.sleep(quiet)
            kinds["imports"].append(await bench.edit(0, 0, 0, "import os\n" if r % 10 == 0 else "#"))
    lines = len(bench.lines)
    await bench.stop()
    return {
        "file_lines": lines,
        "edits": {
            k: {
                "n": len(v),
                "median_ms": round(statistics.median(v), 1),
                "p90_ms": round(sorted(v)[int(0.9 * (len(v) - 1))], 1),
                "max_ms": round(max(v), 1),
            }
            for k, v in kinds.items()
        },
    }


async def memory(edits: int, seed: int) -> dict[str, Any]:
    bench = Bench(debounce_ms=0)
    await bench.start(generate())
    rng = random.Random(seed)
    samples = [(0, round(bench.rss_mib(), 1))]
    start_lines = len(bench.lines)
    ms: list[float] = []
    for n in range(1, edits + 1):
        # edits that keep the file's size steady, so a growing RSS would be the server's own
        op = n % 4
        if op == 0:  # retype the last character of a statement
            i = rng.choice(body_lines(bench.lines))
            end = len(bench.lines[i].rstrip("\n"))
            ms.append(await bench.edit(i, end - 1, end, str(n % 10)))
        elif op == 1:  # a new line in a body
            i = rng.choice(body_lines(bench.lines))
            ms.append(await bench.edit(i, 0, 0, "    u = 2\n"))
        elif op == 2:  # a line deleted (one inserted before, when there is one)
            added = [k for k, line in enumerate(bench.lines) if line == "    u = 2\n"]
            i = rng.choice(added or body_lines(bench.lines))
            ms.append(await bench.edit(i, 0, 0, "", end_line=i + 1))
        else:  # an annotation made ineligible or eligible again
            j = rng.choice([k for k, line in enumerate(bench.lines) if "alpha: " in line])
            line = bench.lines[j]
            old, new = (
                ("cutlass.Float32", "cutlass.Float8E4M3FN")
                if "alpha: cutlass.Float32" in line
                else ("cutlass.Float8E4M3FN", "cutlass.Float32")
            )
            c = line.index(old)
            ms.append(await bench.edit(j, c, c + len(old), new))
        if n % 1000 == 0:
            samples.append((n, round(bench.rss_mib(), 1)))
    await bench.stop()
    return {
        "edits": edits,
        "file_lines": [start_lines, len(bench.lines)],
        "rss_mib_every_1000": samples,
        "median_ms": round(statistics.median(ms), 1),
        "p90_ms": round(sorted(ms)[int(0.9 * (len(ms) - 1))], 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=30, help="latency rounds (each: a body edit, an annotation edit, a line inserted or deleted)"
    )
    parser.add_argument("--edits", type=int, default=10000, help="edits for the memory run (0: skip it)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args()
    result: dict[str, Any] = {"cpu_count": os.cpu_count(), "python": sys.version.split()[0]}
    result["latency"] = asyncio.run(latency(args.rounds, args.seed))
    print(json.dumps(result["latency"], indent=1))
    if args.edits:
        result["memory"] = asyncio.run(memory(args.edits, args.seed))
        print(json.dumps(result["memory"], indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
