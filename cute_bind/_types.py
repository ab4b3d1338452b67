"""``cute_bind.Pointer[...]`` and ``cute_bind.Tensor[...]``: annotations that carry their type.

``cute.Pointer`` says nothing about the element type, so a kernel annotated
with it can only be compiled from a value that does (a ``make_ptr`` pointer or
a tensor). ``cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]``
records dtype, assumed alignment (bytes) and address space in the annotation,
so ``bind()`` can compile from raw integer addresses alone.

At run time the subscription evaluates to
``typing.Annotated[cute.Pointer, PointerSpec(...)]``: the DSL sees an
ordinary ``cute.Pointer`` parameter and cute_bind reads the spec.

``cute_bind.Tensor[dtype, rank, align, layout]`` does the same for tensors: it
evaluates to ``typing.Annotated[cute.Tensor, TensorSpec(...)]``, and ``bind()``
turns the tensor it is given into the DSL tensor the spec describes (element
type, rank, assumed alignment, which extents and strides are dynamic).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, ClassVar, TypeVar

from . import diagnostics as D

__all__ = ["Extent", "Pointer", "PointerSpec", "Tensor", "TensorSpec"]


@dataclass(frozen=True)
class PointerSpec:
    """What a pointer annotation says about its slot; ``None`` means "from the value"."""

    dtype: Any = None
    align: int | None = None
    space: Any = None

    def describe(self) -> str:
        parts = [getattr(self.dtype, "__name__", "?") if self.dtype is not None else "any dtype"]
        if self.align is not None:
            parts.append(f"align={self.align}")
        if self.space is not None:
            parts.append(f"space={getattr(self.space, 'name', self.space)}")
        return "Pointer[" + ", ".join(parts) + "]"


def _bad(detail: str, expected: str, got: object) -> Exception:
    return D.error(D.INVALID_POINTER_ANNOTATION, detail=detail, expected=expected, got=repr(got))


def _check_align(dtype: object, align: object, bad: Callable[[str, str, object], Exception]) -> None:
    """An annotation's alignment: None, or a power of two (bytes) no smaller than the element size."""
    if align is None:
        return
    if isinstance(align, bool) or not isinstance(align, int) or align <= 0 or align & (align - 1):
        raise bad("the alignment must be a positive power of two (bytes)", "1, 2, 4, 8, 16, ...", align)
    natural = max(1, int(getattr(dtype, "width", 8)) // 8)
    if align < natural:
        raise bad(f"the alignment must be at least the element size ({natural} bytes)", f"an alignment >= {natural}", align)


def make_spec(params: Any) -> PointerSpec:
    from . import dsl

    items = params if isinstance(params, tuple) else (params,)
    if not 1 <= len(items) <= 3:
        raise _bad("takes dtype[, align[, space]]", "1 to 3 parameters", items)
    dtype = items[0]
    align = items[1] if len(items) > 1 else None
    space = items[2] if len(items) > 2 else None
    if not dsl.is_numeric_type(dtype):
        raise _bad("the dtype must be a CuTe numeric type", "a type such as cutlass.Float32", dtype)
    _check_align(dtype, align, _bad)
    if space is not None and not isinstance(space, dsl.dsl().cute.AddressSpace):
        raise _bad("the address space must be a cute.AddressSpace member", "e.g. cute.AddressSpace.gmem", space)
    return PointerSpec(dtype=dtype, align=align, space=space)


class _Annotation:
    """What the annotation classes (:class:`Pointer`, :class:`Tensor`) share, each subclass naming how it is
    ``written``, its ``make_spec`` and its ``dsl_class``: never instantiated (the error says how the annotation
    is written); ``X[params]`` is ``Annotated[dsl_class(dsl), make_spec(params)]``."""

    _written: ClassVar[str]
    _make_spec: ClassVar[Callable[[Any], object]]
    _dsl_class: ClassVar[Callable[[ModuleType], type]]

    def __init_subclass__(cls, *, written: str, make_spec: Callable[[Any], object], dsl_class: Callable[[ModuleType], type]) -> None:
        super().__init_subclass__()
        cls._written, cls._make_spec, cls._dsl_class = written, staticmethod(make_spec), staticmethod(dsl_class)

    def __init__(self) -> None:
        raise TypeError(f"cute_bind.{type(self).__name__} is an annotation: write {self._written}")

    def __class_getitem__(cls, params: Any) -> Any:
        from typing import Annotated

        from . import dsl

        spec = cls._make_spec(params)
        return Annotated[cls._dsl_class(dsl), spec]


_S = TypeVar("_S")


def _spec_of(annotation: object, kind: type[_S]) -> _S | None:
    """The first ``kind`` in an ``Annotated`` annotation's metadata, if any."""
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, kind):
            return meta
    return None


