"""CB2xx, arguments: the catalog entries of this range, in code order.

Raised while binding or launching, when a value does not fit its slot.
"""

from .. import errors as _E
from ..define import entry as _entry
from ..define import illustration as _illustration
from .examples import FILL as _FILL
from .examples import FILL_HANDLE as _FILL_HANDLE
from .examples import PRELUDE as _PRELUDE

MISSING_ARGUMENT = _entry(
    "CB201",
    "missing-argument",
    _E.LaunchArgumentError,
    summary="A required argument was not given.",
    message="kernel '{kernel}', parameter '{parameter}': no value was given; expected {expected}",
    explanation="""
    `bind()` and `launch()` take the same arguments as calling the compiled
    function. Every runtime parameter without a default needs a value, given
    positionally or by keyword.
    """,
    example=_FILL_HANDLE
    + """
handle.launch(addr)   # 'value' missing -> CB201
""",
    fix="Pass a value for the parameter, positionally or as `{parameter}=...`.",
)


UNEXPECTED_ARGUMENT = _entry(
    "CB202",
    "unexpected-argument",
    _E.LaunchArgumentError,
    summary="Too many positional arguments, or an unknown keyword.",
    message="kernel '{kernel}', parameter '{parameter}': unexpected argument; expected {expected}, got {got}",
    explanation="""
    The argument does not correspond to any runtime parameter of the kernel.
    Compile-time (`Constexpr`) parameters are given to `bind()` only: a
    prepared launch is already specialised for them and `launch()` does not
    take them.
    """,
    example=_FILL_HANDLE
    + """
handle.launch(addr, 2, 3)   # one positional too many -> CB202
""",
    fix="Remove the extra argument, or check the parameter's spelling.",
)


DUPLICATE_ARGUMENT = _entry(
    "CB203",
    "duplicate-argument",
    _E.LaunchArgumentError,
    summary="A parameter was given both positionally and by keyword.",
    message="kernel '{kernel}', parameter '{parameter}': given twice (positionally and by keyword)",
    explanation="Each parameter takes exactly one value per call.",
    example=_FILL_HANDLE
    + """
handle.launch(addr, 2, value=3)   # 'value' twice -> CB203
""",
    fix="Pass the parameter once.",
)


#: CB204's fix after "Pass {expected}.", by the slot kind that refused the value (its
#: ``SlotKind.conversion()``): what to write where a conversion is meant. The
#: explanation lists them all; "other" is for a kind without its own sentence.
WRONG_KIND_CONVERSIONS = {
    "integer": (
        "Where a conversion is meant, make it explicit with `int(x)`: a float is never truncated silently; "
        "NumPy integers and objects with `__index__` are taken as they are; a tensor or array is not a number "
        "(`x.item()` for one element, which waits for a CUDA tensor)."
    ),
    "float": (
        "Where a conversion is meant, make it explicit with `float(x)`: a string is not parsed, and a tensor or "
        "array is not a number (`x.item()` for one element, which waits for a CUDA tensor)."
    ),
    "boolean": "Pass `True`, `False`, 0 or 1; where a truth value is meant, `bool(x)`.",
    "pointer": (
        "An address is an int (`t.data_ptr()`, `a.ctypes.data`), never a float or a bool; a list is not memory: "
        "make it an array first (`np.asarray(x, dtype)`)."
    ),
    "tensor": (
        "A list becomes an array with `np.asarray(x)` or `torch.tensor(x)`, and a raw address is not a tensor "
        "(a kernel that takes addresses declares `cute_bind.Pointer[...]`)."
    ),
    "stream": "torch's current stream is `torch.cuda.current_stream()` (or its `.cuda_stream`); 0 is the default stream.",
    "sequence": "Pass a tuple or a list (not a string, a set or a generator), each element a value its own slot takes.",
    "structure": "Pass an instance of the structure's class (the NamedTuple or dataclass the parameter is annotated with).",
    "other": "See `python -m cute_bind explain CB204` for what each kind of slot takes.",
}


