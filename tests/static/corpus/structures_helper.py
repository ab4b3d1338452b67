"""Structures defined in another module, for corpus_structures.py: the static tools read
this file's source to classify them (nothing is imported), as the runtime imports it."""

from dataclasses import dataclass
from typing import NamedTuple, Optional

import cutlass
import cutlass.cute as cute


class SinkTensors(NamedTuple):
    """FlashAttention-4's LearnableSinkBwdTensors shape: four tensors."""

    dpsum: cute.Tensor
    lse: cute.Tensor
    sink: cute.Tensor
    dsink: cute.Tensor


@dataclass
class Labelled:
    """A dataclass with a field that is not an eligible kind."""

    scale: cutlass.Float32
    label: str = ""


class Plain:
    """A plain class: not a structure."""


Alias = SinkTensors
MaybeSink = Optional[SinkTensors]
