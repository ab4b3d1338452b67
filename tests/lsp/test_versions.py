"""The language server answers for the text the client has (issue 39, rows 4-6), over the protocol.

A server with a long debounce time (a check after an edit waits 5 s) and a client that takes
versioned edits (``documentChanges``): a code action or hover requested right after an edit is
computed on the edited text, and its edits name that version; a structure imported from another
module is read again once that module is saved; the diagnostic pages live in the user's cache
folder (``XDG_CACHE_HOME``).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed (pip install -e '.[lsp]')")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (the test extra)")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from cute_bind.static.rules import analyze_source  # noqa: E402
from tests.lsp.cases import apply_edits  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.asyncio(loop_scope="module")

#: The server's own folders: modules on its sys.path, and its cache folder (pages).
SHARED = Path(tempfile.mkdtemp(prefix="cute-bind-lsp-test-"))
MODULES = SHARED / "modules"
CACHE = SHARED / "cache"
MODULES.mkdir()

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


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(MODULES), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["XDG_CACHE_HOME"] = str(CACHE)
    env.pop("CUTE_BIND_DOCS_URL", None)
    return env


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "cute_bind", "lsp", "--debounce-ms", "5000"], client_factory=_client, server_env=_env()
    ),
)
async def client(lsp_client: LanguageClient):
    # a client that takes versioned edits (documentChanges), as VS Code and Emacs do
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=pytest_lsp.client_capabilities("emacs@v29.1"), root_uri=ROOT.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


async def wait_diagnostics(uri: str, version: int, timeout: float = 30.0) -> list[types.Diagnostic]:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while (uri, version) not in PUBLISHED:
        if loop.time() > end:
            raise AssertionError(f"no diagnostics for version {version} of {uri} within {timeout} s")
        await asyncio.sleep(0.005)
    return PUBLISHED[(uri, version)]


async def open_doc(client: LanguageClient, path: Path, text: str) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await wait_diagnostics(uri, 1)
    return uri


def change(client: LanguageClient, uri: str, version: int, rng: tuple[int, int, int, int], text: str) -> None:
    sl, sc, el, ec = rng
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(types.Position(sl, sc), types.Position(el, ec)), text=text)
            ],
        )
    )


SOURCE = "import torch\nimport cutlass.cute as cute\nimport cute_bind\n\n@cute_bind.kernel\ndef k(x: torch.Tensor):\n    pass\n"


async def test_code_action_right_after_an_edit_is_for_the_new_text(client: LanguageClient, tmp_path: Path) -> None:
    """An edit, then a code action at once (the edit's check still waits for the debounce time):
    the action's edits are computed on the edited text, carry its version, and fix it."""
    uri = await open_doc(client, tmp_path / "stale_action.py", SOURCE)
    # insert a comment line above the kernel and rename the parameter: every position below moves
    change(client, uri, 2, (3, 0, 3, 0), "# a comment that moves the kernel down\n")
    change(client, uri, 3, (6, 6, 6, 7), "values")
    after = SOURCE.replace("\n\n@", "\n# a comment that moves the kernel down\n\n@").replace("(x:", "(values:")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(6, 6), types.Position(6, 27)),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.QuickFix]),
        )
    )
    with_edit = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.edit is not None]
    assert len(with_edit) == 1, actions
    edit = with_edit[0].edit
    assert edit is not None and edit.changes is None and edit.document_changes is not None
    (document_edit,) = edit.document_changes
    assert isinstance(document_edit, types.TextDocumentEdit)
    assert document_edit.text_document.uri == uri and document_edit.text_document.version == 3
    edits = [
        (e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character, e.new_text) for e in document_edit.edits
    ]
    fixed = apply_edits(after, edits)
    assert fixed == after.replace("values: torch.Tensor", "values: cute.Tensor")
    assert [d.code for d in analyze_source(fixed).diagnostics()] == []
    # the diagnostics published for the action are those of version 3, with their whole range
    (d,) = await wait_diagnostics(uri, 3, timeout=1.0)
    assert (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == ("CB102", 6, 6, 6, 26)


async def test_hover_right_after_an_edit_is_for_the_new_text(client: LanguageClient, tmp_path: Path) -> None:
    uri = await open_doc(client, tmp_path / "stale_hover.py", SOURCE)
    change(client, uri, 2, (3, 0, 3, 0), "\n\n")  # the kernel moves down two lines
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(7, 6)))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "**x**" in hover.contents.value and "CB102" in hover.contents.value
    assert hover.range is not None and (hover.range.start.line, hover.range.start.character, hover.range.end.character) == (7, 6, 21)


async def test_a_structure_from_another_module_is_read_again_when_it_is_saved(client: LanguageClient, tmp_path: Path) -> None:
    structs = MODULES / "lsp_structs_saved.py"
    structs.write_text("from typing import NamedTuple\n\nclass Params(NamedTuple):\n    label: str\n")
    source = "import cutlass\nimport cute_bind\nfrom lsp_structs_saved import Params\n\n@cute_bind.kernel\ndef k(p: Params):\n    pass\n"
    uri = await open_doc(client, tmp_path / "uses_structs.py", source)
    assert [d.code for d in PUBLISHED[(uri, 1)]] == ["CB125"]
    # the module is fixed and saved: the diagnostic goes, as a fresh `cute-bind check` says
    structs.write_text("from typing import NamedTuple\nimport cutlass\n\nclass Params(NamedTuple):\n    scale: cutlass.Float32\n")
    os.utime(structs, ns=(structs.stat().st_atime_ns, structs.stat().st_mtime_ns + 10_000_000))
    before = dict(PUBLISHED)
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=structs.as_uri())))
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while PUBLISHED.get((uri, 1)) == before.get((uri, 1)) and PUBLISHED[(uri, 1)]:
        assert loop.time() < end, "the open file was not checked again after the module was saved"
        await asyncio.sleep(0.01)
    assert PUBLISHED[(uri, 1)] == []


async def test_diagnostic_pages_live_in_the_users_cache_folder(client: LanguageClient, tmp_path: Path) -> None:
    uri = await open_doc(client, tmp_path / "pages.py", "import cute_bind\n\n@cute_bind.kernel\ndef k(n):\n    pass\n")
    (d,) = PUBLISHED[(uri, 1)]
    assert d.code_description is not None
    page = Path(d.code_description.href.removeprefix("file://"))
    assert page.name == "CB101.md" and page.is_file() and "CB101" in page.read_text()
    assert page.parent.parent == CACHE / "cute-bind"
    for folder in (page.parent, page.parent.parent):
        mode = folder.lstat().st_mode
        assert stat.S_ISDIR(mode) and stat.S_IMODE(mode) == 0o700
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
