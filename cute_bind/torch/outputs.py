"""An op's outputs: the tensors a functional op allocates (eagerly and in its fake implementation).

``outputs`` maps each output parameter to an input's name, a :class:`Like` (:func:`like`) or a
function of the op's inputs; :func:`alloc_source` checks the spec and says how the generated call
allocates it, :func:`output_checker` checks what a function returned, :func:`fake` is the op's
fake implementation under tracing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence, Union

from .. import diagnostics as D
from .runtime import Runtime
from .schema import OpParam, OpPlan

if TYPE_CHECKING:
    import torch

__all__ = ["Like", "OutputSpec", "alloc_source", "fake", "like", "output_checker"]


@dataclass(frozen=True)
class Like:
    """An output allocated like one of the op's tensor inputs.

    ``torch.empty_like(source, dtype=dtype or source.dtype, memory_format=torch.contiguous_format)``:
    same extents and device, contiguous. Made by :func:`like`.
    """

    source: str
    dtype: torch.dtype | None = None

    def describe(self) -> str:
        return f"like({self.source!r}" + (f", dtype={self.dtype}" if self.dtype is not None else "") + ")"


def like(source: str, *, dtype: torch.dtype | None = None) -> Like:
    """Output spec: a contiguous tensor with ``source``'s extents and device (and its dtype unless given)."""
    return Like(source, dtype)


#: What ``outputs`` maps a parameter name to: an input's name (``like(name)``), a :class:`Like`,
#: or a function of the op's inputs (in schema order) returning the allocated tensor.
OutputSpec = Union[str, Like, Callable[..., "torch.Tensor"]]
#: How an output is allocated (:func:`alloc_source`): like an input, or by the function given.
Allocation = Union[Like, Callable[..., "torch.Tensor"]]


def alloc_source(p: OpParam, spec: OutputSpec, plan: OpPlan, inputs: Sequence[OpParam]) -> tuple[str, Allocation]:
    """(Python expression allocating output ``p``, the object it names), checked against the plan."""
    names = ", ".join(i.name for i in inputs)
    if isinstance(spec, Like):
        src = next((i for i in inputs if i.name == spec.source), None)
        if src is None or not src.tensor or src.sequence or src.optional:
            tensors = ", ".join(i.name for i in inputs if i.tensor and not i.sequence and not i.optional) or "none"
            raise D.error(
                D.OP_SPEC_INVALID,
                kernel=plan.kernel,
                parameter=p.name,
                expected=f"outputs[{p.name!r}]: like() of one of the op's tensor inputs ({tensors})",
                got=spec.describe(),
            )
        dtype = "" if spec.dtype is None else f", dtype=_cb_dtype_{p.name}"
        return f"_cb_empty_like({spec.source}{dtype}, memory_format=_cb_contiguous)", spec
    if callable(spec):
        return f"_cb_check_{p.name}(_cb_alloc_{p.name}({names}))", spec
    raise D.error(
        D.OP_SPEC_INVALID,
        kernel=plan.kernel,
        parameter=p.name,
        expected=f"outputs[{p.name!r}]: an input's name, cute_bind.torch.like(...), or a function of the inputs returning a tensor",
        got=repr(spec)[:80],
    )


def output_checker(rt: Runtime, plan: OpPlan, name: str) -> Callable[[object], torch.Tensor]:
    tensor = rt.Tensor

    def check(value: object) -> torch.Tensor:
        if not isinstance(value, tensor):
            raise D.error(
                D.OP_OUTPUT_INVALID,
                kernel=plan.kernel,
                parameter=name,
                expected="the output function to return a torch.Tensor",
                got=f"{type(value).__name__} {value!r}"[:80],
            )
        return value

    return check


def fake(rt: Runtime, plan: OpPlan, allocs: dict[str, tuple[str, Allocation]]) -> Callable[..., object]:
    """The fake implementation: nothing for a mutating op, the allocations of a functional one."""
    inputs = plan.inputs
    names = [p.name for p in inputs]
    if not plan.outputs:

        def fake_mutating(*args: object, **kwargs: object) -> None:
            return None

        return fake_mutating

    def from_like(spec: Like, values: dict[str, object], args: tuple[object, ...]) -> torch.Tensor:
        return rt.empty_like(values[spec.source], dtype=spec.dtype, memory_format=rt.contiguous)

    def from_function(
        fn: Callable[..., torch.Tensor], check: Callable[[object], torch.Tensor], values: dict[str, object], args: tuple[object, ...]
    ) -> torch.Tensor:
        return check(fn(*args))

    makers: list[Callable[[dict[str, object], tuple[object, ...]], torch.Tensor]] = []
    for out in plan.outputs:
        _, obj = allocs[out]
        if isinstance(obj, Like):
            makers.append(functools.partial(from_like, obj))
        else:
            makers.append(functools.partial(from_function, obj, output_checker(rt, plan, out)))

    defaults = {p.name: p.default for p in inputs if p.has_default}

    def fake_functional(*args: object, **kwargs: object) -> torch.Tensor | tuple[torch.Tensor, ...]:
        values = dict(defaults)
        values.update(zip(names, args))
        values.update(kwargs)
        ordered = tuple(values[n] for n in names)
        made = [m(values, ordered) for m in makers]
        return made[0] if len(made) == 1 else tuple(made)

    return fake_functional
