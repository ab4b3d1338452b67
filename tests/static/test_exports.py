"""The static tools' reading of ``cute_bind.__all__`` (``cute_bind/static/exports.py``, from
``cute_bind/__init__.py``'s source) and that the static room imports no runtime room to read it."""

from __future__ import annotations

import ast
from pathlib import Path

import cute_bind
from cute_bind.static.exports import PUBLIC_NAMES

STATIC = Path(cute_bind.__file__).resolve().parent / "static"


def test_public_names_equal_cute_bind_all() -> None:
    """What exports.py reads from the source is what ``cute_bind.__all__`` is at run time (a list
    built some other way would be missed): ``from cute_bind import *`` would otherwise be resolved
    wrongly by every static tool."""
    assert PUBLIC_NAMES == frozenset(cute_bind.__all__), (
        f"missing from exports.py's reading: {sorted(set(cute_bind.__all__) - PUBLIC_NAMES)}; "
        f"not in cute_bind.__all__: {sorted(PUBLIC_NAMES - set(cute_bind.__all__))}"
    )


def _imports(path: Path) -> set[str]:
    """Every ``cute_bind`` module a static module names in an import (relative ones resolved), at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(["cute_bind", "static"][: 2 - (node.level - 1)])
                if node.module:
                    found.add(f"{base}.{node.module}")
                else:  # ``from .. import _whitelist``: each name is a module
                    found.update(f"{base}.{a.name}" for a in node.names)
            elif (node.module or "").startswith("cute_bind"):
                found.add(str(node.module))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("cute_bind"))
    return found


def test_static_imports_only_diagnostics_and_whitelist() -> None:
    """``static/`` reads the catalog and the whitelist, nothing of the runtime (not even
    ``import cute_bind`` inside a function, which is how ``__all__`` used to be read)."""
    allowed = {"cute_bind.diagnostics", "cute_bind._whitelist"}
    bad = {}
    for path in sorted(STATIC.glob("*.py")):
        outside = {m for m in _imports(path) if not m.startswith("cute_bind.static")} - allowed
        if outside:
            bad[path.name] = sorted(outside)
    assert bad == {}
