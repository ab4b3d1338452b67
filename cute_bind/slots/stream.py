"""The stream slot kind: a CUDA stream handle in 64-bit storage."""

from __future__ import annotations

import functools
import operator
import sys
from typing import Any, Callable, NamedTuple

from .. import dsl
from .. import diagnostics as D
from .base import U64, Bound, SlotKind, Where, describe_value
from .registry import register

__all__ = ["StreamKind", "CStreamSpec", "is_stream_value"]


class CStreamSpec(NamedTuple):
    """What the C fast path's class "Z" needs to take a stream object as is (``_claunch.c``'s
    ``ObjSpec``): exact ints are handles; an object of an ``attr_types`` type gives its
    ``cuda_stream`` attribute, one of an ``int_types`` type ``int(value)``, and anything else
    goes to ``reader`` (:meth:`StreamKind.coerce`), each answer an exact int in [0, 2**64) or
    the slow path decides."""

    attr_types: tuple[type, ...]  # torch.cuda.Stream, torch.cuda.ExternalStream (where torch is imported)
    int_types: tuple[type, ...]  # cuda.CUstream (and the runtime's cudaStream_t where imported)
    reader: Callable[[object], int] | None


def stream_types() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """``(attr_types, int_types)``: the exact stream classes read without the kind's full
    conversion, as :meth:`StreamKind.coerce` reads them (torch's only where torch is imported)."""
    attr: list[type] = []
    torch_cuda = getattr(sys.modules.get("torch"), "cuda", None)
    for name in ("Stream", "ExternalStream"):
        cls = getattr(torch_cuda, name, None)
        # coerce tries getPtr first: a class with one is read as int() there, so it is left to coerce here
        if isinstance(cls, type) and hasattr(cls, "cuda_stream") and not hasattr(cls, "getPtr"):
            attr.append(cls)
    ints = [dsl.cuda_stream_class()]
    runtime_stream = getattr(sys.modules.get("cuda.bindings.runtime"), "cudaStream_t", None)
    if isinstance(runtime_stream, type):
        ints.append(runtime_stream)
    return tuple(attr), tuple(t for t in ints if t is not int and t.__module__.startswith("cuda") and hasattr(t, "getPtr"))


#: the cuda-python classes that are stream handles (driver and runtime API)
_CUDA_STREAM_CLASSES = frozenset({"CUstream", "cudaStream_t"})


def _is_cuda_stream_class(cls: type) -> bool:
    return any(c.__name__ in _CUDA_STREAM_CLASSES and c.__module__.startswith("cuda") for c in cls.__mro__)


def is_stream_value(value: object) -> bool:
    """Whether ``value`` is one of the forms :meth:`StreamKind.coerce` reads as a stream (an int
    handle, a cuda-python stream, an object with ``cuda_stream`` or ``__cuda_stream__``) or a fake
    stream, told from its class alone, without running its code: ``None`` or a tensor is not one."""
    cls = value.__class__
    if cls is bool:
        return False
    return (
        isinstance(value, int)
        or _is_cuda_stream_class(cls)
        or hasattr(cls, "cuda_stream")
        or hasattr(cls, "__cuda_stream__")
        or dsl.is_fake_stream(value)
    )


