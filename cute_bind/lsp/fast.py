"""The server's first answers, before pygls is imported (issue 44 item 6).

An editor starts ``cute-bind lsp`` when it opens a Python file, sends ``initialize``, ``initialized``
and ``textDocument/didOpen`` at once, and shows nothing until the first ``publishDiagnostics``. The
server's own imports took most of that wait: lsprotocol's types module alone about 0.85 s, pygls
about 0.2 s more, on the 2-core CPU machine (benchmarks/lsp_first_diagnostics.py measures it). So
the first exchange is answered here, with the standard library and cute_bind's static rules only:

1. ``initialize`` gets the answer pygls gives (:func:`initialize_result`: the same capabilities, the
   position encoding chosen by pygls's rule; tests/lsp/test_fast_start.py compares the two for several
   clients' capabilities);
2. ``initialized`` needs no answer;
3. the first ``textDocument/didOpen`` is checked as :meth:`CuteBindServer.check` checks it and its
   diagnostics are published (:func:`open_diagnostics`: the same JSON the server publishes, compared
   by the same test file);

then the server proper starts (:func:`cute_bind.lsp.server.serve`) and reads every message of the
first exchange again (:class:`Replay`), so its state is what it would have been; its own answer to
the ``initialize`` already answered is dropped (:class:`DropReply`), and it publishes the opened
file's diagnostics once more, the same list. Any other message, or anything unexpected here (a
malformed message, a settings error), ends this phase at once: the server proper then answers it.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Callable

__all__ = ["DropReply", "Replay", "front", "initialize_result", "open_diagnostics"]

_ENCODINGS = ("utf-8", "utf-16", "utf-32")  # what pygls supports (pygls.capabilities._SUPPORTED_ENCODINGS)


def read_message(stream: BinaryIO) -> tuple[bytes, dict[str, Any] | None]:
    """One message's bytes as read (headers and body) and its JSON (None: not a message we can read)."""
    raw = b""
    length = None
    while True:
        line = stream.readline()
        raw += line
        if not line:
            return raw, None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length is None:
        return raw, None
    body = stream.read(length)
    raw += body
    try:
        message = json.loads(body)
    except ValueError:
        return raw, None
    return raw, message if isinstance(message, dict) else None


def _write(stream: BinaryIO, message: dict[str, object]) -> None:
    """A message as pygls frames it (pygls.protocol.JsonRPCProtocol._send_data)."""
    body = json.dumps(message)
    header = f"Content-Length: {len(body)}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
    stream.write((header + body).encode("utf-8"))
    stream.flush()


def position_encoding(params: dict[str, Any]) -> str:
    """pygls's choice: the client's first supported encoding, else UTF-16."""
    general = ((params.get("capabilities") or {}).get("general")) or {}
    for encoding in general.get("positionEncodings") or ():
        if encoding in _ENCODINGS:
            return str(encoding)
    return "utf-16"


def initialize_result(params: dict[str, Any], version: str) -> dict[str, Any]:
    """What the server proper answers to ``initialize`` (its registered features, as pygls builds them:
    pygls.capabilities.ServerCapabilitiesBuilder)."""
    sync: dict[str, Any] = {"openClose": True, "change": 2}
    client_sync = (((params.get("capabilities") or {}).get("textDocument") or {}).get("synchronization")) or {}
    for name in ("willSave", "willSaveWaitUntil"):  # pygls: the client's value `and` a feature this server does not have
        if client_sync.get(name) is not None:
            sync[name] = client_sync[name] and False
    sync["save"] = True
    return {
        "capabilities": {
            "positionEncoding": position_encoding(params),
            "textDocumentSync": sync,
            "hoverProvider": True,
            "codeActionProvider": {"codeActionKinds": ["quickfix"], "resolveProvider": False},
            "executeCommandProvider": {"commands": []},
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
        },
        "serverInfo": {"name": "cute-bind", "version": version},
    }


def _units(encoding: str) -> Callable[[str], int]:
    """The number of the client's code units in a string (pygls.workspace.position_codec's counters)."""
    if encoding == "utf-32":
        return len
    if encoding == "utf-8":
        return lambda s: sum(1 if ord(c) < 0x80 else 2 if ord(c) < 0x800 else 3 if ord(c) < 0x10000 else 4 for c in s)
    return lambda s: len(s) + sum(ord(c) > 0xFFFF for c in s)