WRONG_KIND = _entry(
    "CB204",
    "wrong-kind",
    _E.LaunchArgumentError,
    summary="A value has the wrong kind for its slot.",
    message="kernel '{kernel}', parameter '{parameter}': expected {expected}, got {got}",
    explanation="""
    Each runtime parameter has a slot kind fixed at decoration time (pointer,
    numeric scalar, stream, tensor or sequence) and accepts only values of
    that kind. For
    example an integer slot does not take a float (that would truncate
    silently), a pointer slot does not take a bool or a string, and a stream
    slot does not take a tensor. The fix names the slot's own kind; where a
    conversion is meant, each kind's is:
    """
    + "\n"
    + "".join(f"\n    - {kind}: {text}" for kind, text in WRONG_KIND_CONVERSIONS.items() if kind != "other"),
    example=_FILL_HANDLE
    + """
handle.launch(addr, 2.5)   # float for an Int32 slot -> CB204
""",
    fix="Pass {expected}. {conversion}",
)


INTEGER_OUT_OF_RANGE = _entry(
    "CB205",
    "integer-out-of-range",
    _E.LaunchValueError,
    summary="An integer does not fit its slot's type.",
    message="kernel '{kernel}', parameter '{parameter}': {got} does not fit {expected}",
    explanation="""
    The plain DSL call path wraps an out-of-range integer to the slot width
    (with a warning at best). cute_bind never truncates silently: a value
    outside the slot type's range is an error.
    """,
    example=_FILL_HANDLE
    + """
handle.launch(addr, 2**40)   # does not fit Int32 -> CB205
""",
    fix="""
    Pass a value in range, or declare the parameter with a wider type
    (`cutlass.Int64`, `cutlass.Uint64`). To wrap on purpose, mask it yourself,
    e.g. `value & 0xFFFFFFFF` for a Uint32 slot.
    """,
)


INVALID_ADDRESS = _entry(
    "CB206",
    "invalid-address",
    _E.LaunchValueError,
    summary="A pointer address is negative or does not fit 64 bits.",
    message="kernel '{kernel}', parameter '{parameter}': {got} is not a valid address; expected {expected}",
    explanation="""
    A pointer slot stores a 64-bit address. Negative integers and integers of
    2**64 or more cannot be addresses; they usually come from arithmetic
    mistakes or from passing the wrong value to a pointer parameter.
    """,
    example=_FILL_HANDLE
    + """
handle.launch(-8, 1)   # negative address -> CB206
""",
    fix="Pass the buffer's address: an int from `tensor.data_ptr()`, a `make_ptr` pointer, or the tensor itself.",
)


MISALIGNED_POINTER = _entry(
    "CB207",
    "misaligned-pointer",
    _E.LaunchValueError,
    summary="A pointer is not aligned as the compiled function assumes.",
    message="kernel '{kernel}', parameter '{parameter}': address {got} is not a multiple of {expected}",
    explanation="""
    The function was compiled assuming the pointer is aligned to the slot's
    alignment (vectorised loads rely on it). A misaligned address would read
    or write the wrong bytes, or fault. Objects that carry their address
    (tensors, `make_ptr` pointers) are always checked; raw integer addresses
    are checked in checked mode (`handle.with_checks()`, `checked=True` or
    `CUTE_BIND_CHECKED=1`), since that check costs time on every launch.
    """,
    example=_FILL
    + """
handle = fill.bind(addr, 1).with_checks()
handle.launch(addr + 1, 2)   # 1 byte off a 4-byte aligned Int32 slot -> CB207
""",
    fix="Pass an address aligned to the slot (allocate aligned, or lower the alignment in the annotation).",
)


POINTER_DTYPE_UNKNOWN = _entry(
    "CB208",
    "pointer-dtype-unknown",
    _E.LaunchArgumentError,
    summary="bind() cannot tell the element type of a pointer given as a raw address.",
    message="kernel '{kernel}', parameter '{parameter}': the annotation {expected} carries no "
    "dtype and the value {got} does not either, so the function cannot be compiled",
    explanation="""
    Compiling needs every pointer's element type, alignment and address
    space. A `cute.Pointer` annotation does not say them, so they must come
    from the value at `bind()` time: a `make_ptr` pointer or a torch tensor
    carries them, a raw integer does not.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def fill(out: cute.Pointer, value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 1)   # raw address, no dtype -> CB208
""",
    fix="""
    Annotate the parameter with `cute_bind.Pointer[dtype]` (optionally with
    alignment and address space), or pass a `make_ptr(...)` pointer or a
    tensor to `bind()`.
    """,
)


