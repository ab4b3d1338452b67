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

from __future__ import annotations

from .imports import (
    DSL,
    dsl,
    import_torch,
)
from .version import (
    SUPPORTED_VERSIONS,
    dsl_version,
    version_supported,
    Features,
    features,
)
from .annotations import (
    is_constexpr,
    cute_pointer_class,
    cute_tensor_class,
    cuda_stream_class,
    is_numeric_type,
)
from .hooks import (
    DSL_DECORATION_MARKS,
    is_dsl_decorated,
    jit,
    compile_options_problem,
    preprocessing_source,
    compile_jit,
)
from .values import (
    is_runtime_pointer,
    runtime_pointer_fields,
    make_pointer,
    Mode,
    TensorLayout,
    is_dsl_tensor,
    dsl_tensor,
    dsl_tensor_capsule,
    tensor_layout,
    numeric_value,
)
from .compiled import (
    is_compiled,
    is_executor,
    direct_call_tensor_layout,
    compiled_from_dsl_values,
    execution_args_of,
    RuntimeSignature,
    runtime_signature,
    mangled_name,
    function_name,
    workspace_argument_count,
    marshal,
    EntryPoint,
    entry_point,
    entry_function,
    is_unloaded,
    add_unload_listener,
    unload,
    BareCall,
    bare_call,
    raw_kernel_function,
    compiled_display_name,
)
from .argument_types import (
    entry_argument_types,
    descriptor_fields,
    tensor_argument_groups,
    compiled_argument_types,
)
from .devices import (
    cuda_error_name,
    cuda_device_count,
    target_arch,
    executor_on_device,
)
from .reentry import (
    specialization_guard,
)
from .tvm_ffi import (
    is_tvm_ffi_compiled,
    TvmFfiEntry,
    tvm_ffi_entry,
    tvm_ffi_missing,
    tvm_ffi_error,
    dlpack_exchange_functions,
    is_tvm_ffi_function,
    tvm_ffi_function_entry,
    tvm_ffi_scalar_kind,
    TVM_FFI_CONSTANT_DEPTH,
    tvm_ffi_constant_leaves_ok,
    tvm_ffi_constant,
)
from .export import (
    traced_functions,
    is_dsl_module_name,
    compiler_identity,
    export_object,
    load_object,
    is_loaded_from_binary,
    source_code,
)
from .placeholders import (
    CompileOnly,
    compile_only,
    compiling,
    is_fake_tensor,
    is_fake_stream,
    fake_tensor_facts,
    fake_tensor_spelling,
    fake_stream_spelling,
    laid_out_tensor,
)
from .contract import (
    check_contract,
    require_contract,
    warn_untested_version,
    require_contract_once,
)

__all__ = [
    # imports
    "DSL",
    "dsl",
    "import_torch",
    # version
    "SUPPORTED_VERSIONS",
    "dsl_version",
    "version_supported",
    "Features",
    "features",
    # annotations
    "is_constexpr",
    "cute_pointer_class",
    "cute_tensor_class",
    "cuda_stream_class",
    "is_numeric_type",
    # hooks
    "DSL_DECORATION_MARKS",
    "is_dsl_decorated",
    "jit",
    "compile_options_problem",
    "preprocessing_source",
    "compile_jit",
    # values
    "is_runtime_pointer",
    "runtime_pointer_fields",
    "make_pointer",
    "Mode",
    "TensorLayout",
    "is_dsl_tensor",
    "dsl_tensor",
    "dsl_tensor_capsule",
    "tensor_layout",
    "numeric_value",
    # compiled
    "is_compiled",
    "is_executor",
    "direct_call_tensor_layout",
    "compiled_from_dsl_values",
    "execution_args_of",
    "RuntimeSignature",
    "runtime_signature",
    "mangled_name",
    "function_name",
    "workspace_argument_count",
    "marshal",
    "EntryPoint",
    "entry_point",
    "entry_function",
    "is_unloaded",
    "add_unload_listener",
    "unload",
    "BareCall",
    "bare_call",
    "raw_kernel_function",
    "compiled_display_name",
    # argument_types
    "entry_argument_types",
    "descriptor_fields",
    "tensor_argument_groups",
    "compiled_argument_types",
    # devices
    "cuda_error_name",
    "cuda_device_count",
    "target_arch",
    "executor_on_device",
    # reentry
    "specialization_guard",
    # tvm_ffi
    "is_tvm_ffi_compiled",
    "TvmFfiEntry",
    "tvm_ffi_entry",
    "tvm_ffi_missing",
    "tvm_ffi_error",
    "dlpack_exchange_functions",
    "is_tvm_ffi_function",
    "tvm_ffi_function_entry",
    "tvm_ffi_scalar_kind",
    "TVM_FFI_CONSTANT_DEPTH",
    "tvm_ffi_constant_leaves_ok",
    "tvm_ffi_constant",
    # export
    "traced_functions",
    "is_dsl_module_name",
    "compiler_identity",
    "export_object",
    "load_object",
    "is_loaded_from_binary",
    "source_code",
    # placeholders
    "CompileOnly",
    "compile_only",
    "compiling",
    "is_fake_tensor",
    "is_fake_stream",
    "fake_tensor_facts",
    "fake_tensor_spelling",
    "fake_stream_spelling",
    "laid_out_tensor",
    # contract
    "check_contract",
    "require_contract",
    "warn_untested_version",
    "require_contract_once",
]
