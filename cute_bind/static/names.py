"""A source file's names, read without running it: the scopes its statements bind names in
and what each name resolves to.

:class:`NameResolver` is the part of :class:`cute_bind.static.rules.ModuleAnalysis` that knows
nothing of slots: it collects every binding of a module, class and function body (imports, star
imports, module-level aliases, local definitions; ``if TYPE_CHECKING:`` and ``except`` handlers
marked), finds the ``def`` statements and resolves a name or attribute in one of them to the
qualified name Python would bind it to (``cute.Tensor`` after ``import cutlass.cute as cute`` is
``cutlass.cute.Tensor``), following module-level aliases. The rules classify what it resolves.
"""

from __future__ import annotations

import ast
import builtins
import os
from dataclasses import dataclass, field
from typing import Iterator, Literal, cast

from .exports import PUBLIC_NAMES

__all__ = ["AnyDef", "Binding", "BindingKind", "MAX_ALIAS_DEPTH", "NameResolver", "Scope", "Site", "module_name_for_path"]

_BUILTINS = frozenset(dir(builtins))

#: Aliases are followed at most this deep (``A = B``, ``B = A`` must end).
MAX_ALIAS_DEPTH = 16

# --------------------------------------------------------------------------- scopes
BindingKind = Literal["import", "star", "alias", "local"]


@dataclass(eq=False)
class Binding:
    """One statement that binds a name.

    ``import``: ``target`` is the qualified name bound; ``star``: ``target`` is
    the module of a ``from m import *``; ``alias``: ``value`` is the assigned
    expression, resolved in ``scope``; ``local``: a def, class or any other
    value that has no qualified name (a relative import, a loop variable...).
    """

    kind: BindingKind
    line: int
    scope: Scope
    target: str | None = None
    value: ast.expr | None = None
    typing_only: bool = False  # under ``if TYPE_CHECKING:``: never bound at run time
    fallback: bool = False  # in an ``except`` handler: the ``try`` body's binding wins
    cls: ast.ClassDef | None = None  # ``local`` bound by a ``class`` statement: its definition