CONSTEXPR_UNHASHABLE = _entry(
    "CB209",
    "constexpr-unhashable",
    _E.LaunchArgumentError,
    summary="A Constexpr value cannot be part of the compile-cache key.",
    message="kernel '{kernel}', parameter '{parameter}': Constexpr value {got} is not hashable; expected {expected}",
    explanation="""
    Compiled functions are cached per compile key, which includes every
    `cutlass.Constexpr` value. The value must be hashable (ints, floats,
    strings, tuples of those, types...) so equal values find the same
    compiled function.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], shape: cutlass.Constexpr):
    pass

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), [4, 4])   # a list is unhashable -> CB209
""",
    fix="Pass a hashable value, e.g. a tuple instead of a list.",
)


POINTER_MISMATCH = _entry(
    "CB210",
    "pointer-mismatch",
    _E.LaunchArgumentError,
    summary="A pointer's dtype, address space or alignment differs from the compiled slot.",
    message="kernel '{kernel}', parameter '{parameter}': the handle was compiled for {expected}, got {got}",
    explanation="""
    A prepared launch is specialised for the pointer element type, address
    space and alignment seen at `bind()`. A pointer object (or tensor) with a
    different element type, or a weaker alignment, needs a different compiled
    function. Raw integer addresses carry no type and are not checked for
    this. Memory whose element type has no CuTe counterpart (a complex,
    datetime or structured array, a torch `complex64` tensor) is refused by a
    slot that names an element type, and an array of Python object
    references (NumPy's `dtype=object`) by every pointer slot: a kernel
    storing through it would overwrite the interpreter's objects.
    """,
    example=_FILL
    + """
from cutlass.cute.runtime import make_ptr
handle = fill.bind(addr, 1)
handle.launch(make_ptr(cutlass.Float32, addr), 2)   # Float32 pointer for an Int32 slot -> CB210
""",
    fix="Pass a pointer of the compiled type, or `bind()` again with the new type (a new handle).",
)


_TENSOR = (
    _PRELUDE
    + """
import numpy as np

@cute_bind.kernel
def double(out: cute.Tensor, inp: cute.Tensor):
    for i in range(cute.size(out)):
        out[i] = inp[i] * 2

x = np.arange(8, dtype=np.float32)
y = np.zeros(8, dtype=np.float32)
handle = double.bind(y, x)             # compiled for 1-D Float32 tensors, extent dynamic
"""
)


TENSOR_DTYPE_MISMATCH = _entry(
    "CB211",
    "tensor-dtype-mismatch",
    _E.LaunchArgumentError,
    summary="A tensor's element type differs from the one its slot is compiled for.",
    message="kernel '{kernel}', parameter '{parameter}': the slot takes {expected}, got {got}",
    explanation="""
    The element type of a tensor slot is compiled in: loads, stores and
    address arithmetic depend on it. A tensor of another dtype would be read
    as the compiled type, bit for bit, which is a silent wrong result; the
    plain DSL call does not check this either.
    """,
    example=_TENSOR
    + """
handle.launch(y, x.astype(np.float64))   # Float64 tensor for a Float32 slot -> CB211
""",
    fix="Pass a tensor of the compiled dtype (convert it first), or `bind()` again with the new dtype (a new handle).",
)


TENSOR_RANK_MISMATCH = _entry(
    "CB212",
    "tensor-rank-mismatch",
    _E.LaunchArgumentError,
    summary="A tensor's rank differs from the one its slot is compiled for.",
    message="kernel '{kernel}', parameter '{parameter}': the slot takes {expected}, got {got}",
    explanation="""
    The number of modes of a tensor slot is part of its compiled layout: the
    function indexes exactly that many extents and strides. A tensor of
    another rank cannot be described by the compiled layout.
    """,
    example=_TENSOR
    + """
handle.launch(y.reshape(2, 4), x.reshape(2, 4))   # rank 2 for a rank-1 slot -> CB212
""",
    fix="Reshape the tensor to the compiled rank, or `bind()` again with a tensor of the new rank (a new handle).",
)