# --------------------------------------------------------------------------- streams
class StreamKind(SlotKind):
    """A CUDA stream handle: 64-bit storage.

    Accepts raw integer handles, ``cuda.CUstream``/``cudaStream_t``, objects
    with an integer ``cuda_stream`` attribute (``torch.cuda.Stream``) and
    objects implementing ``__cuda_stream__`` (cuda.core streams).
    """

    kind = "stream"
    fmt = "Q"
    fast = "Z"

    def __repr__(self) -> str:
        return "StreamKind()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StreamKind)

    def __hash__(self) -> int:
        return hash("stream")

    def describe(self) -> str:
        return "cuda.CUstream"

    @classmethod
    def recognize(cls, annotation: object) -> StreamKind | None:
        stream_cls = dsl.cuda_stream_class()
        if annotation is stream_cls or (isinstance(annotation, type) and issubclass(annotation, stream_cls)):
            return cls()
        return None

    @classmethod
    def infer(cls, value: object) -> StreamKind | None:
        """An unannotated parameter given a fake stream (``make_fake_stream(...)``, as flashinfer's and
        quack's compiles pass one): a stream, as the DSL reads it (a ``cuda.CUstream`` is found by its type)."""
        return cls() if dsl.is_fake_stream(value) else None

    def expected(self) -> str:
        return "a stream handle (int), cuda.CUstream, or an object with .cuda_stream (torch.cuda.Stream)"

    def guard(self, var: str) -> str | None:
        return f"{var}.__class__ is int"

    def probe(self) -> None:
        """Streams are never part of the compile key."""
        return None

    def c_spec(self) -> CStreamSpec:
        # where: the C path's reader only decides whether a value is taken; its errors are
        # cleared and the slow path raises them, named by the launch's own parameter
        attr, ints = stream_types()
        return CStreamSpec(attr, ints, functools.partial(self.coerce, where=Where("?", "?")))

    def fallback(self, where: Where) -> Callable[[object], int]:
        """For the Python fast path: a stream object (a ``torch.cuda.Stream``, a ``cuda.CUstream``)
        read with one attribute read or ``int()``, anything else through :meth:`coerce` (raising
        its catalog error): a stream object never takes the slow path."""
        coerce = self.coerce
        attr, ints = stream_types()
        learned = bool(attr)  # torch's classes known; else learned once torch is imported

        def read_stream(value: Any) -> int:
            nonlocal attr, learned
            cls = value.__class__
            if cls in attr:
                handle = value.cuda_stream
            elif cls in ints:
                handle = int(value)
            else:
                if not learned and "torch" in sys.modules:
                    attr, learned = stream_types()[0], True  # bound before torch was imported
                    if cls in attr:
                        return read_stream(value)
                return coerce(value, where)
            if handle.__class__ is int and 0 <= handle < U64:
                return handle
            return coerce(value, where)

        return read_stream

    def coerce(self, value: object, where: Where, checked: bool = False) -> int:
        try:
            return self._coerce(value, where)
        except D.CuteBindError:
            raise
        except Exception as exc:  # a hostile attribute or protocol method raised: a typed error
            raise self.refusal(where, value) from exc

    def _coerce(self, value: Any, where: Where) -> int:
        if isinstance(value, bool) or value is None or isinstance(value, (float, str, bytes)):
            raise self.refusal(where, value)
        handle: object
        if isinstance(value, int):
            handle = value
        elif hasattr(value, "getPtr") and type(value).__module__.startswith("cuda"):
            # cuda.CUstream / cudaStream_t; every other cuda-python handle (CUevent, CUdeviceptr,
            # CUcontext...) has getPtr too, and its int() is no stream
            if not _is_cuda_stream_class(type(value)):
                raise self.refusal(where, value, f"{self.expected()} (a cuda-python {type(value).__name__} is not a stream)")
            handle = int(value)
        elif hasattr(value, "cuda_stream"):
            handle = value.cuda_stream
        elif hasattr(value, "__cuda_stream__"):
            proto = value.__cuda_stream__()
            handle = proto[1] if isinstance(proto, tuple) and len(proto) == 2 else None
        elif dsl.is_fake_stream(value):
            raise self._fake(value, where)
        else:
            try:
                handle = operator.index(value)
            except Exception:  # not an integer, or a hostile __index__ that raised: a typed error
                raise self.refusal(where, value) from None
        if isinstance(handle, bool) or not isinstance(handle, int):
            raise self.refusal(where, value)
        if not 0 <= handle < U64:
            raise where.error(D.INTEGER_OUT_OF_RANGE, expected="a 64-bit stream handle", got=str(handle))
        return handle

    def _fake(self, value: object, where: Where) -> Exception:
        return where.error(
            D.COMPILE_ONLY_VALUE, expected=f"{self.expected()}; fake streams are for kernel.compile(...)", got=describe_value(value)
        )

    def bind(self, value: object, where: Where) -> Bound:
        if dsl.is_fake_stream(value):
            if dsl.compiling() is None:
                raise self._fake(value, where)
            # the compile's spec itself (Kernel.compile only): with the TVM-FFI environment
            # stream the compiled entry has no stream argument, so it is part of the key
            return Bound(packed=0, dsl_value=value, key=dsl.fake_stream_spelling(value), slot=self)
        handle = self.coerce(value, where)
        return Bound(packed=handle, dsl_value=dsl.cuda_stream_class()(handle), key=None, slot=self)


register(StreamKind)
