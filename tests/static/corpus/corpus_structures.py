"""Unions of eligible kinds with None and structures (NamedTuple, dataclass), as FlashAttention-4
and quack annotate their host functions: eligible ones report nothing, the rest CB114/CB125/CB102."""

import dataclasses
import typing
from typing import NamedTuple, Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Constexpr, Float32, Int32

import cute_bind
from tests.static.corpus import structures_helper as helper
from tests.static.corpus.structures_helper import Alias, Labelled, MaybeSink, Plain, SinkTensors


class AuxData(NamedTuple):
    """FlashAttention-4's AuxData: every field None by default (a compile-time constant)."""

    tensors: tuple | list | None = None
    scalars: tuple | None = None


class BlockSparseTensors(NamedTuple):
    mask_block_cnt: cute.Tensor
    mask_block_idx: cute.Tensor
    full_block_cnt: cute.Tensor | None = None
    full_block_idx: "cute.Tensor | None" = None


class Nested(NamedTuple):
    inner: BlockSparseTensors
    scale: Float32
    nothing: None = None


@dataclasses.dataclass(frozen=True)
class Epilogue:
    alpha: Float32 | cute.Pointer | None
    beta: cutlass.Float32
    times: Constexpr[int] = 1
    kept: typing.ClassVar[int] = 3


class Labels(NamedTuple):
    scale: Float32
    label: str


class Compiled(NamedTuple):
    n: Int32
    k: Constexpr[int] = 3


class Streamed(NamedTuple):
    t: cute.Tensor
    stream: cuda.CUstream | None


@dataclasses.dataclass
class StreamedData:
    t: cute.Tensor
    stream: cuda.CUstream


@cute_bind.kernel
def unions(
    window_size_left: Int32 | int | None,
    window_size_right: Int32 | int | None,
    alpha: Optional[Float32 | cute.Pointer],
    beta: typing.Optional[typing.Union[Float32, cute.Pointer]],
    two: typing.Union[cutlass.Int32, cutlass.Float32, None],
    piped_two: cutlass.Int32 | cutlass.Float32 | None,
    sequences: tuple | list | None,
    bad: Int32 | str | None,  # expect: CB114
    bad_optional: typing.Optional[typing.Union[Float32, cute.Layout]],  # expect: CB114
    no_none: Int32 | int,  # expect: CB102
) -> None:
    pass


@cute_bind.kernel
def structures(
    aux_data: AuxData,
    blocksparse_tensors: Optional[BlockSparseTensors],
    sink_tensors: SinkTensors | None,
    nested: Nested,
    epilogue: Epilogue,
    aliased: Alias,
    maybe: MaybeSink,
    by_module: helper.SinkTensors,
    labels: Labels,  # expect: CB125
    labelled: Labelled,  # expect: CB125
    compiled: Compiled,  # a NamedTuple's Constexpr field: a constant, as in a dataclass
    streamed: Streamed,  # expect: CB125
    streamed_data: StreamedData,
    plain: Plain,  # expect: CB102
    maybe_labels: Labels | None,  # expect: CB114
) -> None:
    pass
