"""CB3xx, preparing: the catalog entries of this range, in code order.

Raised by ``bind()`` / ``prepare()`` while preparing a compiled function
(its marshalling, argument types, TVM-FFI functions).
"""

from .. import errors as _E
from ..define import entry as _entry
from ..define import illustration as _illustration
from .examples import PRELUDE as _PRELUDE

NOT_COMPILED = _entry(
    "CB301",
    "not-compiled",
    _E.LaunchArgumentError,
    summary="cute_bind.prepare() was given something that is not a compiled function.",
    message="prepare(): expected {expected}, got {got}",
    explanation="""
    `cute_bind.prepare(compiled, *args)` wraps the result of `cute.compile(...)`
    (or of `compiled.to(device)`). For a function that is not compiled yet,
    decorate it with `@cute_bind.kernel` and call `.bind(...)`.
    """,
    example=_PRELUDE
    + """
def not_compiled(x):
    pass

cute_bind.prepare(not_compiled, 1)   # a plain function -> CB301
""",
    fix="Pass `cute.compile(fn, ...)`'s result, or use `@cute_bind.kernel` and `.bind(...)`.",
)


UNSUPPORTED_MARSHALLING = _entry(
    "CB302",
    "unsupported-marshalling",
    _E.LaunchRuntimeError,
    summary="The DSL marshalled a slot into a shape cute_bind does not reproduce.",
    message="kernel '{kernel}', parameter '{parameter}': the DSL produced {got} for this slot; expected {expected}",
    explanation="""
    At `bind()`/`prepare()` cute_bind runs the DSL's own marshalling once and
    checks that each scalar, pointer, stream and tensor (and each element of
    a sequence) became exactly one C pointer to storage of the slot's size.
    Anything else (a value the DSL expands into more pointers, e.g. a value
    given to a parameter compiled as a different kind) cannot be rewritten in
    place safely.
    """,
    example=_illustration(
        "Only a DSL release that marshals an eligible kind differently produces this; prepare() then refuses the handle. Shown here as the error it raises:",
        kernel="scale",
        parameter="n",
        expected="one C pointer per runtime parameter (2)",
        got="3 C pointers in all",
    ),
    fix="Pass values of the kinds the function was compiled with.",
)


WORKSPACE_ARGUMENTS = _entry(
    "CB303",
    "workspace-arguments",
    _E.LaunchArgumentError,
    summary="The compiled function needs extra workspace arguments.",
    message="kernel '{kernel}': the compiled function takes {got} extra workspace argument(s); expected {expected}",
    explanation="""
    Some CuTe extensions add auxiliary arguments after the declared
    parameters. cute_bind prepares the declared parameters only.
    """,
    example=_illustration(
        "Raised by prepare() for functions compiled with CuTe extensions that add workspace arguments; plain host functions never do.",
        kernel="k",
        expected="0",
        got="2",
    ),
    fix="Call the compiled function directly for kernels that need workspace arguments.",
)


NO_ENGINE = _entry(
    "CB304",
    "no-execution-engine",
    _E.LaunchRuntimeError,
    summary="The compiled function cannot execute on this machine.",
    message="kernel '{kernel}': the compiled function has no execution engine ({got}); expected {expected}",
    explanation="""
    Functions compiled for export (or loaded without an engine) cannot be
    called in this process, so they cannot be prepared either. Device kernels
    compiled on a machine without a GPU (with `CUTE_DSL_ARCH` set) cannot be
    loaded there either; `kernel.compile(...)` still compiles them.
    """,
    example=_PRELUDE
    + """
import os
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")   # compile for a GPU, even on a CPU-only machine

@cute.kernel
def scale_kernel(out: cute.Pointer, n: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(128))
    i = cute.arch.thread_idx()[0]
    if i < n:
        t[i] = cutlass.Float32(0.0)

@cute_bind.kernel
def scale(out: cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem], n: cutlass.Int32):
    scale_kernel(out, n).launch(grid=(1, 1, 1), block=(128, 1, 1))

scale.compile(1 << 20, 128)   # compiling works anywhere
scale.bind(1 << 20, 128)      # on a machine without a GPU: the module cannot load -> CB304
""",
    fix=(
        "A device kernel needs a GPU and its CUDA driver to load: without them `kernel.compile(...)` still "
        "compiles it, and `bind()` or a call works on a machine that has both. A function compiled for export "
        "(or loaded without an engine): compile it with `cute.compile(...)` in this process."
    ),
)