@dataclass(eq=False)
class Scope:
    """Names bound in one module, class or function body."""

    parent: Scope | None
    module: str | None
    at_import: bool  # its statements run while the module is imported (module, class bodies)
    is_class: bool = False
    names: dict[str, list[Binding]] = field(default_factory=dict)
    stars: list[Binding] = field(default_factory=list)

    def add(self, name: str, binding: Binding) -> None:
        self.names.setdefault(name, []).append(binding)

    def _own(self, name: str, before: int | None) -> Binding | None:
        """The binding of ``name`` in this scope that is live at run time at line ``before``."""
        live = [b for b in self.names.get(name, ()) if not b.typing_only and (before is None or b.line < before)]
        if live:
            preferred = [b for b in live if not b.fallback]
            return (preferred or live)[-1]
        if name in _BUILTINS:
            # `from cutlass import *` does not rebind `int`, `float`, `list`, `tuple`...: a star
            # import is taken to export no builtin's name (the modules users star-import do not)
            return None
        stars = [b for b in self.stars if not b.typing_only and (before is None or b.line < before)]
        for star in reversed(stars):
            # cute_bind's own exports are known: a name it does not export comes from an earlier star
            if star.target == "cute_bind" and name not in _cute_bind_exports():
                continue
            return star
        return None

    def lookup(self, name: str, before: int | None) -> Binding | Literal["builtin"] | None:
        """Resolve ``name`` as Python would when evaluating in this scope.

        ``before`` limits module-level bindings to statements above that line
        (annotations of a module-level ``def`` are evaluated when the ``def``
        runs). Enclosing class bodies are skipped, as Python does.
        """
        scope: Scope | None = self
        first = True
        while scope is not None:
            if first or not scope.is_class:
                found = scope._own(name, before if scope.at_import else None)
                if found is not None:
                    return found
            first = False
            scope = scope.parent
        return "builtin" if name in _BUILTINS else None

    def module_scope(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def _cute_bind_exports() -> frozenset[str]:
    """What ``from cute_bind import *`` binds: ``cute_bind.__all__``, read from the package's
    source (:data:`cute_bind.static.exports.PUBLIC_NAMES`) so the static tools never import the
    runtime to read it; ``tests/static/test_exports.py`` checks it against the runtime's list."""
    return PUBLIC_NAMES


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``<anything>.TYPE_CHECKING``: the typing-only block convention."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _target_names(target: ast.expr) -> Iterator[ast.Name]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node


def _collect(stmts: list[ast.stmt], scope: Scope, typing_only: bool = False, fallback: bool = False) -> None:
    """Record every name the statements bind in ``scope`` (not descending into defs and classes)."""

    def bind(
        name: str, line: int, kind: BindingKind, target: str | None = None, value: ast.expr | None = None, cls: ast.ClassDef | None = None
    ) -> None:
        scope.add(name, Binding(kind, line, scope, target, value, typing_only, fallback, cls))

    for st in stmts:
        line = st.lineno
        if isinstance(st, ast.Import):
            for alias in st.names:
                if alias.asname:
                    bind(alias.asname, line, "import", alias.name)
                else:  # ``import a.b`` binds ``a``
                    top = alias.name.partition(".")[0]
                    bind(top, line, "import", top)
        elif isinstance(st, ast.ImportFrom):
            for alias in st.names:
                if st.level:  # relative: the package is not known from one file (kept to read a class's source)
                    relative = "." * st.level + (f"{st.module}." if st.module else "") + alias.name
                    bind(alias.asname or alias.name, line, "local", target=relative)
                elif alias.name == "*":
                    scope.stars.append(Binding("star", line, scope, st.module, None, typing_only, fallback))
                else:
                    bind(alias.asname or alias.name, line, "import", f"{st.module}.{alias.name}")
        elif isinstance(st, ast.ClassDef):
            bind(st.name, line, "local", cls=st)
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bind(st.name, line, "local")
        elif isinstance(st, ast.Assign):
            for target in st.targets:
                if isinstance(target, ast.Name):
                    bind(target.id, line, "alias", value=st.value)
                else:
                    for name in _target_names(target):
                        bind(name.id, line, "local")
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None and isinstance(st.target, ast.Name):
                bind(st.target.id, line, "alias", value=st.value)
        elif isinstance(st, ast.AugAssign):
            for name in _target_names(st.target):
                bind(name.id, line, "local")
        elif isinstance(st, ast.If):
            if _is_type_checking(st.test):
                _collect(st.body, scope, True, fallback)
                _collect(st.orelse, scope, typing_only, fallback)
            else:
                _collect(st.body, scope, typing_only, fallback)
                _collect(st.orelse, scope, typing_only, fallback)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            for name in _target_names(st.target):
                bind(name.id, line, "local")
            _collect(st.body, scope, typing_only, fallback)
            _collect(st.orelse, scope, typing_only, fallback)
        elif isinstance(st, ast.While):
            _collect(st.body, scope, typing_only, fallback)
            _collect(st.orelse, scope, typing_only, fallback)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                if item.optional_vars is not None:
                    for name in _target_names(item.optional_vars):
                        bind(name.id, line, "local")
            _collect(st.body, scope, typing_only, fallback)
        elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            t = cast(ast.Try, st)  # ``try``/``except*`` (3.11+, ast.TryStar) have the same fields
            # ``try: import x`` / ``except ImportError: x = None``: the import is what
            # annotations are written against, so handler bindings only fill gaps.
            _collect(t.body, scope, typing_only, fallback)
            _collect(t.orelse, scope, typing_only, fallback)
            for handler in t.handlers:
                if handler.name:
                    bind(handler.name, handler.lineno, "local")
                _collect(handler.body, scope, typing_only, True)
            _collect(t.finalbody, scope, typing_only, fallback)
        elif isinstance(st, ast.Match):
            for case in st.cases:
                _collect(case.body, scope, typing_only, fallback)


def _children(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """Statement lists nested in a compound statement, in the same scope."""
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


# --------------------------------------------------------------------------- sites
AnyDef = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Site:
    """A function definition, the scope its decorators and annotations are evaluated in.

    ``position`` places a ``def`` parsed on its own (the language server re-reads
    only the function that changed, :mod:`cute_bind.static.incremental`) among
    the module's bindings: the line, in the module's coordinates, its decorators
    start on. ``None``: the node's own lines are the module's.
    """

    node: AnyDef
    scope: Scope
    position: int | None = None

    @property
    def start_line(self) -> int:
        """First line of the ``def`` statement, decorators included."""
        return min([self.node.lineno] + [d.lineno for d in self.node.decorator_list])

    @property
    def before(self) -> int | None:
        # Module-level (and class-level) defs run during import: only what is bound
        # above them exists when their decorators and annotations are evaluated.
        if not self.scope.at_import:
            return None
        return self.position if self.position is not None else self.start_line


class NameResolver:
    """One module's scopes and ``def`` statements (:attr:`sites`), and what its names resolve to."""

    def __init__(self, tree: ast.Module, module: str | None = None) -> None:
        self.module = module
        self.root = Scope(parent=None, module=module, at_import=True)
        self.sites: list[Site] = []
        _collect(tree.body, self.root)
        self._walk(tree.body, self.root, self.sites)

    def sites_in(self, stmts: list[ast.stmt], position: int) -> list[Site]:
        """The ``def`` statements in ``stmts``, module-level statements parsed apart from this
        module's tree, as if they stood at line ``position`` of it (see :class:`Site`)."""
        found: list[Site] = []
        self._walk(stmts, self.root, found)
        return [Site(s.node, s.scope, position) if s.scope is self.root else s for s in found]

    def _walk(self, stmts: list[ast.stmt], scope: Scope, sites: list[Site]) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sites.append(Site(st, scope))
                inner = Scope(parent=scope, module=self.module, at_import=False)
                a = st.args
                for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]:
                    inner.add(arg.arg, Binding("local", st.lineno, inner))
                _collect(st.body, inner)
                self._walk(st.body, inner, sites)
            elif isinstance(st, ast.ClassDef):
                inner = Scope(parent=scope, module=self.module, at_import=scope.at_import, is_class=True)
                _collect(st.body, inner)
                self._walk(st.body, inner, sites)
            else:
                for body in _children(st):
                    self._walk(body, scope, sites)

    # ------------------------------------------------------------------ names
    def _expand(self, node: ast.expr, scope: Scope, before: int | None) -> tuple[ast.expr, Scope, int | None]:
        """Follow module-level aliases (``Ptr = cute_bind.Pointer[...]``) to the aliased expression."""
        for _ in range(MAX_ALIAS_DEPTH):
            if not isinstance(node, ast.Name):
                break
            found = scope.lookup(node.id, before)
            if not isinstance(found, Binding) or found.kind != "alias" or found.value is None:
                break
            node, scope = found.value, found.scope
            before = found.line if scope.at_import else None
        return node, scope, before

    def _qualname(self, node: ast.expr, scope: Scope, before: int | None, depth: int = 0) -> str | None:
        """The qualified name ``node`` refers to, or ``None`` when it is not an imported name."""
        if depth > MAX_ALIAS_DEPTH:
            return None
        if isinstance(node, ast.Attribute):
            base = self._qualname(node.value, scope, before, depth)
            return f"{base}.{node.attr}" if base else None
        if not isinstance(node, ast.Name):
            return None
        found = scope.lookup(node.id, before)
        if found == "builtin":
            return f"builtins.{node.id}"
        if not isinstance(found, Binding):
            return None
        if found.kind == "import":
            return found.target
        if found.kind == "star":
            return f"{found.target}.{node.id}"
        if found.kind == "alias" and found.value is not None:
            return self._qualname(found.value, found.scope, found.line if found.scope.at_import else None, depth + 1)
        return None

    def _render(self, node: ast.expr, scope: Scope, before: int | None) -> str:
        """The annotation as the runtime's ``describe_annotation`` spells it, as near as source allows.

        Imported names become their qualified public names (``cutlass.cute.Tensor``;
        the runtime prints the defining module, ``cutlass.cute.typing.Tensor``),
        builtins lose ``builtins.`` and module-level classes get the module name.
        Aliases are spelled as what they stand for, at any depth (``list[Pair]`` is
        ``list[tuple[int, int]]``), as the runtime sees only the evaluated value.
        """
        node, scope, before = self._expand(node, scope, before)
        if isinstance(node, (ast.Name, ast.Attribute)):
            q = self._qualname(node, scope, before)
            if q is not None:
                return q.removeprefix("builtins.")
            if isinstance(node, ast.Name) and self.module:
                found = scope.lookup(node.id, before)
                if isinstance(found, Binding) and found.kind == "local" and found.scope.parent is None:
                    return f"{self.module}.{node.id}"
            return ast.unparse(node)
        if isinstance(node, ast.Subscript):
            inner = node.slice
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return f"{self._render(node.value, scope, before)}[{', '.join(self._render(i, scope, before) for i in items)}]"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return f"{self._render(node.left, scope, before)} | {self._render(node.right, scope, before)}"
        if isinstance(node, ast.List):
            return "[" + ", ".join(self._render(i, scope, before) for i in node.elts) + "]"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return repr(node.value)
        return ast.unparse(node)

    def _first_unbound(self, node: ast.expr, scope: Scope, before: int | None) -> str | None:
        """The first name evaluation of ``node`` would fail on (``NameError``), in evaluation order."""
        if isinstance(node, ast.Name):
            return None if scope.lookup(node.id, before) is not None else node.id
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return None  # their bodies are not evaluated (or not in this scope)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                missing = self._first_unbound(child, scope, before)
                if missing is not None:
                    return missing
        return None

    def qualname_at(self, node: ast.expr, site: Site) -> str | None:
        """The qualified name ``node`` (a name or attribute in ``site``'s annotations) refers to."""
        return self._qualname(node, site.scope, site.before)

    def spelling_of(self, qualname: str, site: Site) -> str | None:
        """How the source can spell ``qualname`` where ``site``'s annotations are evaluated:
        through an imported module (``cutlass.Float32`` after ``import cutlass``, ``cute.Tensor``
        after ``import cutlass.cute as cute``) or an imported name (``Float32``); ``None``
        when none of the file's names reaches it."""
        module, _, name = qualname.rpartition(".")
        if self._qualname(ast.Name(id=name), site.scope, site.before) == qualname:
            return name  # imported by name, or through a star import
        candidates: list[str] = []
        scope: Scope | None = site.scope
        seen: set[str] = set()
        while scope is not None:
            for bound in scope.names:
                if bound not in seen:
                    seen.add(bound)
                    candidates.append(bound)
            scope = scope.parent
        best: str | None = None
        for bound in candidates:
            q = self._qualname(ast.Name(id=bound), site.scope, site.before)
            if q == qualname:
                return bound
            if q is not None and module and (module == q or module.startswith(q + ".")):
                spelled = bound + module[len(q) :] + "." + name
                if best is None or len(spelled) < len(best):
                    best = spelled
        return best


def module_name_for_path(path: str) -> str:
    """The module name Python would import ``path`` as: its stem, plus enclosing packages."""
    path = os.path.abspath(path)
    directory, filename = os.path.split(path)
    parts = [os.path.splitext(filename)[0]]
    if parts[0] == "__init__":
        parts = []
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
        if not package:
            break
    return ".".join(parts)