TENSOR_LAYOUT_MISMATCH = _entry(
    "CB213",
    "tensor-layout-mismatch",
    _E.LaunchValueError,
    summary="A tensor's extent or stride differs from a static value, or breaks a divisibility, compiled into the handle.",
    message="kernel '{kernel}', parameter '{parameter}': {detail}: the slot takes {expected}, got {got}",
    explanation="""
    Only the dynamic modes of a tensor slot (`?` in its layout) are rewritten
    at launch; every static extent and stride is a constant of the compiled
    code, and a dynamic mode marked divisible (`?{div=16}`) is assumed
    divisible. A tensor whose layout differs in a static value (for example
    a transposed tensor, whose leading dimension has moved, or a different
    extent for a `"static"` slot) would be indexed with the compiled
    constants: a silent wrong result.
    """,
    example=_TENSOR
    + """
h = double.bind(y[::2].copy(), x[::2].copy())   # compiled with unit stride (the leading dim)
h.launch(y[::2], x[::2])                         # a stride of 2 elements -> CB213
""",
    fix="""
    Pass a tensor with the compiled static extents and strides, e.g. a
    contiguous copy (`.contiguous()`, `np.ascontiguousarray`) for a slot whose
    leading dimension has unit stride. To accept other values, bind with a
    tensor whose layout makes that mode dynamic: the "dynamic" layout
    (`cute_bind.Tensor[dtype, rank]`, `mark_layout_dynamic()`) keeps only the
    leading dimension's unit stride static, and binding with a tensor that has
    no unit stride (e.g. `t[::2]`) makes every stride dynamic. For a
    divisibility, pass extents (and strides) that are multiples of it, or bind
    without the divisibility marking.
    """,
)


TENSOR_DEVICE_MISMATCH = _entry(
    "CB214",
    "tensor-device-mismatch",
    _E.LaunchValueError,
    summary="A tensor lives on another device (or in host memory) than the one its slot was bound with.",
    message="kernel '{kernel}', parameter '{parameter}': the slot takes tensors on {expected}, got {got}",
    explanation="""
    A compiled function launches on the device it was loaded on and
    dereferences tensor data pointers there. A tensor on another GPU, or a
    CPU tensor for a GPU slot, would hand the kernel an address it cannot
    use: an illegal-address fault, or worse, another allocation's memory.
    A tensor (or array) given to a pointer slot is checked the same way,
    against the device of the value the slot was bound with; a plain integer
    address carries no device and is taken as it is.
    """,
    example=_TENSOR
    + """
class OnGPU:                            # any DLPack exporter that reports a CUDA device
    def __init__(self, a): self.a = a
    def __dlpack__(self, stream=None): return self.a.__dlpack__()
    def __dlpack_device__(self): return (2, 0)    # kDLCUDA, device 0

handle.launch(y, OnGPU(x))   # bound with host tensors, got a CUDA one -> CB214
""",
    fix="Move the tensor to the bound device first (`t.to(device)`), or bind a handle per device.",
)


SEQUENCE_LENGTH_MISMATCH = _entry(
    "CB215",
    "sequence-length-mismatch",
    _E.LaunchValueError,
    summary="A tuple/list argument's length differs from the length fixed at bind().",
    message="kernel '{kernel}', parameter '{parameter}': the slot takes {expected}, got {got}",
    explanation="""
    The DSL flattens a sequence argument into one C argument per element, so
    the compiled function (and the handle's storage) takes exactly the
    number of elements seen at `bind()`.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def first(out: cute_bind.Pointer[cutlass.Int32], sizes: tuple[cutlass.Int32, cutlass.Int32]):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = sizes[0] + sizes[1]

buf = (ctypes.c_int32 * 1)()
handle = first.bind(ctypes.addressof(buf), (1, 2))
handle.launch(ctypes.addressof(buf), (1, 2, 3))   # 3 elements for a 2-element slot -> CB215
""",
    fix="Pass a sequence of the bound length, or `bind()` again with the new length (a new handle).",
)