SNAPSHOT_MISMATCH = _entry(
    "CB305",
    "snapshot-mismatch",
    _E.LaunchRuntimeError,
    summary="cute_bind's bytes for a slot differ from the DSL's marshalled bytes.",
    message="kernel '{kernel}', parameter '{parameter}': the DSL marshalled {expected}, cute_bind would write {got}",
    explanation="""
    At `bind()` cute_bind writes each value with its own packing and compares
    the bytes with what the DSL's normal call path produced for the same
    value. They must be identical; a difference means the installed DSL
    changed how it stores this kind, and launching could pass wrong bytes.
    """,
    example=_illustration(kernel="k", parameter="n", expected="b'\\x01\\x00\\x00\\x00'", got="b'\\x00\\x00\\x00\\x01'"),
    fix="Report it with your nvidia-cutlass-dsl version; until fixed, call the compiled function directly.",
)


_PREPARE_TENSOR = (
    _PRELUDE
    + """
import numpy as np
from cutlass.cute.runtime import from_dlpack

@cute.jit
def double(out, inp):                  # unannotated: the compile's tensors decide the layout
    for i in range(cute.size(out)):
        out[i] = inp[i] * 2

x = np.arange(8, dtype=np.float32)
y = np.zeros(8, dtype=np.float32)
"""
)


COMPILED_DESCRIPTOR_MISMATCH = _entry(
    "CB306",
    "compiled-descriptor-mismatch",
    _E.LaunchValueError,
    summary="prepare(): a tensor would be written with other dynamic modes than the compiled function reads.",
    message="kernel '{kernel}', parameter '{parameter}': prepare(): the compiled function takes {expected}; "
    "the value given would be written as {got}; pass the from_dlpack tensor marked as when compiling",
    explanation="""
    A tensor reaches a compiled function as a descriptor: the data address,
    then each dynamic extent and each dynamic stride. How many there are, and
    their widths, is fixed by the marking the function was compiled with
    (`from_dlpack(t)` is fully static, `mark_layout_dynamic()` makes all but
    the unit stride dynamic, `mark_compact_shape_dynamic(mode=...)` one
    extent). `prepare()` reads this from the compiled function's own argument
    types (its IR, never the entry's symbol, which the DSL cuts and
    respells) and compares it with the descriptor the value it is given
    would be written as. A difference would hand the compiled code values in
    the wrong fields: a silent wrong result.
    """,
    example=_PREPARE_TENSOR
    + """
compiled = cute.compile(double, from_dlpack(y), from_dlpack(x))   # static layouts: no dynamic modes
cute_bind.prepare(compiled, y, x)   # NumPy arrays are read as dynamic -> CB306
""",
    fix="""
    Give `prepare()` the tensors exactly as they were given to `cute.compile`
    (the same `from_dlpack(...)` marking, e.g. `from_dlpack(y)` for a static
    layout or `from_dlpack(y).mark_layout_dynamic()`); later launches may then
    pass plain torch tensors or NumPy arrays.
    """,
)


NO_ARGUMENT_TYPES = _entry(
    "CB307",
    "no-argument-types",
    _E.LaunchArgumentError,
    summary="prepare(): the compiled function's argument types are not available, so its tensors cannot be checked.",
    message="kernel '{kernel}', parameter '{parameter}': prepare() needs {expected} to check tensor descriptors, got {got}",
    explanation="""
    `prepare()` checks every tensor parameter against the compiled function's
    own argument types, read from its IR. A `.to(device)` executor and a
    function loaded from a binary carry no IR, so a tensor's descriptor could
    not be checked; rather than pass unchecked, `prepare()` refuses them.
    Functions without tensor parameters need no IR. The message says which
    case it is: no IR at all, or IR without an entry function of the compiled
    function's name (found as MLIR prints it, quoted when the name holds a
    character such as `+`); the second would be a DSL that names its entry
    otherwise, and is worth reporting.
    """,
    example=_PREPARE_TENSOR
    + """
ty, tx = from_dlpack(y).mark_layout_dynamic(), from_dlpack(x).mark_layout_dynamic()
compiled = cute.compile(double, ty, tx)
cute_bind.prepare(compiled.to(None), ty, tx)   # an executor holds no IR -> CB307
""",
    fix="""
    Prepare the compiled function itself (`cute.compile`'s result): a handle
    made from it launches on the current device, as calling it does.
    """,
)


