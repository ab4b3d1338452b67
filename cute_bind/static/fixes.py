"""Quick fixes: the catalog's fix for one static diagnostic, as an edit where it is mechanical.

The catalog (:mod:`cute_bind.diagnostics.catalog`) states each code's fix in
words. Where the words name one rewrite of the source that the rules can
check, :func:`fixes_for` returns it as text edits; the language server offers
them as quick fixes. Everywhere else the fix is the catalog's text alone (a
:class:`Fix` without edits), and the editor shows it as the action's title.

The mechanical rewrites, each one re-checked by the same rules so that a fix
never produces an annotation the decorator rejects:

- CB101 (no annotation): the Python type of a literal the parameter is given,
  by its default or at every ``name(...)``/``name.bind(...)``/``name.compile(...)``
  call of the file that passes it (``bool``, ``int``, ``float``; all must agree);
- CB102 (not a slot kind): an array or tensor type (``torch.Tensor``,
  ``numpy.ndarray``, bare ``cute_bind.Tensor``...) becomes ``cute.Tensor``, a
  bare ``cute_bind.Pointer`` becomes ``cute.Pointer``;
- CB104 (no runtime storage): the type the catalog names instead
  (``cutlass.Float32`` for the narrow floats, a wider integer for ``Int4``
  and the 128-bit ones), converted inside the function;
- CB107 (unresolved name): the name spelled through a module the file
  imports (``"Int32"`` -> ``"cutlass.Int32"`` after ``import cutlass``);
- CB113 (sequence element): a nested ``tuple`` flattened
  (``tuple[int, tuple[int, int]]`` -> ``tuple[int, int, int]``);
- CB114 (union member): the union without its ineligible members
  (``Optional[Union[cutlass.Int32, str]]`` -> ``Optional[cutlass.Int32]``), or,
  when none is left, the whole parameter marked ``cutlass.Constexpr[...]``;
- CB116 (decorator order): ``@cute_bind.kernel`` moved above the DSL decorator.

Positions follow :mod:`ast`: lines 1-based, columns 0-based in UTF-8 bytes
of the line (the language server converts them to the client's units).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Sequence, TypeGuard

from .. import _whitelist as W
from .rules import KERNEL_DECORATORS as _KERNEL
from .rules import _ELEMENT_KINDS, _OPTIONAL_MEMBERS, _TUPLES, ModuleAnalysis, Site, StaticDiagnostic
from .source import split_lines

__all__ = ["TextEdit", "Fix", "fixes_for", "fix_title", "ARRAY_TYPES", "NARROW_REPLACEMENTS"]

#: Annotations of array and tensor values that a ``cute.Tensor`` slot takes at launch (CB102's fix).
ARRAY_TYPES: frozenset[str] = frozenset(
    {"torch.Tensor", "numpy.ndarray", "cupy.ndarray", "jax.Array", "cute_bind.Tensor", "cute_bind._types.Tensor"}
)

#: CB104: the scalar type with runtime storage the catalog's fix names for each type without it.
NARROW_REPLACEMENTS: dict[str, str] = {
    **{name: "Float32" for name in W.BITCAST_SCALARS if name.startswith("Float")},
    "Numeric": "Float32",
    "Integer": "Int32",
    "Int4": "Int8",
    "Int128": "Int64",
    "Uint128": "Uint64",
}

# Names a CB107 fix may spell fully, and the module they come from.
_KNOWN_NAMES: dict[str, str] = {
    **{name: "cutlass" for name in (*W.SCALAR_FORMATS, "Constexpr")},
    "Pointer": "cutlass.cute",
    "Tensor": "cutlass.cute",
    "CUstream": "cuda.bindings.driver",
    **{name: "typing" for name in ("Optional", "Union", "Tuple", "List", "Sequence", "Annotated")},
}


@dataclass(frozen=True)
class TextEdit:
    """Replace the text from (``line``, ``column``) to (``end_line``, ``end_column``) by ``new_text``."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str

    def shifted(self, lines: int) -> TextEdit:
        """The same edit ``lines`` lines further down."""
        return TextEdit(self.line + lines, self.column, self.end_line + lines, self.end_column, self.new_text)


@dataclass(frozen=True)
class Fix:
    """One way to fix a diagnostic: a title, and the edits that make it (none: words only)."""

    title: str
    edits: tuple[TextEdit, ...] = ()

    def shifted(self, lines: int) -> Fix:
        return Fix(self.title, tuple(e.shifted(lines) for e in self.edits))


