"""The diagnostics catalog: every error cute_bind can report, defined once.

Each :class:`Diagnostic` has a stable code (``CB101``...), a slug, a one-line
summary, an explanation, a runnable example that triggers it, the fix, the
exception class it raises and the message template filled at the raise site.
Raise sites refer to entries (``raise error(CB204, ...)``); they never build
messages of their own. Codes are never reused or deleted: an entry that no
longer applies is marked ``retired=True`` and stays in the catalog.

Code ranges: ``CB1xx`` definition (decoration) time, ``CB2xx`` argument
binding (bind and launch), ``CB3xx`` preparing a compiled function, ``CB4xx``
launch runtime, ``CB5xx`` environment.
"""

from __future__ import annotations

import textwrap
from typing import Any

from . import errors as E
from .errors import Diagnostic

__all__ = [
    "CATALOG",
    "Diagnostic",
    "error",
    "format_message",
    "lookup",
    "render_entry",
    "MISSING_ANNOTATION",
    "UNSUPPORTED_ANNOTATION",
    "TENSOR_PARAMETER",
    "NON_CTYPES_SCALAR",
    "SEQUENCE_PARAMETER",
    "VARIADIC_PARAMETER",
    "UNRESOLVED_ANNOTATION",
    "NOT_A_FUNCTION",
    "INVALID_POINTER_ANNOTATION",
    "INVALID_OPTION",
    "NOT_PREPROCESSED",
    "INVALID_TENSOR_ANNOTATION",
    "INELIGIBLE_SEQUENCE_ELEMENT",
    "MISSING_ARGUMENT",
    "UNEXPECTED_ARGUMENT",
    "DUPLICATE_ARGUMENT",
    "WRONG_KIND",
    "INTEGER_OUT_OF_RANGE",
    "INVALID_ADDRESS",
    "MISALIGNED_POINTER",
    "POINTER_DTYPE_UNKNOWN",
    "CONSTEXPR_UNHASHABLE",
    "POINTER_MISMATCH",
    "TENSOR_DTYPE_MISMATCH",
    "TENSOR_RANK_MISMATCH",
    "TENSOR_LAYOUT_MISMATCH",
    "TENSOR_DEVICE_MISMATCH",
    "SEQUENCE_LENGTH_MISMATCH",
    "NOT_COMPILED",
    "UNSUPPORTED_MARSHALLING",
    "WORKSPACE_ARGUMENTS",
    "NO_ENGINE",
    "SNAPSHOT_MISMATCH",
    "CUDA_ERROR",
    "MODULE_UNLOADED",
    "CONCURRENT_USE",
    "HANDLE_CLOSED",
    "DSL_INCOMPATIBLE",
    "DSL_MISSING",
]


CATALOG: dict[str, Diagnostic] = {}


def _entry(
    code: str,
    slug: str,
    error_class: type[E.CuteBindError],
    *,
    summary: str,
    message: str,
    explanation: str,
    example: str,
    fix: str,
    retired: bool = False,
) -> Diagnostic:
    if code in CATALOG:  # pragma: no cover - guards the catalog's own integrity
        raise RuntimeError(f"diagnostic code {code} defined twice")
    d = Diagnostic(
        code=code,
        slug=slug,
        summary=summary,
        explanation=textwrap.dedent(explanation).strip(),
        example=textwrap.dedent(example).strip() + "\n",
        fix=textwrap.dedent(fix).strip(),
        error_class=error_class,
        message=message,
        retired=retired,
    )
    CATALOG[code] = d
    return d


_PRELUDE = """\
import ctypes
import cutlass
import cutlass.cute as cute
import cute_bind
"""

# A host-only function (no device kernel inside) that compiles and runs on the
# CPU: the bind/launch examples below use it so they run anywhere.
_FILL = (
    _PRELUDE
    + """
@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value

buf = (ctypes.c_int32 * 1)()
addr = ctypes.addressof(buf)
"""
)

# ---------------------------------------------------------------- CB1xx: definition
MISSING_ANNOTATION = _entry(
    "CB101",
    "missing-annotation",
    E.KernelDefinitionError,
    summary="A runtime parameter has no type annotation.",
    message="kernel '{kernel}', parameter '{parameter}': the parameter has no annotation, "
    "so cute_bind cannot tell which slot kind stores it",
    explanation="""
    cute_bind decides at decoration time how every runtime parameter is stored
    and rewritten on each launch. It reads that from the annotation: pointers,
    numeric scalars and streams each have their own slot kind. A parameter
    without an annotation would leave the choice to the value seen at the
    first call, which is how the plain DSL call path silently marshals an
    integer address as a 32-bit scalar.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Pointer, n):          # 'n' has no annotation -> CB101
    pass
""",
    fix="""
    Annotate the parameter: `cutlass.Int32` (or another numeric type) for a
    scalar, `cute.Pointer` or `cute_bind.Pointer[dtype]` for a pointer,
    `cuda.CUstream` for a stream, or `cutlass.Constexpr[...]` for a
    compile-time value.
    """,
)