NULL_DATA = _entry(
    "CB216",
    "null-data",
    _E.LaunchValueError,
    summary="A tensor or array with elements reports a NULL data address (a meta or fake tensor).",
    message="kernel '{kernel}', parameter '{parameter}': the value's data address is NULL; expected {expected}, got {got}",
    explanation="""
    A torch meta tensor, a `FakeTensor` or a similar stand-in describes a
    shape without owning memory: its data address is 0. A kernel given it
    would read or write address 0 and crash the process, so a pointer or
    tensor slot refuses a value that has elements but no data. An empty
    tensor (no elements) may have a NULL address; it is accepted. A raw
    integer address is trusted as it is, 0 included.
    """,
    example=_FILL
    + """
class MetaLike:                  # what a torch meta tensor reports: elements, but no memory
    def data_ptr(self): return 0
    def numel(self): return 1

handle = fill.bind(addr, 1)
handle.launch(MetaLike(), 2)     # NULL data for a 1-element value -> CB216
""",
    fix="Pass a tensor that owns memory (materialise it: `t.to('cuda')`, `torch.empty_like(t, device=...)`).",
)


READ_ONLY_BUFFER = _entry(
    "CB217",
    "read-only-buffer",
    _E.LaunchValueError,
    summary="A read-only buffer was passed where the kernel may write.",
    message="kernel '{kernel}', parameter '{parameter}': the value's memory is read-only; expected {expected}, got {got}",
    explanation="""
    A pointer or tensor slot hands the kernel a writable address. An array
    whose exporter marks it read-only (`np.frombuffer(bytes(...))`, an array
    with `writeable=False`, a DLPack capsule flagged read-only) may view
    immutable memory, such as the bytes of a Python `bytes` object, and a
    kernel store into it would corrupt the interpreter. cute_bind cannot
    tell whether the kernel writes, so such values are refused.
    """,
    example=_FILL
    + """
import numpy as np
handle = fill.bind(addr, 1)
frozen = np.frombuffer(bytes(4), dtype=np.int32)   # views an immutable bytes object
handle.launch(frozen, 2)   # a read-only array for a pointer slot -> CB217
""",
    fix="Pass a writable copy (`arr.copy()`), or a raw integer address if the kernel only reads it.",
)


INVALID_DLPACK = _entry(
    "CB218",
    "invalid-dlpack",
    _E.LaunchValueError,
    summary="A DLPack producer described a tensor that cannot exist (negative extent, overflowing address, unknown version).",
    message="kernel '{kernel}', parameter '{parameter}': the DLPack tensor is invalid: {detail}; expected {expected}, got {got}",
    explanation="""
    A tensor slot reads each tensor's address, extents and strides from its
    DLPack description. A description with a negative extent, a stride of
    INT64_MIN, a data address plus byte offset beyond 64 bits, or a DLPack
    major version cutlass-bind does not know (another struct layout) cannot
    be read safely, so it is refused instead of being written into the
    kernel's descriptor.
    """,
    example=_TENSOR
    + """
class DLTensor(ctypes.Structure):      # dlpack.h
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]

class Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]

shape = (ctypes.c_int64 * 1)(-8)       # a negative extent
managed = Managed(DLTensor(x.ctypes.data, 1, 0, 1, 2, 32, 1, shape, None, 0))
capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))  # a function object of our own, not the process-wide one

class Hostile:                         # a DLPack producer describing it
    def __dlpack__(self, stream=None): return capsule_new(ctypes.addressof(managed), b"dltensor", None)
    def __dlpack_device__(self): return (1, 0)

handle.launch(y, Hostile())   # a negative extent -> CB218
""",
    fix="Fix the producer; a tensor from torch, NumPy, CuPy or JAX never looks like this.",
)


STREAM_DEVICE_AMBIGUOUS = _entry(
    "CB220",
    "stream-device-ambiguous",
    _E.LaunchValueError,
    summary="The stream was left out of a call whose tensor arguments are on more than one CUDA device.",
    message="kernel '{kernel}', parameter '{parameter}': the stream was left out, so the call takes torch's current "
    "stream of the tensor arguments' device, but they are on {got}; expected {expected}",
    explanation="""
    A stream parameter declared with a default (`stream: cuda.CUstream = None`)
    may be left out of `kernel(...)`: the call then launches on torch's
    current stream of the device its tensor arguments are on. When they are
    on several CUDA devices there is no single such stream, and guessing one
    would launch on a stream of the wrong device.
    """,
    example=_illustration(
        "illustration: needs tensors on two CUDA devices, e.g. kernel(y_on_cuda0, x_on_cuda1, 2.0)",
        kernel="scale",
        parameter="stream",
        expected="tensor arguments on one CUDA device",
        got="cuda:0, cuda:1",
    ),
    fix="""
    Pass the stream explicitly (`kernel(..., stream=torch.cuda.current_stream(dev))`),
    or move the tensors to one device.
    """,
)


