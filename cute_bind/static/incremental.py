"""The static rules on a file that changes a keystroke at a time (the language server's engine).

:func:`cute_bind.static.rules.analyze_source` parses and reads a whole file:
about 60-90 ms for 2,000 lines on a CPU core, most of it :func:`ast.parse`.
An edit changes one function. :class:`Document` keeps each top-level block
of the file (a statement and its decorators, with the comments and blank
lines under it) parsed and checked on its own, and on a change re-parses and
re-checks only the blocks whose text changed.

What a function's verdict depends on besides its own text is the module's
bindings: its imports, aliases, classes and the names of its other functions,
above it. Those make the *context*: the text of every block that is not a
plain ``def``, with each ``def`` block replaced by a one-line stand-in binding
its name. A ``def`` block's results are kept per (context, position in it,
block text); an edit to an import, a class or an alias changes the context,
and every block is checked again (still without re-parsing unchanged ones).

The split into blocks is a guess made from the lines (a line starting in
column 0 starts a block, except ``else:``/``except``/closing brackets, and
lines inside a triple-quoted string); every block is then parsed on its own,
and one that does not parse is merged with the blocks after it until the
merge parses, so the blocks are always the file's statements.
``tests/static/test_incremental.py`` checks the diagnostics equal
``analyze_source``'s on the corpus and under random edits. A block that does
not parse even so (the file has a syntax error there, as while typing) is
left out: the others keep their diagnostics.

Memory is bounded by the current file: every cache holds only entries the
last version used.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re
from dataclasses import dataclass
from typing import Iterator

from .fixes import Fix, fixes_for
from .rules import ModuleAnalysis, Site, StaticDiagnostic, analyze_source, modules_generation
from .source import line_starts, split_lines

__all__ = ["Document", "Finding", "ParameterAt"]

# Lines in column 0 that continue the statement above instead of starting one.
_CONTINUATIONS = ("else", "elif", "except", "finally", ")", "]", "}")
# Comments and string literals, in the order a tokenizer meets them (a '"""' inside a comment is no string).
_LEXEMES = re.compile(
    r"#[^\r\n]*"
    r'|[rRbBuUfF]{0,2}"""(?:\\.|[^\\])*?"""'
    r"|[rRbBuUfF]{0,2}'''(?:\\.|[^\\])*?'''"
    r'|"(?:\\.|[^"\\\r\n])*"'
    r"|'(?:\\.|[^'\\\r\n])*'"
)
# A def block that fails to parse is merged with at most this many blocks after it.
_MAX_MERGE = 64
_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Finding:
    """One diagnostic and where it was found (for its quick fixes)."""

    diagnostic: StaticDiagnostic
    block: int  # index into Document.blocks


@dataclass(frozen=True)
class ParameterAt:
    """The kernel parameter (or kernel, ``param`` ``None``) under a position."""

    analysis: ModuleAnalysis
    site: Site
    kernel: str
    param: ast.arg | None
    line_offset: int  # add to the node's lines for the document's


@dataclass
class _Block:
    start: int  # 0-based index of its first line in the document
    text: str
    stmts: list[ast.stmt] | None  # None: does not parse
    is_def: bool = False
    position: int = 0  # its line in the context (1-based); 0 for non-def blocks
    context_start: int = 0  # non-def blocks: the line (1-based) its text starts on in the context

    @property
    def line_count(self) -> int:
        return max(1, len(split_lines(self.text)))


def split_blocks(text: str) -> list[tuple[int, str]]:
    """The guessed top-level blocks of ``text``: (first line's 0-based index, text), in order,
    covering every line once."""
    starts = line_starts(text)
    inside: set[int] = set()  # lines that start inside a multi-line string
    for m in _LEXEMES.finditer(text):
        if _BREAK.search(m.group(0)) and m.group(0)[0] != "#":
            first = bisect.bisect_right(starts, m.start()) - 1
            last = bisect.bisect_right(starts, m.end() - 1) - 1
            inside.update(range(first + 1, last + 1))
    lines = split_lines(text)
    cut = [0]
    decorators_only = False
    for i, line in enumerate(lines):
        if i == 0 or i in inside or not line or line[0] in " \t\r\n\f#":
            if i == 0:
                decorators_only = line.startswith("@")
            continue
        if line.startswith(_CONTINUATIONS):
            continue
        if decorators_only and not line.startswith("@"):
            decorators_only = False  # the def or class under the decorators
            continue
        if decorators_only:
            continue
        cut.append(i)
        decorators_only = line.startswith("@")
    cut.append(len(lines))
    return [(a, "".join(lines[a:b])) for a, b in zip(cut, cut[1:]) if b > a]


