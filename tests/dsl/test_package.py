"""The ``cute_bind/dsl/`` package: one concern per module, each with its public surface in
``__all__``, re-exported by the package; the rest of cute_bind uses that surface only."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import threading
from pathlib import Path
from types import ModuleType

import pytest

import cute_bind
from cute_bind import dsl

PKG = Path(cute_bind.__file__).resolve().parent
MODULES = sorted(m.name for m in pkgutil.iter_modules(dsl.__path__))


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"cute_bind.dsl.{name}")


def _top_level_definitions(module: ModuleType) -> set[str]:
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names - {"__all__"}


@pytest.mark.parametrize("name", MODULES)
def test_each_module_declares_what_it_defines(name: str) -> None:
    module = _module(name)
    surface = module.__all__
    defined = _top_level_definitions(module)
    assert len(surface) == len(set(surface)), f"{name}.__all__ repeats a name"
    assert set(surface) <= defined, f"{name}.__all__ names what {name}.py does not define: {set(surface) - defined}"
    public = {n for n in defined if not n.startswith("_")}
    assert public <= set(surface), f"{name}.py defines public names outside its __all__: {public - set(surface)}"


def test_the_package_reexports_every_module_surface_once() -> None:
    owners: dict[str, str] = {}
    for name in MODULES:
        for n in _module(name).__all__:
            assert n not in owners, f"{n} is exported by both {owners[n]} and {name}"
            owners[n] = name
    assert sorted(dsl.__all__) == sorted(owners)
    for n, name in owners.items():
        assert getattr(dsl, n) is getattr(_module(name), n), n


def _uses_outside_the_package() -> list[tuple[str, int, str]]:
    """``(file, line, name)`` of every ``dsl.<name>`` and ``from ..dsl import <name>`` outside ``cute_bind/dsl/``."""
    uses = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] == "dsl":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = False
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if module in ("dsl", "cute_bind.dsl"):  # from ..dsl import x / from cute_bind.dsl import x
                    uses += [(str(rel), node.lineno, a.name) for a in node.names]
                elif any(a.name == "dsl" and a.asname is None for a in node.names) and module in ("", "cute_bind"):
                    bound = True
        if bound:
            uses += [
                (str(rel), n.lineno, n.attr)
                for n in ast.walk(tree)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "dsl"
            ]
    return uses


def test_no_exported_name_hides_a_module() -> None:
    """``cute_bind.dsl.<module>`` stays the module (a re-exported function of the same name would replace it)."""
    assert not set(MODULES) & set(dsl.__all__)
    for name in MODULES:
        assert getattr(dsl, name) is _module(name)


def _import_order() -> list[str]:
    tree = ast.parse(Path(str(dsl.__file__)).read_text(encoding="utf-8"))
    return [n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module]


def test_each_module_imports_only_modules_above_it() -> None:
    """The package's modules are layered in the order ``dsl/__init__.py`` imports them (its docstring's list)."""
    order = _import_order()
    assert sorted(order) == MODULES
    bad = []
    for i, name in enumerate(order):
        tree = ast.parse(Path(str(_module(name).__file__)).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module] if node.module else [a.name for a in node.names]
                bad += [f"{name} -> {t}" for t in targets if t not in order[:i]]
    assert not bad, bad
    docstring = str(dsl.__doc__)
    assert [line.split("``")[1].removesuffix(".py") for line in docstring.splitlines() if line.startswith("- ``")] == order


def test_the_rest_of_cute_bind_uses_the_public_surface_only() -> None:
    uses = _uses_outside_the_package()
    assert len({f for f, _, _ in uses}) > 10, "the scan found (almost) no users of the dsl package"
    outside = [f"{f}:{line}: dsl.{n}" for f, line, n in uses if n not in dsl.__all__]
    assert not outside, "names used from cute_bind.dsl that no module's __all__ lists:\n" + "\n".join(outside)


def test_features_reads_nothing_defined_after_it() -> None:
    """``features()`` (once 1,400 lines before what it read) depends only on names defined above it or imported."""
    module = _module("version")
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    order = {}
    for node in tree.body:
        for name in _names_bound(node):
            order.setdefault(name, node.lineno)
    (func,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "features"]
    late = sorted({x.id for x in ast.walk(func) if isinstance(x, ast.Name) and order.get(x.id, 0) > func.lineno})
    assert not late


def _names_bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


class _Recording:
    """A lock that records being entered."""

    def __init__(self) -> None:
        self.entered = 0

    def __enter__(self) -> None:
        self.entered += 1

    def __exit__(self, *exc: object) -> None:
        pass


class _Exportable:
    def dump_to_object(self, prefix: str) -> bytes:
        return prefix.encode()


def test_compile_and_export_take_the_lock_current_at_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile lock is replaced in a forked child (``os.register_at_fork``): every user reads
    ``hooks._COMPILE_LOCK`` when it runs, never a copy bound at import."""
    from cute_bind.dsl import hooks

    monkeypatch.setattr(hooks, "_COMPILE_LOCK", hooks._COMPILE_LOCK)
    monkeypatch.setattr(hooks, "_HOOK_LOCK", hooks._HOOK_LOCK)
    old_compile, old_hook = hooks._COMPILE_LOCK, hooks._HOOK_LOCK
    hooks._reset_locks_in_child()  # what a forked child runs
    assert hooks._COMPILE_LOCK is not old_compile and hooks._HOOK_LOCK is not old_hook
    assert isinstance(hooks._COMPILE_LOCK, type(threading.RLock()))
    spy = _Recording()
    monkeypatch.setattr(hooks, "_COMPILE_LOCK", spy)
    assert dsl.export_object(_Exportable(), "p") == b"p"
    assert spy.entered == 1, "export_object did not take the current compile lock"
