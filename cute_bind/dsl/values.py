"""Runtime values the DSL makes: ``make_ptr`` pointers, ``from_dlpack`` tensors and the
layouts they compile in, and the DSL's number objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .annotations import is_numeric_type
from .imports import dsl

__all__ = [
    "is_runtime_pointer",
    "runtime_pointer_type",
    "runtime_pointer_fields",
    "make_pointer",
    "Mode",
    "TensorLayout",
    "is_dsl_tensor",
    "dsl_tensor",
    "dsl_tensor_capsule",
    "tensor_layout",
    "numeric_value",
]


def is_runtime_pointer(value: object) -> bool:
    """A pointer object made by ``cute.runtime.make_ptr``."""
    return isinstance(value, dsl().runtime_pointer_class)


def runtime_pointer_type() -> type | None:
    """The exact type of ``cute.runtime.make_ptr`` pointers (None where the DSL has none)."""
    tp = dsl().runtime_pointer_class
    return None if tp is type(None) else tp


def runtime_pointer_fields(value: Any) -> tuple[int, Any, Any, int]:
    """``(address, dtype, address_space, assumed_align)`` of a ``make_ptr`` pointer."""
    address = value._desc.value or 0
    return int(address), value._dtype, value._addr_space, int(value._assumed_align)


def make_pointer(dtype: Any, address: int, space: Any, align: int) -> Any:
    """A DSL pointer object, used only to compile (never on the launch path)."""
    return dsl().runtime.make_ptr(dtype, address, space, assumed_align=align)


@dataclass(frozen=True)
class Mode:
    """One extent or stride of a compiled tensor layout.

    ``static`` is the compiled-in value, or ``None`` for a dynamic mode, which
    the memref descriptor stores as an integer of ``width`` bits and the
    compiled code assumes divisible by ``divisibility``.
    """

    static: int | None
    width: int = 32
    divisibility: int = 1


@dataclass(frozen=True)
class TensorLayout:
    """What a DSL tensor argument compiles in, read from the DSL tensor itself."""

    dtype: Any  # cutlass numeric type (the element type the function was compiled for)
    shape: tuple[Mode, ...]
    stride: tuple[Mode, ...]
    assumed_align: int | None
    text: str  # the DSL's own spelling, e.g. "(?,?):(?{i64},1)"
    cache_key: Any


def is_dsl_tensor(value: object) -> bool:
    """A tensor made by ``cute.runtime.from_dlpack`` (its ``type()`` is the runtime class)."""
    return type(value) is getattr(dsl().runtime, "_Tensor", None)


def dsl_tensor(value: object, align: int | None, layout: str | int) -> Any:
    """The DSL tensor for a DLPack value: ``from_dlpack`` plus the layout marking of a tensor annotation."""
    t = dsl().runtime.from_dlpack(value, assumed_align=align)
    if layout == "dynamic":
        # a 0-d tensor has no mode to mark: the DSL's marking looks for a leading dimension in
        # NumPy's 0-d export all the same (IndexError), where a torch 0-d tensor's comes out ():()
        # unmarked or marked alike
        t = t.mark_layout_dynamic() if len(t.shape) else t
    elif not isinstance(layout, str):
        t = t.mark_layout_dynamic(leading_dim=layout)
    return t


def dsl_tensor_capsule(value: Any) -> Any:
    """The DLPack capsule a ``from_dlpack`` tensor was made from."""
    return value._dlpack_data


_MODE = re.compile(r"^(?:(-?\d+)|\?(?:\{([^}]*)\})?)$")


def _parse_modes(text: str) -> tuple[Mode, ...]:
    inner = text.strip()
    if not (inner.startswith("(") and inner.endswith(")")):
        inner = f"({inner})"
    inner = inner[1:-1].strip()
    if "(" in inner or ")" in inner:
        raise ValueError(f"nested layout {text!r}")
    modes = []
    for token in filter(None, (t.strip() for t in inner.split(","))):
        m = _MODE.match(token)
        if m is None:
            raise ValueError(f"unrecognised layout mode {token!r}")
        if m.group(1) is not None:
            modes.append(Mode(int(m.group(1))))
            continue
        width, div = 32, 1
        for attr in (m.group(2) or "").split():
            if attr in ("i64", "i32"):
                width = int(attr[1:])
            elif attr.startswith("div="):
                div = int(attr[4:])
            else:
                raise ValueError(f"unrecognised layout attribute {attr!r}")
        modes.append(Mode(None, width, div))
    return tuple(modes)


def tensor_layout(value: Any) -> TensorLayout:
    """Parse the layout a DSL tensor compiles in from its cache key: ``"<space> o (shape):(stride)"``.

    Raises ``ValueError`` for a layout cute_bind cannot rewrite (nested modes).
    """
    key = value.__cache_key__
    text = str(key[2])
    layout = text[text.index("(") :] if "(" in text else text
    shape_text, _, stride_text = layout.partition(":")
    shape, stride = _parse_modes(shape_text), _parse_modes(stride_text)
    if len(shape) != len(stride):
        raise ValueError(f"layout {layout!r} has {len(shape)} extents and {len(stride)} strides")
    return TensorLayout(
        dtype=value.element_type,
        shape=shape,
        stride=stride,
        assumed_align=value._assumed_align,
        text=layout,
        cache_key=key,
    )


def numeric_value(value: Any) -> object:
    """A DSL number object's Python value (``cutlass.Int32(3)`` -> 3); anything else as it is."""
    if is_numeric_type(type(value)):
        return value.value
    return value