UNSUPPORTED_ANNOTATION = _entry(
    "CB102",
    "unsupported-annotation",
    E.KernelDefinitionError,
    summary="A parameter's annotation is not an eligible runtime slot kind.",
    message="kernel '{kernel}', parameter '{parameter}': annotation {got} is not an eligible "
    "runtime slot kind; expected {expected}",
    explanation="""
    A prepared launch rewrites each runtime argument in place, so every slot
    needs fixed-size storage cute_bind knows how to fill. Eligible kinds are
    pointers, numeric scalars with plain ctypes storage, and CUDA streams.
    Structs, dataclasses, custom JIT argument adapters and other types are
    marshalled by the DSL in ways cute_bind does not reproduce, so they are
    rejected rather than launched with possibly wrong bytes.
    """,
    example=_PRELUDE
    + """
class Params:
    pass

@cute_bind.kernel
def scale(out: cute.Pointer, params: Params):   # custom type -> CB102
    pass
""",
    fix="""
    Pass the fields as separate eligible parameters (pointers, numeric
    scalars, streams), mark compile-time values `cutlass.Constexpr[...]`, or
    call the compiled function directly instead of through cute_bind.
    """,
)

TENSOR_PARAMETER = _entry(
    "CB103",
    "tensor-parameter",
    E.KernelDefinitionError,
    summary="(retired in 0.2.0: tensors are eligible) A parameter was a cute.Tensor.",
    message="kernel '{kernel}', parameter '{parameter}': annotation {got} is a tensor; expected {expected}",
    explanation="""
    Retired: since cute_bind 0.2.0 a `cute.Tensor` (or `cute_bind.Tensor[...]`)
    parameter is an eligible tensor slot, so this code is no longer raised.
    It stays in the catalog so that the code is never reused. Invalid
    `cute_bind.Tensor[...]` annotations are CB112; tensors that do not match
    their slot at launch are CB211-CB214.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Tensor, alpha: cutlass.Float32):   # eligible since 0.2.0 (was CB103)
    pass
""",
    fix="Nothing to fix: tensor parameters are eligible.",
    retired=True,
)

NON_CTYPES_SCALAR = _entry(
    "CB104",
    "non-ctypes-scalar",
    E.KernelDefinitionError,
    summary="A scalar type has no storage the DSL can pass at run time (Float8/6/4, Int4, 128-bit, abstract types).",
    message="kernel '{kernel}', parameter '{parameter}': scalar type {got} cannot be passed as a runtime "
    "scalar; expected one of {expected}",
    explanation="""
    The DSL passes a runtime scalar through one plain C value: `c_bool`,
    `c_intN`, `c_uintN`, `c_float`, `c_double`, or a 16-bit pattern for
    `Float16` and `BFloat16`. The Float8, Float6 and Float4 families, `Int4`,
    the 128-bit integers and the abstract bases (`Numeric`, `Integer`,
    `Float`) have no such storage: the DSL itself refuses them as runtime
    arguments, so there are no bytes for cute_bind to reproduce.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Pointer, alpha: cutlass.Float8E4M3FN):   # no runtime storage -> CB104
    pass
""",
    fix="""
    Pass the scalar as `cutlass.Float32`, `cutlass.Float16` or
    `cutlass.BFloat16` (or a wider integer) and convert it inside the
    function, e.g. `alpha.to(cutlass.Float8E4M3FN)`.
    """,
)

SEQUENCE_PARAMETER = _entry(
    "CB105",
    "sequence-parameter",
    E.KernelDefinitionError,
    summary="(retired in 0.2.0: sequences of eligible kinds are eligible) A parameter was a sequence.",
    message="kernel '{kernel}', parameter '{parameter}': annotation {got} is a sequence; expected {expected}",
    explanation="""
    Retired: since cute_bind 0.2.0 a tuple or list parameter whose elements
    are eligible kinds is a sequence slot with its length fixed at `bind()`,
    so this code is no longer raised. It stays in the catalog so that the code
    is never reused. A sequence whose elements are not eligible is CB113; a
    sequence of the wrong length at launch is CB215.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Pointer, sizes: tuple[int, int]):   # eligible since 0.2.0 (was CB105)
    pass
""",
    fix="Nothing to fix: sequences of eligible kinds are eligible.",
    retired=True,
)

VARIADIC_PARAMETER = _entry(
    "CB106",
    "variadic-parameter",
    E.KernelDefinitionError,
    summary="The function takes *args or **kwargs.",
    message="kernel '{kernel}', parameter '{parameter}': variadic parameters ({got}) have no "
    "fixed slot; expected {expected}",
    explanation="""
    A prepared launch needs one fixed slot per runtime parameter. `*args` and
    `**kwargs` make the slot count depend on the call.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Pointer, *rest):   # variadic -> CB106
    pass
""",
    fix="List every runtime parameter explicitly, each with an eligible annotation.",
)

UNRESOLVED_ANNOTATION = _entry(
    "CB107",
    "unresolved-annotation",
    E.KernelDefinitionError,
    summary="A string (postponed) annotation cannot be resolved.",
    message="kernel '{kernel}', parameter '{parameter}': annotation {got} could not be "
    "resolved ({detail}); expected {expected}",
    explanation="""
    With `from __future__ import annotations` every annotation is a string
    that cute_bind evaluates in the function's module. A name that is not
    defined there (a typo, or an import inside `if TYPE_CHECKING:`) cannot be
    checked.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Pointer, n: "Int32"):   # 'Int32' is not defined here -> CB107
    pass
""",
    fix="""
    Import the annotation's name at module level (not only under
    `TYPE_CHECKING`) or spell it fully, e.g. `cutlass.Int32`.
    """,
)