def fix_title(diagnostic: StaticDiagnostic) -> str:
    """The catalog's fix for ``diagnostic`` on one line (a code action's title)."""
    return " ".join(diagnostic.fix.split())


def fixes_for(
    analysis: ModuleAnalysis,
    site: Site,
    diagnostic: StaticDiagnostic,
    source: str,
    calls: Iterable[ast.Call] = (),
) -> tuple[Fix, ...]:
    """The fixes of ``diagnostic``, found at ``site`` of ``analysis``: the mechanical ones when
    there are, else the catalog's fix as words. ``source`` is the text ``site``'s node was
    parsed from (edits quote it); ``calls`` are the file's calls, searched for CB101's literals."""
    lines = split_lines(source)
    try:
        found = _mechanical(analysis, site, diagnostic, lines, list(calls))
    except (ValueError, IndexError):  # the source does not match the tree (never for trees parsed from it)
        found = []
    return tuple(found) if found else (Fix(fix_title(diagnostic)),)


# --------------------------------------------------------------------------- helpers
def _segment(lines: Sequence[str], node: ast.expr) -> str:
    """The source text of ``node`` (byte columns, as ast gives them)."""
    line, col = node.lineno, node.col_offset
    end, end_col = node.end_lineno or line, node.end_col_offset or 0
    if line == end:
        return lines[line - 1].encode()[col:end_col].decode()
    parts = [lines[line - 1].encode()[col:].decode()]
    parts += lines[line : end - 1]
    parts.append(lines[end - 1].encode()[:end_col].decode())
    return "".join(parts)


def _replace(node: ast.expr, text: str) -> TextEdit:
    return TextEdit(node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0, text)


def _param(site: Site, name: str) -> ast.arg | None:
    a = site.node.args
    for p in a.posonlyargs + a.args + a.kwonlyargs:
        if p.arg == name:
            return p
    return None