_TVM_FFI = (
    _PRELUDE
    + """
import cuda.bindings.driver as cuda
import torch
from cutlass.cute.runtime import from_dlpack, make_fake_stream

@cute.jit
def scale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32, stream: cuda.CUstream):
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha

x, y = torch.arange(8.0), torch.zeros(8)
marked = lambda t: from_dlpack(t).mark_layout_dynamic()
compiled = cute.compile(scale, marked(y), marked(x), cutlass.Float32(1.0), make_fake_stream(),
                        options="--enable-tvm-ffi")
"""
)


TVM_FFI_UNSUPPORTED_ARGUMENT = _entry(
    "CB308",
    "tvm-ffi-unsupported-argument",
    _E.LaunchArgumentError,
    summary="prepare(): a TVM-FFI compiled function was given an argument a prepared TVM-FFI launch does not rewrite.",
    message="kernel '{kernel}', parameter '{parameter}': prepare() of a TVM-FFI function takes {expected}, got {got}",
    explanation="""
    A prepared TVM-FFI launch rewrites a prebuilt TVM-FFI argument array in
    place: a tensor of a type offering the DLPack exchange API (torch
    tensors) becomes a `DLTensor` pointer; a Python int, bool or float,
    `None`, and objects TVM-FFI writes as numbers (DSL numbers such as
    `cutlass.Int32(-100)` and `cutlass.Float32(0.0)`) become the values
    TVM-FFI's own call writes; a tuple, list or NamedTuple of `None`, bool,
    int and float (a structure the DSL compiles in, such as
    FlashAttention's `AuxData(None, None)`) becomes the TVM-FFI array its
    call builds, built once; a structure holding tensors or DSL numbers
    (quack's scheduler and epilogue arguments, FlashAttention-4's aux
    tensors: a tuple, list, NamedTuple or a dataclass the call unpacks)
    becomes the TVM-FFI array of its leaves, rewritten per launch. The
    compiled entry checks everything else. Other values (NumPy arrays,
    stream objects, pointer objects, which the DSL rewrites before each
    TVM-FFI call; strings, dicts; the same as a structure's leaves; a
    structure for a parameter annotated as a number or tensor) are not
    prepared.
    """,
    example=_TVM_FFI
    + """
cute_bind.prepare(compiled, y, x.numpy(), 2.0, 0)   # a NumPy array (no DLPack exchange API) -> CB308
""",
    fix="""
    Pass torch tensors, numbers and `None` (or constant structures of them),
    as the TVM-FFI call takes them; or call the compiled function directly.
    """,
)


TVM_FFI_CALL_ERROR = _entry(
    "CB309",
    "tvm-ffi-call-error",
    _E.LaunchValueError,
    summary="A prepared TVM-FFI launch: the compiled entry refused the arguments (or its launch failed).",
    message="kernel '{kernel}': the TVM-FFI entry reported {got}; expected {expected}",
    explanation="""
    The entry of a TVM-FFI compiled function checks every argument itself:
    a tensor's dtype, rank, shape, strides, alignment and device, each
    scalar's type and range. A prepared launch hands it the values as they
    are, so it reports exactly what calling the compiled function reports;
    that exception (`ValueError`, `TypeError`, a CUDA error...) is chained
    as this error's cause.
    """,
    example=_TVM_FFI
    + """
handle = cute_bind.prepare(compiled, y, x, 2.0, 0)
handle.launch(y, x.double(), 2.0, 0)   # a Float64 tensor for a Float32 parameter -> CB309
""",
    fix="Pass what the compiled function was compiled for; the chained exception names the argument and the fact.",
)


COMPILE_FAILED = _entry(
    "CB310",
    "compile-failed",
    _E.KernelCompileError,
    summary="The DSL reported an error while compiling the function for these arguments.",
    message="kernel '{kernel}': the DSL could not compile the function for these arguments ({got}):\n{detail}",
    explanation="""
    `bind()`, `compile()` and calling a kernel compile the function with
    `cute.compile(...)` the first time they see a new compile key. When the
    DSL rejects the function (a type error in the body, an unsupported
    construct, a name it cannot find), its error is reported here with the
    DSL's whole text, and the DSL's exception is chained (`__cause__`), so
    the traceback still points at the line in the function.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value + undefined_name          # an error in the body

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 1)      # -> CB310, with the DSL's text
""",
    fix="""
    Fix the function where the DSL's text (after the first line of the
    message) points; the same function fails the same way under a plain
    `@cute.jit`.
    """,
)


