"""Slot kinds: how a runtime parameter is recognised, checked and stored.

``base`` defines what a kind is (:class:`SlotKind`) and the records the launch
loop uses; ``registry`` holds the kinds in the order they are tried. Each
other module is one kind and joins the registry when imported: the order of
the imports below is the order in which annotations are tried. A kind defined
outside the package joins the same way (``registry.register``).
"""

from __future__ import annotations

from . import pointer, scalar, stream, tensor  # noqa: F401  (element kinds, in order)
from . import sequence  # noqa: F401  (composite: built from the element kinds)
from . import optional  # noqa: F401  (composite: None or one eligible kind, fixed at bind)
from . import structure  # noqa: F401  (composite: a NamedTuple/dataclass of eligible kinds or None)
from .base import Bound, Constexpr, Rejected, SlotKind, Where, describe_annotation, describe_value, is_namedtuple, item_ranges
from .optional import OptionalKind
from .pointer import PointerKind
from .registry import classify, element_kinds, infer_slot, kinds, register
from .scalar import ScalarKind, bfloat16_bits, float16_bits
from .sequence import SequenceKind
from .stream import StreamKind, is_stream_value
from .structure import StructureKind, compile_copy
from .tensor import TensorKind

__all__ = [
    "Bound",
    "Constexpr",
    "OptionalKind",
    "PointerKind",
    "Rejected",
    "ScalarKind",
    "SequenceKind",
    "SlotKind",
    "StreamKind",
    "StructureKind",
    "TensorKind",
    "Where",
    "bfloat16_bits",
    "classify",
    "compile_copy",
    "describe_annotation",
    "describe_value",
    "element_kinds",
    "float16_bits",
    "infer_slot",
    "is_namedtuple",
    "is_stream_value",
    "item_ranges",
    "kinds",
    "register",
]
