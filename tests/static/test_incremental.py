"""The language server's incremental engine (cute_bind/static/incremental.py) reports exactly what
``analyze_source`` reports for the whole text: on the corpus, and after random edits (hypothesis)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cute_bind.static.incremental import Document, split_blocks
from cute_bind.static.source import split_lines
from cute_bind.static.rules import analyze_source, module_name_for_path
from tests.static.corpus_support import FILES


def full(text: str, module: str | None) -> list:
    return analyze_source(text, "<edit>", module).diagnostics()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_corpus_file_same_as_full_analysis(path: Path) -> None:
    text = path.read_text()
    module = module_name_for_path(str(path))
    assert Document(module).update(text) == full(text, module)


def test_blocks_cover_the_text_and_keep_strings_and_decorators_whole() -> None:
    text = '"""Doc.\n\ndef not_code(x):\n"""\nimport a\n\n@dec\n# c\n@dec2\ndef f():\n    pass\ntry:\n    import b\nexcept ImportError:\n    b = None\nx = [\n1]\n'
    blocks = split_blocks(text)
    assert "".join(t for _, t in blocks) == text
    starts = [s for s, _ in blocks]
    assert starts == [0, 4, 6, 11, 15, 16]  # the docstring, import, decorated def, try/except, then a guessed split inside [...]
    doc = Document(None)
    doc.update(text + "import cute_bind\n")
    # the bad guess (`1]` in column 0) does not parse alone and is merged back
    assert [b.text for b in doc.blocks][-2] == "x = [\n1]\n"


def test_a_function_name_binds_like_any_other_name() -> None:
    """The stand-in of each function in the context binds its name: a ``def cutlass()`` above a
    kernel makes ``cutlass.Int32`` unresolvable for it (CB102), not below it."""
    text = "import cutlass\nimport cute_bind\n\n@cute_bind.kernel\ndef a(n: cutlass.Int32):\n    pass\n\ndef cutlass():\n    pass\n\n@cute_bind.kernel\ndef b(n: cutlass.Int32):\n    pass\n"
    found = Document(None).update(text)
    assert [(d.code, d.kernel) for d in found] == [("CB102", "b")]
    assert found == full(text, None)


def test_the_call_form_names_a_def_in_another_block() -> None:
    """``cute_bind.kernel(fn)`` in a module-level block makes ``fn``, a def block of its own, a kernel;
    editing the def keeps it one, removing the call stops it."""
    head = "import cutlass\nimport cute_bind\n\n"
    call = "\nfast = cute_bind.kernel(slow, name='quick')\n"
    doc = Document(None)
    text = head + "def slow(n: cutlass.Int32, m):\n    pass\n" + call
    assert [(d.code, d.kernel, d.parameter) for d in doc.update(text)] == [("CB101", "quick", "m")]
    edited = head + "def slow(n: cutlass.Int32, m, *rest):\n    pass\n" + call
    assert [d.code for d in doc.update(edited)] == ["CB101", "CB106"] and doc.update(edited) == full(edited, None)
    assert doc.update(head + "def slow(n: cutlass.Int32, m):\n    pass\n") == []


# Lines an edit may insert: kernels good and bad, imports and aliases they depend on, strings and
# decorators that the block split must keep whole, and text that does not parse (typing in progress).
SNIPPETS = [
    "import cutlass\n",
    "import cutlass.cute as cute\n",
    "import cute_bind\n",
    "from cutlass import *\n",
    "from typing import Optional, NamedTuple\n",
    "Alias = cutlass.Float8E4M3FN\n",
    "Int32 = cutlass.Int32\n",
    "@cute_bind.kernel\n",
    "@cute.jit\n",
    "def k(n: cutlass.Int32, m):\n    pass\n",
    "def g(a: Alias, b: Int32, *rest):\n    return a\n",
    "async def h(x: Optional[str]):\n    pass\n",
    "class P(NamedTuple):\n    label: str\n",
    "def q(p: P, s: tuple[int, tuple[int, int]]):\n    pass\n",
    'DOC = """\n@cute_bind.kernel\ndef inside(n):\n    pass\n"""\n',
    "if True:\n    x = 1\nelse:\n    x = 2\n",
    "def broken(:\n",
    "    indented = 1\n",
    "# a comment\n",
    "\n",
    "def cutlass():\n    pass\n",  # a function's name rebinds a module name the annotations below use
    "fast = cute_bind.kernel(g)\n",  # the call form: g's parameters are checked where g is defined above it
    "named = cute_bind.kernel(q, name='quick')\n",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.sampled_from(FILES),
    edits=st.lists(
        st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.floats(0, 1), st.sampled_from(SNIPPETS)), min_size=1, max_size=8
    ),
)
def test_random_edits_same_as_full_analysis(start: Path, edits: list[tuple[str, float, str]]) -> None:
    lines = start.read_text().splitlines(keepends=True)
    module = module_name_for_path(str(start))
    doc = Document(module)
    doc.update("".join(lines))
    for op, where, snippet in edits:
        i = int(where * len(lines))
        if op == "insert" or not lines:
            lines[i:i] = [snippet]
        elif op == "delete":
            del lines[min(i, len(lines) - 1)]
        else:
            lines[min(i, len(lines) - 1)] = snippet
        text = "".join(lines)
        found = doc.update(text)
        try:
            expected = full(text, module)
        except SyntaxError:
            continue  # the file does not parse: the server keeps the blocks that do (no reference to compare)
        assert found == expected


#: Characters str.splitlines() ends a line at, where Python and LSP do not (issue 39, row 7).
NOT_LINE_ENDS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", NOT_LINE_ENDS, ids=lambda c: f"U+{ord(c):04X}")
def test_only_lsp_line_ends_split_lines(char: str) -> None:
    """The character in a comment and a string above a kernel moves none of its diagnostics."""
    text = f"import cutlass\nimport cute_bind\n# a{char}b\nNOTE = 'c{char}d'\n\n@cute_bind.kernel\ndef k(n, m: cutlass.Int32):\n    pass\n"
    found = Document(None).update(text)
    assert found == full(text, None)
    assert [(d.line, d.column, d.end_line, d.end_column) for d in found] == [(7, 6, 7, 7)]
    assert split_lines(f"a{char}b\r\nc\rd\n") == [f"a{char}b\r\n", "c\r", "d\n"]


def test_carriage_returns_end_lines_as_for_python() -> None:
    text = "import cutlass\r\nimport cute_bind\r\r@cute_bind.kernel\rdef k(n, m: cutlass.Int32):\r    pass\r"
    found = Document(None).update(text)
    assert found == full(text, None) and [(d.line, d.column) for d in found] == [(5, 6)]


def _all_broken(functions: int) -> str:
    """A file where every function has a syntax error (an unclosed bracket, or a missing return type)."""
    body = "".join(
        f"@cute_bind.kernel\ndef k{i}(n: cutlass.Int32, m:\n    return n\n\n"
        if i % 2
        else f"@cute_bind.kernel\ndef k{i}(n) -> :\n    return n\n\n"
        for i in range(functions)
    )
    return "import cutlass\nimport cute_bind\n\n" + body


def test_a_file_where_every_function_is_broken_is_parsed_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39 row 15: each broken block was merged with up to 64 blocks after it, one parse per
    merge (4.5 s for the first check of 400 broken functions, 0.27 s a keystroke). Now a block
    that does not parse costs at most one more parse, and a keystroke re-parses what changed."""
    import ast

    from cute_bind.static import incremental

    parses: list[int] = []
    real = ast.parse

    def counting(text: str, *args: object, **kwargs: object) -> ast.Module:
        parses.append(len(text))
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(incremental.ast, "parse", counting)
    text = _all_broken(400)
    doc = Document(None)
    doc.update(text)
    blocks = len(split_blocks(text))
    assert len(parses) <= 2 * blocks  # was ~60 per block
    assert sum(parses) <= 3 * len(text)  # and none of them a merge of many blocks
    parses.clear()
    middle = text.index("def k201")
    doc.update(text[:middle] + "x" + text[middle:])
    assert len(parses) <= 4  # the edited block (and its one merge), the context


def test_a_structure_from_another_module_is_read_again_when_that_module_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39 row 6: the structures of an imported module were kept for the process's life."""
    from cute_bind.static.rules import refresh_modules

    monkeypatch.syspath_prepend(str(tmp_path))
    module = tmp_path / "incremental_structs.py"
    module.write_text("from typing import NamedTuple\n\nclass Params(NamedTuple):\n    label: str\n")
    text = "import cute_bind\nfrom incremental_structs import Params\n\n@cute_bind.kernel\ndef k(p: Params):\n    pass\n"
    doc = Document(None)
    assert [d.code for d in doc.update(text)] == ["CB125"]
    module.write_text("from typing import NamedTuple\nimport cutlass\n\nclass Params(NamedTuple):\n    scale: cutlass.Float32\n")
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 10_000_000))
    assert refresh_modules() is True
    assert doc.update(text) == [] == full(text, None)
    assert refresh_modules() is False  # nothing changed since
    module.unlink()  # gone: its names are no structures any more (not a stale CB125)
    assert refresh_modules() is True
    assert [d.code for d in doc.update(text)] == ["CB102"] and full(text, None) == doc.update(text)