CURRENT_STREAM_UNAVAILABLE = _entry(
    "CB221",
    "current-stream-unavailable",
    _E.LaunchRuntimeError,
    summary="The stream was left out, and torch's current stream could not be read.",
    message="kernel '{kernel}', parameter '{parameter}': the stream was left out and torch's current stream of "
    "{expected} could not be read: {got}",
    explanation="""
    When a call leaves out a stream parameter declared with a default, and
    torch is imported with its CUDA initialised, the call asks torch for its
    current stream of the tensor arguments' device (torch's current device
    for a kernel without tensor parameters). torch raised instead (for
    example a device index it does not know); the error is chained.
    """,
    example=_illustration(
        "illustration: needs torch with CUDA initialised and a device it cannot query",
        kernel="scale",
        parameter="stream",
        expected="cuda:7",
        got="RuntimeError: invalid device ordinal",
    ),
    fix="Pass the stream explicitly, or check the device the tensor arguments are on.",
)


OPTIONAL_PRESENCE_MISMATCH = _entry(
    "CB225",
    "optional-presence-mismatch",
    _E.LaunchArgumentError,
    summary="An optional parameter bound to None got a value, or bound to a value got None.",
    message="kernel '{kernel}', parameter '{parameter}': the optional slot takes {expected}, got {got}",
    explanation="""
    The DSL specialises a compile on `None`: a parameter compiled with
    `None` is a constant of the compiled code and has no argument at all,
    one compiled with a value is read from its argument. A handle keeps what
    it was bound with: a value passed to a `None` slot would be ignored, and
    `None` passed to a value slot would leave the compiled code reading the
    previous value. Both are refused.
    """,
    example=_PRELUDE
    + """
from typing import Optional

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], extra: Optional[cutlass.Int32]):
    t = cute.make_tensor(out, cute.make_layout(1))
    if cutlass.const_expr(extra is None):
        t[0] = 0
    else:
        t[0] = extra

buf = (ctypes.c_int32 * 1)()
handle = fill.bind(ctypes.addressof(buf), None)   # compiled for None
handle.launch(ctypes.addressof(buf), 7)            # a value for a None slot -> CB225
""",
    fix="""
    Bind one handle per case (`k.bind(..., None)` and `k.bind(..., value)`),
    or call the kernel itself, which compiles (and caches) each case.
    """,
)


COMPILE_ONLY_VALUE = _entry(
    "CB226",
    "compile-only-value",
    _E.LaunchArgumentError,
    summary="A fake tensor or fake stream (a compile-time placeholder) was given where a launch needs a real value.",
    message="kernel '{kernel}', parameter '{parameter}': {got} describes a compile and holds nothing to launch with; expected {expected}",
    explanation="""
    `cute.runtime.make_fake_tensor(...)`, `make_fake_compact_tensor(...)` and
    `make_fake_stream(...)` describe what a compile is for (element type,
    static and symbolic extents, strides, divisibility, alignment; a stream
    or the TVM-FFI environment stream) without any data. `kernel.compile(...)`
    takes them exactly as `cute.compile` does, and returns the compiled
    function. `bind()` and calling the kernel launch, which needs real
    tensors and streams: there is no address in a fake tensor to launch on.
    """,
    example=_PRELUDE
    + """
from cutlass.cute.runtime import make_fake_compact_tensor

@cute_bind.kernel
def double(out: cute.Tensor):
    for i in range(cute.size(out)):
        out[i] = out[i] * 2.0

fake = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),), memspace=cute.AddressSpace.generic)
double.compile(fake)   # a compile: fine
double.bind(fake)      # a launch needs data -> CB226
""",
    fix="""
    Pass real tensors (torch, NumPy, a `from_dlpack` tensor) and a real
    stream to `bind()` and to calls; keep fake values for `kernel.compile(...)`.
    """,
)