_OPENING = re.compile(r"[(\[{]")
_CLOSING = re.compile(r"[)\]}]")


def _shape(chunk: str) -> tuple[int, bool]:
    """How a guessed block leaves its statement: the brackets it opens less those it closes
    (strings and comments left out), and whether its last line ends with a backslash."""
    code = _LEXEMES.sub("", chunk)
    depth = len(_OPENING.findall(code)) - len(_CLOSING.findall(code))
    return depth, code.rstrip("\r\n").endswith("\\")


class Document:
    """One open file, checked incrementally; :meth:`update` with each new text."""

    def __init__(self, module: str | None = None) -> None:
        self.module = module
        self.text = ""
        self.blocks: list[_Block] = []
        self._parsed: dict[str, list[ast.stmt] | None] = {}
        self._context_text: str | None = None
        self._context: ModuleAnalysis | None = None
        self._context_found: list[tuple[StaticDiagnostic, Site]] = []
        self._results: dict[tuple[int, str], list[tuple[StaticDiagnostic, Site]]] = {}
        self._sites: dict[tuple[int, str], list[Site]] = {}
        self._generation = modules_generation()
        self.findings: list[Finding] = []

    # ------------------------------------------------------------------ parsing
    def _parse(self, text: str, cache: dict[str, list[ast.stmt] | None]) -> list[ast.stmt] | None:
        if text in self._parsed:
            stmts = self._parsed[text]
        else:
            try:
                stmts = ast.parse(text).body
            except (SyntaxError, ValueError):  # ValueError: a null byte
                stmts = None
        cache[text] = stmts
        return stmts

    def _blocks(self, text: str) -> list[_Block]:
        guessed = split_blocks(text)
        parsed: dict[str, list[ast.stmt] | None] = {}
        blocks: list[_Block] = []
        shapes: list[tuple[int, bool] | None] = [None] * len(guessed)

        def shape(k: int) -> tuple[int, bool]:
            found = shapes[k]
            if found is None:
                found = shapes[k] = _shape(guessed[k][1])
            return found

        i = 0
        while i < len(guessed):
            start, chunk = guessed[i]
            stmts = self._parse(chunk, parsed)
            j = i
            if stmts is None:
                # A guessed block that does not parse is merged with the blocks after it only where
                # its statement runs on into them (it ends inside brackets, or after a backslash),
                # and only up to where the brackets close: one more parse, not one per block after
                # it (a file where every function is broken would cost a parse of up to
                # _MAX_MERGE blocks for each block, seconds for a 2,000-line file).
                depth, continued = shape(i)
                while (depth > 0 or continued) and j + 1 < len(guessed) and j - i < _MAX_MERGE:
                    j += 1
                    delta, continued = shape(j)
                    depth += delta
                if j > i and depth <= 0 and not continued:
                    chunk = "".join(t for _, t in guessed[i : j + 1])
                    stmts = self._parse(chunk, parsed)
            if stmts is None:  # a syntax error in this block: leave it out, go on with the next
                blocks.append(_Block(start, guessed[i][1], None))
                i += 1
                continue
            blocks.append(_Block(start, chunk, stmts))
            i = j + 1
        self._parsed = parsed  # only what this version uses
        return blocks

    # ------------------------------------------------------------------ checking
    def update(self, text: str) -> list[StaticDiagnostic]:
        """Check ``text`` (the whole new content); returns its diagnostics by position."""
        self.text = text
        self.blocks = blocks = self._blocks(text)
        parts: list[str] = []
        line = 1
        for b in blocks:
            stmts = b.stmts
            if stmts is None:
                continue
            first = stmts[0] if len(stmts) == 1 else None
            b.is_def = isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef)):
                b.position = line
                parts.append(f"def {first.name}(): pass\n")
                line += 1
            else:
                b.context_start = line
                chunk = b.text if b.text.endswith(("\n", "\r")) else b.text + "\n"
                parts.append(chunk)
                line += len(split_lines(chunk))
        context_text = "".join(parts)
        if self._generation != modules_generation():  # a module its structures come from changed
            self._generation = modules_generation()
            self._context_text = None
        if context_text != self._context_text:
            self._context_text = context_text
            self._context = analyze_source(context_text, module=self.module)
            self._context_found = [(d, site) for site, name in self._context.kernels() for d in self._context.check_site(site, name)]
            self._results = {}
            self._sites = {}
        context = self._context
        assert context is not None  # set above on the first update
        results: dict[tuple[int, str], list[tuple[StaticDiagnostic, Site]]] = {}
        sites: dict[tuple[int, str], list[Site]] = {}
        findings: list[Finding] = []
        for index, b in enumerate(blocks):
            if not b.is_def or b.stmts is None:
                continue
            key = (b.position, b.text)
            found = self._results.get(key)
            block_sites = self._sites.get(key)
            if found is None or block_sites is None:
                block_sites = context.sites_in(b.stmts, b.position)
                found = [(d, site) for site, name in context.kernels(block_sites) for d in context.check_site(site, name)]
            results[key] = found
            sites[key] = block_sites
            findings += [Finding(_shifted(d, b.start), index) for d, _ in found]
        self._results, self._sites = results, sites
        for d, _ in self._context_found:
            index, offset = self._context_block(d.line)
            findings.append(Finding(_shifted(d, offset), index))
        findings.sort(key=lambda f: (f.diagnostic.line, f.diagnostic.column, f.diagnostic.code))
        self.findings = findings
        return [f.diagnostic for f in findings]

    def _context_block(self, line: int) -> tuple[int, int]:
        """The non-def block holding context line ``line``, and the shift to document lines."""
        best = (0, 0)
        for index, b in enumerate(self.blocks):
            if b.stmts is not None and not b.is_def and b.context_start <= line:
                best = (index, b.start - b.context_start + 1)
        return best

    # ------------------------------------------------------------------ fixes and hover
    def fixes(self, finding: Finding) -> tuple[Fix, ...]:
        """The quick fixes of one of :attr:`findings` (edits in the document's lines)."""
        b = self.blocks[finding.block]
        context = self._context
        if context is None or b.stmts is None:
            return ()
        d = finding.diagnostic
        calls = list(self._calls())
        if b.is_def:
            offset = b.start
            local = _shifted(d, -offset)
            for d2, site in self._results.get((b.position, b.text), []):
                if d2 == local:
                    return tuple(f.shifted(offset) for f in fixes_for(context, site, d2, b.text, calls))
            return ()
        shift = b.start - b.context_start + 1
        local = _shifted(d, -shift)
        for d2, site in self._context_found:
            if d2 == local:
                return tuple(f.shifted(shift) for f in fixes_for(context, site, d2, self._context_text or "", calls))
        return ()

    def _calls(self) -> Iterator[ast.Call]:
        for b in self.blocks:
            for st in b.stmts or ():
                for node in ast.walk(st):
                    if isinstance(node, ast.Call):
                        yield node

    def at(self, line: int, column: int) -> ParameterAt | None:
        """The kernel or kernel parameter whose name is at (``line`` 1-based, ``column`` in UTF-8
        bytes) of the document, or ``None``."""
        context = self._context
        if context is None:
            return None
        for b in self.blocks:
            if b.stmts is None or not (b.start < line <= b.start + b.line_count):
                continue
            if b.is_def:
                block_sites = self._sites.get((b.position, b.text)) or context.sites_in(b.stmts, b.position)
                offset = b.start
            else:
                offset = b.start - b.context_start + 1
                block_sites = [s for s in context.sites if b.context_start <= s.node.lineno < b.context_start + b.line_count]
            return _at(context, block_sites, line - offset, column, offset)
        return None


