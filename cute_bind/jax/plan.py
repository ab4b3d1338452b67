"""A kernel's signature as a JAX op, read once when the op is made (no JAX needed).

Every parameter of a :class:`cute_bind.Kernel` gets one role:

- ``array``: a tensor or pointer parameter the caller passes a JAX array for
  (an operand of the custom call);
- ``output``: a tensor or pointer parameter named in ``outputs``: allocated by
  XLA (a result of the custom call) and returned;
- ``mutated``: an array parameter named in ``mutates_args``: an operand whose
  buffer is also a result (input/output aliasing), returned as the new array;
- ``static``: a number, Constexpr or ``Optional`` parameter: a concrete value
  fixed per lowered program (part of the primitive's parameters);
- ``stream``: filled by the FFI handler with XLA's stream;
- ``fixed``: a sequence or structure parameter with a default, always passed as
  that default.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Protocol, Sequence

from .. import diagnostics as D
from ..jit import Kernel
from ..jit.signature import Defaulted
from ..slots import OptionalKind, PointerKind, ScalarKind, SlotKind, StreamKind, TensorKind

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["Like", "Shaped", "JaxParam", "JaxPlan", "plan", "like", "shaped", "JAX_DTYPES", "cute_dtype_name"]

_EMPTY = inspect.Parameter.empty

#: JAX (NumPy) dtype name -> CuTe element type name; a JAX dtype not here has no CuTe type
JAX_DTYPES: dict[str, str] = {
    "bool": "Boolean",
    "int8": "Int8",
    "int16": "Int16",
    "int32": "Int32",
    "int64": "Int64",
    "uint8": "Uint8",
    "uint16": "Uint16",
    "uint32": "Uint32",
    "uint64": "Uint64",
    "float16": "Float16",
    "bfloat16": "BFloat16",
    "float32": "Float32",
    "float64": "Float64",
    "float8_e4m3fn": "Float8E4M3FN",
    "float8_e4m3": "Float8E4M3",
    "float8_e5m2": "Float8E5M2",
    "float8_e4m3b11fnuz": "Float8E4M3B11FNUZ",
    "float8_e8m0fnu": "Float8E8M0FNU",
    "float4_e2m1fn": "Float4E2M1FN",
}
_CUTE_TO_JAX = {v: k for k, v in JAX_DTYPES.items()}


def jax_missing(expected: str, exc: ImportError) -> D.CuteBindError:
    """CB901: ``expected`` (JAX, or cute_bind's XLA FFI handler) did not import; ``exc`` says why."""
    return D.error(D.JAX_MISSING, expected=expected, got=f"{type(exc).__name__}: {exc}")


def unsupported(kernel: str, parameter: str, expected: str, got: str) -> D.CuteBindError:
    """CB906: a parameter (or the kernel, for its stream) that a cute_bind.jax call cannot carry."""
    return D.error(D.JAX_PARAMETER_UNSUPPORTED, kernel=kernel, parameter=parameter, expected=expected, got=got)


def cute_dtype_name(dtype: object) -> str | None:
    """The CuTe element type name of a cutlass numeric type (``cutlass.Float32`` -> ``"Float32"``)."""
    return getattr(dtype, "__name__", None) if dtype is not None else None


@dataclass(frozen=True)
class Like:
    """An output shaped like one of the op's array inputs (its dtype unless given)."""

    source: str
    dtype: DTypeLike | None = None

    def describe(self) -> str:
        return f"like({self.source!r}" + (f", dtype={self.dtype}" if self.dtype is not None else "") + ")"


@dataclass(frozen=True)
class Shaped:
    """An output of a fixed shape and dtype (a dtype name or anything ``numpy.dtype`` takes)."""

    shape: tuple[int, ...]
    dtype: DTypeLike

    def describe(self) -> str:
        return f"shaped({self.shape}, {self.dtype})"


def like(source: str, *, dtype: DTypeLike | None = None) -> Like:
    """Output spec: ``source``'s shape, and its dtype unless ``dtype`` is given."""
    return Like(source, dtype)


def shaped(shape: Sequence[int], dtype: DTypeLike) -> Shaped:
    """Output spec: a fixed ``shape`` and ``dtype`` (usable without importing JAX)."""
    return Shaped(tuple(int(e) for e in shape), dtype)


@dataclass(frozen=True)
class JaxParam(Defaulted):
    """One kernel parameter as the JAX op sees it (see the module docstring for the roles)."""

    name: str
    role: str
    slot: SlotKind | None = None
    default: object = _EMPTY
    #: the annotation's CuTe element type name and rank (None: any), for array roles
    dtype: str | None = None
    rank: int | None = None
    spec: OutputSpec | None = None  # an output's spec
    #: an ``Optional`` tensor or pointer: ``None`` is a static value, an array an operand
    optional: bool = False

    @property
    def is_array(self) -> bool:
        return self.role in ("array", "output", "mutated")


@dataclass(frozen=True)
class JaxPlan:
    """The whole op: its kernel's name and every parameter's role, in the kernel's order."""

    kernel: str
    params: tuple[JaxParam, ...]

    @property
    def inputs(self) -> tuple[JaxParam, ...]:
        """What the op's caller passes, in order (arrays, mutated arrays and statics)."""
        return tuple(p for p in self.params if p.role in ("array", "mutated", "static"))

    @property
    def results(self) -> tuple[JaxParam, ...]:
        """What the op returns, in the kernel's parameter order (outputs and mutated arrays)."""
        return tuple(p for p in self.params if p.role in ("output", "mutated"))


def _array_facts(slot: SlotKind | None) -> tuple[str | None, int | None]:
    if isinstance(slot, TensorKind):
        spec = slot.spec
        shape = getattr(spec, "shape", None)
        rank = getattr(spec, "rank", None)
        return cute_dtype_name(getattr(spec, "dtype", None)), rank if rank is not None else len(shape) if shape is not None else None
    if isinstance(slot, PointerKind):
        return cute_dtype_name(getattr(slot.spec, "dtype", None)), None
    return None, None


def plan(kernel: Kernel[...], outputs: Mapping[str, OutputSpec] | None, mutates_args: Sequence[str] | str) -> JaxPlan:
    """Read ``kernel``'s signature into a :class:`JaxPlan`; CB906/CB907 name what does not fit."""
    name = kernel.name
    outputs = dict(outputs or {})
    mutated = (mutates_args,) if isinstance(mutates_args, str) else tuple(mutates_args)
    params = {p.name: p for p in kernel.signature.params}

    def spec_error(got: str, expected: str) -> D.CuteBindError:
        return D.error(D.JAX_SPEC_INVALID, kernel=name, expected=expected, got=got)

    for n in (*outputs, *mutated):
        p = params.get(n)
        if p is None:
            raise spec_error(f"'{n}' is not a parameter", f"parameters of {name}: {', '.join(params)}")
        if p.slot is None or not isinstance(p.slot, (TensorKind, PointerKind)):
            raise spec_error(f"'{n}' is not a tensor or pointer parameter", "tensor or pointer parameters in outputs and mutates_args")
    both = sorted(set(outputs) & set(mutated))
    if both:
        raise spec_error(f"{', '.join(both)} in both outputs and mutates_args", "each name in one of them")
    if len(set(mutated)) != len(mutated):
        raise spec_error("a name repeated in mutates_args", "each name once")
    for n, spec in outputs.items():
        if isinstance(spec, str):
            spec = outputs[n] = Like(spec)
        if isinstance(spec, Like):
            src = params.get(spec.source)
            if src is None or src.slot is None or not isinstance(src.slot, (TensorKind, PointerKind)) or spec.source in outputs:
                raise spec_error(f"output '{n}' is like '{spec.source}', not an array input", "an array input's name")
        elif not (isinstance(spec, Shaped) or callable(spec) or (hasattr(spec, "shape") and hasattr(spec, "dtype"))):
            raise spec_error(
                f"output '{n}' is {type(spec).__name__}", "an input's name, like(), shaped(), a ShapeDtypeStruct or a function"
            )
    if not outputs and not mutated:
        raise spec_error("no outputs and no mutates_args", "at least one array the op returns (XLA drops a call whose results are unused)")

    roles: list[JaxParam] = []
    for p in kernel.signature.params:
        slot = p.slot
        # an Optional's member (before bind, its element); a union of several members is read as a whole
        inner = slot.element if isinstance(slot, OptionalKind) and not slot.is_union else slot
        if isinstance(slot, StreamKind):
            roles.append(JaxParam(p.name, "stream", slot, p.default))
        elif isinstance(slot, (TensorKind, PointerKind)) or (
            isinstance(slot, OptionalKind) and isinstance(inner, (TensorKind, PointerKind))
        ):
            dtype, rank = _array_facts(inner)
            if dtype is not None and dtype not in _CUTE_TO_JAX:
                expected = "an element type JAX has a dtype for (" + ", ".join(sorted(_CUTE_TO_JAX)) + ")"
                raise unsupported(name, p.name, expected, f"a {dtype} {slot.kind}")
            role = "output" if p.name in outputs else "mutated" if p.name in mutated else "array"
            optional = isinstance(slot, OptionalKind)  # never an output or mutated: those are plain array slots (above)
            roles.append(JaxParam(p.name, role, inner, p.default, dtype, rank, outputs.get(p.name), optional))
        elif slot is None or isinstance(slot, ScalarKind) or (isinstance(slot, OptionalKind) and _numbers_only(slot)):
            roles.append(JaxParam(p.name, "static", slot, p.default))
        elif p.has_default:
            roles.append(JaxParam(p.name, "fixed", slot, p.default))
        else:
            raise unsupported(
                name,
                p.name,
                "tensors, pointers, numbers, Constexpr values, Optional of those and the stream",
                f"a {getattr(slot, 'kind', type(slot).__name__)} parameter without a default",
            )
    return JaxPlan(name, tuple(roles))


def _numbers_only(slot: OptionalKind) -> bool:
    """Whether every member of an Optional (or union) is a number: then the whole is a static value."""
    return all(isinstance(m, ScalarKind) for m in slot.members)


class ShapeDtype(Protocol):
    """What an output spec may be besides a name, :func:`like` and :func:`shaped`: anything with a
    shape and a dtype (``jax.ShapeDtypeStruct``, an array)."""

    @property
    def shape(self) -> Sequence[int]: ...

    @property
    def dtype(self) -> DTypeLike: ...


#: what ``outputs`` maps a parameter name to (a function of the op's inputs returns a :class:`ShapeDtype`;
#: what it returns is checked when the op is traced)
OutputSpec = str | Like | Shaped | ShapeDtype | Callable[..., object]
