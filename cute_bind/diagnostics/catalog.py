"""The diagnostics catalog: every error cute_bind can report, defined once.

Each :class:`Diagnostic` has a stable code (``CB101``...), a slug, a one-line
summary, an explanation, a runnable example that triggers it, the fix, the
exception class it raises and the message template filled at the raise site.
Raise sites refer to entries (``raise error(CB204, ...)``); they never build
messages of their own. Codes are never reused or deleted: an entry that no
longer applies is marked ``retired=True`` and stays in the catalog.

Code ranges: ``CB1xx`` definition (decoration) time, ``CB2xx`` argument
binding (bind and launch), ``CB3xx`` preparing a compiled function, ``CB4xx``
launch runtime, ``CB5xx`` environment, ``CB6xx`` compiling and specializing
(calling a kernel: its specializations and their limit; the disk compile cache),
``CB7xx`` PyTorch integration (kernels as torch custom ops, ``cute_bind.torch``),
``CB8xx`` prepared graphs (``cute_bind.graph``: recording, mapping slots to
kernel-node parameters, replay).
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
    "render_template",
    "SUPPORTED_DSL_VERSIONS",
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
    "DSL_DECORATOR_ABOVE",
    "DEVICE_KERNEL",
    "WRAPPED_WITHOUT_JIT",
    "INVALID_DEFAULT",
    "OP_AUTOGRAD_TOO_LATE",
    "INELIGIBLE_OPTIONAL",
    "INELIGIBLE_STRUCTURE",
    "TVM_FFI_KERNEL",
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
    "OPTIONAL_PRESENCE_MISMATCH",
    "UNION_NO_MEMBER",
    "UNION_MEMBER_CHANGED",
    "STRUCTURE_CONSTANT_CHANGED",
    "NULL_DATA",
    "READ_ONLY_BUFFER",
    "INVALID_DLPACK",
    "STREAM_DEVICE_AMBIGUOUS",
    "CURRENT_STREAM_UNAVAILABLE",
    "NOT_COMPILED",
    "UNSUPPORTED_MARSHALLING",
    "WORKSPACE_ARGUMENTS",
    "NO_ENGINE",
    "SNAPSHOT_MISMATCH",
    "COMPILE_FAILED",
    "COMPILED_DESCRIPTOR_MISMATCH",
    "NO_ARGUMENT_TYPES",
    "TVM_FFI_UNSUPPORTED_ARGUMENT",
    "TVM_FFI_CALL_ERROR",
    "CUDA_ERROR",
    "MODULE_UNLOADED",
    "CONCURRENT_USE",
    "HANDLE_CLOSED",
    "HANDLE_NOT_PICKLABLE",
    "INCONSISTENT_SLOT_KIND",
    "DSL_INCOMPATIBLE",
    "DSL_MISSING",
    "GRAPH_VALUE_TRANSFORMED",
    "GRAPH_VALUE_SHAPES_LAUNCH",
    "GRAPH_FIXED_VALUE_CHANGED",
    "GRAPH_DRIVER_ERROR",
    "GRAPH_CAPTURE_MISMATCH",
    "GRAPH_MISUSE",
    "TORCH_MISSING",
    "OP_PARAMETER_UNSUPPORTED",
    "OP_SPEC_INVALID",
    "OP_NAME_INVALID",
    "OP_STREAM_MISMATCH",
    "OP_OUTPUT_INVALID",
    "DSL_UNTESTED_VERSION",
    "STALE_SPECIALIZATION",
    "SPECIALIZATION_LIMIT",
    "SPECIALIZATION_LIMIT_WARNING",
    "COMPILE_ONLY_VALUE",
]


CATALOG: dict[str, Diagnostic] = {}

#: The nvidia-cutlass-dsl versions cute_bind is tested with (mirrors
#: pyproject.toml; ``cute_bind.dsl.SUPPORTED_VERSIONS`` is this value). Here so
#: that CB501's fix names the range on its page too, not only in a message.
SUPPORTED_DSL_VERSIONS = ">=4.5.3,<4.9"


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
    pointers, numeric scalars with plain ctypes storage, CUDA streams,
    tensors (`cute.Tensor`, `cute_bind.Tensor[...]`), tuples and lists of
    those, and `Optional[...]` of one of them; compile-time values are
    `cutlass.Constexpr[...]`.
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
    For an array or tensor, annotate `cute.Tensor` (or
    `cute_bind.Tensor[dtype, rank]`), or `cute_bind.Pointer[dtype]` to pass
    its data address; for a struct, pass its fields as separate parameters;
    mark compile-time values `cutlass.Constexpr[...]`.
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
    "scalar; expected {expected}",
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
    `compile_options` (str or None, passed to `cute.compile(..., options=...)`),
    `checked` (bool), `max_specializations` (an int >= 1 or None),
    `on_limit` (`"raise"` or `"warn"`), `cache` (bool) and `cache_key`
    (str, int or None).
    """,
)