def open_diagnostics(params: dict[str, Any], encoding: str, docs_url: str | None) -> dict[str, Any]:
    """The ``publishDiagnostics`` params of a ``didOpen``: what :meth:`CuteBindServer.check` publishes."""
    from ..static.config import Resolver
    from ..static.incremental import Document
    from ..static.rules import module_name_for_path
    from ..static.source import split_lines
    from .server_core import MARKER, SOURCE, doc_url, file_path, findings

    document = params["textDocument"]
    uri, text, version = document["uri"], document["text"], document.get("version")
    path = file_path(uri)
    settings = Resolver().for_file(path)  # ConfigError: the server proper reports it
    units = _units(encoding)
    lines = split_lines(text)

    def position(line: int, column: int) -> dict[str, int]:
        index = line - 1
        if index >= len(lines):
            return {"line": index, "character": 0}
        row = lines[index]
        chars = row[:column] if row.isascii() else row.encode("utf-8", "surrogatepass")[:column].decode("utf-8", errors="ignore")
        return {"line": index, "character": units(chars)}

    diagnostics = []
    if MARKER in text and not (path and settings.excludes(path)):
        module = module_name_for_path(path) if path else None
        for finding in findings(Document(module), path, text)[1]:
            d = finding.diagnostic
            if d.code in settings.ignore:
                continue
            message = d.text + ("\nfix: " + " ".join(d.fix.split()) if settings.show_fix else "")
            item: dict[str, Any] = {
                "range": {"start": position(d.line, d.column), "end": position(d.end_line, d.end_column)},
                "message": message,
                "severity": 1,
                "code": d.code,
            }
            href = doc_url(d.code, docs_url)
            if href:
                item["codeDescription"] = {"href": href}
            item["source"] = SOURCE
            diagnostics.append(item)
    return {"uri": uri, "diagnostics": diagnostics, "version": version}


class Replay:
    """A reader for the server proper: the bytes read here first, then the stream (``readline``/``read``)."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix = prefix
        self._stream = stream

    def readline(self) -> bytes:
        if self._prefix:
            end = self._prefix.find(b"\n")
            end = len(self._prefix) if end < 0 else end + 1
            line, self._prefix = self._prefix[:end], self._prefix[end:]
            if line.endswith(b"\n") or not self._prefix:
                return line + (b"" if line.endswith(b"\n") else self._stream.readline())
        return self._stream.readline()

    def read(self, n: int = -1) -> bytes:
        head = self._prefix[:n] if n >= 0 else self._prefix
        self._prefix = self._prefix[len(head) :]
        if n >= 0 and len(head) < n:
            return head + self._stream.read(n - len(head))
        return head if n >= 0 else head + self._stream.read()


class DropReply:
    """The server proper's output, without its answer to the ``initialize`` answered here (pygls writes
    one whole message per call)."""

    def __init__(self, stream: BinaryIO, request_id: object) -> None:  # a JSON-RPC id: int or str
        self._stream = stream
        self._id = request_id

    def write(self, data: bytes) -> None:
        if self._id is not None:
            _, _, body = data.partition(b"\r\n\r\n")
            try:
                message = json.loads(body)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("id") == self._id and "method" not in message:
                self._id = None  # dropped once
                return
        self._stream.write(data)
        self._stream.flush()

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()


def front(stdin: BinaryIO, stdout: BinaryIO, version: str, docs_url: str | None) -> tuple[bytes, object]:
    """Answer ``initialize`` and the first ``didOpen`` here; return what was read (for :class:`Replay`)
    and the id of the ``initialize`` answered (None: none was)."""
    read = b""
    answered: object = None
    encoding = "utf-16"
    while True:
        raw, message = read_message(stdin)
        read += raw
        if message is None:  # not a message we can read: the server proper answers
            return read, answered
        method = message.get("method")
        if method == "initialize" and answered is None and "id" in message:
            params = message.get("params") or {}
            encoding = position_encoding(params)
            _write(stdout, {"id": message["id"], "jsonrpc": "2.0", "result": initialize_result(params, version)})
            answered = message["id"]
        elif method == "initialized" and answered is not None:
            continue
        elif method == "textDocument/didOpen" and answered is not None:
            try:
                published = open_diagnostics(message["params"], encoding, docs_url)
            except Exception:  # noqa: BLE001 - anything unexpected: the server proper answers as it always does
                return read, answered
            _write(stdout, {"params": published, "method": "textDocument/publishDiagnostics", "jsonrpc": "2.0"})
            return read, answered
        else:
            return read, answered
