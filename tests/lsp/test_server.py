"""``cute-bind lsp`` over the protocol (pytest-lsp): a real server process, a test client.

initialize, didOpen/didChange -> publishDiagnostics, codeAction, hover, shutdown;
table-driven over every code the static tools report (tests/lsp/cases.py).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed (pip install -e '.[lsp]')")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (the test extra)")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from cute_bind.static.rules import DECORATOR_CODES, REPORTED_CODES, analyze_source, module_name_for_path  # noqa: E402
from tests.lsp.cases import CASES, Case, apply_edits  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.asyncio(loop_scope="module")


#: (uri, version) -> the diagnostics published for it; every notification is kept (pytest-lsp's
#: wait_for_notification holds one future per method, so a notification arriving right after
#: another one would be missed).
PUBLISHED: dict[tuple[str, int | None], list[types.Diagnostic]] = {}


def _client() -> LanguageClient:
    from pygls.protocol import default_converter
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

    client = LanguageClient(converter_factory=default_converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    default = features.pop(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        default(ls, params)
        PUBLISHED[(params.uri, params.version)] = list(params.diagnostics)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    register_lsp_features(client, features)
    return client


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "cute_bind", "lsp", "--debounce-ms", "20"], client_factory=_client),
)
async def client(lsp_client: LanguageClient):
    INITIALIZED[:] = [
        await lsp_client.initialize_session(
            types.InitializeParams(
                capabilities=pytest_lsp.client_capabilities("neovim@v0.7.0"),
                root_uri=ROOT.as_uri(),
            )
        )
    ]
    yield
    await lsp_client.shutdown_session()


INITIALIZED: list[types.InitializeResult] = []


def _whole(r: types.Range) -> tuple[int, int, int, int]:
    """A range as (1-based line, column, end line, end column), as the static tools give it."""
    return (r.start.line + 1, r.start.character, r.end.line + 1, r.end.character)


async def stats(client: LanguageClient, field: str = "checks") -> int:
    """A counter of the server's ``cute-bind/stats`` request (checks run, handler records kept)."""
    result = await client.protocol.send_request_async("cute-bind/stats", None)
    return int(getattr(result, field))


async def open_doc(client: LanguageClient, name: str, text: str, tmp: Path) -> str:
    """Open ``text`` as file ``name`` and wait for its diagnostics; returns its URI."""
    path = tmp / name
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await wait_diagnostics(client, uri, 1)
    return uri


async def wait_diagnostics(client: LanguageClient, uri: str, version: int, timeout: float = 30.0) -> list[types.Diagnostic]:
    """The diagnostics published for ``version`` of ``uri`` (waits for them)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while (uri, version) not in PUBLISHED:
        if loop.time() > end:
            raise AssertionError(f"no diagnostics for version {version} of {uri} within {timeout} s")
        await asyncio.sleep(0.005)
    return PUBLISHED[(uri, version)]


async def test_every_reported_code_has_a_case() -> None:
    assert {c.code for c in CASES} == REPORTED_CODES | DECORATOR_CODES


async def test_initialize_advertises_the_features(client: LanguageClient) -> None:
    (result,) = INITIALIZED
    caps = result.capabilities
    assert result.server_info is not None and result.server_info.name == "cute-bind"
    assert caps.hover_provider
    assert isinstance(caps.code_action_provider, types.CodeActionOptions)
    assert list(caps.code_action_provider.code_action_kinds or ()) == [types.CodeActionKind.QuickFix]
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions) and sync.change == types.TextDocumentSyncKind.Incremental


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_diagnostic_quick_fix_and_hover(client: LanguageClient, case: Case, tmp_path: Path) -> None:
    uri = await open_doc(client, f"{case.id.replace('-', '_')}.py", case.source, tmp_path)
    diagnostics = client.diagnostics[uri]
    ours = [d for d in diagnostics if d.code == case.code]
    assert len(ours) == 1, [(d.code, d.message) for d in diagnostics]
    d = ours[0]
    assert d.source == "cute-bind"
    assert d.severity == types.DiagnosticSeverity.Error
    assert (
        d.code_description is not None
        and d.code_description.href.rstrip("/").endswith(case.code)
        or (d.code_description is not None and d.code_description.href.endswith(f"{case.code}.md"))
    )
    # the same text as `cute-bind check` (the runtime's message)
    path = tmp_path / f"{case.id.replace('-', '_')}.py"
    static = [x for x in analyze_source(case.source, str(path), module_name_for_path(str(path))).diagnostics() if x.code == case.code]
    assert d.message == static[0].text
    # the whole range, start and end (the cases are ASCII: columns are UTF-16 units)
    assert _whole(d.range) == (static[0].line, static[0].column, static[0].end_line, static[0].end_column)
    if case.parameter:
        assert f"parameter '{case.parameter}'" in d.message

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=d.range,
            context=types.CodeActionContext(diagnostics=[d], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert actions, "no code action for the diagnostic"
    assert all(isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix for a in actions)
    with_edit = [a for a in actions if isinstance(a, types.CodeAction) and a.edit is not None]
    if case.fixed is None:
        assert with_edit == []
        title = " ".join(static[0].fix.split())
        assert [a.title for a in actions] == [title]
    else:
        assert len(with_edit) == 1, [a.title for a in actions]
        edit = with_edit[0].edit
        assert edit is not None and edit.changes is not None  # this client takes no documentChanges
        edits = [
            (e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character, e.new_text) for e in edit.changes[uri]
        ]
        after = apply_edits(case.source, edits)
        assert case.before is not None
        assert after == case.source.replace(case.before, case.fixed, 1)
        # the fix fixes: the rules find no problem with that parameter (or decorator) any more
        left = [x for x in analyze_source(after).diagnostics() if x.code == case.code]
        assert left == []

    if case.parameter and case.code != "CB106":
        # hover on the parameter: rejected, naming the code
        hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri=uri), d.range.start))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert case.code in hover.contents.value and f"**{case.parameter}**" in hover.contents.value
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))


HOVER_SOURCE = """\
from typing import Optional
import cutlass
import cutlass.cute as cute
import cute_bind
import cuda.bindings.driver as cuda

