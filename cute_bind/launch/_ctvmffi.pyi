"""Type stub of the optional C fast path of prepared TVM-FFI launches (cute_bind/launch/_ctvmffi.c).

tests/launch/test_spec.py checks it against what the C module declares (its
text signatures, TVM_FFI_LAUNCH_SPEC_FIELDS, TENSOR_ARG_FIELDS, CONSTANT_ARG_FIELDS,
STRUCTURE_ARG_FIELDS, STRUCTURE_NODE_FIELDS).
"""

from typing import Callable

from .spec import TvmFfiLaunchSpec

#: the TvmFfiLaunchSpec fields Launcher(spec) reads, in order
TVM_FFI_LAUNCH_SPEC_FIELDS: tuple[str, ...]
#: the TvmTensorArg fields, in the position order C reads them
TENSOR_ARG_FIELDS: tuple[str, ...]
#: the TvmConstantArg fields, in the position order C reads them
CONSTANT_ARG_FIELDS: tuple[str, ...]
#: the TvmStructureArg fields, in the position order C reads them
STRUCTURE_ARG_FIELDS: tuple[str, ...]
#: the TvmStructureNode fields, in the position order C reads them
STRUCTURE_NODE_FIELDS: tuple[str, ...]

class Launcher:
    def __init__(self, spec: TvmFfiLaunchSpec, /) -> None: ...
    def launch(self, /, *args: object, **kwargs: object) -> object: ...
    def poison(self, refuse: Callable[[], object], /) -> None: ...