def _string_literal(lines: Sequence[str], node: ast.expr) -> str | None:
    """The quote of a plain one-line string literal whose source is its value quoted, else ``None``."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.lineno == node.end_lineno):
        return None
    text = _segment(lines, node)
    if len(text) >= 2 and text[0] in "\"'" and text[-1] == text[0] and text[1:-1] == node.value and text[0] not in node.value:
        return text[0]
    return None


def _mechanical(analysis: ModuleAnalysis, site: Site, d: StaticDiagnostic, lines: list[str], calls: list[ast.Call]) -> list[Fix]:
    if d.code == "CB116":
        return _decorator_order(analysis, site, lines)
    param = _param(site, d.parameter)
    if param is None:
        return []
    if d.code == "CB101":
        return _missing_annotation(site, param, lines, calls)
    ann = param.annotation
    if ann is None:
        return []
    if d.code == "CB107":
        return _unresolved(analysis, site, ann, d, lines)
    if isinstance(ann, ast.Constant):
        return []  # the other rewrites are of annotations written as code
    if d.code == "CB102":
        return _array_type(analysis, site, ann)
    if d.code == "CB104":
        return _narrow_scalar(analysis, site, param, ann, lines)
    if d.code == "CB113":
        return _flatten(analysis, site, ann, lines)
    if d.code == "CB114":
        return _union(analysis, site, ann, lines)
    return []


def _missing_annotation(site: Site, param: ast.arg, lines: list[str], calls: list[ast.Call]) -> list[Fix]:
    a = site.node.args
    positional = a.posonlyargs + a.args
    default: ast.expr | None = None
    if param in positional:
        index = positional.index(param)
        first_default = len(positional) - len(a.defaults)
        if index >= first_default:
            default = a.defaults[index - first_default]
    else:
        k = a.kwonlyargs.index(param)
        default = a.kw_defaults[k]
        index = -1
    values: list[ast.expr] = [default] if default is not None else []
    for call in calls:
        target = call.func
        if isinstance(target, ast.Attribute) and target.attr in ("bind", "compile"):
            target = target.value
        if not (isinstance(target, ast.Name) and target.id == site.node.name):
            continue
        if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
            continue
        if 0 <= index < len(call.args):
            values.append(call.args[index])
        values += [k.value for k in call.keywords if k.arg == param.arg]
    types = set()
    for v in values:
        if isinstance(v, ast.UnaryOp) and isinstance(v.op, (ast.USub, ast.UAdd)):
            v = v.operand
        if not isinstance(v, ast.Constant) or type(v.value) not in (bool, int, float):
            return []  # a value whose type the text does not show: no guess
        types.add(type(v.value).__name__)
    if len(types) != 1:
        return []
    (name,) = types
    where = "its default" if default is not None and len(values) == 1 else "the values the file passes"
    end_line, end_col = param.end_lineno or param.lineno, param.end_col_offset or 0
    rest = lines[end_line - 1].encode()[end_col:].decode()
    if default is not None and rest.startswith("="):  # ``n=4`` -> ``n: int = 4`` (PEP 8 spacing)
        edit = TextEdit(end_line, end_col, end_line, end_col + 1, f": {name} = ")
    else:
        edit = TextEdit(end_line, end_col, end_line, end_col, f": {name}")
    return [Fix(f"Annotate '{param.arg}: {name}' (from {where})", (edit,))]


def _array_type(analysis: ModuleAnalysis, site: Site, ann: ast.expr) -> list[Fix]:
    if not isinstance(ann, (ast.Name, ast.Attribute)):
        return []
    q = analysis.qualname_at(ann, site)
    if q in ARRAY_TYPES:
        target, note = "cutlass.cute.Tensor", "a tensor slot takes any DLPack tensor at launch"
    elif q in W.POINTER_NAMES and q is not None and q.partition(".")[0] == "cute_bind":
        target, note = "cutlass.cute.Pointer", "or give cute_bind.Pointer[...] its dtype"
    else:
        return []
    spelled = analysis.spelling_of(target, site)
    if spelled is None:
        return []
    return [Fix(f"Annotate as {spelled} ({note})", (_replace(ann, spelled),))]


def _narrow_scalar(analysis: ModuleAnalysis, site: Site, param: ast.arg, ann: ast.expr, lines: list[str]) -> list[Fix]:
    if not isinstance(ann, (ast.Name, ast.Attribute)):
        return []
    q = analysis.qualname_at(ann, site)
    if q is None or q.partition(".")[0] != "cutlass":
        return []
    wider = NARROW_REPLACEMENTS.get(q.rpartition(".")[2])
    if wider is None:
        return []
    spelled = analysis.spelling_of(f"cutlass.{wider}", site)
    if spelled is None:
        return []
    original = _segment(lines, ann)
    return [Fix(f"Pass it as {spelled} and convert inside: {param.arg}.to({original})", (_replace(ann, spelled),))]


def _unresolved(analysis: ModuleAnalysis, site: Site, ann: ast.expr, d: StaticDiagnostic, lines: list[str]) -> list[Fix]:
    missing = (d.detail or "").partition("name '")[2].partition("'")[0]
    module = _KNOWN_NAMES.get(missing)
    if not missing or module is None:
        return []
    spelled = analysis.spelling_of(f"{module}.{missing}", site)
    if spelled is None or spelled == missing:
        return []
    quote = _string_literal(lines, ann)
    if quote is not None:
        assert isinstance(ann, ast.Constant) and isinstance(ann.value, str)  # for mypy: _string_literal checked it
        try:
            inner = ast.parse(ann.value.lstrip(" \t"), mode="eval").body
        except (SyntaxError, ValueError):
            return []
        lead = len(ann.value) - len(ann.value.lstrip(" \t"))
        names = [n for n in ast.walk(inner) if isinstance(n, ast.Name) and n.id == missing and n.lineno == 1]
        base = ann.col_offset + 1 + lead
        edits = tuple(TextEdit(ann.lineno, base + n.col_offset, ann.lineno, base + (n.end_col_offset or 0), spelled) for n in names)
    elif isinstance(ann, ast.Constant):
        return []
    else:
        edits = tuple(_replace(n, spelled) for n in ast.walk(ann) if isinstance(n, ast.Name) and n.id == missing)
    if not edits:
        return []
    return [Fix(f"Spell '{missing}' as {spelled}", tuple(sorted(edits, key=lambda e: (e.line, e.column))))]


def _tuple_head(node: ast.expr, analysis: ModuleAnalysis, site: Site) -> TypeGuard[ast.Subscript]:
    """Whether ``node`` is a ``tuple[...]`` (a subscript: the guard's argument comes first)."""
    return isinstance(node, ast.Subscript) and analysis.qualname_at(node.value, site) in _TUPLES


def _leaves(analysis: ModuleAnalysis, site: Site, node: ast.Subscript) -> list[ast.expr] | None:
    """The elements of a fixed-length tuple annotation, nested fixed-length tuples opened; ``None``
    when one is a ``tuple[X, ...]`` (its length is not in the annotation)."""
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    out: list[ast.expr] = []
    for item in items:
        if isinstance(item, ast.Constant) and item.value is Ellipsis:
            return None
        if _tuple_head(item, analysis, site):
            inner = _leaves(analysis, site, item)
            if inner is None:
                return None
            out += inner
        else:
            out.append(item)
    return out


def _flatten(analysis: ModuleAnalysis, site: Site, ann: ast.expr, lines: list[str]) -> list[Fix]:
    if not _tuple_head(ann, analysis, site):
        return []
    leaves = _leaves(analysis, site, ann)
    if not leaves or not any(_tuple_head(x, analysis, site) for x in (ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice])):
        return []
    if any(analysis.kind_at(leaf, site) not in _ELEMENT_KINDS for leaf in leaves):
        return []  # flattening would not make it eligible
    text = f"{_segment(lines, ann.value)}[{', '.join(_segment(lines, leaf) for leaf in leaves)}]"
    return [Fix(f"Flatten the sequence to {text}", (_replace(ann, text),))]