class Pointer(_Annotation, written="cute_bind.Pointer[dtype, ...]", make_spec=make_spec, dsl_class=lambda dsl: dsl.cute_pointer_class()):
    """Pointer annotation carrying dtype, alignment and address space.

    Use ``cute_bind.Pointer[dtype]``, ``cute_bind.Pointer[dtype, align]`` or
    ``cute_bind.Pointer[dtype, align, space]`` as a parameter annotation::

        @cute_bind.kernel
        def scale(out: cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem], ...):
            ...

    Unspecified alignment defaults to the value's (or the element size);
    unspecified address space to the value's (or ``generic``).
    """


def pointer_spec_of(annotation: object) -> PointerSpec | None:
    """The :class:`PointerSpec` inside an ``Annotated`` annotation, if any."""
    return _spec_of(annotation, PointerSpec)


# --------------------------------------------------------------------------- tensors
#: Layout choices of a tensor annotation (besides an int leading dimension).
TENSOR_LAYOUTS = ("dynamic", "static")


@dataclass(frozen=True)
class Extent:
    """One mode of a ``cute_bind.Tensor[dtype, (extent, ...), ...]`` shape.

    ``kind`` is ``"dynamic"`` (a runtime value, a multiple of ``value``: its
    divisibility), ``"static"`` (compiled in from the value given: one
    specialization per extent) or ``"fixed"`` (compiled in, and it must be
    ``value``).
    """

    kind: str
    value: int = 1

    def describe(self) -> str:
        if self.kind == "dynamic":
            return "?" if self.value == 1 else f"?{{div={self.value}}}"
        return "static" if self.kind == "static" else str(self.value)


@dataclass(frozen=True)
class TensorSpec:
    """What a tensor annotation says about its slot; ``None`` means "from the value".

    ``layout`` is ``"dynamic"`` (``mark_layout_dynamic()``: every extent, and
    every stride but the leading dimension's unit stride, is a runtime value),
    ``"static"`` (extents and strides compiled in) or an int leading dimension
    (``mark_layout_dynamic(leading_dim=k)``).

    ``shape`` (``None`` for an int rank) says mode by mode which extents are
    static (see :class:`Extent`); then a ``"dynamic"`` or int layout makes the
    strides runtime values but the leading dimension's unit stride, each a
    multiple of ``align`` bytes when ``align`` is given, and ``"static"``
    compiles the strides in too.
    """

    dtype: Any = None
    rank: int | None = None
    align: int | None = None
    layout: str | int = "dynamic"
    shape: tuple[Extent, ...] | None = None

    def describe(self) -> str:
        parts = [getattr(self.dtype, "__name__", "?") if self.dtype is not None else "any dtype"]
        if self.shape is not None:
            parts.append("shape=(" + ", ".join(e.describe() for e in self.shape) + ("," if len(self.shape) == 1 else "") + ")")
        elif self.rank is not None:
            parts.append(f"rank={self.rank}")
        if self.align is not None:
            parts.append(f"align={self.align}")
        if self.layout != "dynamic":
            parts.append(f"layout={self.layout!r}")
        return "Tensor[" + ", ".join(parts) + "]"


def _bad_tensor(detail: str, expected: str, got: object) -> Exception:
    return D.error(D.INVALID_TENSOR_ANNOTATION, detail=detail, expected=expected, got=repr(got))


