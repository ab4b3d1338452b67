"""Compile-only placeholders (issue 23): ``Kernel.compile(...)`` with fake tensors and streams."""

from __future__ import annotations

import contextvars
import ctypes
import functools
import importlib
from typing import Any

from .imports import dsl
from .values import Mode, TensorLayout

__all__ = [
    "CompileOnly",
    "compile_only",
    "compiling",
    "is_fake_tensor",
    "is_fake_stream",
    "fake_tensor_facts",
    "fake_tensor_spelling",
    "fake_stream_spelling",
    "fake_stream",
    "fake_tensor_layout",
    "fake_tensor_on_gpu",
    "laid_out_tensor",
]


# ``cute.compile`` takes placeholders that describe a compile without data:
# ``make_fake_tensor``/``make_fake_compact_tensor`` tensors (shape, strides
# with SymInt positions, divisibility, alignment, memory space) and
# ``make_fake_stream`` streams. ``Kernel.compile(...)`` takes them the same
# way, inside :func:`compile_only`; a launch refuses them (nothing to launch).
class CompileOnly:
    """One ``Kernel.compile(...)`` binding: placeholders are allowed, and the SymInts met are numbered.

    Two modes sharing one ``SymInt`` object are one runtime value (the
    TVM-FFI entry takes it once and checks both against it), so the compile
    key spells a ``SymInt`` by the order it first appears in the call, not by
    its ``id`` (which a fresh object of the next call does not share).
    """

    def __init__(self) -> None:
        self._numbers: dict[int, int] = {}
        self._keep: list[object] = []  # the numbered objects, alive while numbered (their ids stay theirs)

    def number(self, symbol: object) -> int:
        n = self._numbers.get(id(symbol))
        if n is None:
            n = self._numbers[id(symbol)] = len(self._numbers)
            self._keep.append(symbol)
        return n


_COMPILE_ONLY: contextvars.ContextVar[CompileOnly | None] = contextvars.ContextVar("cute_bind_compile_only", default=None)


class compile_only:
    """Context manager: values bound inside it are bound for a compile only (placeholders allowed)."""

    def __enter__(self) -> CompileOnly:
        state = CompileOnly()
        self._token = _COMPILE_ONLY.set(state)
        return state

    def __exit__(self, *exc: object) -> None:
        _COMPILE_ONLY.reset(self._token)


def compiling() -> CompileOnly | None:
    """The current :class:`CompileOnly` binding, or ``None`` outside ``Kernel.compile``."""
    return _COMPILE_ONLY.get()


def _fake_class(name: str) -> type | None:
    cls = getattr(dsl().runtime, name, None)
    return cls if isinstance(cls, type) else None


def is_fake_tensor(value: object) -> bool:
    """A ``cute.runtime.make_fake_tensor``/``make_fake_compact_tensor`` placeholder."""
    cls = _fake_class("_FakeTensor")
    return cls is not None and isinstance(value, cls) and not hasattr(value, "__c_pointers__")


def is_fake_stream(value: object) -> bool:
    """A ``cute.runtime.make_fake_stream(...)`` placeholder."""
    cls = _fake_class("_FakeStream")
    return cls is not None and isinstance(value, cls)


def _symbolic(value: object) -> bool:
    cls = getattr(dsl().cute, "SymInt", None) or getattr(importlib.import_module("cutlass.cute.typing"), "SymInt", None)
    return cls is not None and isinstance(value, cls)


def _spell_mode(mode: Any, state: CompileOnly) -> object:
    if _symbolic(mode):
        return ("?", int(mode.width), int(mode.divisibility), mode.symbol, state.number(mode))
    if isinstance(mode, (tuple, list)):  # a nested mode
        return tuple(_spell_mode(m, state) for m in mode)
    return int(mode)


def fake_tensor_facts(value: Any) -> tuple[str, int]:
    """``(element type name, rank)`` of a fake tensor."""
    return str(value.element_type.__name__), len(tuple(value.shape))


def fake_tensor_spelling(value: Any, state: CompileOnly) -> tuple[object, ...]:
    """A fake tensor as a compile key part: everything the compile reads of it, in plain values.

    Element type, memory space, assumed alignment, each extent and stride (an
    int, or ``("?", width, divisibility, symbol, n)`` for the ``n``-th SymInt
    of the call) and the 32-bit stride flag.
    """
    memspace = value.memspace
    return (
        "fake tensor",
        str(value.element_type.__name__),
        str(getattr(memspace, "name", memspace)),
        int(value._assumed_align or 0),
        tuple(_spell_mode(m, state) for m in value.shape),
        tuple(_spell_mode(m, state) for m in value.stride),
        bool(getattr(value, "_use_32bit_stride", False)),
    )


