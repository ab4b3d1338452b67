"""The names ``from cute_bind import *`` binds, read without importing ``cute_bind``.

A star import of ``cute_bind`` binds exactly ``cute_bind.__all__``; the static
tools need that list to know which names such an import provides (a name it
does not export comes from an earlier star import). Importing ``cute_bind`` to
read ``__all__`` would import the whole runtime into the checker, the mypy
plugin and the language server, whose packages sit just above ``diagnostics``
and ``_whitelist`` (docs/concepts/architecture.md); so the list literal is read
from ``cute_bind/__init__.py``'s source, the one place it is written, and
``tests/static/test_exports.py`` checks that what is read here is the runtime's
``cute_bind.__all__``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

__all__ = ["PUBLIC_NAMES"]


def _read_all(init: Path) -> frozenset[str]:
    """The strings of the ``__all__ = [...]`` list literal in ``init`` (a package's ``__init__.py``)."""
    for node in ast.parse(init.read_text(encoding="utf-8"), str(init)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = ast.literal_eval(node.value)
            if isinstance(names, list) and all(isinstance(n, str) for n in names):
                return frozenset(names)
    raise ImportError(f"{init} has no `__all__ = [...]` list of names")


#: ``cute_bind.__all__``, as a set.
PUBLIC_NAMES: Final[frozenset[str]] = _read_all(Path(__file__).resolve().parent.parent / "__init__.py")