@cute_bind.kernel
def scale(out: cute_bind.Pointer[cutlass.Float32], x: cute.Tensor, n: int, h: cutlass.Uint8,
          s: cuda.CUstream, sizes: tuple[int, int], m: Optional[cutlass.Int32], c: cutlass.Constexpr[int]):
    pass
"""

HOVERS = [
    ("out", "pointer slot", "yes: its dtype"),
    ("x", "tensor slot", "yes: its dtype, rank"),
    ("n", "[-2147483648, 2147483647]", "no:"),
    ("h", "[0, 255]", "no:"),
    ("s", "stream slot", "no:"),
    ("sizes", "sequence slot", "yes: its length"),
    ("m", "optional slot", "yes: which member"),
    ("c", "constexpr slot", "yes: its value"),
]


@pytest.mark.parametrize("name, kind, key", HOVERS, ids=[h[0] for h in HOVERS])
async def test_hover_on_parameters(client: LanguageClient, name: str, kind: str, key: str, tmp_path: Path) -> None:
    uri = await open_doc(client, f"hover_{name}.py", HOVER_SOURCE, tmp_path)
    assert list(client.diagnostics[uri]) == []
    lines = HOVER_SOURCE.splitlines()
    line = next(i for i, l in enumerate(lines) if f" {name}: " in l or f"({name}: " in l)
    char = lines[line].index(f"{name}: ") + 1
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, char)))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert f"**{name}**" in text and kind in text and f"part of the compile key: {key}" in text
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))


async def test_hover_on_kernel_lists_the_compile_key(client: LanguageClient, tmp_path: Path) -> None:
    uri = await open_doc(client, "hover_kernel.py", HOVER_SOURCE, tmp_path)
    line = HOVER_SOURCE.splitlines().index(next(l for l in HOVER_SOURCE.splitlines() if l.startswith("def scale")))
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, 5)))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "compile key: `out`, `x`, `sizes`, `m`, `c`" in hover.contents.value
    # not on a kernel: nothing
    none = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(1, 3)))
    assert none is None


async def test_did_change_updates_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    good = "import cutlass\nimport cute_bind\n\n@cute_bind.kernel\ndef k(n: cutlass.Int32):\n    pass\n"
    uri = await open_doc(client, "change.py", good, tmp_path)
    assert list(client.diagnostics[uri]) == []
    # incremental edits: Int32 -> Float8E4M3FN (CB104), then the annotation removed (CB101), then back
    steps = [
        ((4, 17, 4, 22), "Float8E4M3FN", ["CB104"]),
        ((4, 7, 4, 29), "n", ["CB101"]),
        ((4, 7, 4, 8), "n: cutlass.Int32", []),
    ]
    for version, ((sl, sc, el, ec), text, codes) in enumerate(steps, start=2):
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=types.Range(types.Position(sl, sc), types.Position(el, ec)), text=text)
                ],
            )
        )
        found = await wait_diagnostics(client, uri, version)
        assert [d.code for d in found] == codes


async def test_a_burst_of_changes_is_checked_once_on_the_last_text(client: LanguageClient, tmp_path: Path) -> None:
    """Changes within the debounce window are coalesced: the last version is published, once."""
    base = "import cutlass\nimport cute_bind\n\n@cute_bind.kernel\ndef k(n: cutlass.Int32):\n    pass\n"
    uri = await open_doc(client, "burst.py", base, tmp_path)
    before = await stats(client)
    for version in range(2, 42):
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=types.Range(types.Position(5, 4), types.Position(5, 4)), text="#")
                ],
            )
        )
    await wait_diagnostics(client, uri, 41)
    after = await stats(client)
    assert after - before < 40  # fewer checks than changes: the burst was coalesced


async def test_many_changes_keep_no_record_each(client: LanguageClient, tmp_path: Path) -> None:
    """Memory stays flat over edits: pygls 2.1 keeps a record of every notification handler it ran
    unless the server drops the finished ones (CuteBindServer.forget_finished_handlers)."""
    uri = await open_doc(client, "records.py", "import cute_bind\n\nx = 1\n", tmp_path)
    for version in range(2, 302):
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(types.Position(2, 4), types.Position(2, 5)), text=str(version % 10)
                    )
                ],
            )
        )
        if version % 50 == 0:
            await wait_diagnostics(client, uri, version)
    await wait_diagnostics(client, uri, 301)
    assert await stats(client, "handler_records") < 150  # 300 changes: ~600 records without the pruning


async def test_workspace_settings_from_pyproject(client: LanguageClient, tmp_path: Path) -> None:
    """[tool.cute-bind] in the nearest pyproject.toml: ignore, exclude and show-fix, as for `cute-bind check`."""
    (tmp_path / "pyproject.toml").write_text("[tool.cute-bind]\nignore = ['CB101']\nexclude = ['skipped_*.py']\nshow-fix = true\n")
    source = "import cutlass\nimport cute_bind\n\n@cute_bind.kernel\ndef k(n, alpha: cutlass.Float8E4M3FN):\n    pass\n"
    uri = await open_doc(client, "configured.py", source, tmp_path)
    found = PUBLISHED[(uri, 1)]
    assert [d.code for d in found] == ["CB104"]  # CB101 ignored
    assert "\nfix: Pass the scalar as `cutlass.Float32`" in found[0].message
    skipped = await open_doc(client, "skipped_kernels.py", source, tmp_path)
    assert PUBLISHED[(skipped, 1)] == []


async def _change(client: LanguageClient, uri: str, version: int, rng: tuple[int, int, int, int], text: str) -> None:
    sl, sc, el, ec = rng
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(types.Position(sl, sc), types.Position(el, ec)), text=text)
            ],
        )
    )


#: Characters str.splitlines() ends a line at that LSP and Python do not (issue 39, row 7).
NOT_LINE_ENDS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", NOT_LINE_ENDS, ids=lambda c: f"U+{ord(c):04X}")
async def test_positions_follow_lsp_line_rules(client: LanguageClient, char: str, tmp_path: Path) -> None:
    """A character str.splitlines() splits at, in a comment and a string above a kernel, moves no
    diagnostic: its whole range is where ast puts it; an edit below it lands where the client says."""
    source = (
        f"import cutlass\nimport cute_bind\n# a{char}b\nNOTE = 'c{char}d'\n\n@cute_bind.kernel\ndef k(n: cutlass.Int32, m):\n    pass\n"
    )
    uri = await open_doc(client, f"line_rules_{ord(char):x}.py", source, tmp_path)
    (d,) = PUBLISHED[(uri, 1)]
    (static,) = analyze_source(source).diagnostics()
    assert d.code == "CB101" and _whole(d.range) == (static.line, static.column, static.end_line, static.end_column) == (7, 24, 7, 25)
    # an edit on the kernel's line (below the character): 'n: cutlass.Int32' -> 'n' makes n CB101 too
    await _change(client, uri, 2, (6, 6, 6, 22), "n")
    found = await wait_diagnostics(client, uri, 2)
    expected = analyze_source(source.replace("n: cutlass.Int32", "n")).diagnostics()
    assert [_whole(x.range) for x in found] == [(e.line, e.column, e.end_line, e.end_column) for e in expected]
    assert [x.code for x in found] == ["CB101", "CB101"]
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))


async def test_opening_saving_and_closing_keep_no_record_each(client: LanguageClient, tmp_path: Path) -> None:
    """pygls's per-notification records are dropped after every kind of notification, not only
    didChange: opening, saving and closing files without typing does not grow them."""
    path = tmp_path / "cycle.py"
    path.write_text("x = 1\n")
    uri = path.as_uri()
    for version in range(1, 151):
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=version, text="x = 1\n"))
        )
        client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
    assert await stats(client, "handler_records") < 100  # 450 notifications: ~450 records without the pruning


#: Files the static tools cannot take as they are (issue 39, row 9): what the server publishes.
HOSTILE = [
    # a lone surrogate in a string annotation: CB107, as the runtime says (not "Error in server")
    ("surrogate", 'import cute_bind\n\n@cute_bind.kernel\ndef k(x: "\\ud800"):\n    pass\n', ["CB107"], "UnicodeEncodeError"),
    # an expression nested too deeply for ast: CB126 for the file
    ("deep", "import cute_bind\nx = " + "1+" * 200_000 + "1\n", ["CB126"], "nested too deeply"),
]


@pytest.mark.parametrize("name, source, codes, text", HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_sources_give_a_coded_diagnostic(
    client: LanguageClient, name: str, source: str, codes: list[str], text: str, tmp_path: Path
) -> None:
    uri = await open_doc(client, f"hostile_{name}.py", source, tmp_path)
    found = PUBLISHED[(uri, 1)]
    assert [d.code for d in found] == codes and text in found[0].message
    # the server still works: a good file opened next is checked
    ok = await open_doc(client, f"after_{name}.py", "import cute_bind\n\n@cute_bind.kernel\ndef k(n):\n    pass\n", tmp_path)
    assert [d.code for d in PUBLISHED[(ok, 1)]] == ["CB101"]
