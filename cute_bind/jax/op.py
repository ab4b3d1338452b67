"""``cute_bind.jax.op``: a cute_bind kernel as a JAX function, usable inside ``jax.jit``.

The op's caller passes the kernel's array parameters as JAX arrays and its
number and Constexpr parameters as concrete values (static per compiled
program); outputs are allocated by XLA and returned, mutated parameters are
returned as new arrays that share the inputs' buffers (input/output
aliasing: donate the inputs to ``jax.jit`` and no copy is made). The stream
is XLA's. Everything is checked when the op is made (the plan, CB906/CB907)
and when it is traced (each array and static value, CB905/CB908), before
anything compiles; lowering compiles (or loads from the disk cache) and
registers the launch with the C handler.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Sequence

from .. import diagnostics as D
from ..jit import Kernel
from ..jit.signature import Param
from ..launch.arguments import bind_arguments
from ..slots import describe_value
from .plan import JAX_DTYPES, JaxParam, JaxPlan, Like, OutputSpec, Shaped, jax_missing, plan

if TYPE_CHECKING:
    from jax import Array
    from numpy.typing import DTypeLike

    from .frames import Frame

__all__ = ["JaxOp", "op"]


def _jax() -> ModuleType:
    try:
        import jax
        import jax.numpy  # noqa: F401
    except ImportError as exc:
        raise jax_missing("JAX (pip install 'cute_bind[jax]')", exc) from exc
    module: ModuleType = jax  # mypy.ini skips JAX's own types: untyped here
    return module


class JaxOp:
    """A kernel as a JAX function (made by :func:`op`); call it inside or outside ``jax.jit``.

    ``op(*inputs, **inputs)`` takes the kernel's parameters but its outputs
    and stream, in order: arrays (JAX arrays, or anything ``jnp.asarray``
    takes) and static values. It returns the outputs and mutated arrays in
    the kernel's parameter order: the array itself when there is one, else a
    tuple.
    """

    def __init__(self, kernel: Kernel[...], plan: JaxPlan, allow_cuda_graph: bool) -> None:
        self.kernel = kernel
        self.plan = plan
        self.allow_cuda_graph = allow_cuda_graph
        jax = _jax()
        from . import primitive

        self._jax = jax
        self._jnp = jax.numpy
        self._primitive = primitive.call_p
        params = plan.params
        #: the results, in the kernel's parameter order: outputs and mutated parameters
        self.result_names = tuple(p.name for p in params if p.role in ("output", "mutated"))
        self.plan_stream = next((p for p in params if p.role == "stream"), None)
        self.frames: dict[Hashable, Frame] = {}  # by the lowering's facts (primitive.py)
        self._inputs = plan.inputs
        self._names = tuple(p.name for p in self._inputs)
        self._kwonly = frozenset(p.name for p in self._inputs if getattr(self._signature_param(p.name), "keyword_only", False))
        self._defaults = {p.name: p.default for p in self._inputs if p.has_default}
        self._hints = {p.name: ("a JAX array" if p.is_array else "a concrete value") for p in self._inputs}
        self._by_name = {p.name: p for p in params}

    def layout(self, operand_names: tuple[str, ...]) -> tuple[dict[str, tuple[int, int]], tuple[tuple[int, int], ...]]:
        """For a call with these operands: each array parameter's buffer (``(0, operand)`` or ``(1,
        result)``; a mutated one is written through its result, the same buffer when XLA aliases
        them) and the input/output aliases ``(operand, result)``."""
        sources = {n: (0, i) for i, n in enumerate(operand_names)}
        sources.update({n: (1, i) for i, n in enumerate(self.result_names)})
        aliases = tuple((operand_names.index(n), i) for i, n in enumerate(self.result_names) if n in operand_names)
        return sources, aliases

    def _signature_param(self, name: str) -> Param:
        return next(p for p in self.kernel.signature.params if p.name == name)

    def __repr__(self) -> str:
        ins = ", ".join(f"{p.name}: {p.role}" for p in self._inputs)
        outs = ", ".join(self.result_names)
        return f"<cute_bind.jax.op {self.plan.kernel}({ins}) -> ({outs})>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    # ------------------------------------------------------------------ the call
    def __call__(self, *args: object, **kwargs: object) -> Any:  # a JAX array or a tuple of them
        values = bind_arguments(self.plan.kernel, self._names, self._kwonly, self._defaults, args, kwargs, self._hints)
        operands = []
        operand_names = []
        statics: list[tuple[str, object]] = []
        avals: dict[str, Array] = {}
        for p in self._inputs:
            value = values[p.name]
            if p.optional and value is None:
                statics.append((p.name, None))  # an Optional array left out: compiled for None
            elif p.is_array:
                operand_names.append(p.name)
                array = self._array(p, value)
                avals[p.name] = array
                operands.append(array)
            else:
                statics.append((p.name, self._static(p, value)))
        results = []
        for name in self.result_names:
            p = self._by_name[name]
            if p.role == "mutated":
                shape, dtype = tuple(avals[name].shape), self._dtype_name(avals[name].dtype)
            else:
                shape, dtype = self._output(p, values, avals)
            results.append((name, shape, dtype))
        out = self._primitive.bind(
            *operands, op=self, operands=tuple(operand_names), statics=tuple(statics), results=tuple(results), graph=self.allow_cuda_graph
        )
        return out[0] if len(out) == 1 else tuple(out)

    def _dtype_name(self, dtype: DTypeLike) -> str:
        import numpy as np

        return str(np.dtype(dtype).name)

    def _mismatch(self, p: JaxParam, expected: str, got: str, diagnostic: D.Diagnostic = D.JAX_ARRAY_MISMATCH) -> D.CuteBindError:
        return D.error(diagnostic, kernel=self.plan.kernel, parameter=p.name, expected=expected, got=got)

    def _check(self, p: JaxParam, shape: tuple[int, ...], dtype: str, what: str) -> None:
        cute = JAX_DTYPES.get(dtype)
        if cute is None:
            raise self._mismatch(
                p, "an array of a dtype with a CuTe element type (" + ", ".join(JAX_DTYPES) + ")", f"{what} of dtype {dtype}"
            )
        if p.dtype is not None and cute != p.dtype:
            want = next(k for k, v in JAX_DTYPES.items() if v == p.dtype)
            raise self._mismatch(p, f"a {want} array ({p.dtype}, as annotated)", f"{what} of dtype {dtype}")
        if p.rank is not None and len(shape) != p.rank:
            raise self._mismatch(p, f"an array of rank {p.rank} (as annotated)", f"{what} of shape {shape}")
        if p.slot is not None and getattr(p.slot, "kind", "") == "tensor" and len(shape) == 0:
            raise self._mismatch(p, "an array of rank 1 or more for a tensor", f"{what} of shape ()")

    def _array(self, p: JaxParam, value: object) -> Array:
        jax, jnp = self._jax, self._jnp
        array: Array
        if isinstance(value, (jax.Array, jax.core.Tracer)):
            array = value
        else:
            try:
                array = jnp.asarray(value)
            except (TypeError, ValueError) as exc:
                raise self._mismatch(p, "a JAX array", f"{describe_value(value)} ({type(exc).__name__}: {exc})") from exc
        self._check(p, tuple(array.shape), self._dtype_name(array.dtype), "an array")
        return array

    def _static(self, p: JaxParam, value: object) -> object:
        jax = self._jax
        if isinstance(value, jax.core.Tracer) or isinstance(value, jax.Array):
            traced = "traced " if isinstance(value, jax.core.Tracer) else ""
            got = f"a {traced}JAX value {describe_value(value)} (it lives on the device)"
            raise self._mismatch(p, "a concrete Python value fixed when the call is traced", got, D.JAX_STATIC_VALUE)
        item = getattr(value, "item", None)
        if item is not None and type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
            value = item()  # a NumPy scalar: the Python number (what the slots take, and hashable as one)
        try:
            hash(value)
        except TypeError as exc:
            raise self._mismatch(
                p, "a hashable value (JAX caches the lowering by it)", f"{describe_value(value)} ({exc})", D.JAX_STATIC_VALUE
            ) from exc
        return value

    def _output(self, p: JaxParam, values: dict[str, object], avals: dict[str, Array]) -> tuple[tuple[int, ...], str]:
        spec = p.spec
        if isinstance(spec, Like):
            src = avals[spec.source]
            shape, dtype = tuple(src.shape), self._dtype_name(spec.dtype if spec.dtype is not None else src.dtype)
        elif isinstance(spec, Shaped):
            shape, dtype = spec.shape, self._dtype_name(spec.dtype)
        else:
            made: object = spec
            if callable(spec) and not (hasattr(spec, "shape") and hasattr(spec, "dtype")):
                made = spec(*(values[q.name] for q in self._inputs))
            if not (hasattr(made, "shape") and hasattr(made, "dtype")):
                raise D.error(
                    D.JAX_SPEC_INVALID,
                    kernel=self.plan.kernel,
                    expected=f"output '{p.name}': something with .shape and .dtype (jax.ShapeDtypeStruct)",
                    got=describe_value(made),
                )
            shape, dtype = tuple(int(e) for e in made.shape), self._dtype_name(made.dtype)
        self._check(p, shape, dtype, "an output")
        return shape, dtype


def op(
    kernel: Kernel[...] | Callable[..., object],
    /,
    *,
    outputs: Mapping[str, OutputSpec] | None = None,
    mutates_args: Sequence[str] | str = (),
    allow_cuda_graph: bool = True,
) -> JaxOp:
    """Make a cute_bind kernel a JAX function (see :class:`JaxOp`), checked now.

    - ``outputs``: tensor or pointer parameters the op allocates (XLA does)
      and returns, each mapped to an input's name (its shape and dtype),
      :func:`~cute_bind.jax.like` (``like("x", dtype="float16")``),
      :func:`~cute_bind.jax.shaped`, a ``jax.ShapeDtypeStruct`` or a function
      of the op's inputs returning one.
    - ``mutates_args``: array parameters the kernel writes in place: each is
      an input and a result sharing its buffer (``input_output_aliases``);
      with the input donated (``jax.jit(..., donate_argnums=...)``) XLA makes
      no copy.
    - ``allow_cuda_graph``: whether XLA may capture the call into a CUDA graph
      (its command buffers); ``False`` for a kernel whose host code does more
      than launch (a synchronisation, an allocation).

    ``kernel`` is a :class:`cute_bind.Kernel` (the object torch users call) or a
    ``@cute.jit`` function, wrapped with :func:`cute_bind.kernel` first. Errors:
    CB901 (no JAX), CB906 (a parameter JAX cannot pass), CB907 (the specs).
    """
    _jax()
    if not isinstance(kernel, Kernel):
        from ..jit import kernel as make_kernel

        kernel = make_kernel(kernel)
    return JaxOp(kernel, plan(kernel, outputs, mutates_args), allow_cuda_graph)


#: the type of :func:`op`'s result, for annotations
OpFunction = Callable[..., Any]
