"""Type stub of the optional C fast path (cute_bind/launch/_claunch.c).

tests/launch/test_spec.py checks it against what the C module declares (its
text signatures and the field lists of every record it reads by name).
"""

from typing import Any, Callable

from ..slots.dlpack import ArrayLayout, CtypesLayout
from .native import TorchReader
from .spec import LaunchSpec

#: the LaunchSpec fields Launcher(spec) reads, in order
LAUNCH_SPEC_FIELDS: tuple[str, ...]
#: the SeqLeaf fields a sequence slot's leaves are read by
SEQ_LEAF_FIELDS: tuple[str, ...]
#: the slot records' fields C reads by name: CTensorSpec, CMode, CPointerSpec, CStreamSpec, CNumberSpec
TENSOR_SPEC_FIELDS: tuple[str, ...]
#: the records configure() reads by name: slots.dlpack.ArrayLayout, CtypesLayout, launch.native.TorchReader
ARRAY_LAYOUT_FIELDS: tuple[str, ...]
CTYPES_LAYOUT_FIELDS: tuple[str, ...]
TORCH_READER_FIELDS: tuple[str, ...]
MODE_FIELDS: tuple[str, ...]
POINTER_SPEC_FIELDS: tuple[str, ...]
STREAM_SPEC_FIELDS: tuple[str, ...]
NUMBER_SPEC_FIELDS: tuple[str, ...]

class Launcher:
    def __init__(self, spec: LaunchSpec, /) -> None: ...
    def launch(self, /, *args: Any, **kwargs: Any) -> int | None: ...
    def try_launch(self, /, *args: Any, **kwargs: Any) -> Any: ...
    def poison(self, refuse: Callable[[], Any], /) -> None: ...
    def write_and_call(self, data: bytes, /) -> int | None: ...

def configure(array_layout: ArrayLayout | None, ctypes_layout: CtypesLayout | None, torch_reader: TorchReader | None = None, /) -> None: ...
def counts() -> dict[str, int]: ...
