"""The language server's fast start (issue 44 item 6): the first exchange answered before pygls loads.

:mod:`cute_bind.lsp.fast` answers ``initialize`` and publishes the first opened file's diagnostics
itself, then the server proper (pygls) reads the same messages again. Here:

- its ``initialize`` answer is the server proper's, for several clients' capabilities;
- its diagnostics are the server proper's, for each position encoding, on ASCII and non-ASCII text,
  with and without the settings that change them;
- over the real protocol: one answer to ``initialize`` (the server proper's is dropped), the fast
  diagnostics first and the server proper's the same, and the server proper then knows the file
  (a hover answers) and shuts down cleanly; and the start-up does not import pygls or lsprotocol
  before the first diagnostics are out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed (pip install -e '.[lsp]')")

from lsprotocol import types  # noqa: E402

from cute_bind.lsp import fast  # noqa: E402
from cute_bind.lsp.server import make_server  # noqa: E402
from tests.child import child_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "lsp" / "nvim" / "ineligible.py"

CAPABILITIES: list[dict[str, Any]] = [
    {},
    {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
    {"general": {"positionEncodings": ["utf-32"]}},
    {"general": {"positionEncodings": ["x-unknown", "utf-16"]}},
    {"textDocument": {"synchronization": {"willSave": True, "willSaveWaitUntil": True, "didSave": True}}},
    {"workspace": {"workspaceEdit": {"documentChanges": True}, "workspaceFolders": True}},
    {"textDocument": {"synchronization": {"willSave": False}}, "notebookDocument": {"synchronization": {}}},
    # what Neovim 0.7.2's client sends (vim.lsp.protocol.make_client_capabilities())
    json.loads((Path(__file__).parent / "nvim" / "capabilities-0.7.2.json").read_text(encoding="utf-8")),
]

NON_ASCII = """import cutlass
import cute_bind

# é, 😀: a comment with a two-byte, and a four-byte (two UTF-16 units) character before the kernel
@cute_bind.kernel
def k(é: cutlass.Float8E4M3FN, sizes: tuple[int, tuple[int, int]], 😀ok=None):  # 😀
    pass
""".replace("😀ok=None", "mode: 'str | None' = None")

TEXTS = {"fixture": FIXTURE.read_text(encoding="utf-8"), "non-ascii": NON_ASCII}


def _initialize(server: Any, capabilities: dict[str, Any]) -> Any:
    """pygls's own ``initialize`` handler (a generator in pygls 2: run to its return value)."""
    converter = server.protocol._converter
    params = converter.structure({"processId": None, "rootUri": None, "capabilities": capabilities}, types.InitializeParams)
    run = server.protocol.lsp_initialize(params)
    sent = None
    try:
        while True:
            handler, args, kwargs = run.send(sent)
            sent = handler(*args, **(kwargs or {}))
    except StopIteration as stop:
        return stop.value


def _proper_initialize(capabilities: dict[str, Any]) -> dict[str, Any]:
    server = make_server()
    return server.protocol._converter.unstructure(_initialize(server, capabilities))  # type: ignore[no-any-return]


@pytest.mark.parametrize("capabilities", CAPABILITIES, ids=lambda c: json.dumps(c)[:60])
def test_the_initialize_answer_is_the_servers(capabilities: dict[str, Any]) -> None:
    params = {"processId": None, "rootUri": None, "capabilities": capabilities}
    assert fast.initialize_result(params, _proper_initialize(capabilities)["serverInfo"]["version"]) == _proper_initialize(capabilities)


def _proper_diagnostics(capabilities: dict[str, Any], uri: str, text: str) -> dict[str, Any]:
    server = make_server()
    converter = server.protocol._converter
    _initialize(server, capabilities)
    published: list[Any] = []
    server.text_document_publish_diagnostics = published.append  # type: ignore[method-assign]
    server.opened(uri, 1, text)
    (params,) = published
    return converter.unstructure(params)  # type: ignore[no-any-return]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.parametrize("settings", ["none", "show-fix", "ignore"])
