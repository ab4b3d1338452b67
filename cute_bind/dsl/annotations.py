"""The DSL's annotation types: ``Constexpr``, ``cute.Pointer``/``cute.Tensor``, ``CUstream``, its numeric types."""

from __future__ import annotations

import typing
from typing import Any

from .imports import dsl

__all__ = [
    "is_constexpr",
    "cute_pointer_class",
    "cute_tensor_class",
    "cuda_stream_class",
    "is_numeric_type",
]


def is_constexpr(annotation: Any) -> bool:
    """``cutlass.Constexpr`` or ``cutlass.Constexpr[...]``."""
    c = dsl().constexpr
    if c is None:
        return False
    if annotation is c:
        return True
    if isinstance(annotation, type):
        try:
            return issubclass(annotation, c)
        except TypeError:
            return False
    return typing.get_origin(annotation) is c


def cute_pointer_class() -> type:
    return dsl().cute.Pointer  # type: ignore[no-any-return]


def cute_tensor_class() -> type:
    return dsl().cute.Tensor  # type: ignore[no-any-return]


def cuda_stream_class() -> type:
    return dsl().cuda_driver.CUstream  # type: ignore[no-any-return]


def is_numeric_type(annotation: Any) -> bool:
    return isinstance(annotation, dsl().numeric_meta)
