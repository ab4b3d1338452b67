"""MkDocs hook: resolve the snippet base path against the repository root.

``pymdownx.snippets`` resolves a relative ``base_path`` against the current
working directory; this makes ``mkdocs build -f /path/to/mkdocs.yml`` work from
anywhere by making it absolute (the folder holding ``mkdocs.yml``).
"""

from __future__ import annotations

import os
from typing import Any


def on_config(config: Any, **kwargs: Any) -> Any:
    root = os.path.dirname(os.path.abspath(config.config_file_path))
    snippets = config.mdx_configs.get("pymdownx.snippets")
    if snippets is not None:
        snippets["base_path"] = [p if os.path.isabs(p) else os.path.join(root, p) for p in snippets.get("base_path", ["."])]
    return config
