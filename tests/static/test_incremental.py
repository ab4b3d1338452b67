"""The language server's incremental engine (cute_bind/static/incremental.py) reports exactly what
``analyze_source`` reports for the whole text: on the corpus, and after random edits (hypothesis)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cute_bind.static.incremental import Document, split_blocks
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
