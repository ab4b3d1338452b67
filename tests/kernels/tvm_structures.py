"""Host-only functions taking structures, for prepared TVM-FFI launches (tests/launch/test_tvm_ffi_structures.py).

The structures are written in the styles of the clients that pass them:

- quack's GEMM family: a scheduler-arguments NamedTuple (a tensor, a DSL
  number, an optional tensor left ``None``) and a frozen dataclass of epilogue
  arguments (a tensor, a ``Float32``, an optional tensor left ``None``), both
  built anew per call;
- FlashAttention-4: ``aux_data`` carrying a nested tuple of tensors (score_mod
  with aux tensors), block-sparsity tensors in a NamedTuple with optional
  members, FP8 ``descale_tensors`` as a tuple with a ``None``;
- a structure whose leaves are Python ``int``/``float`` beside a tensor, a
  list of tensors, and a dataclass nested in a dataclass.

``None`` leaves compile their branch away (``cutlass.const_expr``); every
function writes ``out`` only from its inputs, so outputs compare bitwise.
The code is our own. (No ``from __future__ import annotations``: the DSL reads
a dataclass field's annotation as it is, and a string would not name its type.)
"""

import dataclasses
from typing import Any, NamedTuple, Optional

import cutlass
import cutlass.cute as cute


# ------------------------------------------------------------------ quack GEMM style
class SchedulerArgs(NamedTuple):
    """quack's ``TileSchedulerOptions``-like arguments: a tensor, a DSL number, an optional tensor."""

    tile_count: cute.Tensor
    max_active_clusters: cutlass.Int32
    semaphore: Optional[cute.Tensor] = None


@dataclasses.dataclass(frozen=True)
class EpilogueArgs:
    """quack's epilogue arguments: a bias tensor, a Float32 scale, an optional addend left None."""

    bias: cute.Tensor
    alpha: cutlass.Float32
    addend: Optional[cute.Tensor] = None


@cute.jit
def gemm_like(out: cute.Tensor, a: cute.Tensor, sched: SchedulerArgs, epi: EpilogueArgs):
    """out = a * alpha + bias + tile_count * max_active_clusters (+ semaphore, + addend when given)."""
    for i in range(cute.size(out)):
        v = a[i] * epi.alpha + epi.bias[i] + sched.tile_count[i] * cutlass.Float32(sched.max_active_clusters)
        if cutlass.const_expr(sched.semaphore is not None):
            v = v + sched.semaphore[i]
        if cutlass.const_expr(epi.addend is not None):
            v = v + epi.addend[i]
        out[i] = v


# ------------------------------------------------------------------ FlashAttention-4 style
@cute.jit
def aux_nested(out: cute.Tensor, q: cute.Tensor, aux_data):  # noqa: ANN001 - unannotated, as FA4's aux_tensors
    """out = q * aux[0] + aux[1][0] - aux[1][1] (a nested tuple of tensors)."""
    for i in range(cute.size(out)):
        out[i] = q[i] * aux_data[0][i] + aux_data[1][0][i] - aux_data[1][1][i]


class BlockSparse(NamedTuple):
    """FA4's block-sparsity tensors: counts and indices, the ``full_*`` pair optional."""

    mask_block_cnt: cute.Tensor
    mask_block_idx: cute.Tensor
    full_block_cnt: Optional[cute.Tensor] = None
    full_block_idx: Optional[cute.Tensor] = None


@cute.jit
def block_sparse(out: cute.Tensor, q: cute.Tensor, sparse: BlockSparse, descale: tuple):
    """out = q * descale[0] * descale[1] + cnt + idx (+ full_cnt * full_idx); descale[2] is None."""
    for i in range(cute.size(out)):
        v = q[i] * descale[0][i] * descale[1][i] + sparse.mask_block_cnt[i] + sparse.mask_block_idx[i]
        if cutlass.const_expr(sparse.full_block_cnt is not None):
            v = v + sparse.full_block_cnt[i] * sparse.full_block_idx[i]
        out[i] = v


# ------------------------------------------------------------------ Python scalars, lists, nested dataclasses
class Affine(NamedTuple):
    """A tensor beside scalar leaves launched as Python ``int``/``float`` (compiled from
    ``cutlass.Int32``/``cutlass.Float32`` values: compiling a NamedTuple from Python scalars is an
    internal compiler error in DSL 4.8.1, its TVM-FFI entry and the function disagreeing on them)."""

    weight: cute.Tensor
    shift: cutlass.Int32
    factor: cutlass.Float32


@cute.jit
def affine_struct(out: cute.Tensor, x: cute.Tensor, p: Affine):
    """out = x * weight * factor + shift."""
    for i in range(cute.size(out)):
        out[i] = x[i] * p.weight[i] * p.factor + cutlass.Float32(p.shift)


@cute.jit
def list_sum(out: cute.Tensor, ins: list, scale: cutlass.Float32):
    """out = (ins[0] + ins[1] + ins[2]) * scale (a list of tensors)."""
    for i in range(cute.size(out)):
        out[i] = (ins[0][i] + ins[1][i] + ins[2][i]) * scale


@dataclasses.dataclass
class Inner:
    """A dataclass inside the epilogue dataclass (unpacked with it)."""

    gate: cute.Tensor
    beta: cutlass.Float32


@dataclasses.dataclass
class Outer:
    inner: Inner
    bias: cute.Tensor
    tag: Any = None


@cute.jit
def nested_epilogue(out: cute.Tensor, x: cute.Tensor, epi: Outer):
    """out = x * gate * beta + bias."""
    for i in range(cute.size(out)):
        out[i] = x[i] * epi.inner.gate[i] * epi.inner.beta + epi.bias[i]


# ------------------------------------------------------------------ a structure holding the written tensor
class ScaledOut(NamedTuple):
    """The output tensor read before a number leaf (field order): the number's conversion runs after."""

    out: cute.Tensor
    alpha: cutlass.Float32


@cute.jit
def scaled_into(s: ScaledOut, inp: cute.Tensor):
    """s.out[i] = inp[i] * s.alpha."""
    for i in range(cute.size(s.out)):
        s.out[i] = inp[i] * s.alpha


@dataclasses.dataclass
class ScaledBox:
    """The same as a (mutable) dataclass, unpacked by the call."""

    out: cute.Tensor
    alpha: cutlass.Float32


@cute.jit
def scaled_box(s: ScaledBox, inp: cute.Tensor):
    """s.out[i] = inp[i] * s.alpha."""
    for i in range(cute.size(s.out)):
        s.out[i] = inp[i] * s.alpha