NOT_A_FUNCTION = _entry(
    "CB108",
    "not-a-function",
    E.KernelDefinitionError,
    summary="@cute_bind.kernel was applied to something that is not a function.",
    message="kernel '{kernel}': @cute_bind.kernel expects {expected}, got {got}",
    explanation="""
    The decorator wraps a CuTe DSL host function: a plain Python function or
    one already decorated with `@cute.jit`. Classes, instances and device
    functions decorated with `@cute.kernel` cannot be compiled as host entry
    points.
    """,
    example=_PRELUDE
    + """
cute_bind.kernel(42)   # not a function -> CB108
""",
    fix="Decorate the host function (the one you would pass to `cute.compile`).",
)

INVALID_POINTER_ANNOTATION = _entry(
    "CB109",
    "invalid-pointer-annotation",
    E.KernelDefinitionError,
    summary="cute_bind.Pointer[...] was given an invalid dtype, alignment or address space.",
    message="cute_bind.Pointer[...]: {detail}; expected {expected}, got {got}",
    explanation="""
    `cute_bind.Pointer[dtype, align, space]` describes a pointer slot well
    enough to compile from annotations alone: the element dtype (a CuTe
    numeric type), the assumed alignment in bytes (a power of two, at least
    the element size) and the address space (`cute.AddressSpace`).
    """,
    example=_PRELUDE
    + """
P = cute_bind.Pointer[cutlass.Float32, 3]   # alignment 3 is not a power of two -> CB109
""",
    fix="""
    Use a CuTe numeric dtype, a power-of-two alignment no smaller than the
    element size, and a `cute.AddressSpace` member, e.g.
    `cute_bind.Pointer[cutlass.Float32, 16, cute.AddressSpace.gmem]`.
    """,
)

INVALID_OPTION = _entry(
    "CB110",
    "invalid-option",
    E.KernelDefinitionError,
    summary="@cute_bind.kernel(...) was given an unknown option or an invalid value.",
    message="kernel '{kernel}': option '{parameter}' expects {expected}, got {got}",
    explanation="""
    The decorator's options are keyword-only and validated when the decorator
    is applied, so a typo fails at import time rather than at the first
    launch.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel(checked="yes")   # checked must be a bool -> CB110
def scale(out: cute.Pointer):
    pass
""",
    fix="""
    See `help(cute_bind.kernel)` for the options: `name` (str or None),
    `compile_options` (str or None, passed to `cute.compile(..., options=...)`)
    and `checked` (bool).
    """,
)

NOT_PREPROCESSED = _entry(
    "CB111",
    "not-preprocessed",
    E.KernelDefinitionError,
    summary="Compiling failed for a function the DSL did not preprocess (no @cute.jit in its source).",
    message="kernel '{kernel}': compiling failed ({got}); the DSL rewrites Python control flow only for "
    "functions whose innermost decorator in the source is spelled `@<module>.jit` or `@<module>.kernel` "
    "without options, and this one's is {detail}",
    explanation="""
    The DSL turns `for`/`if` over runtime values into staged code by
    rewriting the function's source, and it only does so when the source's
    innermost decorator looks like `@cute.jit` (any `@<name>.jit` or
    `@<name>.kernel`, without unknown options). A plain function decorated
    as `@cute_bind.kernel` qualifies; `@cute_bind.kernel(checked=True)`,
    `@kernel` (imported name) or no decorator in the source do not, and
    compiling such a function fails on its first dynamic loop or branch.
    This entry is raised from the DSL's compile error, which is chained.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel(checked=True)          # options hide the function from the DSL's rewriter
def fill(out: cute_bind.Pointer[cutlass.Int32], n: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    for k in range(n):                   # a loop over a runtime value
        t[0] = k

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 3)      # -> CB111
""",
    fix="Put `@cute.jit` directly above the function, under `@cute_bind.kernel(...)`.",
)

INVALID_TENSOR_ANNOTATION = _entry(
    "CB112",
    "invalid-tensor-annotation",
    E.KernelDefinitionError,
    summary="cute_bind.Tensor[...] was given an invalid dtype, rank, alignment or layout.",
    message="cute_bind.Tensor[...]: {detail}; expected {expected}, got {got}",
    explanation="""
    `cute_bind.Tensor[dtype, rank, align, layout]` describes a tensor slot:
    the element dtype (a CuTe numeric type), the rank (an int >= 0), the
    assumed alignment of the data pointer in bytes (a power of two, at least
    the element size; `None` for the element size) and which layout facts
    are compiled in: `"dynamic"` (every extent and every stride except the
    unit stride of the leading dimension are runtime values, as
    `mark_layout_dynamic()`), `"static"` (every extent and stride is compiled
    in) or an int, the leading dimension (`mark_layout_dynamic(leading_dim=k)`).
    """,
    example=_PRELUDE
    + """
T = cute_bind.Tensor[cutlass.Float32, -1]   # a negative rank -> CB112
""",
    fix="""
    Use a CuTe numeric dtype, a rank >= 0, a power-of-two alignment no smaller
    than the element size and a layout of "dynamic", "static" or a leading
    dimension below the rank, e.g. `cute_bind.Tensor[cutlass.Float32, 2, 16]`.
    """,
)

