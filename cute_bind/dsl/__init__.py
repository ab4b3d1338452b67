"""The one package that touches nvidia-cutlass-dsl internals.

Everything cute_bind needs from the DSL beyond its public API goes through
the modules here, one concern each, in import order (each imports only
modules above it):

- ``imports.py``: importing the DSL once, lazily (:func:`dsl`, CB502), and torch past the DSL's own ``torch.py``;
- ``version.py``: the supported versions, the installed one's number, and what it has (:func:`features`);
- ``annotations.py``: the DSL's annotation types (``Constexpr``, ``cute.Pointer``/``cute.Tensor``, ``CUstream``, numbers);
- ``hooks.py``: the source rewriter's decorator rule for the functions cute_bind jits, option checks at decoration, the compile lock;
- ``values.py``: runtime values: ``make_ptr`` pointers, ``from_dlpack`` tensors and their layouts, numbers;
- ``compiled.py``: compiled functions: signature, names, marshalling, the entry point, unload, the bare call;
- ``argument_types.py``: a compiled function's C argument types, read from its IR;
- ``devices.py``: CUDA devices, the target architecture, an executor per device;
- ``reentry.py``: the DSL's re-entry validation (4.8) for prepared launches (CB504);
- ``tvm_ffi.py``: functions compiled with ``--enable-tvm-ffi``: their entry, TVM-FFI's C API and argument setters;
- ``export.py``: what the disk cache needs: traced functions, the compiler's identity, export and load;
- ``placeholders.py``: compile-only placeholders (fake tensors and streams) for ``Kernel.compile``;
- ``compile_call.py``: ``cute.compile``'s options, targets and arguments as the cache key reads them, its hook, TVM-FFI objects on disk;
- ``contract.py``: what an installed version lacks (``check_contract``, CB501, CB503).

Each module's ``__all__`` is its public surface and this package re-exports
all of them: the rest of cute_bind imports the package (``from .. import
dsl``) and calls ``dsl.<name>``, so a test patches a function on the package.
Module-level state (the compile lock, the contract's once-flags) and names the
modules here call each other by are read on their own module
(``dsl.hooks._COMPILE_LOCK``, ``dsl.version.dsl_version``).
``check_contract()`` lists what an installed version lacks;
``tests/dsl/test_contract.py`` turns that into one clear failure per missing
piece.

Versions: cute_bind supports :data:`SUPPORTED_VERSIONS` (every minor of it is
tested by ``.ci/dsl_matrix``). What differs between those versions is decided
here, by what the installed DSL has rather than by its number
(:func:`features`), and nowhere else in the package. A version outside the
range that still has everything the contract lists runs with a one-time
CB503 warning; one that lacks something gets CB501 naming it.

The DSL is imported lazily so that ``import cute_bind`` (and the static
checker) work on machines without it.
"""

# no `from __future__ import annotations` here: it would bind the name of the annotations module
# every module's __all__ is its public surface; the package re-exports them all, in layering order
from . import (
    imports,
    version,
    annotations,
    hooks,
    values,
    compiled,
    argument_types,
    devices,
    reentry,
    tvm_ffi,
    export,
    placeholders,
    compile_call,
    contract,
)
from .imports import *  # noqa: F403
from .version import *  # noqa: F403
from .annotations import *  # noqa: F403
from .hooks import *  # noqa: F403
from .values import *  # noqa: F403
from .compiled import *  # noqa: F403
from .argument_types import *  # noqa: F403
from .devices import *  # noqa: F403
from .reentry import *  # noqa: F403
from .tvm_ffi import *  # noqa: F403
from .export import *  # noqa: F403
from .placeholders import *  # noqa: F403
from .compile_call import *  # noqa: F403
from .contract import *  # noqa: F403

__all__ = [
    *imports.__all__,
    *version.__all__,
    *annotations.__all__,
    *hooks.__all__,
    *values.__all__,
    *compiled.__all__,
    *argument_types.__all__,
    *devices.__all__,
    *reentry.__all__,
    *tvm_ffi.__all__,
    *export.__all__,
    *placeholders.__all__,
    *compile_call.__all__,
    *contract.__all__,
]
