"""Launching: the prepared handle and its two fast paths, and ``prepare()``.

``prepared`` builds a :class:`PreparedLaunch` (storage laid out once, the
DSL's marshalling checked against it) and its launch function: the C
extension ``_claunch`` when built, else generated Python. ``arguments`` binds
call arguments to parameter names (one rule set for bind, prepare and the
slow path); ``prepare`` prepares a function compiled elsewhere.
"""

from __future__ import annotations

from .prepare import prepare
from .prepared import HandleState, PreparedLaunch, build, fast_path

__all__ = ["HandleState", "PreparedLaunch", "build", "fast_path", "prepare"]