# CB230 and CB231: a kernel with a union parameter (a Float32, a pointer or None).
_UNION_FILL = (
    _PRELUDE
    + """
@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Float32], alpha: cutlass.Float32 | cute.Pointer | None):
    t = cute.make_tensor(out, cute.make_layout(1))
    if cutlass.const_expr(alpha is None):
        t[0] = cutlass.Float32(1.0)
    elif cutlass.const_expr(isinstance(alpha, cute.Pointer)):
        t[0] = cute.make_tensor(alpha, cute.make_layout(1))[0]
    else:
        t[0] = alpha
"""
)


UNION_NO_MEMBER = _entry(
    "CB230",
    "union-no-member",
    _E.LaunchArgumentError,
    summary="A value for a union parameter (X | Y | None) that is of none of its members.",
    message="kernel '{kernel}', parameter '{parameter}': {got} is of no member of the union; expected {expected}",
    explanation="""
    For a union annotation the DSL checks the value against the members
    (`isinstance`) and compiles it by its own kind: an `int` or
    `cutlass.Int32` as a runtime Int32, a `bool` as a Boolean, a
    `cutlass.Float32` as a Float32, a pointer as a pointer, `None` as a
    constant. cute_bind binds the same way, also taking what a member's own
    slot takes after conversion (a `float` for a Float32 member, a torch
    tensor for a tensor member, an `int` for a Float32 member when no pointer
    member could take it as an address). A value no member takes (a string,
    a pointer for `Int32 | int | None`, an `int` for
    `Float32 | cute.Pointer | None`) has no kind to compile; a handle bound to
    the pointer member takes an `int` as an address at launch, as the
    compiled function's own call does.
    """,
    example=_UNION_FILL
    + """
buf = (ctypes.c_float * 1)()
fill.bind(ctypes.addressof(buf), "2.0")   # a str: no member -> CB230
""",
    fix="""
    Pass a value of one of the members (`cutlass.Float32(x)`, a pointer from
    `cute.runtime.make_ptr(...)`, or `None`), or add the kind you pass to the
    annotation.
    """,
)


UNION_MEMBER_CHANGED = _entry(
    "CB231",
    "union-member-changed",
    _E.LaunchArgumentError,
    summary="A union parameter bound to a value of one member got a value of another member.",
    message="kernel '{kernel}', parameter '{parameter}': the union slot takes {expected}, got {got}",
    explanation="""
    The DSL compiles a union parameter for the kind of the value given (an
    Int32, a Float32, a pointer...), so which member a handle holds is fixed
    at `bind()` and is part of the compile key. A launch takes what the bound
    member takes (a Float32 member a real number, a pointer member an address,
    pointer or tensor), but a value that is, by its own kind, another member
    would be written as the wrong kind and is refused. Calling the kernel
    itself (`kernel(*args)`) compiles a specialization for the new member
    instead.
    """,
    example=_UNION_FILL
    + """
buf = (ctypes.c_float * 2)()
handle = fill.bind(ctypes.addressof(buf), cutlass.Float32(2.0))   # compiled for a Float32
ptr = cute.runtime.make_ptr(cutlass.Float32, ctypes.addressof(buf) + 4, cute.AddressSpace.generic)
handle.launch(ctypes.addressof(buf), ptr)   # a pointer for the Float32 member -> CB231
""",
    fix="""
    Bind one handle per member (`k.bind(..., cutlass.Float32(x))` and
    `k.bind(..., pointer)`), or call the kernel itself, which compiles (and
    caches) each member.
    """,
)