INELIGIBLE_SEQUENCE_ELEMENT = _entry(
    "CB113",
    "ineligible-sequence-element",
    E.KernelDefinitionError,
    summary="A tuple/list parameter has an element that is not an eligible kind.",
    message="kernel '{kernel}', parameter '{parameter}': sequence annotation {got} has an element that is "
    "not a pointer, scalar, stream or tensor ({detail}); expected {expected}",
    explanation="""
    A tuple or list parameter is a sequence slot when every element is a
    kind cute_bind can rewrite in place: a pointer, a numeric scalar, a
    stream or a tensor. The DSL flattens the elements into consecutive C
    arguments, so the slot's layout is fixed once the length is known at
    `bind()`. Nested sequences and elements of other types (layouts,
    arbitrary objects, Constexpr markers) have no such fixed storage.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Pointer, sizes: tuple[int, tuple[int, int]]):   # nested sequence -> CB113
    pass
""",
    fix="""
    Flatten the sequence (`tuple[int, int, int]`), pass the odd element as a
    separate parameter, or mark the whole sequence `cutlass.Constexpr[...]`
    if its values are fixed at compile time.
    """,
)

# ---------------------------------------------------------------- CB2xx: arguments
MISSING_ARGUMENT = _entry(
    "CB201",
    "missing-argument",
    E.LaunchArgumentError,
    summary="A required argument was not given.",
    message="kernel '{kernel}', parameter '{parameter}': no value was given; expected {expected}",
    explanation="""
    `bind()` and `launch()` take the same arguments as calling the compiled
    function. Every runtime parameter without a default needs a value, given
    positionally or by keyword.
    """,
    example=_FILL
    + """
handle = fill.bind(addr, 1)
handle.launch(addr)   # 'value' missing -> CB201
""",
    fix="Pass a value for the parameter, positionally or as `{parameter}=...`.",
)

UNEXPECTED_ARGUMENT = _entry(
    "CB202",
    "unexpected-argument",
    E.LaunchArgumentError,
    summary="Too many positional arguments, or an unknown keyword.",
    message="kernel '{kernel}', parameter '{parameter}': unexpected argument; expected {expected}, "
    "got {got}",
    explanation="""
    The argument does not correspond to any runtime parameter of the kernel.
    Compile-time (`Constexpr`) parameters are given to `bind()` only: a
    prepared launch is already specialised for them and `launch()` does not
    take them.
    """,
    example=_FILL
    + """
handle = fill.bind(addr, 1)
handle.launch(addr, 2, 3)   # one positional too many -> CB202
""",
    fix="Remove the extra argument, or check the parameter's spelling.",
)

DUPLICATE_ARGUMENT = _entry(
    "CB203",
    "duplicate-argument",
    E.LaunchArgumentError,
    summary="A parameter was given both positionally and by keyword.",
    message="kernel '{kernel}', parameter '{parameter}': given twice (positionally and by keyword)",
    explanation="Each parameter takes exactly one value per call.",
    example=_FILL
    + """
handle = fill.bind(addr, 1)
handle.launch(addr, 2, value=3)   # 'value' twice -> CB203
""",
    fix="Pass the parameter once.",
)

WRONG_KIND = _entry(
    "CB204",
    "wrong-kind",
    E.LaunchArgumentError,
    summary="A value has the wrong kind for its slot.",
    message="kernel '{kernel}', parameter '{parameter}': expected {expected}, got {got}",
    explanation="""
    Each runtime parameter has a slot kind fixed at decoration time (pointer,
    numeric scalar, stream, tensor or sequence) and accepts only values of
    that kind. For
    example an integer slot does not take a float (that would truncate
    silently), a pointer slot does not take a bool or a string, and a stream
    slot does not take a tensor.
    """,
    example=_FILL
    + """
handle = fill.bind(addr, 1)
handle.launch(addr, 2.5)   # float for an Int32 slot -> CB204
""",
    fix="Pass {expected}.",
)

