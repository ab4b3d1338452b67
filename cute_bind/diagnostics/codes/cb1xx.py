"""CB1xx, definition: the catalog entries of this range, in code order.

Raised when ``@cute_bind.kernel`` reads the function's signature (decoration time).
"""

from .. import errors as _E
from ..define import entry as _entry
from ..define import illustration as _illustration
from .examples import PRELUDE as _PRELUDE

MISSING_ANNOTATION = _entry(
    "CB101",
    "missing-annotation",
    _E.KernelDefinitionError,
    summary="A runtime parameter has no type annotation.",
    message="kernel '{kernel}', parameter '{parameter}': the parameter has no annotation, "
    "so cute_bind cannot tell which slot kind stores it",
    explanation="""
    cute_bind decides at decoration time how every runtime parameter is stored
    and rewritten on each launch. It reads that from the annotation: tensors,
    pointers, numeric scalars, streams, sequences and structures each have
    their own slot kind. A parameter
    without an annotation would leave the choice to the value seen at the
    first call, which is how the plain DSL call path silently marshals an
    integer address as a 32-bit scalar.

    A class kernel (an object whose `__call__` is `@cute.jit`, wrapped with
    `cute_bind.kernel(obj)`, as production clients write them) is taken as
    its authors wrote it: there an unannotated parameter (a `stream` without
    `cuda.CUstream`, say) has its kind read from the value given to
    `compile()`/`bind()`/the first call, as the DSL reads it (a stream, a
    tensor, a number, a pointer, a sequence or a structure), and the
    kernel's description says so ("read from the value"). A value of another
    kind later compiles another specialization (`kernel(...)`) or is refused
    by the bound handle (CB204).
    """,
    example=_PRELUDE
    + """
@cute_bind.kernel
def scale(out: cute.Pointer, n):          # 'n' has no annotation -> CB101
    pass
""",
    fix="""
    Annotate the parameter: `cute.Tensor` (or `cute_bind.Tensor[dtype, rank]`)
    for a tensor, `cutlass.Int32` (or another numeric type) for a scalar,
    `cute.Pointer` or `cute_bind.Pointer[dtype]` for a pointer,
    `cuda.CUstream` for a stream, or `cutlass.Constexpr[...]` for a
    compile-time value.
    """,
)


UNSUPPORTED_ANNOTATION = _entry(
    "CB102",
    "unsupported-annotation",
    _E.KernelDefinitionError,
    summary="A parameter's annotation is not an eligible runtime slot kind.",
    message="kernel '{kernel}', parameter '{parameter}': annotation {got} is not an eligible runtime slot kind; expected {expected}",
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
    summary="A scalar type has no storage the DSL can pass at run time (Float8/6/4, Int4, 128-bit, abstract types).",
    message="kernel '{kernel}', parameter '{parameter}': scalar type {got} cannot be passed as a runtime scalar; expected {expected}",
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
    summary="The function takes *args or **kwargs.",
    message="kernel '{kernel}', parameter '{parameter}': variadic parameters ({got}) have no fixed slot; expected {expected}",
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
    _E.KernelDefinitionError,
    summary="A string (postponed) annotation cannot be resolved.",
    message="kernel '{kernel}', parameter '{parameter}': annotation {got} could not be resolved ({detail}); expected {expected}",
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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


INELIGIBLE_OPTIONAL = _entry(
    "CB114",
    "ineligible-optional",
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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


DSL_DECORATOR_ABOVE = _entry(
    "CB116",
    "dsl-decorator-above",
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    fix=(
        "Give `{parameter}` a default its slot takes ({expected}), or widen its type to hold the default "
        "(e.g. `cutlass.Int64` for a large int)."
    ),
)


INELIGIBLE_STRUCTURE = _entry(
    "CB125",
    "ineligible-structure",
    _E.KernelDefinitionError,
    summary="A NamedTuple or dataclass parameter with a field that is not an eligible kind or None.",
    message="kernel '{kernel}', parameter '{parameter}': structure {got} is not made of eligible kinds ({detail}); expected {expected}",
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


SOURCE_NOT_CHECKED = _entry(
    "CB126",
    "source-not-checked",
    _E.KernelDefinitionError,
    summary="The static tools (cute-bind check, the language server, the mypy plugin) could not read or analyse a source file.",
    message="{got} was not checked: {detail}",
    explanation="""
    `cute-bind check`, `cute-bind lsp` and the mypy plugin read a file's
    text and analyse it with `ast`, never importing it. They read regular
    files only, of at most 8 MiB, so a path that is a FIFO, a device or
    a link to one (`/dev/zero`) or a huge generated file cannot stall or
    exhaust the check; an expression nested more deeply than Python's parser
    or the analysis can follow is not analysed either. The file's kernels
    are then not checked statically (the decorator still checks them when
    the module is imported), the tool says so with this code, and every
    other file is still checked.
    """,
    example=_illustration(
        "Reported by `cute-bind check`, the language server and the mypy plugin for a file they cannot read or analyse (here a link to /dev/zero); shown as the error:",
        got="'kernels.py'",
        expected="8 MiB",
        detail="it is not a regular file (a character device)",
    ),
    fix="""
    Make {got} a regular Python file of at most {expected} (not a FIFO,
    device or link to one), split an expression nested too deeply into named
    parts, or leave the file out of the check (`--exclude`, or `exclude` in
    `[tool.cute-bind]`); importing the module still checks its kernels.
    """,
)


METHOD_IN_CLASS_BODY = _entry(
    "CB127",
    "method-in-class-body",
    _E.KernelDefinitionError,
    summary="@cute_bind.kernel was applied to a method in its class body, where its object does not exist yet.",
    message="kernel '{kernel}': @cute_bind.kernel expects {expected}, got {got}",
    explanation="""
    A host function kept on a class reads its object's attributes while it is
    traced (`self.tile`, `self.dtype`): the object is part of what is
    compiled, not a launch argument. In the class body there is no object
    yet, so the decorator cannot tell what `self` will hold, and one kernel
    shared by every instance would mix their compiles. The kernel of a
    method is made per object, from the bound method, which is how
    `cute.compile(obj.host, ...)` takes it too; the disk cache key spells
    the object's state.
    """,
    example=_PRELUDE
    + """
class Scale:
    @cute_bind.kernel                  # in the class body -> CB127
    @cute.jit
    def host(self, mX: cute.Tensor, mO: cute.Tensor):
        pass
""",
    fix="""
    Keep `@cute.jit` on the method and make the kernel of each object's
    bound method, once: `self.run = cute_bind.kernel(self.host)` in
    `__init__`, or `run = cute_bind.kernel(obj.host)` where the object is
    made; then `obj.run(x, out)`.
    """,
)