def test_the_first_diagnostics_are_the_servers(tmp_path: Path, encoding: str, name: str, settings: str) -> None:
    if settings != "none":
        table = "show-fix = true" if settings == "show-fix" else 'ignore = ["CB104"]'
        (tmp_path / "pyproject.toml").write_text(f"[tool.cute-bind]\n{table}\n", encoding="utf-8")
    path = tmp_path / "kernels.py"
    path.write_text(TEXTS[name], encoding="utf-8")
    capabilities = {"general": {"positionEncodings": [encoding]}}
    uri = path.as_uri()
    mine = fast.open_diagnostics({"textDocument": {"uri": uri, "text": TEXTS[name], "version": 1}}, encoding, None)
    theirs = _proper_diagnostics(capabilities, uri, TEXTS[name])
    assert mine == theirs
    assert mine["diagnostics"], "the texts hold ineligible annotations"


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    assert proc.stdin is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def test_over_the_protocol_the_server_proper_takes_over(tmp_path: Path) -> None:
    code = (
        "import sys, runpy\n"
        "seen = []\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pygls', 'lsprotocol') and not seen:\n"
        "            seen.append(name)\n"
        "            sys.stderr.write('IMPORTED ' + name + '\\n'); sys.stderr.flush()\n"
        "        return None\n"
        "sys.meta_path.insert(0, Watch())\n"
        "sys.argv = ['cute_bind', 'lsp']\n"
        "runpy.run_module('cute_bind', run_name='__main__')\n"
    )
    env = child_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env
    )
    uri = FIXTURE.as_uri()
    _send(proc, {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    _send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    _send(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": TEXTS["fixture"]}}})  # fmt: skip
    messages = [fast.read_message(proc.stdout)[1] for _ in range(2)]  # type: ignore[arg-type]
    assert proc.stderr is not None
    # pygls is imported only after the first diagnostics were written (the watcher reports its first import)
    _send(proc, {"jsonrpc": "2.0", "id": 8, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri}, "position": {"line": 14, "character": 31}}})  # fmt: skip
    while True:
        message = fast.read_message(proc.stdout)[1]  # type: ignore[arg-type]
        assert message is not None
        messages.append(message)
        if message.get("id") == 8:
            break
    _send(proc, {"jsonrpc": "2.0", "id": 9, "method": "shutdown", "params": None})
    _send(proc, {"jsonrpc": "2.0", "method": "exit", "params": None})
    out, err = proc.communicate(timeout=60)
    answers = [m for m in messages if m.get("id") == 7]
    assert len(answers) == 1 and answers[0]["result"]["capabilities"]["positionEncoding"] == "utf-16"
    published = [m["params"] for m in messages if m.get("method") == "textDocument/publishDiagnostics"]
    assert len(published) == 2 and published[0] == published[1] and published[0]["diagnostics"], published
    assert messages[1].get("method") == "textDocument/publishDiagnostics"  # the fast diagnostics, before the server proper
    hover = next(m for m in messages if m.get("id") == 8)
    assert hover["result"] and "alpha" in json.dumps(hover["result"]), hover
    assert proc.returncode == 0, err.decode()[-2000:]
    assert "IMPORTED pygls" in err.decode() or "IMPORTED lsprotocol" in err.decode(), err.decode()[-500:]  # then, the server proper


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_the_first_diagnostics_need_neither_pygls_nor_lsprotocol() -> None:
    """What makes the start fast: the first exchange is answered with neither imported (lsprotocol's types
    module alone took 0.85 s of the 2-core CPU machine's 2.5 s to the first diagnostics)."""
    opened = {"textDocument": {"uri": FIXTURE.as_uri(), "languageId": "python", "version": 1, "text": TEXTS["fixture"]}}
    stream = b"".join(
        _frame(m)
        for m in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened},
        )
    )
    code = (
        "import io, sys, json\n"
        "from cute_bind.lsp.fast import front, read_message\n"
        "out = io.BytesIO()\n"
        f"read, answered = front(io.BytesIO({stream!r}), out, '0', None)\n"
        "out.seek(0)\n"
        "kinds = [read_message(out)[1].get('method', 'answer') for _ in range(2)]\n"
        "print(json.dumps([kinds, answered, len(read), sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol'))]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    kinds, answered, length, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert kinds == ["answer", "textDocument/publishDiagnostics"] and answered == 1 and length == len(stream)
    assert loaded == []