STRUCTURE_CONSTANT_CHANGED = _entry(
    "CB232",
    "structure-constant-changed",
    _E.LaunchArgumentError,
    summary="A structure field compiled as a constant (a Constexpr field, or an untyped field bound to None) changed.",
    message="kernel '{kernel}', parameter '{parameter}': the field is a constant of the compiled code; expected {expected}, got {got}",
    explanation="""
    A dataclass field annotated `cutlass.Constexpr[...]` (or a field annotated
    `None`, or a field of an untyped `collections.namedtuple` bound to
    `None`) gives the compiled code no argument: the DSL compiles its value
    in. The compiled function's own call ignores a new value silently; a
    handle refuses it. `None` in a typed field is an optional slot of its
    own: a value for it is CB225.
    """,
    example=_PRELUDE
    + """
import dataclasses

@dataclasses.dataclass(frozen=True)
class Fill:
    value: cutlass.Int32
    times: cutlass.Constexpr[int] = 1

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], how: Fill):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = how.value * how.times

buf = (ctypes.c_int32 * 1)()
handle = fill.bind(ctypes.addressof(buf), Fill(cutlass.Int32(3), 2))   # times compiled in as 2
handle.launch(ctypes.addressof(buf), Fill(cutlass.Int32(3), 5))       # a new constant -> CB232
""",
    fix="""
    Launch with the constant the handle was bound with, bind a new handle for
    the new constant, or call the kernel itself, which compiles (and caches)
    one specialization per constant.
    """,
)


POINTER_NOT_CONTIGUOUS = _entry(
    "CB233",
    "pointer-not-contiguous",
    _E.LaunchValueError,
    summary="A strided tensor or array (a slice with a step, a transpose, an expanded view) was given to a pointer slot.",
    message="kernel '{kernel}', parameter '{parameter}': a pointer slot reads {expected}, got {got}",
    explanation="""
    A pointer slot hands the kernel the address of the value's first element
    and nothing else: the kernel reads the elements that follow it in
    memory, one after the other. A view that skips elements (`t[::2]`), a
    transposed view, or an expanded one (stride 0, `t.expand(...)`) has other
    elements at those addresses, so the kernel would silently read and write
    the memory underneath the view instead of the view's own elements. Such
    values are refused on every path (bind, launch, `kernel(...)`, checked
    mode, graph updates). A mode of extent 1 may have any stride; an empty
    value is taken. A tensor slot (`cute.Tensor`) takes strided values: it
    passes the strides to the kernel.
    """,
    example=_FILL
    + """
import numpy as np
handle = fill.bind(addr, 1)
every_other = np.zeros(8, np.int32)[::2]  # a view with a stride of 2 elements
handle.launch(every_other, 2)             # -> CB233
""",
    fix="""
    Pass a contiguous copy (`t.contiguous()`, `np.ascontiguousarray(a)`) and,
    if the kernel writes through the pointer, copy the result back into the
    view (`view.copy_(out)`); or annotate the parameter `cute.Tensor` so the
    kernel receives the strides.
    """,
)


STRUCTURE_ARITY = _entry(
    "CB234",
    "structure-arity",
    _E.LaunchArgumentError,
    summary="A plain tuple given for a NamedTuple parameter has more or fewer items than the NamedTuple has fields.",
    message="kernel '{kernel}', parameter '{parameter}': expected {expected}, got {got}",
    explanation="""
    A NamedTuple parameter takes an instance of its class, or a plain tuple
    of exactly one item per field, in field order (the compiled function's
    own call takes a plain tuple there too): cute_bind reads the tuple as
    that NamedTuple, with the same slots and the same compile key. A tuple of
    another length has no such reading: the compiled function's own call
    would read too few arguments (the last fields' storage left as it was)
    or drop the extra items, so cute_bind refuses it and names the fields.
    """,
    example=_PRELUDE
    + """
from typing import NamedTuple

class Scales(NamedTuple):
    alpha: cutlass.Float32
    beta: cutlass.Float32

@cute_bind.kernel
def axpby(out: cute_bind.Pointer[cutlass.Float32], s: Scales):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = s.alpha + s.beta

buf = (ctypes.c_float * 1)()
axpby.bind(ctypes.addressof(buf), (1.0, 2.0))   # a tuple of 2 items: taken as Scales(1.0, 2.0)
axpby.bind(ctypes.addressof(buf), (1.0,))       # 1 item for 2 fields -> CB234
""",
    fix="""
    Pass one item per field, in field order (the message names them), or an
    instance of the NamedTuple itself (`Scales(alpha=..., beta=...)`), whose
    defaults fill the fields left out.
    """,
)
