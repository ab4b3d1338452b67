"""The mypy plugin's import path: ``plugins = cute_bind.mypy`` in a mypy config.

The plugin itself lives with the other static tools in
:mod:`cute_bind.static.plugin`; this module keeps the documented path stable.
"""

from __future__ import annotations

from .static.plugin import CUTE_BIND, CuteBindPlugin, plugin

__all__ = ["CUTE_BIND", "CuteBindPlugin", "plugin"]