def fake_tensor_layout(value: Any) -> tuple[TensorLayout, tuple[object, ...]] | None:
    """What a fake tensor says the compiled code may assume, as a :class:`TensorLayout` (element type,
    each extent and stride static or dynamic with its width and divisibility, the assumed alignment),
    and the SymInt object of each extent (``None`` for a static one): modes sharing a SymInt are one
    runtime value. ``None`` for a nested layout (a mode of modes), which this reading does not take."""

    def modes(items: Any, width: int) -> tuple[Mode, ...] | None:
        out = []
        for m in items:
            if _symbolic(m):
                out.append(Mode(None, int(m.width), int(m.divisibility)))
            elif isinstance(m, int):
                out.append(Mode(int(m), width))
            else:  # a nested mode
                return None
        return tuple(out)

    shape, stride = tuple(value.shape), tuple(value.stride)
    extents = modes(shape, 32)
    strides = modes(stride, 32 if getattr(value, "_use_32bit_stride", False) else 64)
    if extents is None or strides is None:
        return None

    def spelled(ms: tuple[Mode, ...]) -> str:
        return ",".join("?" if m.static is None else str(m.static) for m in ms)

    align = int(value._assumed_align or 0) or None
    layout = TensorLayout(value.element_type, extents, strides, align, f"({spelled(extents)}):({spelled(strides)})", None)
    return layout, tuple(m if _symbolic(m) else None for m in shape)


def fake_tensor_on_gpu(value: object) -> bool:
    """Whether a fake tensor is in GPU global memory (its memory space is gmem: a TVM-FFI entry compiled
    from it takes CUDA tensors only)."""
    memspace = getattr(value, "memspace", None)
    return str(getattr(memspace, "name", memspace)) == "gmem"


def fake_stream(env: bool) -> object:
    """A ``cute.runtime.make_fake_stream(...)`` placeholder: with ``env`` the TVM-FFI environment stream
    (the compiled entry then takes no stream), else an explicit stream argument."""
    make = dsl().runtime.make_fake_stream
    return make(use_tvm_ffi_env_stream=True) if env else make()


def fake_stream_spelling(value: object) -> tuple[object, ...]:
    """A fake stream as a compile key part: with the TVM-FFI environment stream the entry has no stream argument."""
    return ("fake stream", bool(getattr(value, "use_tvm_ffi_env_stream", False)))


@functools.lru_cache(maxsize=None)
def _laid_out_class() -> type:
    base: Any = _fake_class("_FakeTensor")

    class LaidOutTensor(base):  # type: ignore[misc]  # the DSL's fake tensor class is untyped
        """A tensor of exactly the layout a ``cute_bind.Tensor[...]`` annotation describes.

        Compiles as the fake tensor of that layout (static extents, SymInt
        extents and strides with their divisibility, alignment, memory space),
        which ``from_dlpack``'s markings cannot all express (a static extent
        beside a dynamic stride, say); marshals as one real tensor: the
        descriptor cute_bind packed for it (data address, dynamic extents and
        strides, in the layout's C struct), so the DSL's own call and the
        prepared handle's check of it read the value it was made from.
        """

        def __init__(
            self, dtype: object, shape: tuple[object, ...], stride: tuple[object, ...], memspace: object, align: int, descriptor: bytes
        ) -> None:
            super().__init__(dtype, shape, stride=stride, memspace=memspace, assumed_align=align)
            self._descriptor = ctypes.create_string_buffer(descriptor, max(len(descriptor), 1))

        def __c_pointers__(self) -> list[int]:
            return [ctypes.addressof(self._descriptor)]

    return LaidOutTensor


def laid_out_tensor(
    dtype: object,
    shape: tuple[int | tuple[int, int], ...],
    stride: tuple[int | tuple[int, int], ...],
    gpu: bool,
    align: int,
    descriptor: bytes,
) -> object:
    """The DSL value of a tensor laid out as an annotation says (see ``LaidOutTensor``).

    ``shape``/``stride`` hold an int per static mode and ``(width,
    divisibility)`` per dynamic one (each its own SymInt); ``gpu`` picks the
    memory space ``from_dlpack`` gives a CUDA tensor (gmem), else generic.
    """
    cute = dsl().cute
    typing_module = importlib.import_module("cutlass.cute.typing")

    def mode(m: int | tuple[int, int]) -> object:
        if isinstance(m, tuple):
            return typing_module.SymInt(m[0], divisibility=m[1])
        return int(m)

    space = cute.AddressSpace.gmem if gpu else cute.AddressSpace.generic
    return _laid_out_class()(dtype, tuple(mode(m) for m in shape), tuple(mode(m) for m in stride), space, align, descriptor)