def make_tensor_spec(params: Any) -> TensorSpec:
    from . import dsl

    items = params if isinstance(params, tuple) else (params,)
    if not 2 <= len(items) <= 4:
        raise _bad_tensor("takes dtype, rank[, align[, layout]]", "2 to 4 parameters", items)
    dtype, rank = items[0], items[1]
    align = items[2] if len(items) > 2 else None
    layout = items[3] if len(items) > 3 else "dynamic"
    if not dsl.is_numeric_type(dtype):
        raise _bad_tensor("the dtype must be a CuTe numeric type", "a type such as cutlass.Float32", dtype)
    shape = None
    if isinstance(rank, (tuple, list)):  # a shape: one extent per mode
        shape = tuple(_extent(e) for e in rank)
        rank = len(shape)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise _bad_tensor("the rank must be an int >= 0, or a shape tuple", '0, 1, 2, ... or e.g. ("?", "static")', rank)
    _check_align(dtype, align, _bad_tensor)
    if isinstance(layout, bool) or not (layout in TENSOR_LAYOUTS or (isinstance(layout, int) and 0 <= layout < max(rank, 1))):
        raise _bad_tensor(
            'the layout must be "dynamic", "static" or a leading dimension below the rank',
            f'"dynamic", "static" or an int in [0, {max(rank - 1, 0)}]',
            layout,
        )
    return TensorSpec(dtype=dtype, rank=rank, align=align, layout=layout, shape=shape)


_DIVISIBLE = re.compile(r"^\?\{div=(\d+)\}$")


def _extent(entry: object) -> Extent:
    """One shape entry: ``"?"``, ``"?{div=k}"``, ``"static"`` or an int >= 1."""
    if isinstance(entry, str):
        text = entry.replace(" ", "")
        if text == "?":
            return Extent("dynamic")
        if text == "static":
            return Extent("static")
        m = _DIVISIBLE.match(text)
        if m is not None and int(m.group(1)) >= 1:
            return Extent("dynamic", int(m.group(1)))
    elif isinstance(entry, int) and not isinstance(entry, bool) and entry >= 1:
        return Extent("fixed", entry)
    raise _bad_tensor(
        'each shape entry must be "?" (dynamic), "?{div=k}" (dynamic, a multiple of k), "static" (compiled in '
        "from the value) or an int >= 1 (compiled in, and the value must have it)",
        '"?", "?{div=8}", "static" or 1024',
        entry,
    )


class Tensor(
    _Annotation, written="cute_bind.Tensor[dtype, rank, ...]", make_spec=make_tensor_spec, dsl_class=lambda dsl: dsl.cute_tensor_class()
):
    """Tensor annotation carrying dtype, rank, alignment and which layout facts are dynamic.

    Use ``cute_bind.Tensor[dtype, rank]``, ``cute_bind.Tensor[dtype, rank, align]``
    or ``cute_bind.Tensor[dtype, rank, align, layout]`` as a parameter annotation::

        @cute_bind.kernel
        def scale(out: cute_bind.Tensor[cutlass.Float32, 2, 16], ...):
            ...

    ``bind()`` then accepts any DLPack tensor (a torch tensor, a NumPy array...)
    of that dtype and rank and compiles for the layout the annotation says:
    ``"dynamic"`` (the default: extents and the non-unit strides are runtime
    values, one compile serves every shape), ``"static"`` (one compile per
    shape) or an int leading dimension. ``align=None`` assumes the element size.
    A plain ``cute.Tensor`` annotation takes dtype, rank and alignment from the
    value given to ``bind()`` and compiles its layout dynamic, as the DSL does
    for a torch tensor; a ``from_dlpack(...)`` tensor given to ``bind()`` keeps
    exactly the marking it carries.

    In place of the rank, a shape says mode by mode which extents are
    compiled in: ``"?"`` (dynamic), ``"?{div=k}"`` (dynamic, a multiple of
    k), ``"static"`` (compiled in from the value: calling the kernel makes one
    specialization per extent) or an int (compiled in; other extents are
    refused). quack's rows of static length N, 16-byte aligned::

        x: cute_bind.Tensor[cutlass.BFloat16, ("?", "static"), 16]

    compiles ``(?,N):(?{i64 div=8},1)``: with a shape and an alignment, the
    dynamic strides are multiples of ``align`` bytes too (each row starts
    aligned). Launches check every static extent, divisibility and the
    alignment (CB213, CB207).
    """


def tensor_spec_of(annotation: object) -> TensorSpec | None:
    """The :class:`TensorSpec` inside an ``Annotated`` annotation, if any."""
    return _spec_of(annotation, TensorSpec)