INTEGER_OUT_OF_RANGE = _entry(
    "CB205",
    "integer-out-of-range",
    E.LaunchValueError,
    summary="An integer does not fit its slot's type.",
    message="kernel '{kernel}', parameter '{parameter}': {got} does not fit {expected}",
    explanation="""
    The plain DSL call path wraps an out-of-range integer to the slot width
    (with a warning at best). cute_bind never truncates silently: a value
    outside the slot type's range is an error.
    """,
    example=_FILL
    + """
handle = fill.bind(addr, 1)
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
    E.LaunchValueError,
    summary="A pointer address is negative or does not fit 64 bits.",
    message="kernel '{kernel}', parameter '{parameter}': {got} is not a valid address; "
    "expected {expected}",
    explanation="""
    A pointer slot stores a 64-bit address. Negative integers and integers of
    2**64 or more cannot be addresses; they usually come from arithmetic
    mistakes or from passing the wrong value to a pointer parameter.
    """,
    example=_FILL
    + """
handle = fill.bind(addr, 1)
handle.launch(-8, 1)   # negative address -> CB206
""",
    fix="Pass the buffer's address: an int from `tensor.data_ptr()`, a `make_ptr` pointer, or the tensor itself.",
)

MISALIGNED_POINTER = _entry(
    "CB207",
    "misaligned-pointer",
    E.LaunchValueError,
    summary="A pointer is not aligned as the compiled function assumes.",
    message="kernel '{kernel}', parameter '{parameter}': address {got} is not a multiple of "
    "{expected}",
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
    E.LaunchArgumentError,
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
    E.LaunchArgumentError,
    summary="A Constexpr value cannot be part of the compile-cache key.",
    message="kernel '{kernel}', parameter '{parameter}': Constexpr value {got} is not hashable; "
    "expected {expected}",
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
    E.LaunchArgumentError,
    summary="A pointer's dtype, address space or alignment differs from the compiled slot.",
    message="kernel '{kernel}', parameter '{parameter}': the handle was compiled for {expected}, "
    "got {got}",
    explanation="""
    A prepared launch is specialised for the pointer element type, address
    space and alignment seen at `bind()`. A pointer object (or tensor) with a
    different element type, or a weaker alignment, needs a different compiled
    function. Raw integer addresses carry no type and are not checked for
    this.
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
    E.LaunchArgumentError,
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
    E.LaunchArgumentError,
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
    E.LaunchValueError,
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
    E.LaunchValueError,
    summary="A tensor lives on another device (or in host memory) than the one its slot was bound with.",
    message="kernel '{kernel}', parameter '{parameter}': the slot takes tensors on {expected}, got {got}",
    explanation="""
    A compiled function launches on the device it was loaded on and
    dereferences tensor data pointers there. A tensor on another GPU, or a
    CPU tensor for a GPU slot, would hand the kernel an address it cannot
    use: an illegal-address fault, or worse, another allocation's memory.
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
    E.LaunchValueError,
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

# ---------------------------------------------------------------- CB3xx: preparing
NOT_COMPILED = _entry(
    "CB301",
    "not-compiled",
    E.LaunchArgumentError,
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
    E.LaunchRuntimeError,
    summary="The DSL marshalled a slot into a shape cute_bind does not reproduce.",
    message="kernel '{kernel}', parameter '{parameter}': the DSL produced {got} for this slot; "
    "expected {expected}",
    explanation="""
    At `bind()`/`prepare()` cute_bind runs the DSL's own marshalling once and
    checks that each scalar, pointer, stream and tensor (and each element of
    a sequence) became exactly one C pointer to storage of the slot's size.
    Anything else (a value the DSL expands into more pointers, e.g. a value
    given to a parameter compiled as a different kind) cannot be rewritten in
    place safely.
    """,
    example=_PRELUDE
    + """
# Only a DSL release that marshals an eligible kind differently produces this;
# prepare() then refuses the handle. Shown here as the error it raises:
raise cute_bind.error(cute_bind.CATALOG["CB302"], kernel="scale", parameter="n",
                      expected="one C pointer per runtime parameter (2)", got="3 C pointers in all")
""",
    fix="Pass values of the kinds the function was compiled with.",
)

WORKSPACE_ARGUMENTS = _entry(
    "CB303",
    "workspace-arguments",
    E.LaunchArgumentError,
    summary="The compiled function needs extra workspace arguments.",
    message="kernel '{kernel}': the compiled function takes {got} extra workspace argument(s); "
    "expected {expected}",
    explanation="""
    Some CuTe extensions add auxiliary arguments after the declared
    parameters. cute_bind prepares the declared parameters only.
    """,
    example=_PRELUDE
    + """
# Raised by prepare() for functions compiled with CuTe extensions that add
# workspace arguments; plain host functions never do.
raise cute_bind.error(cute_bind.CATALOG["CB303"], kernel="k", expected="0", got="2")
""",
    fix="Call the compiled function directly for kernels that need workspace arguments.",
)

NO_ENGINE = _entry(
    "CB304",
    "no-execution-engine",
    E.LaunchRuntimeError,
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
    fix="Compile with `cute.compile(...)` in this process, on a machine that can run the function.",
)

SNAPSHOT_MISMATCH = _entry(
    "CB305",
    "snapshot-mismatch",
    E.LaunchRuntimeError,
    summary="cute_bind's bytes for a slot differ from the DSL's marshalled bytes.",
    message="kernel '{kernel}', parameter '{parameter}': the DSL marshalled {expected}, cute_bind "
    "would write {got}",
    explanation="""
    At `bind()` cute_bind writes each value with its own packing and compares
    the bytes with what the DSL's normal call path produced for the same
    value. They must be identical; a difference means the installed DSL
    changed how it stores this kind, and launching could pass wrong bytes.
    """,
    example=_PRELUDE
    + """
raise cute_bind.error(cute_bind.CATALOG["CB305"], kernel="k", parameter="n",
                      expected="b'\\\\x01\\\\x00\\\\x00\\\\x00'", got="b'\\\\x00\\\\x00\\\\x00\\\\x01'")
""",
    fix="Report it with your nvidia-cutlass-dsl version; until fixed, call the compiled function directly.",
)

# ---------------------------------------------------------------- CB4xx: launch runtime
CUDA_ERROR = _entry(
    "CB401",
    "cuda-error",
    E.CudaLaunchError,
    summary="The compiled entry point returned a non-zero CUDA result.",
    message="kernel '{kernel}': the launch returned CUDA error {got}; expected {expected}",
    explanation="""
    The entry point reports the result of its CUDA calls (module load,
    kernel launch) in a result slot the handle owns. A non-zero value is
    raised as this error; `error.cuda_error` holds the number and
    `error.cuda_error_name` its name.
    """,
    example=_PRELUDE
    + """
# Needs a GPU to occur for real: e.g. a grid larger than the device allows.
raise cute_bind.error(cute_bind.CATALOG["CB401"], kernel="k", expected="cudaSuccess (0)",
                      got="cudaErrorInvalidValue (1)")
""",
    fix="Read the CUDA error name: it is the launch configuration, the device or the inputs, as for any CUDA launch.",
)

MODULE_UNLOADED = _entry(
    "CB402",
    "module-unloaded",
    E.LaunchRuntimeError,
    summary="The compiled module was unloaded; the handle can no longer launch.",
    message="kernel '{kernel}': the compiled module this handle was prepared from has been "
    "unloaded; expected {expected}",
    explanation="""
    A handle pins the compiled module it was prepared from so it stays loaded
    while the handle lives. If the module is unloaded explicitly, the entry
    point's kernels are gone and launching would crash, so the handle raises
    instead. Recompiling gives a new module; bind a new handle for it.
    """,
    example=_FILL
    + """
from cute_bind import _dsl
handle = fill.bind(addr, 1)
_dsl.unload(handle.compiled)
handle.launch(addr, 2)   # -> CB402
""",
    fix="Bind a new handle (`kernel.bind(...)` or `cute_bind.prepare(...)`) after recompiling.",
)

CONCURRENT_USE = _entry(
    "CB403",
    "concurrent-use",
    E.LaunchRuntimeError,
    summary="Two threads launched the same handle at the same time (checked mode).",
    message="kernel '{kernel}': the handle is already launching in thread {got}; expected {expected}",
    explanation="""
    A handle owns one set of argument storage that `launch()` rewrites before
    calling the entry point, so two threads launching one handle at once
    would race on it. Handing a handle from one thread to another between
    launches is fine. Checked mode detects overlapping launches; the default
    mode trusts the one-thread-at-a-time contract.
    """,
    example=_PRELUDE
    + """
import threading

@cute_bind.kernel
def spin(out: cute_bind.Pointer[cutlass.Float32], n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(1))
    for _ in range(n):                       # a host launch that takes a while
        o[0] = o[0] + cutlass.Float32(1.0)

acc = (ctypes.c_float * 1)()
handle = spin.bind(ctypes.addressof(acc), 0).with_checks()
worker = threading.Thread(target=handle.launch, args=(ctypes.addressof(acc), 300_000_000))
worker.start()
try:
    while worker.is_alive():
        handle.launch(ctypes.addressof(acc), 0)   # same handle, another thread, same time -> CB403
finally:
    worker.join()
""",
    fix="Give each thread its own handle: `handle.clone()` is cheap and shares the compiled function.",
)

HANDLE_CLOSED = _entry(
    "CB404",
    "handle-closed",
    E.LaunchRuntimeError,
    summary="The handle was closed.",
    message="kernel '{kernel}': the handle was closed; expected {expected}",
    explanation="`handle.close()` releases the handle's pin on the compiled module; it cannot launch afterwards.",
    example=_FILL
    + """
handle = fill.bind(addr, 1)
handle.close()
handle.launch(addr, 2)   # -> CB404
""",
    fix="Bind a new handle.",
)

# ---------------------------------------------------------------- CB5xx: environment
DSL_INCOMPATIBLE = _entry(
    "CB501",
    "dsl-incompatible",
    E.DSLCompatibilityError,
    summary="The installed nvidia-cutlass-dsl lacks an internal cute_bind needs.",
    message="nvidia-cutlass-dsl {got} cannot be used: {detail}; cute_bind supports {expected}",
    explanation="""
    cute_bind reaches into a few non-public parts of the DSL (the execution
    argument marshaller, the executor's entry point and result slot). They
    all live in one module, `cute_bind._dsl`, which checks them, and the
    installed version against the tested range, once, at the first `bind()`
    or `prepare()`, and raises this error when something is off. To try an
    untested version anyway, set `CUTE_BIND_SKIP_DSL_CHECK=1` (the byte
    snapshot check at `bind()` still guards every slot).
    """,
    example=_PRELUDE
    + """
import importlib.metadata
real_version = importlib.metadata.version
importlib.metadata.version = lambda name: "4.9.0" if name == "nvidia-cutlass-dsl" else real_version(name)

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 1)   # an untested DSL version -> CB501
""",
    fix="Install a supported version: `pip install 'nvidia-cutlass-dsl{expected}'`.",
)

DSL_MISSING = _entry(
    "CB502",
    "dsl-missing",
    E.DSLCompatibilityError,
    summary="nvidia-cutlass-dsl is not installed or cannot be imported.",
    message="nvidia-cutlass-dsl cannot be imported ({detail}); expected {expected}",
    explanation="""
    cute_bind imports without the DSL (so tools such as `cute-bind check`
    work anywhere), but decorating, binding and launching need it.
    """,
    example="""\
import sys
sys.modules["cutlass"] = None   # as on a machine without nvidia-cutlass-dsl
import cute_bind

@cute_bind.kernel
def scale(n: int):               # decorating needs the DSL -> CB502
    pass
""",
    fix="`pip install nvidia-cutlass-dsl` (see pyproject.toml for the supported range).",
)


# ---------------------------------------------------------------- CB6xx: compiling and caching
# CB605-CB609: the disk compile cache (cute_bind/cache/). The warnings are
# CacheWarning (a RuntimeWarning); each example turns them into errors with a
# warnings filter so that it fails with its code.
_CACHE_PRELUDE = (
    _FILL
    + """
import os
import tempfile
import warnings

os.environ["CUTE_BIND_CACHE_DIR"] = tempfile.mkdtemp()   # a private cache folder for the example
fill.bind(addr, 1)                                        # compiles and stores the entry
(entry,) = cute_bind.cache.info()
fill.clear_cache()                                        # forget the in-process compile: the next bind reads the disk
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
"""
)

__all__ += ["CACHE_ENTRY_CORRUPT", "CACHE_ENTRY_MISMATCH", "CACHE_UNAVAILABLE", "CACHE_SKIPPED", "CACHE_SETTING_INVALID"]

CACHE_ENTRY_CORRUPT = _entry(
    "CB605",
    "cache-entry-corrupt",
    E.CacheWarning,
    summary="A disk cache entry failed its checksum; the kernel was recompiled and the entry replaced.",
    message="kernel '{kernel}': the disk cache entry {detail} is corrupt ({got}); it was compiled again and the entry replaced",
    explanation="""
    Every cache entry ends with a SHA-256 of everything before it, checked on
    each read. A file cut short (a full disk, a copy interrupted) or changed
    by anything but cute_bind fails that check and is never loaded: the
    kernel compiles as if the entry were absent and the fresh compile
    replaces it. This warning is issued once per entry and process.
    """,
    example=_CACHE_PRELUDE
    + """
with open(entry.path, "r+b") as f:
    f.truncate(entry.size // 2)          # a truncated entry
fill.bind(addr, 1)                       # -> CB605 (then recompiled and replaced)
""",
    fix="""
    Nothing is required: the entry was replaced. If it happens often, check
    the cache folder's disk (`python -m cute_bind cache prune` removes
    corrupt entries).
    """,
)

CACHE_ENTRY_MISMATCH = _entry(
    "CB606",
    "cache-entry-mismatch",
    E.CacheWarning,
    summary="A disk cache entry was written for another key, version or environment, or cannot be loaded; it was recompiled.",
    message="kernel '{kernel}': the disk cache entry {detail} does not belong to this compile ({got}); it was compiled again "
    "and the entry replaced",
    explanation="""
    An entry's file name is the hash of everything its compile depends on,
    and its header repeats the key and the environment it was made in
    (cute_bind's cache format, DSL version and CUDA variant, Python, machine,
    `CUTE_DSL_*` settings). A header that disagrees (an entry copied between
    folders, written by another version under a colliding name), or an
    object file the DSL refuses to load, is never used: the kernel compiles
    again and the entry is replaced. Issued once per entry and process.
    """,
    example=_CACHE_PRELUDE
    + """
from cute_bind.cache.store import decode, encode

read = decode(entry.path.read_bytes(), entry.key, {})
read.header["env"]["dsl"] = "4.7.0"      # an entry written by another DSL version
entry.path.write_bytes(encode(read.header, read.payload))
fill.bind(addr, 1)                       # -> CB606 (then recompiled and replaced)
""",
    fix="""
    Nothing is required. Folders shared between installations are fine
    (each keeps its own entries); do not copy entries between keys.
    """,
)

CACHE_UNAVAILABLE = _entry(
    "CB607",
    "cache-unavailable",
    E.CacheWarning,
    summary="The disk cache folder cannot be read or written; kernels compile without it.",
    message="kernel '{kernel}': the disk compile cache is unavailable: expected {expected}, got {got}; compiling without it",
    explanation="""
    The cache folder (`CUTE_BIND_CACHE_DIR`, default under the user's cache
    folder) could not be created, read or written: a read-only home, a
    path through a file, missing permissions, a full disk. The cache is
    only an optimisation, so the kernel compiles in-process as it would
    without it. Issued once per folder and process.
    """,
    example=_FILL
    + """
import os
import tempfile
import warnings

blocker = tempfile.NamedTemporaryFile(delete=False).name
os.environ["CUTE_BIND_CACHE_DIR"] = os.path.join(blocker, "cache")   # a folder under a file cannot exist
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
fill.bind(addr, 1)                                        # -> CB607 (compiles without the cache)
""",
    fix="""
    Point `CUTE_BIND_CACHE_DIR` at a writable folder, or turn the cache off
    with `CUTE_BIND_CACHE=0` to silence this.
    """,
)

CACHE_SKIPPED = _entry(
    "CB608",
    "cache-skipped",
    E.CacheWarning,
    summary="A compile cannot be stored in the disk cache (no stable key, or the DSL cannot export it); it stays in-process.",
    message="kernel '{kernel}': this compile is not stored in the disk cache: expected {expected}, got {got}",
    explanation="""
    An entry may only be reused when everything its compile read is in its
    key. The key spells the values of the names the kernel and its helpers
    read (numbers, strings, tuples, enums, dataclasses, functions by their
    source); an object whose `repr` shows an address (its state invisible)
    could change without the key changing, so such a compile is never
    stored rather than risk loading a stale kernel. The same happens when
    the DSL cannot export the compiled function (e.g. TVM-FFI compile
    options). The kernel works as without the cache. Issued once per kernel
    and cause.
    """,
    example=_PRELUDE
    + """
import os
import tempfile
import warnings

class Settings:                    # a plain object: its repr shows no state
    offset = 3

SETTINGS = Settings()

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value + SETTINGS.offset      # read while tracing, invisible to a source hash

os.environ["CUTE_BIND_CACHE_DIR"] = tempfile.mkdtemp()
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 1)    # -> CB608 (compiled, not stored)
""",
    fix="""
    For a value without a stable spelling: read it from a constant, a
    dataclass or an argument the key can spell (a `cutlass.Constexpr`
    parameter), or vouch for the kernel with
    `@cute_bind.kernel(cache_key="v2")` and change that key whenever what it
    depends on changes. For a function the DSL cannot export there is
    nothing to fix: it compiles in each process. `cache=False` silences it
    for the kernel.
    """,
)

CACHE_SETTING_INVALID = _entry(
    "CB609",
    "cache-setting-invalid",
    E.CacheSettingError,
    summary="A disk cache setting is invalid.",
    message="the disk cache setting {parameter} is invalid (kernel '{kernel}'): expected {expected}, got {got}",
    explanation="""
    `CUTE_BIND_CACHE` is `1` or `0`; `CUTE_BIND_CACHE_SIZE` (and
    `cache prune --max-size`) is a size in bytes with an optional
    `K`/`M`/`G` suffix; `cute_bind.cache.warm(..., workers=N)` needs a
    kernel that worker processes can import by module and name. Any other
    value is refused rather than guessed.
    """,
    example=_FILL
    + """