def _union(analysis: ModuleAnalysis, site: Site, ann: ast.expr, lines: list[str]) -> list[Fix]:
    members = _members(analysis, site, ann)
    if members is None:
        return []
    kept = [m for m in members if not _is_none(m) and analysis.kind_at(m, site) in _OPTIONAL_MEMBERS]
    if kept:
        spelled = [_segment(lines, m) for m in kept]
        head = ann.value if isinstance(ann, ast.Subscript) else None
        head_text = _segment(lines, head) if head is not None else ""
        if head is not None and len(kept) == 1 and analysis.qualname_at(head, site) in ("typing.Optional", "typing_extensions.Optional"):
            text = f"{head_text}[{spelled[0]}]"
        elif head is not None and analysis.qualname_at(head, site) in ("typing.Union", "typing_extensions.Union"):
            text = f"{head_text}[{', '.join(spelled)}, None]"
        elif head is not None and len(kept) == 1:
            text = f"{head_text}[{spelled[0]}]"
        else:
            text = " | ".join([*spelled, "None"])
        return [Fix(f"Keep only the eligible members: {text}", (_replace(ann, text),))]
    constexpr = analysis.spelling_of("cutlass.Constexpr", site)
    if constexpr is None:
        return []
    text = f"{constexpr}[{_segment(lines, ann)}]"
    return [Fix(f"Mark it compile-time (fixed at bind, part of the compile key): {text}", (_replace(ann, text),))]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _members(analysis: ModuleAnalysis, site: Site, node: ast.expr) -> list[ast.expr] | None:
    """The members of a union spelled in the annotation itself (``None`` for an alias or another form)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _members(analysis, site, node.left)
        right = _members(analysis, site, node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Subscript):
        head = analysis.qualname_at(node.value, site)
        if head in W.OPTIONAL_NAMES:
            items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            out: list[ast.expr] = []
            for item in items:
                inner = _members(analysis, site, item)
                out += inner if inner is not None else [item]
            if head is not None and head.endswith(".Optional"):
                out.append(ast.Constant(None))
            return out
    return [node]


def _decorator_order(analysis: ModuleAnalysis, site: Site, lines: list[str]) -> list[Fix]:
    decs = site.node.decorator_list
    ours = [i for i, dec in enumerate(decs) if analysis.qualname_at(dec.func if isinstance(dec, ast.Call) else dec, site) in _KERNEL]
    if not ours or ours[0] == 0:
        return []
    dec = decs[ours[0]]
    first = decs[0]
    # whole lines only: each decorator on lines of its own, '@' first on them
    for d in (dec, first):
        if not lines[d.lineno - 1][: d.col_offset - 1].strip() == "" or lines[d.lineno - 1][d.col_offset - 1 : d.col_offset] != "@":
            return []
    end = dec.end_lineno or dec.lineno
    if lines[end - 1].encode()[dec.end_col_offset or 0 :].decode().strip():
        return []  # something after the decorator on its last line
    moved = "".join(lines[dec.lineno - 1 : end])
    if not moved.endswith("\n"):
        return []
    edits = (
        TextEdit(first.lineno, 0, first.lineno, 0, moved),
        TextEdit(dec.lineno, 0, end + 1, 0, ""),
    )
    return [Fix("Move @cute_bind.kernel above the DSL decorator (outermost)", edits)]