NOT_PREPROCESSED = _entry(
    "CB111",
    "not-preprocessed",
    E.KernelDefinitionError,
    summary="Compiling failed for a function whose source the DSL cannot read (made by exec() or at a prompt).",
    message="kernel '{kernel}': compiling failed ({got}); the DSL rewrites Python control flow by re-reading "
    "the function's source, and {detail}",
    explanation="""
    The DSL turns `for`/`if`/`while` over runtime values into staged code by
    re-reading the function's source file and rewriting it, exactly as for
    `@cute.jit`. Every decorator form works (`@cute_bind.kernel` alone or with
    options, over `@cute.jit`, `@kernel` after a from-import, or the call
    `cute_bind.kernel(fn)`), but a function made by `exec()` or typed at an
    interactive prompt has no source file, so the DSL cannot compile it.
    This entry is raised from the DSL's compile error, which is chained.
    """,
    example=_PRELUDE
    + """
lines = [
    "def fill(out: cute_bind.Pointer[cutlass.Int32], n: cutlass.Int32):",
    "    t = cute.make_tensor(out, cute.make_layout(1))",
    "    for k in range(n):",
    "        t[0] = k",
]
namespace = {"cute": cute, "cutlass": cutlass, "cute_bind": cute_bind}
exec(chr(10).join(lines), namespace)          # a function without a source file
fill = cute_bind.kernel(namespace["fill"])

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 3)          # -> CB111
""",
    fix="Define the function in a `.py` file (a module or a script) and import or run it from there.",
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

DSL_DECORATOR_ABOVE = _entry(
    "CB116",
    "dsl-decorator-above",
    E.KernelDefinitionError,
    summary="@cute.jit or @cute.kernel is stacked above @cute_bind.kernel.",
    message="kernel '{kernel}': {got}, so the result would be a DSL function without bind(); expected {expected}",
    explanation="""
    Decorators apply from the bottom up. With `@cute.jit` above
    `@cute_bind.kernel`, the DSL would wrap the cute_bind kernel in a DSL
    function of its own: it has no `bind()`, and the DSL cannot compile an
    object that is not a Python function. `@cute_bind.kernel` must be the
    outermost decorator; `@cute.jit` under it is optional (the function
    compiles exactly as under a plain `@cute.jit` either way).
    """,
    example=_PRELUDE
    + """
@cute.jit                                 # a DSL decorator above cute_bind's -> CB116
@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value
""",
    fix="""
    Put `@cute_bind.kernel` (with or without options) outermost, above
    `@cute.jit`, or drop `@cute.jit`.
    """,
)

DEVICE_KERNEL = _entry(
    "CB117",
    "device-kernel",
    E.KernelDefinitionError,
    summary="@cute_bind.kernel was applied to a @cute.kernel (a device function).",
    message="kernel '{kernel}': got {got}; expected {expected} that launches it",
    explanation="""
    A `@cute.kernel` function runs on the GPU and is launched from a host
    function (`my_kernel(...).launch(grid=..., block=...)` inside a
    `@cute.jit` function). A prepared launch binds and calls that host
    function: decorate the launcher, not the device kernel.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel                         # on the device kernel itself -> CB117
@cute.kernel
def fill_kernel(out: cute.Pointer, n: cutlass.Int32):
    pass
""",
    fix="""
    Decorate the host function that launches the kernel, e.g.
    `@cute_bind.kernel` over `def fill(out, n): fill_kernel(out, n).launch(...)`.
    """,
)

WRAPPED_WITHOUT_JIT = _entry(
    "CB118",
    "wrapped-without-jit",
    E.KernelDefinitionError,
    summary="A decorator of the user's own sits between @cute_bind.kernel and the function, with no @cute.jit under it.",
    message="kernel '{kernel}': the function under @cute_bind.kernel is {got}; expected {expected}",
    explanation="""
    `@cute_bind.kernel` compiles the function it is given as `@cute.jit`
    does. A wrapper made by a decorator of your own (one that uses
    `functools.wraps`) is a different function: the DSL would trace the
    wrapper's body, whose call of the original function is not jitted, and
    refuse it (it refuses `@cute.jit` over such a wrapper too). With
    `@cute.jit` directly over `def`, under your decorator, the wrapper calls
    a jitted function and everything compiles.
    """,
    example=_PRELUDE
    + """
import functools

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

@cute_bind.kernel                         # over a wrapper of logged's -> CB118
@logged
def fill(out: cute_bind.Pointer[cutlass.Int32], n: cutlass.Int32):
    pass
""",
    fix="""
    Put `@cute.jit` directly over `def`, under your own decorator
    (`@cute_bind.kernel`, `@logged`, `@cute.jit`, `def ...`), or apply your
    decorator above `@cute_bind.kernel`.
    """,
)

INVALID_DEFAULT = _entry(
    "CB119",
    "invalid-default",
    E.KernelDefinitionError,
    summary="A scalar parameter's default is not a value its slot takes.",
    message="kernel '{kernel}', parameter '{parameter}': the default {got} is not a value for this slot; expected {expected}",
    explanation="""
    A launch that leaves a parameter out writes its default into the slot,
    so the default must be a value the slot takes: an int in range for an
    integer type, a number for a float type. It is checked once, at
    decoration, rather than at the first call that leaves the argument out.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], n: cutlass.Uint8 = 300):   # 300 does not fit a Uint8 -> CB119
    pass
""",
    fix="Give the parameter a default of its own type and range (`n: cutlass.Uint8 = 255`, or `cutlass.Uint8(255)`).",
)

INELIGIBLE_OPTIONAL = _entry(
    "CB114",
    "ineligible-optional",
    E.KernelDefinitionError,
    summary="A union parameter (Optional[...], X | Y | None) with a member that is not an eligible kind.",
    message="kernel '{kernel}', parameter '{parameter}': union annotation {got} has a member that is not an "
    "eligible kind ({detail}); expected {expected}",
    explanation="""
    A union of eligible kinds, with or without `None` (`Optional[X]`,
    `Int32 | int | None`, `Optional[Float32 | cute.Pointer]`), is a union
    slot: the DSL compiles `None` into the code as a constant and a value as
    a parameter of the member it belongs to, so which member a handle holds
    is fixed at `bind()` (and is part of the compile key of `kernel(*args)`).
    Every member must be a kind cute_bind can rewrite in place (a pointer,
    scalar, stream, tensor, a sequence or structure of those); a member such
    as `str` has no storage.
    """,
    example=_PRELUDE
    + """
from typing import Optional

@cute_bind.kernel
def scale(out: cute.Pointer, mode: Optional[str]):   # str is not an eligible kind -> CB114
    pass
""",
    fix="""
    Keep only eligible members (`Optional[cutlass.Int32]`,
    `cutlass.Int32 | int | None`), or mark the parameter
    `cutlass.Constexpr[...]` if its value is fixed at compile time.
    """,
)

TVM_FFI_KERNEL = _entry(
    "CB115",
    "tvm-ffi-kernel",
    E.KernelDefinitionError,
    summary="(retired in 0.3.0: --enable-tvm-ffi is taken) @cute_bind.kernel(compile_options=...) asked for --enable-tvm-ffi.",
    message="kernel '{kernel}': @cute_bind.kernel does not compile with {got}; expected {expected}",
    explanation="""
    Retired: since cute_bind 0.3.0 `@cute_bind.kernel` compiles with the
    client's own `--enable-tvm-ffi` option, and `bind()` and `kernel(*args)`
    launch through the TVM-FFI prepared handle (`cute_bind.prepare` of that
    compile), so this code is no longer raised. It stays in the catalog so
    that the code is never reused.
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel(compile_options="--enable-tvm-ffi")   # taken since 0.3.0 (was CB115)
def scale(out: cute.Pointer, n: cutlass.Int32):
    pass
""",
    fix="Nothing to fix: `--enable-tvm-ffi` is taken.",
    retired=True,
)

INELIGIBLE_STRUCTURE = _entry(
    "CB125",
    "ineligible-structure",
    E.KernelDefinitionError,
    summary="A NamedTuple or dataclass parameter with a field that is not an eligible kind or None.",
    message="kernel '{kernel}', parameter '{parameter}': structure {got} is not made of eligible kinds "
    "({detail}); expected {expected}",
    explanation="""
    A NamedTuple or dataclass annotation is a structure slot: the DSL
    flattens the argument into the C arguments of its fields, in field
    order, and a field holding `None` is a constant of the compiled code. So
    every field must be a kind cute_bind can write in place (a pointer,
    scalar, stream, tensor, a sequence, union or `Optional[...]` of those, or
    another such structure), be annotated `None`, or, in a dataclass, be
    `cutlass.Constexpr[...]` (a compile-time constant). The DSL passes no
    Python constant or stream inside a NamedTuple (it adapts only the
    NamedTuple itself, not what it holds), so a NamedTuple's `Constexpr` or
    stream field is refused too; a dataclass takes both.
    """,
    example=_PRELUDE
    + """
from typing import NamedTuple

class Params(NamedTuple):
    scale: cutlass.Float32
    label: str                     # not an eligible kind

@cute_bind.kernel
def scale(out: cute.Pointer, params: Params):   # -> CB125
    pass
""",
    fix="""
    Give every field an eligible annotation (`cute.Tensor | None`,
    `cutlass.Int32`...) or `None`; pass compile-time values as
    `cutlass.Constexpr[...]` parameters of the function (or fields of a
    dataclass).
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
    fix="""
    Pass {expected}. Where a conversion is meant, make it explicit: for a
    tensor slot (`cute.Tensor`) a list becomes an array with `np.asarray(x)`
    or `torch.tensor(x)`, and a raw address is not a tensor (a kernel that
    takes addresses declares `cute_bind.Pointer[...]`); for an integer slot
    `int(x)`; for a pointer slot an address, a tensor or an array.
    """,
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

OPTIONAL_PRESENCE_MISMATCH = _entry(
    "CB225",
    "optional-presence-mismatch",
    E.LaunchArgumentError,
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

NULL_DATA = _entry(
    "CB216",
    "null-data",
    E.LaunchValueError,
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
    E.LaunchValueError,
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
    E.LaunchValueError,
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
capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype, capsule_new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

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
    E.LaunchValueError,
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
    example=_PRELUDE
    + """
# illustration: needs tensors on two CUDA devices, e.g. kernel(y_on_cuda0, x_on_cuda1, 2.0)
raise cute_bind.error(cute_bind.CATALOG["CB220"], kernel="scale", parameter="stream",
                      expected="tensor arguments on one CUDA device", got="cuda:0, cuda:1")
""",
    fix="""
    Pass the stream explicitly (`kernel(..., stream=torch.cuda.current_stream(dev))`),
    or move the tensors to one device.
    """,
)

CURRENT_STREAM_UNAVAILABLE = _entry(
    "CB221",
    "current-stream-unavailable",
    E.LaunchRuntimeError,
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
    example=_PRELUDE
    + """
# illustration: needs torch with CUDA initialised and a device it cannot query
raise cute_bind.error(cute_bind.CATALOG["CB221"], kernel="scale", parameter="stream",
                      expected="cuda:7", got="RuntimeError: invalid device ordinal")
""",
    fix="Pass the stream explicitly, or check the device the tensor arguments are on.",
)

COMPILE_ONLY_VALUE = _entry(
    "CB226",
    "compile-only-value",
    E.LaunchArgumentError,
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

UNION_NO_MEMBER = _entry(
    "CB230",
    "union-no-member",
    E.LaunchArgumentError,
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
    example=_PRELUDE
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
    E.LaunchArgumentError,
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
    example=_PRELUDE
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
    E.LaunchArgumentError,
    summary="A structure field compiled as a constant (a Constexpr field, or an untyped field bound to None) changed.",
    message="kernel '{kernel}', parameter '{parameter}': the field is a constant of the compiled code; expected "
    "{expected}, got {got}",
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

COMPILE_FAILED = _entry(
    "CB310",
    "compile-failed",
    E.KernelCompileError,
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
    E.LaunchValueError,
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
    E.LaunchArgumentError,
    summary="prepare(): the compiled function's argument types are not available, so its tensors cannot be checked.",
    message="kernel '{kernel}', parameter '{parameter}': prepare() needs {expected} to check tensor "
    "descriptors, got {got}",
    explanation="""
    `prepare()` checks every tensor parameter against the compiled function's
    own argument types, read from its IR. A `.to(device)` executor and a
    function loaded from a binary carry no IR, so a tensor's descriptor could
    not be checked; rather than pass unchecked, `prepare()` refuses them.
    Functions without tensor parameters need no IR.
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
    E.LaunchArgumentError,
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
    call builds, built once. The compiled entry checks everything else.
    Other values (NumPy arrays, stream objects, pointer objects, which the
    DSL rewrites before each TVM-FFI call, structures holding tensors or
    other objects) are not prepared.
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
    E.LaunchValueError,
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
from cute_bind import dsl
handle = fill.bind(addr, 1)
dsl.unload(handle.compiled)
handle.launch(addr, 2)   # -> CB402
""",
    fix="Bind a new handle (`kernel.bind(...)` or `cute_bind.prepare(...)`) after recompiling.",
)

CONCURRENT_USE = _entry(
    "CB403",
    "concurrent-use",
    E.LaunchRuntimeError,
    summary="A handle was launched while another launch of it was running (another thread, or re-entrantly).",
    message="kernel '{kernel}': the handle is already launching ({got}); expected {expected}",
    explanation="""
    A handle owns one set of argument storage that `launch()` rewrites before
    calling the entry point, so two threads launching one handle at once
    would race on it. Handing a handle from one thread to another between
    launches is fine. Every mode detects an overlapping launch (a flag set
    while a launch writes the storage and runs, a few nanoseconds) and raises
    this error instead of letting one launch run with another's arguments; a
    launch started by code the handle's own launch runs (a slot converter, a
    finalizer) is refused the same way. Checked mode also names the thread
    inside the launch.
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
handle = spin.bind(ctypes.addressof(acc), 0)
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

HANDLE_NOT_PICKLABLE = _entry(
    "CB405",
    "handle-not-picklable",
    E.LaunchArgumentError,
    summary="A prepared handle cannot be pickled.",
    message="kernel '{kernel}': a handle holds a loaded compiled module and raw addresses, which cannot be pickled; expected {expected}, got {got}",
    explanation="""
    A handle is compiled code loaded into this process plus storage holding
    raw addresses: neither means anything in another process. `copy.copy`
    and `copy.deepcopy` give a clone (its own storage, the same compiled
    function); pickling raises this error.
    """,
    example=_FILL
    + """
import pickle
handle = fill.bind(addr, 1)
pickle.dumps(handle)   # -> CB405
""",
    fix="Pickle the arguments and bind a new handle in the other process; use `handle.clone()` within one.",
)

INCONSISTENT_SLOT_KIND = _entry(
    "CB406",
    "inconsistent-slot-kind",
    E.LaunchRuntimeError,
    summary="A slot kind's C fast class does not fit its storage format.",
    message="kernel '{kernel}', parameter '{parameter}': the slot kind's fast class cannot write its format; expected {expected}, got {got}",
    explanation="""
    A slot kind declares how the C fast path writes it (`fast`) and the
    native format of its storage (`fmt`). The two must agree: a kind
    declaring the 64-bit class "P" with a 4-byte format "i" would make the
    C fast path write 8 bytes into a 4-byte slot, past the end of the
    handle's storage. `bind()` checks every slot kind once and refuses such
    a kind (the C fast path checks the same again, with the offsets).
    """,
    example=_PRELUDE
    + """
from cute_bind.slots import Bound, ScalarKind, registry

class Broken(ScalarKind):     # an extension kind: 4-byte storage, 64-bit fast class
    def __init__(self, *args):
        super().__init__(*args)
        self.fast = "P"

    @classmethod
    def recognize(cls, annotation):
        return cls("Int32") if annotation is cutlass.Int32 else None

registry.register(Broken, before=ScalarKind)
try:
    @cute_bind.kernel
    def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
        t = cute.make_tensor(out, cute.make_layout(1))
        t[0] = value

    buf = (ctypes.c_int32 * 1)()
    fill.bind(ctypes.addressof(buf), 1)   # -> CB406
finally:
    registry._KINDS.remove(Broken)
    registry._ELEMENT_KINDS.remove(Broken)
""",
    fix="Declare the C class matching the format (`fast` \"I\" for integer formats, \"R\" for f/d...), or \"X\" to write through the kind's converter.",
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
    all live in one package, `cute_bind.dsl`, which checks that they exist,
    once, at the first `bind()` or `prepare()`, and raises this error naming
    each one that is missing. The check is about what the DSL has, not its
    version number: a version outside the tested range that has everything
    runs with the CB503 warning instead. `python -m cute_bind contract` runs
    the full check (it also compiles, marshals, calls and unloads a tiny host
    function). To try a DSL anyway, set `CUTE_BIND_SKIP_DSL_CHECK=1` (the
    byte snapshot check at `bind()` still guards every slot).
    """,
    example=_PRELUDE
    + """
import cutlass.base_dsl.jit_executor as jit_executor
del jit_executor.ExecutionArgs.generate_execution_args   # as in a DSL without this internal

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 1)   # -> CB501 naming ExecutionArgs.generate_execution_args
""",
    fix=f"Install a supported version: `pip install 'nvidia-cutlass-dsl{SUPPORTED_DSL_VERSIONS}'`.",
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


# ---------------------------------------------------------------- CB8xx: prepared graphs
# The graph examples run on the CPU through the fake driver (cute_bind.graph.fake):
# host functions "launch" a kernel by writing a launch record to its mailbox.
_GRAPH = (
    _PRELUDE
    + """
from cute_bind.graph.fake import FakeDriver, fake_launch

fake = FakeDriver()
fake.kernel(1, "scale", (8, 8, 4, 4))
F32 = cute_bind.Pointer[cutlass.Float32]

@cute_bind.kernel
def scale(out: F32, inp: F32, alpha: cutlass.Float32, n: cutlass.Int32, box: cutlass.Constexpr[int]):
    # one kernel: grid (n + 127) // 128, parameters out, inp, alpha, n * 2
    fake_launch(box, 1, (n + 127) // 128, 128, ("ptr", out), ("ptr", inp), ("f32", alpha), ("i32", n * 2))

handle = scale.bind(0x10000, 0x20000, 1.0, 256, fake.mailbox)
"""
)

GRAPH_VALUE_TRANSFORMED = _entry(
    "CB801",
    "graph-value-transformed",
    E.LaunchValueError,
    summary="A slot's value reaches the graph's kernel parameters transformed, so it cannot be rewritten in place.",
    message="kernel '{kernel}': parameter '{parameter}' does not pass straight through to the kernel ({got}); "
    "expected {expected}",
    explanation="""
    When `cute_bind.graph` records a launch it captures the host function
    again with each value changed and compares the kernel nodes: a value
    whose own bytes appear in a kernel parameter is rewritten there at
    replay. A value the host function transforms first (`n * 2`, a unit
    conversion) or builds a TMA descriptor from (a 128-byte tensor map mixing
    in the address) has no bytes to rewrite. The finding is reported at
    record time (`graph.findings`); by default the value is held fixed.
    `derived="error"` raises this error at record time instead.
    """,
    example=_GRAPH.replace("(n + 127) // 128", "4")
    + """
with cute_bind.graph(0, driver=fake, derived="error") as g:   # n reaches the kernel as n * 2 -> CB801
    g.launch(handle, 0x10000, 0x20000, 2.0, 256)
""",
    fix="""
    Keep the value fixed (the default, `derived="fixed"`), or let cute_bind
    re-record the graph when it changes: `cute_bind.graph(..., derived="rerecord")`
    or `g.set_policy(step, "{parameter}", "rerecord")`. Passing the value to the
    kernel unchanged (and transforming it in the kernel) makes it updatable in place.
    """,
)

GRAPH_VALUE_SHAPES_LAUNCH = _entry(
    "CB802",
    "graph-value-shapes-launch",
    E.LaunchValueError,
    summary="A slot's value decides the launch itself (grid, block, shared memory, which kernels run).",
    message="kernel '{kernel}': parameter '{parameter}' changes the launch, not only its parameters ({got}); "
    "expected {expected}",
    explanation="""
    Rewriting an executable graph's kernel parameters cannot change its grid,
    block or shared-memory size, nor add or remove kernels. A value the host
    function derives those from (a grid of `(n + 127) // 128`, a tensor's
    extent) is found at record time by capturing with other values, and
    reported here. With `derived="error"` recording raises it.
    """,
    example=_GRAPH
    + """
with cute_bind.graph(0, driver=fake, derived="error") as g:   # the grid comes from n -> CB802 (reported with CB801)
    g.launch(handle, 0x10000, 0x20000, 2.0, 256)
""",
    fix="""
    Keep the value fixed (the default), or let cute_bind re-record the graph
    when it changes (`derived="rerecord"`; `g.stats.rerecords` counts them).
    A grid sized for the largest case, with a bounds check in the kernel,
    makes the value updatable in place.
    """,
)

GRAPH_FIXED_VALUE_CHANGED = _entry(
    "CB803",
    "graph-fixed-value-changed",
    E.LaunchValueError,
    summary="A replay changed a value the graph holds fixed.",
    message="kernel '{kernel}': parameter '{parameter}' is held fixed in this graph ({detail}); expected {expected}, got {got}",
    explanation="""
    A value that does not pass straight through to kernel parameters (CB801,
    CB802) is held fixed by default: replaying with another value would run
    the recorded one, so the replay raises instead and nothing is launched.
    """,
    example=_GRAPH.replace("(n + 127) // 128", "4").replace("n * 2", "n")
    + """
fake.kernel(2, "twice", (8, 4))

@cute_bind.kernel
def twice(out: F32, alpha: cutlass.Float32, box: cutlass.Constexpr[int]):
    fake_launch(box, 2, 1, 32, ("ptr", out), ("f32", alpha * 2.0))   # alpha reaches the kernel doubled

h2 = twice.bind(0x10000, 1.0, fake.mailbox)
with cute_bind.graph(0, driver=fake) as g:
    a = g.launch(handle, 0x10000, 0x20000, 2.0, 256)
    b = g.launch(h2, 0x10000, 1.0)
g.replay({a: {"inp": 0x30000, "alpha": 3.0}})     # in place: fine
g.replay({b: {"alpha": 5.0}})                      # alpha is fixed in step b -> CB803
""",
    fix="""
    Choose re-recording for it: `g.set_policy(step, "{parameter}", "rerecord")`
    (or `derived="rerecord"` for the whole graph), or record a new graph.
    """,
)

GRAPH_DRIVER_ERROR = _entry(
    "CB804",
    "graph-driver-error",
    E.LaunchRuntimeError,
    summary="A CUDA driver call made by a graph failed.",
    message="{kernel}: a driver call failed: {got}; expected {expected}",
    explanation="""
    Recording, instantiating, rewriting node parameters and launching are
    driver calls (`cuStreamBeginCapture`, `cuGraphInstantiate`,
    `cuGraphExecKernelNodeSetParams`, `cuGraphLaunch`...). A failing one is
    raised with its `CUresult`; `error.details` holds the call, the number
    and its name. Without a CUDA driver the first call already fails.
    """,
    example=_GRAPH
    + """
with cute_bind.graph(0, driver=fake) as g:
    g.launch(handle, 0x10000, 0x20000, 2.0, 256)
fake.fail("launch", 700)          # as if the device had faulted
g.replay()                         # -> CB804
""",
    fix="""
    Read the CUresult: the device, the stream (capturing on the legacy
    default stream is not allowed) or an earlier fault. On a machine without
    a GPU, use `cute_bind.graph.fake.FakeDriver` to exercise graphs.
    """,
)

GRAPH_CAPTURE_MISMATCH = _entry(
    "CB805",
    "graph-capture-mismatch",
    E.LaunchRuntimeError,
    summary="Recording could not tie the captured nodes to the launches, or cannot re-record this graph.",
    message="kernel '{kernel}': {detail}; expected {expected}, got {got}",
    explanation="""
    Each recorded launch is captured again on its own to find its kernel
    nodes in the graph. If two captures of the same values differ in more
    than uninitialised bytes, or the launch's nodes are not in the graph, the
    mapping cannot be trusted and recording stops. Re-recording replays only
    the prepared launches, so a graph that also holds other work (torch
    operations, a graph recorded through torch's pool) cannot be re-recorded.
    """,
    example=_GRAPH
    + """
other = scale.bind(0x10000, 0x20000, 1.0, 256, fake.mailbox)
with cute_bind.graph(0, driver=fake) as g:
    g.launch(handle, 0x10000, 0x20000, 2.0, 256)
    other.launch(0x30000, 0x30000, 0.5, 64)   # captured too, but not a recorded step (like torch work)
g.set_policy(0, "n", "rerecord")   # re-recording would drop the other work -> CB805
""",
    fix="""
    Keep such values fixed, or record the graph with only prepared launches
    in it. For a mapping failure, make the host function deterministic for
    equal arguments.
    """,
)

GRAPH_MISUSE = _entry(
    "CB806",
    "graph-misuse",
    E.LaunchRuntimeError,
    summary="A graph was used in the wrong state or with an unknown step or parameter.",
    message="graph of kernel '{kernel}': {detail}; expected {expected}, got {got}",
    explanation="""
    `g.launch(handle, ...)` records, and only inside the `with` block;
    `g.replay()` and updates work once the block has ended, until
    `g.close()`. An update names a step (what `g.launch` returned, its
    index, or a handle recorded exactly once) and a runtime parameter of
    that step's handle.
    """,
    example=_GRAPH.replace("(n + 127) // 128", "4").replace("n * 2", "n")
    + """
with cute_bind.graph(0, driver=fake) as g:
    step = g.launch(handle, 0x10000, 0x20000, 2.0, 256)
g.replay({step: {"beta": 1.0}})    # no parameter 'beta' -> CB806
""",
    fix="Record inside the `with` block, replay after it; name a recorded step and one of its parameters.",
)


# ---------------------------------------------------------------- CB7xx: PyTorch integration
# A host-only tensor function: the op examples below run on the CPU with CPU tensors.
_TSCALE = (
    _PRELUDE
    + """
import torch
import cute_bind.torch

@cute_bind.kernel
def tscale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha
"""
)

TORCH_MISSING = _entry(
    "CB701",
    "torch-missing",
    E.OptionalDependencyError,
    summary="cute_bind.torch was used where PyTorch cannot be imported.",
    message="cute_bind.torch needs {expected}, which cannot be imported ({got})",
    explanation="""
    `cute_bind.torch` registers kernels as torch custom ops, so it needs
    PyTorch. It imports torch only when an op is made: `import cute_bind` and
    `import cute_bind.torch` work without it, and so does everything outside
    `cute_bind.torch`.
    """,
    example="""\
import sys
sys.modules["torch"] = None   # as on a machine without PyTorch
import cutlass
import cutlass.cute as cute
import cute_bind
import cute_bind.torch

@cute_bind.kernel
def tscale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha

cute_bind.torch.op("demo::tscale", tscale, mutates_args=("out",))   # no torch -> CB701
""",
    fix="Install PyTorch (`pip install torch`), or call the kernel or its handle without an op.",
)

OP_PARAMETER_UNSUPPORTED = _entry(
    "CB702",
    "op-parameter-unsupported",
    E.KernelDefinitionError,
    summary="A kernel parameter has no torch operator schema type.",
    message="kernel '{kernel}', parameter '{parameter}': {got} cannot be an argument of a torch op ({detail}); expected {expected}",
    explanation="""
    A torch custom op has a schema: each argument is a `Tensor`, an integer
    (`SymInt`), a `float`, a `bool`, a `str` or a list of one of them.
    `cute_bind.torch.op` writes that schema from the kernel's signature:
    tensors and pointers become `Tensor`, integer scalars `SymInt`, float and
    half scalars `float`, `Constexpr[int|float|bool|str]` the plain type, a
    sequence the list of its one element type, `Optional[X]` (and a union with
    `None` whose members share one schema type, such as `Int32 | int | None`)
    `X?`; the stream is left out (the op passes torch's current stream), and so
    is a parameter of a kind no schema type carries that has a default (a
    NamedTuple or dataclass structure such as FlashAttention-4's `aux_data`:
    the op always passes the default). A parameter outside that (a tuple
    mixing tensors and scalars, a union of a scalar and a pointer, a structure
    without a default, a bare `Constexpr`, a keyword-only tensor, a default
    that is not a number or `None`, a slot kind registered outside cute_bind)
    has no schema type.
    """,
    example=_TSCALE
    + """
F32 = cute_bind.Pointer[cutlass.Float32]

@cute_bind.kernel
def mixed(out: F32, args: tuple[F32, cutlass.Float32], n: cutlass.Int32):
    o = cute.make_tensor(out, cute.make_layout(n))
    a = cute.make_tensor(args[0], cute.make_layout(n))
    for k in range(n):
        o[k] = a[k] * args[1]

cute_bind.torch.op("demo::mixed", mixed, mutates_args=("out",))   # tensor and float in one tuple -> CB702
""",
    fix="""
    Split the parameter into parameters the schema can carry (here a
    `tuple[F32, F32]` of tensors and a separate `cutlass.Float32`), give a
    structure parameter the default the op should always pass, or call the
    kernel itself outside the op.
    """,
)

OP_SPEC_INVALID = _entry(
    "CB703",
    "op-spec-invalid",
    E.KernelDefinitionError,
    summary="mutates_args or outputs of a torch op do not fit the kernel.",
    message="kernel '{kernel}', parameter '{parameter}': expected {expected}, got {got}",
    explanation="""
    `mutates_args` names the tensor (or pointer) parameters the kernel
    writes; `outputs` maps tensor parameters the op allocates to how they are
    allocated (`like("inp")` or a function of the inputs). torch relies on
    both: a write it was not told about is a silent wrong result under
    `torch.compile`, and an op with neither is removed from a compiled graph
    as dead code. So an unknown name, a scalar or stream, a parameter in both
    lists, an output spec that names no tensor input, or neither list given
    is refused when the op is made.
    """,
    example=_TSCALE
    + """
cute_bind.torch.op("demo::tscale", tscale, mutates_args=("alpha",))   # a scalar is not written -> CB703
""",
    fix="""
    List in `mutates_args` exactly the tensors the kernel writes (here
    `mutates_args=("out",)`), or let the op allocate them with
    `outputs=dict(out=cute_bind.torch.like("inp"))`.
    """,
)

OP_NAME_INVALID = _entry(
    "CB704",
    "op-name-invalid",
    E.KernelDefinitionError,
    summary="A torch op name is malformed or already registered.",
    message="kernel '{kernel}': cannot register the op {got}; expected {expected}",
    explanation="""
    A torch custom op is named `"namespace::opname"` (two identifiers) and
    is registered once per process: `torch.ops.namespace.opname` then refers
    to it from anywhere, including compiled graphs. A name without the
    namespace, with extra parts, or already taken by another op is refused.
    """,
    example=_TSCALE
    + """
cute_bind.torch.op("tscale", tscale, mutates_args=("out",))   # no namespace -> CB704
""",
    fix="""
    Use `"yourlib::opname"` with your project's namespace, and make each op
    once (at import of your module, not inside a function called repeatedly).
    """,
)

OP_STREAM_MISMATCH = _entry(
    "CB705",
    "op-stream-mismatch",
    E.LaunchRuntimeError,
    summary="A torch op would launch its kernel on a stream other than the one torch is using.",
    message="kernel '{kernel}': the op cannot launch on torch's current stream: {got}; expected {expected}",
    explanation="""
    An op launches on torch's current stream of its first tensor's device,
    which is also the stream `torch.cuda.graph` captures. Two cases would put
    the kernel elsewhere, so they raise this instead of running: a kernel
    without a stream parameter (it launches on the default stream) called
    while another stream is current, for instance inside a CUDA graph
    capture (the graph would miss the kernel, or the capture would fail); and
    tensors on another device than the one being captured. The condition
    needs a GPU, so the example below raises the error itself (an
    illustration).
    """,
    example="""\
import cute_bind

raise cute_bind.error(
    cute_bind.CATALOG["CB705"],
    kernel="scale",
    expected="a stream parameter (stream: cuda.CUstream = None) so the op can launch on torch's current stream",
    got="no stream parameter (the kernel launches on the default stream) while a CUDA graph is being captured",
)
""",
    fix="""
    Give the kernel a stream parameter (`stream: cuda.CUstream = None`) and
    launch its device code with `stream=stream`; the op fills it. Keep the
    op's tensors on the capturing device.
    """,
)

OP_AUTOGRAD_TOO_LATE = _entry(
    "CB707",
    "op-autograd-too-late",
    E.KernelDefinitionError,
    summary="register_autograd was called on a torch op after the op was first traced.",
    message="kernel '{kernel}', op '{parameter}': got {got}; expected {expected}",
    explanation="""
    torch records what it learns of an op the first time it traces it
    (under `torch.compile`, `torch.library.opcheck` or a FakeTensor): a
    backward formula registered after that is missing from later compiled
    graphs, whose gradients then come back `None` with only a warning. So a
    `cute_bind.torch` op refuses `register_autograd` once its fake
    implementation has run.
    """,
    example=_PRELUDE
    + """
import torch
import cute_bind.torch as cbt

@cute_bind.kernel
def scale(out: cute.Tensor, x: cute.Tensor, alpha: cutlass.Float32):
    for i in range(cute.size(out)):
        out[i] = x[i] * alpha

op = cbt.op("cbexample707::scale", scale, outputs={"out": cbt.like("x")})
torch.compile(lambda x: op(x, 2.0), backend="eager", fullgraph=True)(torch.ones(4))  # traced once

op.register_autograd(lambda ctx, grad: (grad * 2.0, None))   # -> CB707
""",
    fix="""
    Call `op.register_autograd(...)` right after `cute_bind.torch.op(...)`,
    before anything compiles, traces or opchecks the op.
    """,
)

OP_OUTPUT_INVALID = _entry(
    "CB706",
    "op-output-invalid",
    E.LaunchArgumentError,
    summary="A torch op's output function did not return a tensor.",
    message="kernel '{kernel}', output '{parameter}': expected {expected}, got {got}",
    explanation="""
    A functional op allocates each output with its spec: `like(...)`, or a
    function called with the op's inputs (real tensors eagerly, fake ones
    under tracing) that must return the new `torch.Tensor` the kernel
    writes. Anything else (`None`, a NumPy array, a shape) is refused before
    the kernel runs.
    """,
    example=_TSCALE
    + """
op = cute_bind.torch.op("demo::scaled", tscale, outputs={"out": lambda inp, alpha: inp.shape})
op(torch.ones(4), 2.0)   # the function returned a shape, not a tensor -> CB706
""",
    fix="""
    Return a new tensor from the function, e.g.
    `lambda inp, alpha: torch.empty_like(inp)`, or use
    `cute_bind.torch.like("inp")`.
    """,
)


DSL_UNTESTED_VERSION = _entry(
    "CB503",
    "dsl-untested-version",
    E.DSLVersionWarning,
    summary="A warning: the installed nvidia-cutlass-dsl is outside the tested range but has everything cute_bind needs.",
    message="nvidia-cutlass-dsl {got} is outside the tested range {expected}; it has every internal cute_bind reads, so cute_bind runs with it",
    explanation="""
    cute_bind's contract with the DSL is what the DSL has, not its version
    number: the first `bind()` or `prepare()` checks that every internal
    cute_bind reads exists (CB501 otherwise). A version outside the tested
    range that passes runs, with this `DSLVersionWarning` issued once per
    process, because only the tested versions have been through the test
    suite (the byte snapshot check at `bind()` still guards every slot).
    Escalate it with `warnings.simplefilter("error", cute_bind.DSLVersionWarning)`,
    as the example does, to make it fatal.
    """,
    example=_PRELUDE
    + """
import importlib.metadata
import warnings
real_version = importlib.metadata.version
importlib.metadata.version = lambda name: "4.9.0" if name == "nvidia-cutlass-dsl" else real_version(name)
warnings.simplefilter("error", cute_bind.DSLVersionWarning)   # make the warning fatal

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value

buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 1)   # an untested DSL version -> CB503 (a warning)
""",
    fix="""
    Install a tested version (`pip install 'nvidia-cutlass-dsl{expected}'`),
    or, having checked your kernels, silence it:
    `warnings.filterwarnings("ignore", category=cute_bind.DSLVersionWarning)`.
    """,
)

STALE_SPECIALIZATION = _entry(
    "CB504",
    "stale-specialization",
    E.LaunchRuntimeError,
    summary="A value the compiled code was specialized on has changed since it was compiled.",
    message="kernel '{kernel}': {got}; expected {expected}",
    explanation="""
    nvidia-cutlass-dsl 4.8 can seal, with a function compiled under its PyIR
    frontend (`CUTE_DSL_ENABLE_PYIR=1`), the Python values its trace read and
    baked into the code: module globals, closure cells, attributes of the
    `self` of a jitted method, default objects. A direct call of the compiled
    function re-checks them and refuses when one has changed. A prepared
    launch never launches what the direct call would refuse: `bind()` and
    `prepare()` run the DSL's own check, and so does every launch of a
    handle whose compiled function carries such a record (handles of other
    functions pay nothing). The values a launch passes in its slots are never
    part of the record (the DSL traces runtime parameters as staged values),
    so they cannot go stale; a record that did name a runtime parameter is
    refused at `bind()`.
    """,
    example="""import os
os.environ["CUTE_DSL_ENABLE_PYIR"] = "1"   # the DSL's PyIR frontend, which seals the record
import ctypes
import cutlass
import cutlass.cute as cute
import cute_bind

OFFSET = 1

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value + OFFSET   # OFFSET is baked in at compile time

buf = (ctypes.c_int32 * 1)()
handle = fill.bind(ctypes.addressof(buf), 1)
OFFSET = 2                                  # the compiled code still adds 1
handle.launch(ctypes.addressof(buf), 1)     # -> CB504, as the direct call refuses
""",
    fix="""
    Compile again after changing the value (`cute.compile` and
    `cute_bind.prepare`, or `kernel.clear_cache()` and a new `bind()` for a
    `@cute_bind.kernel`), or pass the value as a `cutlass.Constexpr`
    parameter so that it is part of the compile key.
    """,
)


# ---------------------------------------------------------------- CB6xx: compiling and specializing
_LIMITED = (
    _PRELUDE
    + """
@cute_bind.kernel(max_specializations=1)
@cute.jit
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32, offset: cutlass.Constexpr[int]):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value + offset

buf = (ctypes.c_int32 * 1)()
addr = ctypes.addressof(buf)
fill(addr, 1, 0)      # the first specialization (offset=0)
"""
)

SPECIALIZATION_LIMIT = _entry(
    "CB601",
    "specialization-limit",
    E.SpecializationError,
    summary="A call needs a new specialization, and the kernel already has as many as its limit allows.",
    message="kernel '{kernel}': a call needs specialization #{got}, past the limit of {expected} "
    "(max_specializations); it differs from the last one in {detail}",
    explanation="""
    `kernel(...)` compiles one specialization per compile key: pointer
    dtypes, alignments and address spaces, tensor dtypes, ranks, layouts and
    devices, Constexpr values, the target architecture. A kernel called with
    ever new keys (a Constexpr taking each loop index, tensors of ever new
    static shapes) would compile without end, each compile taking a second
    or more. The limit (`max_specializations`, 8 by default, as
    torch.compile's) stops that at the call that would go past it, and the
    message names what changed.
    """,
    example=_LIMITED
    + """
fill(addr, 1, 1)      # offset=1 is a second specialization, the limit is 1 -> CB601
""",
    fix="""
    Make the changing value a runtime parameter instead of a Constexpr (or a
    static tensor layout dynamic), raise the limit
    (`@cute_bind.kernel(max_specializations=...)`), or let calls past it go on
    with a warning (`on_limit="warn"`, CB602).
    """,
)

SPECIALIZATION_LIMIT_WARNING = _entry(
    "CB602",
    "specialization-limit-warning",
    E.SpecializationWarning,
    summary="A kernel with on_limit=\"warn\" compiled a specialization past its limit (a warning).",
    message="kernel '{kernel}': specialization #{got} is past the limit of {expected} (max_specializations); "
    "compiling it anyway (on_limit=\"warn\"); it differs from the last one in {detail}",
    explanation="""
    The same condition as CB601, for a kernel decorated with
    `on_limit="warn"`: the call compiles the new specialization and a
    `cute_bind.SpecializationWarning` is issued through `warnings.warn` for
    each specialization past the limit (a warning filter set to `"error"`
    raises it instead).
    """,
    example=(_LIMITED.replace("max_specializations=1)", 'max_specializations=1, on_limit="warn")')
    + """
import warnings
warnings.simplefilter("error")   # turn the warning into an exception, to show it
fill(addr, 1, 1)                 # a second specialization past the limit of 1 -> CB602
"""),
    fix="""
    As for CB601: make the changing value a runtime parameter or raise the
    limit; `on_limit="raise"` (the default) turns the warning into CB601.
    """,
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

__all__ += ["CACHE_ENTRY_CORRUPT", "CACHE_ENTRY_MISMATCH", "CACHE_UNAVAILABLE", "CACHE_SKIPPED", "CACHE_SETTING_INVALID", "CACHE_FOLDER_UNTRUSTED", "CACHE_ENTRY_UNTRUSTED", "CACHE_ENTRY_UNSIGNED", "CACHE_KEY_UNTRUSTED"]

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

# CB610-CB613: the cache's trust model (docs/concepts/safety.md, "Threat model").
CACHE_FOLDER_UNTRUSTED = _entry(
    "CB610",
    "cache-folder-untrusted",
    E.CacheWarning,
    summary="The disk cache folder is not owned by this user or is writable by others; kernels compile without it.",
    message="kernel '{kernel}': the disk cache folder {detail} is not trusted: it is {got}; compiling without the cache "
    "(nothing is loaded from it or written to it). To use it: {expected}",
    explanation="""
    An entry of the disk cache is native code that `bind()` loads and runs,
    so whoever can write the cache folder can choose what your process runs.
    By default each level of the folder (the folder itself, `v1/`,
    `v1/entries/`, `v1/locks/`) must belong to the user the process runs as
    and be writable by nobody else, as ssh's StrictModes and Git's
    `safe.directory` require. A folder of another user, or one that its
    group or every user can write (`/tmp`, a 0777 folder), is refused: the
    kernel compiles in-process as without the cache. A team shares a folder
    only as a shared cache (`CUTE_BIND_CACHE_SHARED`), where a group-writable
    folder is allowed and every entry must carry a signature made with the
    team's key; a folder writable by every user is refused in both modes.
    Issued once per folder and process.
    """,
    example=_FILL
    + """
import os
import tempfile
import warnings

folder = tempfile.mkdtemp()
os.chmod(folder, 0o777)                                   # a folder every user can write
os.environ["CUTE_BIND_CACHE_DIR"] = folder
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
fill.bind(addr, 1)                                        # -> CB610 (compiles without the cache)
""",
    fix="""
    Use a folder of your own that only you can write (`chmod 700` it, or
    point `CUTE_BIND_CACHE_DIR` elsewhere); to share one folder with a team,
    set it up as a shared cache (group-owned, `chmod 2770`, a key file in
    `CUTE_BIND_CACHE_SHARED`, see docs/concepts/cache.md).
    """,
)

CACHE_ENTRY_UNTRUSTED = _entry(
    "CB611",
    "cache-entry-untrusted",
    E.CacheWarning,
    summary="A disk cache entry, hit counter or lock is not a regular file of this user's (or is too large); it is never read.",
    message="kernel '{kernel}': the disk cache file {detail} is not trusted: it is {got}; it was not read, and the kernel was compiled again",
    explanation="""
    Every cache file is opened without following a symbolic link and
    without waiting on a FIFO, and checked before one byte is read: it must
    be a regular file, belong to this user and be writable by nobody else
    (in a shared cache: not writable by every user) and be at most 1 GiB. A
    link (to `/dev/zero`, to a file elsewhere), a FIFO, a folder or device,
    a file of another user or one the group can write, planted under an
    entry's, hit counter's or lock's name, is refused: nothing is read from
    it or written through it, and the kernel compiles (a fresh entry then
    replaces the name). Issued once per file and process.
    """,
    example=_CACHE_PRELUDE
    + """
os.chmod(entry.path, 0o666)              # an entry every user could have written
fill.bind(addr, 1)                       # -> CB611 (then recompiled and replaced)
""",
    fix="""
    Nothing is required: the name is replaced by a fresh entry (or, for a
    lock, the compile goes on without it). Find out who planted it: in a
    private cache only you and root can. `python -m cute_bind cache prune`
    removes unsafe files.
    """,
)

CACHE_ENTRY_UNSIGNED = _entry(
    "CB612",
    "cache-entry-unsigned",
    E.CacheWarning,
    summary="A shared cache's entry does not carry a valid signature of the team key; it is never loaded.",
    message="kernel '{kernel}': the shared disk cache entry {detail} is not signed with the team key: {got}; it was not loaded, "
    "and the kernel was compiled again",
    explanation="""
    In a shared cache (`CUTE_BIND_CACHE_SHARED` names a key file) a folder
    may be written by the whole group, so owner and mode say nothing about
    who made an entry. Every entry then ends with an HMAC-SHA256 of its
    bytes under the team's key, which lives outside the cache folder, and an
    entry whose HMAC does not check (written by a process without the key,
    signed with another key, forged, or damaged) is never loaded, not even
    its header: the kernel compiles and a signed entry replaces it. Issued
    once per entry and process.
    """,
    example=_CACHE_PRELUDE
    + """
key_folder = tempfile.mkdtemp()                           # outside the cache folder
key_file = os.path.join(key_folder, "team.key")
with open(key_file, "w") as f:
    f.write("0123456789abcdef0123456789abcdef")
os.chmod(key_file, 0o600)                                 # the key is a secret: yours alone (or your group's)
os.environ["CUTE_BIND_CACHE_SHARED"] = key_file           # a shared cache from now on
fill.bind(addr, 1)                       # the entry stored above is not signed -> CB612
""",
    fix="""
    Nothing is required: the entry was replaced by a signed one. If it
    recurs, check that every process sharing the folder sets
    `CUTE_BIND_CACHE_SHARED` to the same key file, and who else can write
    the folder.
    """,
)

CACHE_KEY_UNTRUSTED = _entry(
    "CB613",
    "cache-key-untrusted",
    E.CacheWarning,
    summary="The key file of a shared disk cache is missing or may not be used; kernels compile without the cache.",
    message="kernel '{kernel}': the shared cache key file {detail} cannot be used: {got}; compiling without the cache. "
    "To use it: {expected}",
    explanation="""
    The key in `CUTE_BIND_CACHE_SHARED` is what makes an entry of a shared
    cache trustworthy, so it must be out of reach of whoever can write the
    cache: a regular file outside the cache folder, owned by this user or
    root, writable by nobody else and not readable by every user, holding
    16 to 4096 bytes of key. A key file that is missing, inside the cache
    folder, a link to a FIFO, someone else's or writable by others is
    refused and the kernel compiles without the cache (nothing is loaded
    or written). Issued once per key file and process.
    """,
    example=_FILL
    + """
import os
import tempfile
import warnings

folder = tempfile.mkdtemp()
os.environ["CUTE_BIND_CACHE_DIR"] = folder
key_file = os.path.join(folder, "team.key")               # inside the cache folder
with open(key_file, "w") as f:
    f.write("0123456789abcdef0123456789abcdef")
os.chmod(key_file, 0o600)
os.environ["CUTE_BIND_CACHE_SHARED"] = key_file
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
fill.bind(addr, 1)                                        # -> CB613 (compiles without the cache)
""",
    fix="""
    Keep the key in a file outside the cache folder, owned by you or root,
    mode 0640 (group-readable for the team) or 0600, and point
    `CUTE_BIND_CACHE_SHARED` at it; or unset `CUTE_BIND_CACHE_SHARED` for a
    private cache.
    """,
)


def lookup(code: str) -> Diagnostic:
    """Return the catalog entry for ``code`` (case-insensitive, e.g. ``"cb204"``)."""
    try:
        return CATALOG[code.strip().upper()]
    except KeyError:
        raise KeyError(f"unknown diagnostic code {code!r}; known codes: {', '.join(sorted(CATALOG))}") from None


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def format_message(diagnostic: Diagnostic, **fields: Any) -> tuple[str, str]:
    """Render ``(message, fix)`` for one occurrence of ``diagnostic``."""
    values = _Fields({k: v for k, v in fields.items() if v is not None})
    body = diagnostic.message.format_map(values)
    # the catalog's fix text is wrapped for the docs; a message keeps it on one line
    fix = " ".join(diagnostic.fix.format_map(values).split())
    # a body that ends in quoted text (a DSL error's) may already end a sentence
    stop = "" if body.endswith((".", "!", "?")) else "."
    text = f"[{diagnostic.code}] {body}{stop}\n  fix: {fix}\n  (python -m cute_bind explain {diagnostic.code})"
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


def render_template(text: str) -> str:
    """A message or fix template as read without an occurrence: ``{expected}`` becomes ``<expected>``.

    Pages and ``explain`` show an entry with no call behind it; a placeholder
    there reads as a word to fill in, never as raw format syntax.
    """
    return text.format_map(_Placeholders())


class _Placeholders(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


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
        textwrap.indent(render_template(diagnostic.fix), "    "),
    ]
    return "\n".join(lines) + "\n"
