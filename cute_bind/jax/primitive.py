"""The JAX primitive of a cute_bind kernel call: abstract evaluation, lowering to XLA FFI, transforms.

Imported only when JAX is (by :func:`cute_bind.jax.op`): ``import cute_bind``
and ``import cute_bind.jax`` never import JAX.

One primitive, ``cute_bind_call``, for every op. Its parameters are hashable
facts of one call: the op, the static values, the result shapes and dtypes
and whether CUDA graphs may capture it. Tracing only evaluates shapes
(nothing is compiled); lowering, once per distinct call per process, makes
the frame (:mod:`cute_bind.jax.frames`: bind, compile or load from the disk
cache, register with the C handler) and emits a typed-FFI custom call with
one attribute, the frame's id. XLA then runs the call with no Python: the
handler (``_cxla.c``) writes the buffers' addresses and XLA's stream into a
copy of the frame's storage and calls the compiled entry point.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Callable, NoReturn, Protocol, Sequence

import jax
import jax.extend
import numpy as np
from jax.interpreters import ad, batching, mlir

from .. import diagnostics as D
from .frames import frame_for, handler_module
from .plan import unsupported

if TYPE_CHECKING:
    from collections.abc import Hashable

    from ..jit import Kernel
    from .frames import Frame
    from .plan import JaxParam, JaxPlan


class OpView(Protocol):
    """What the primitive reads of its ``op`` parameter (a :class:`cute_bind.jax.op.JaxOp`, which
    imports this module: named by its shape here, so the two modules import one way)."""

    kernel: Kernel[...]
    plan: JaxPlan
    plan_stream: JaxParam | None
    frames: dict[Hashable, Frame]

    def layout(self, operand_names: tuple[str, ...]) -> tuple[dict[str, tuple[int, int]], tuple[tuple[int, int], ...]]: ...


#: the primitive's parameters (besides ``op`` and ``graph``): operand names, static values, results
_Statics = tuple[tuple[str, object], ...]
_Results = tuple[tuple[str, tuple[int, ...], str], ...]

__all__ = ["call_p", "TARGET", "TARGET_NO_GRAPH", "register_targets", "PLATFORMS"]

#: the FFI target names: the command-buffer-compatible handler, and the one XLA never captures into a CUDA graph
TARGET = "cute_bind_call"
TARGET_NO_GRAPH = "cute_bind_call_no_graph"
#: the JAX platforms a call lowers for (their XLA platform names)
PLATFORMS = {"cuda": "CUDA", "cpu": "cpu"}

call_p = jax.extend.core.Primitive("cute_bind_call")
call_p.multiple_results = True

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register_targets() -> None:
    """Register both FFI targets with XLA, for every platform, once per process (idempotent)."""
    with _LOCK:
        if _REGISTERED:
            return
        cxla = handler_module()
        for name, graph in ((TARGET, True), (TARGET_NO_GRAPH, False)):
            for platform in PLATFORMS.values():
                jax.ffi.register_ffi_target(name, cxla.handlers(graph), platform=platform, api_version=1)
        _REGISTERED.add(TARGET)


def _abstract(
    *avals: object, op: OpView, operands: tuple[str, ...], statics: _Statics, results: _Results, graph: bool
) -> list[jax.core.ShapedArray]:
    return [jax.core.ShapedArray(shape, np.dtype(dtype)) for _, shape, dtype in results]


call_p.def_abstract_eval(_abstract)


@functools.lru_cache(maxsize=256)
def _eager(params: tuple[tuple[str, object], ...]) -> Callable[..., object]:
    """The jitted single call an eager call runs (one per distinct call, as jit's own cache would keep)."""
    kwargs = dict(params)
    jitted: Callable[..., object] = jax.jit(lambda *a: call_p.bind(*a, **kwargs))
    return jitted


def _impl(*args: object, **params: object) -> object:
    # outside jit (eager JAX): run the one call jitted, as JAX does for its own primitives
    return _eager(tuple(sorted(params.items())))(*args)


call_p.def_impl(_impl)


def _lowering(platform: str) -> Callable[..., Sequence[mlir.ir.Value]]:
    def lower(
        ctx: mlir.LoweringRuleContext,
        *values: mlir.ir.Value,
        op: OpView,
        operands: tuple[str, ...],
        statics: _Statics,
        results: _Results,
        graph: bool,
    ) -> Sequence[mlir.ir.Value]:
        if getattr(ctx.module_context.lowering_parameters, "for_export", False):
            raise D.error(
                D.JAX_EXPORT_UNSUPPORTED,
                kernel=op.kernel.name,
                expected="a program run in the process that lowers it (jax.jit)",
                got="jax.export of a program holding a cute_bind.jax call",
            )
        if platform == "cuda" and op.plan_stream is None:
            raise unsupported(
                op.kernel.name,
                "stream",
                "a stream parameter (cuda.CUstream) the handler fills with XLA's stream",
                "a kernel without one: it would launch on the default stream, outside XLA's stream order",
            )
        register_targets()
        arrays = {name: (tuple(a.shape), np.dtype(a.dtype).name) for name, a in zip(operands, ctx.avals_in)}
        arrays.update({name: (tuple(shape), dtype) for name, shape, dtype in results})
        sources, aliases = op.layout(operands)
        key = (platform, operands, statics, tuple(sorted(arrays.items())))
        frame = op.frames.get(key)
        if frame is None:
            frame = frame_for(op.kernel, op.plan, dict(statics), arrays, sources, (len(operands), len(results)), platform)
            op.frames[key] = frame
        rule = jax.ffi.ffi_lowering(TARGET if graph else TARGET_NO_GRAPH, operand_output_aliases=dict(aliases))
        lowered: Sequence[mlir.ir.Value] = rule(ctx, *values, cute_bind_frame=np.uint64(frame.id))
        return lowered

    return lower


for _platform in PLATFORMS:
    mlir.register_lowering(call_p, _lowering(_platform), platform=_platform)


def _refuse(what: str) -> Callable[..., NoReturn]:
    def rule(*args: object, op: OpView | None = None, **params: object) -> NoReturn:
        raise D.error(
            D.JAX_TRANSFORM_UNSUPPORTED,
            kernel=op.kernel.name if op is not None else "?",
            expected="jax.jit, control flow and shard_map around the call",
            got=f"{what} of a cute_bind.jax call (the kernel has no {'batching rule' if what == 'jax.vmap' else 'derivative'})",
        )

    return rule


batching.primitive_batchers[call_p] = _refuse("jax.vmap")
ad.primitive_jvps[call_p] = _refuse("jax.jvp/jax.grad")
ad.primitive_transposes[call_p] = _refuse("jax.vjp/transpose")
