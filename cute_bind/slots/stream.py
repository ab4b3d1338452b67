"""The stream slot kind: a CUDA stream handle in 64-bit storage."""

from __future__ import annotations

import operator
from typing import Any

from .. import dsl
from .. import diagnostics as D
from .base import U64, Bound, SlotKind, Where, describe_value
from .registry import register

__all__ = ["StreamKind"]


# --------------------------------------------------------------------------- streams
class StreamKind(SlotKind):
    """A CUDA stream handle: 64-bit storage.

    Accepts raw integer handles, ``cuda.CUstream``/``cudaStream_t``, objects
    with an integer ``cuda_stream`` attribute (``torch.cuda.Stream``) and
    objects implementing ``__cuda_stream__`` (cuda.core streams).
    """

    kind = "stream"
    fmt = "Q"
    fast = "P"

    def __repr__(self) -> str:
        return "StreamKind()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StreamKind)

    def __hash__(self) -> int:
        return hash("stream")

    def describe(self) -> str:
        return "cuda.CUstream"

    @classmethod
    def recognize(cls, annotation: Any) -> StreamKind | None:
        stream_cls = dsl.cuda_stream_class()
        if annotation is stream_cls or (isinstance(annotation, type) and issubclass(annotation, stream_cls)):
            return cls()
        return None

    def expected(self) -> str:
        return "a stream handle (int), cuda.CUstream, or an object with .cuda_stream (torch.cuda.Stream)"

    def guard(self, var: str) -> str | None:
        return f"{var}.__class__ is int"

    def coerce(self, value: Any, where: Where, checked: bool = False) -> int:
        try:
            return self._coerce(value, where)
        except D.CuteBindError:
            raise
        except Exception as exc:  # a hostile attribute or protocol method raised: a typed error
            raise self.refusal(where, value) from exc

    def _coerce(self, value: Any, where: Where) -> int:
        if isinstance(value, bool) or value is None or isinstance(value, (float, str, bytes)):
            raise self.refusal(where, value)
        handle: Any
        if isinstance(value, int):
            handle = value
        elif hasattr(value, "getPtr") and type(value).__module__.startswith("cuda"):
            handle = int(value)  # cuda.CUstream / cudaStream_t
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
            raise D.error(
                D.INTEGER_OUT_OF_RANGE, kernel=where.kernel, parameter=where.parameter, expected="a 64-bit stream handle", got=str(handle)
            )
        return handle

    def _fake(self, value: Any, where: Where) -> Exception:
        return D.error(
            D.COMPILE_ONLY_VALUE,
            kernel=where.kernel,
            parameter=where.parameter,
            expected=f"{self.expected()}; fake streams are for kernel.compile(...)",
            got=describe_value(value),
        )

    def bind(self, value: Any, where: Where) -> Bound:
        if dsl.is_fake_stream(value):
            if dsl.compiling() is None:
                raise self._fake(value, where)
            # the compile's spec itself (Kernel.compile only): with the TVM-FFI environment
            # stream the compiled entry has no stream argument, so it is part of the key
            return Bound(packed=0, dsl_value=value, key=dsl.fake_stream_spelling(value), slot=self)
        handle = self.coerce(value, where)
        return Bound(packed=handle, dsl_value=dsl.cuda_stream_class()(handle), key=None, slot=self)


register(StreamKind)