import os

os.environ["CUTE_BIND_CACHE_SIZE"] = "lots"
fill.bind(addr, 1)                 # -> CB609
""",
    fix="Set `CUTE_BIND_CACHE=0|1` and `CUTE_BIND_CACHE_SIZE` to a size such as `512M` or `2G`.",
)


def lookup(code: str) -> Diagnostic:
    """Return the catalog entry for ``code`` (case-insensitive, e.g. ``"cb204"``)."""
    try:
        return CATALOG[code.strip().upper()]
    except KeyError:
        raise KeyError(f"unknown diagnostic code {code!r}; known codes: {', '.join(CATALOG)}") from None


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def format_message(diagnostic: Diagnostic, **fields: Any) -> tuple[str, str]:
    """Render ``(message, fix)`` for one occurrence of ``diagnostic``."""
    values = _Fields({k: v for k, v in fields.items() if v is not None})
    body = diagnostic.message.format_map(values)
    # the catalog's fix text is wrapped for the docs; a message keeps it on one line
    fix = " ".join(diagnostic.fix.format_map(values).split())
    text = f"[{diagnostic.code}] {body}.\n  fix: {fix}\n  (python -m cute_bind explain {diagnostic.code})"
    return text, fix


def error(
    diagnostic: Diagnostic,
    *,
    kernel: str | None = None,
    parameter: str | None = None,
    expected: str | None = None,
    got: str | None = None,
    detail: str | None = None,
    details: dict[str, Any] | None = None,
) -> E.CuteBindError:
    """Build the exception for one occurrence of a catalog entry (the caller raises it)."""
    text, fix = format_message(
        diagnostic, kernel=kernel, parameter=parameter, expected=expected, got=got, detail=detail
    )
    return diagnostic.error_class(
        diagnostic,
        text,
        kernel=kernel,
        parameter=parameter,
        expected=expected,
        got=got,
        fix=fix,
        details=details,
    )


def render_entry(diagnostic: Diagnostic) -> str:
    """Plain-text rendering of an entry, as printed by ``python -m cute_bind explain``."""
    status = " (retired)" if diagnostic.retired else ""
    lines = [
        f"{diagnostic.code} {diagnostic.slug}{status}",
        "",
        diagnostic.summary,
        "",
        diagnostic.explanation,
        "",
        "Raises: " + diagnostic.error_class.__name__,
        "",
        "Example:",
        textwrap.indent(diagnostic.example.rstrip(), "    "),
        "",
        "Fix:",
        textwrap.indent(diagnostic.fix, "    "),
    ]
    return "\n".join(lines) + "\n"