GUARDS_REFUSED_CALL = _entry(
    "CB315",
    "guards-refused-call",
    _E.KernelCompileError,
    summary="No compile() of the kernel takes the call, and compiling for the call's own values failed.",
    message="kernel '{kernel}': {detail}; expected {expected}, got {got}",
    explanation="""
    A kernel compiled with `kernel.compile(*fakes)` from the client's fake
    arguments (static extents, an assumed alignment, the gmem address space,
    the TVM-FFI environment stream) serves every call whose values that
    compiled function takes, whatever stream the call passes: cute_bind
    checks the call's values against each such compile (newest first) and,
    where only the stream's form differs, compiles the sibling from the same
    fakes. A call that none of them takes is compiled for its own values,
    which loses what the fakes said; where the client's code needs it (a
    `cutlass.const_expr` on a static extent, a copy that needs 16-byte
    alignment), that compile fails. This error names each compile() and the
    guard that refused the call (the parameter and the check), and is chained
    to the DSL's error.
    """,
    example=_PRELUDE
    + """
import numpy as np
from cutlass.cute.runtime import make_fake_tensor

@cute_bind.kernel
def rows(m: cute.Tensor):
    if cutlass.const_expr(cute.size(m, mode=[1]) == 4):  # the client's code needs a static N
        m[0, 0] = 1.0

rows.compile(make_fake_tensor(cutlass.Float32, (cute.sym_int(), 4), stride=(4, 1)))
rows(np.zeros((2, 4), np.float32))  # taken by that compile
rows(np.zeros((2, 8), np.float32))  # N = 8: no compile() takes it, its own compile fails -> CB315
""",
    fix="""
    Compile the configuration the call needs from fakes that say it (e.g.
    `make_fake_tensor(dtype, (M, 2048), ...)` for another static N, the
    alignment the kernel needs), as the package itself does; or pass values
    a compile takes (a 16-byte-aligned tensor, the compiled extent).
    """,
)


TVM_FFI_OPAQUE_DATACLASS = _entry(
    "CB316",
    "tvm-ffi-opaque-dataclass",
    _E.LaunchArgumentError,
    summary="prepare(): a dataclass where a TVM-FFI function's call passes it as an opaque Python object, which no compiled entry decodes.",
    message=(
        "kernel '{kernel}', parameter '{parameter}': TVM-FFI's call passes {got} as an opaque Python object, "
        "which the compiled entry does not decode; expected {expected}"
    ),
    explanation="""
    A function compiled with `--enable-tvm-ffi` takes a dataclass argument
    only where the DSL's call unpacks it: a top-level parameter whose compile
    argument (or annotation) was a dataclass, unpacked with TVM-FFI's
    `unpack_dataclass_to_tuple` into the tuple of its fields (nested
    dataclasses in it too) before TVM-FFI converts the arguments; the entry
    then takes an `ffi.Array` of the fields. Anywhere else (a dataclass inside
    a tuple, list or NamedTuple, a field TVM-FFI's unpacking does not visit
    because its annotation is a plain type, any argument of a bare
    `tvm_ffi.Function` loaded with `cute.runtime.load_module`, whose call
    unpacks nothing) TVM-FFI passes the dataclass as an opaque Python object,
    and every call of the compiled function fails on it. `prepare()` refuses
    it at once instead of preparing a launch that cannot run.
    """,
    example=_TVM_FFI
    + """
import dataclasses

@dataclasses.dataclass
class Epilogue:
    alpha: float

@cute.jit
def scaled(out: cute.Tensor, inp: cute.Tensor, epi: tuple):
    for i in range(cute.size(out)):
        out[i] = inp[i] * epi[0]

compiled = cute.compile(scaled, marked(y), marked(x), (cutlass.Float32(1.0),), options="--enable-tvm-ffi")
cute_bind.prepare(compiled, y, x, (Epilogue(2.0),))   # a dataclass inside a tuple -> CB316
""",
    fix="""
    Pass the tuple of the dataclass's fields in its place (in
    `dataclasses.fields` order, nested dataclasses likewise), which is what
    TVM-FFI's call passes for a dataclass it unpacks; or make the dataclass
    the compiled function's own top-level argument.
    """,
)
