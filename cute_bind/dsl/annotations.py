"""The DSL's annotation types: ``Constexpr``, ``cute.Pointer``/``cute.Tensor``, ``CUstream``, its numeric types."""

from __future__ import annotations

import typing
from types import ModuleType

from .imports import dsl

__all__ = [
    "is_constexpr",
    "cute_pointer_class",
    "cute_tensor_class",
    "cuda_stream_class",
    "is_numeric_type",
]


def is_constexpr(annotation: object) -> bool:
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


def _class(module: ModuleType, name: str) -> type:
    cls: type = getattr(module, name)  # the DSL's modules are untyped
    return cls


def cute_pointer_class() -> type:
    return _class(dsl().cute, "Pointer")


def cute_tensor_class() -> type:
    return _class(dsl().cute, "Tensor")


def cuda_stream_class() -> type:
    return _class(dsl().cuda_driver, "CUstream")


def is_numeric_type(annotation: object) -> bool:
    return isinstance(annotation, dsl().numeric_meta)
