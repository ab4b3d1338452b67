"""What a kernel's compiles are keyed by, and the handles they give (shared by the compiler, guards and dispatch).

:class:`CompileKey` (with its :class:`SlotPart` and :class:`ConstexprPart`)
is what one compile is for; :data:`Handle` is what launching one takes: a
prepared launch, a TVM-FFI kernel's prepared launch, or its
:class:`TvmFfiCall`. A module of its own so that :mod:`.guards`, which the
compiler uses, can name them without importing the compiler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Hashable, NamedTuple, TypeAlias

from .. import diagnostics as D

if TYPE_CHECKING:
    from ..dsl import Compiled
    from ..launch.prepared import PreparedLaunch
    from ..launch.tvm_ffi import PreparedTvmFfiLaunch

__all__ = ["CompileKey", "ConstexprPart", "Handle", "SlotPart", "TvmFfiCall"]

#: A launch handle of a compiled function: a prepared launch, a TVM-FFI kernel's prepared launch, or
#: its :class:`TvmFfiCall` for values ``prepare`` does not take (each has ``launch``, ``clone``, ``close``).
Handle: TypeAlias = "PreparedLaunch[...] | PreparedTvmFfiLaunch | TvmFfiCall"


class SlotPart(NamedTuple):
    """A runtime parameter's part of a :class:`CompileKey`: its slot's key for the bound value.

    ``key`` is ``None`` for values that never change the compile (numbers,
    real streams)."""

    name: str
    key: Hashable


class ConstexprPart(NamedTuple):
    """A Constexpr parameter's part of a :class:`CompileKey`: the value's type and its exact form.

    ``value`` is ``cache.key.constexpr_key(v)``: compared exactly, not by
    ``==`` (``-0.0`` is not ``0.0``, a NaN is itself); ``constexpr_value``
    gives the value back."""

    name: str
    type: type
    value: Hashable


class CompileKey(NamedTuple):
    """What one compile of a kernel is for: equal keys share one compiled function.

    A NamedTuple: hashed and compared in C (the dispatch path looks keys up).
    The disk cache hashes :meth:`Compiler.cache_form` of it (the spelling its
    entries were always keyed by).
    """

    #: the runtime parameters' slot key parts, in parameter order
    slots: tuple[SlotPart, ...]
    #: the Constexpr parameters' values, in parameter order
    constexpr: tuple[ConstexprPart, ...]
    #: the target architecture compiled for (``dsl.target_arch()``; None: none known)
    arch: str | None
    #: the kernel's ``compile_options``
    options: str | None
    #: the stream parameters compiled as the TVM-FFI environment stream (left out of the compiled
    #: entry: a call that leaves them out launches it); empty for every other compile
    env_streams: frozenset[str]


class TvmFfiCall:
    """A TVM-FFI kernel's handle for values ``prepare`` does not take: each launch is the compiled call.

    The entry checks every value itself; an error it reports is CB309, as
    from a prepared TVM-FFI handle (so a call with values of another
    specialization dispatches again).
    """

    fast_path = "direct"

    def __init__(self, kernel: str, compiled: Compiled) -> None:
        self.kernel_name = kernel
        self.compiled = compiled
        self.closed = False

    def launch(self, *args: object, **kwargs: object) -> object:
        """Call the compiled function with these values."""
        if self.closed:
            raise D.error(D.HANDLE_CLOSED, kernel=self.kernel_name, expected="an open handle")
        try:
            return self.compiled(*args, **kwargs)
        except D.CuteBindError:
            raise
        except Exception as exc:
            text = str(exc).strip()
            got = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
            raise D.error(D.TVM_FFI_CALL_ERROR, kernel=self.kernel_name, expected="arguments the compiled function takes", got=got) from exc

    def clone(self) -> TvmFfiCall:
        """Another handle (it holds no per-launch state)."""
        return TvmFfiCall(self.kernel_name, self.compiled)

    def close(self) -> None:
        """Later launches raise CB404."""
        self.closed = True

    def __repr__(self) -> str:
        return f"<TVM-FFI call {self.kernel_name}{' closed' if self.closed else ''}>"