def _at(analysis: ModuleAnalysis, sites: list[Site], line: int, column: int, offset: int) -> ParameterAt | None:
    for site, kernel in analysis.kernels(sites):
        node = site.node
        a = node.args
        for p in a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + ([a.kwarg] if a.kwarg else []):
            end = p.end_col_offset if p.end_col_offset is not None else p.col_offset
            if (
                p.lineno <= line <= (p.end_lineno or p.lineno)
                and (p.lineno < line or p.col_offset <= column)
                and ((p.end_lineno or p.lineno) > line or column <= end)
            ):
                return ParameterAt(analysis, site, kernel, p, offset)
        if line == node.lineno:
            name_col = _name_column(node)
            if name_col is not None and name_col <= column <= name_col + len(node.name.encode()):
                return ParameterAt(analysis, site, kernel, None, offset)
        if any(d.lineno <= line <= (d.end_lineno or d.lineno) for d in node.decorator_list):
            return ParameterAt(analysis, site, kernel, None, offset)
    return None


def _name_column(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The byte column of the function's name on its ``def`` line (the tree does not record it)."""
    # ``def`` / ``async def`` then blanks: the name follows; found from the statement's own column
    return node.col_offset + (len("async def ") if isinstance(node, ast.AsyncFunctionDef) else len("def "))


def _shifted(d: StaticDiagnostic, lines: int) -> StaticDiagnostic:
    return dataclasses.replace(d, line=d.line + lines, end_line=d.end_line + lines) if lines else d
