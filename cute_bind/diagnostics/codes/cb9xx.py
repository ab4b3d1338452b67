"""CB9xx, JAX integration: the catalog entries of this range, in code order.

Raised by ``cute_bind.jax`` when a kernel is made a JAX function
(``cute_bind.jax.op``), when that function is traced, lowered or transformed,
and by its XLA FFI handler (CB902-CB904, as the message of XLA's error).
"""

from .. import errors as _E
from ..define import entry as _entry
from ..define import illustration as _illustration
from .examples import PRELUDE as _PRELUDE

# A host-only kernel (no device code): it compiles and runs on the CPU, through XLA's CPU FFI too.
_JAX = (
    _PRELUDE
    + """
import jax
import jax.numpy as jnp
import cute_bind.jax

F32x1 = cute_bind.Tensor[cutlass.Float32, 1]

@cute_bind.kernel
def scale(out: F32x1, x: F32x1, alpha: cutlass.Float32):
    for i in range(cute.size(out)):
        out[i] = x[i] * alpha
"""
)


JAX_MISSING = _entry(
    "CB901",
    "jax-missing",
    _E.OptionalDependencyError,
    summary="cute_bind.jax was used where JAX or cute_bind's XLA FFI handler is missing.",
    message="cute_bind.jax needs {expected}, which cannot be loaded ({got})",
    explanation="""
    `cute_bind.jax` hands kernels to XLA through an FFI handler written in C
    (`cute_bind/jax/_cxla.c`), built with the package where jaxlib's XLA FFI
    headers are found at build time. It needs JAX (the `jax` extra) when an op
    is made, and the handler when a call is lowered. `import cute_bind` and
    `import cute_bind.jax` never import JAX.
    """,
    example="""\
import sys
sys.modules["jax"] = None   # as on a machine without JAX
import cutlass
import cutlass.cute as cute
import cute_bind
import cute_bind.jax

@cute_bind.kernel
def fill(out: cute_bind.Tensor[cutlass.Float32, 1]):
    out[0] = cutlass.Float32(1.0)

cute_bind.jax.op(fill, outputs={"out": cute_bind.jax.shaped((4,), "float32")})   # CB901
""",
    fix="""
    Install JAX (`pip install "cute_bind[jax]"`); where the handler is missing, rebuild
    cute_bind with jaxlib installed (`python setup.py build_ext --inplace`, or
    `pip install --no-build-isolation .`) so its FFI headers are found.
    """,
)


JAX_FOREIGN_FRAME = _entry(
    "CB902",
    "jax-foreign-frame",
    _E.LaunchRuntimeError,
    summary="XLA ran a cute_bind.jax call lowered in another process.",
    message="{got}; expected {expected}",
    explanation="""
    A lowered `cute_bind.jax` call names the prepared launch it runs by an id
    that holds this process's random nonce: the compiled kernel, its loaded
    module and its argument layout live in the process that lowered it. A
    program serialized and run elsewhere (`jax.export` with the custom-call
    safety check disabled, a serialized executable) carries an id no frame
    here has; the FFI handler refuses it at instantiation, before any launch.
    Raised by XLA (as the message of its own error) from the handler.
    """,
    example=_illustration(
        "Raised by the XLA FFI handler inside XLA's error: a program lowered in another process.",
        expected="a program lowered in this process",
        got="a cute_bind.jax call lowered in another process (frame 12884901888)",
    ),
    fix="""
    Lower and compile the jitted function in the process that runs it:
    `jax.export` and serialized executables carry no cute_bind kernel.
    """,
)


JAX_CALL_MISMATCH = _entry(
    "CB903",
    "jax-call-mismatch",
    _E.LaunchRuntimeError,
    summary="A cute_bind.jax custom call reached the FFI handler with other operands or results than it was lowered with.",
    message="kernel '{kernel}': the custom call has {got}; expected {expected}",
    explanation="""
    The handler launches a frame whose argument layout was fixed when the
    call was lowered: one buffer per array parameter, one per result. A
    custom call with another count (an HLO module edited by hand, a target
    name reused by other code) would write addresses the compiled function
    does not read; the handler refuses it at instantiation and at every
    execution. Raised by XLA (as the message of its own error).
    """,
    example=_illustration(
        "Raised by the XLA FFI handler inside XLA's error: an edited custom call.",
        kernel="scale",
        expected="2 operands and 1 result",
        got="3 operands and 1 result",
    ),
    fix="Call the kernel through `cute_bind.jax`; do not edit or reuse its custom call (`cute_bind_call`).",
)


JAX_BUFFER_MISALIGNED = _entry(
    "CB904",
    "jax-buffer-misaligned",
    _E.LaunchValueError,
    summary="XLA handed the kernel a buffer less aligned than its compiled code assumes.",
    message="kernel '{kernel}': {got}; expected {expected}",
    explanation="""
    A tensor or pointer parameter is compiled with an assumed alignment (its
    annotation's, e.g. `cute_bind.Tensor[Float32, 1, 16]`, or what bind()
    read), which vectorized loads rely on. XLA allocates its buffers aligned,
    but a buffer can start inside another (XLA's buffer assignment may place
    one in a larger allocation); the handler checks every address against the
    compiled alignment before the launch, and refuses a misaligned one instead
    of letting the kernel fault. Raised by XLA (as the message of its own error).
    """,
    example=_illustration(
        "Raised by the XLA FFI handler inside XLA's error: a buffer at 0x7f0000000008 for a 16-byte slot.",
        kernel="scale",
        expected="an address aligned to 16 bytes",
        got="XLA's buffer for operand 0 is at 0x7f0000000008",
    ),
    fix="""
    Declare the alignment the kernel needs and no more in the parameter's
    annotation (`cute_bind.Tensor[dtype, rank, align]`), or copy the array
    (`x + 0` inside jit gives a buffer of its own).
    """,
)


JAX_STATIC_VALUE = _entry(
    "CB905",
    "jax-static-value",
    _E.LaunchArgumentError,
    summary="A number or Constexpr parameter was given a traced JAX value (or an unhashable one).",
    message="kernel '{kernel}': parameter '{parameter}' takes {expected}; got {got}",
    explanation="""
    Under `jax.jit` only arrays are traced; a kernel's number parameters
    (`cutlass.Float32`, `Int32`, ...) and its Constexpr parameters are values
    the launch is prepared with when the call is lowered, so they must be
    concrete Python (or NumPy) values, fixed per compiled program, and
    hashable (JAX caches the lowering by them). A value computed from a
    traced array lives on the device; the kernel's host code cannot read it.
    """,
    example=_JAX
    + """
@jax.jit
def f(x, alpha):
    return cute_bind.jax.op(scale, outputs={"out": "x"})(x, alpha)

f(jnp.ones(8, jnp.float32), 2.0)   # alpha is traced -> CB905
""",
    fix="""
    Pass '{parameter}' as a static argument (`jax.jit(f, static_argnames="{parameter}")`,
    or a Python constant inside the function), or make it an array parameter
    of the kernel and read it on the device.
    """,
)


JAX_PARAMETER_UNSUPPORTED = _entry(
    "CB906",
    "jax-parameter-unsupported",
    _E.KernelDefinitionError,
    summary="A kernel parameter has a kind or element type cute_bind.jax cannot pass from JAX.",
    message="kernel '{kernel}': parameter '{parameter}' is {got}; cute_bind.jax takes {expected}",
    explanation="""
    `cute_bind.jax.op` maps tensor and pointer parameters to JAX arrays, number
    and Constexpr parameters to static values and the stream to XLA's. A
    sequence or structure (NamedTuple, dataclass) parameter has no JAX form:
    it must have a default, which every call passes. A tensor or pointer
    annotated with an element type JAX has no dtype for (TFloat32, the FP6
    types) cannot receive a JAX array. Checked when the op is made; and when
    a call is lowered for CUDA, a kernel without a stream parameter, which
    would launch on the default stream outside XLA's stream order.
    """,
    example=_PRELUDE
    + """
import jax   # cute_bind.jax.op needs JAX
import cute_bind.jax

@cute_bind.kernel
def tf32(out: cute_bind.Tensor[cutlass.TFloat32, 1]):
    out[0] = cutlass.TFloat32(1.0)

cute_bind.jax.op(tf32, outputs={"out": cute_bind.jax.shaped((4,), "float32")})   # TFloat32 has no JAX dtype -> CB906
""",
    fix="""
    Give '{parameter}' a default (it is then passed as is), or declare it with an
    element type JAX has (Float32 for TF32 data) or as a tensor or number; a
    kernel lowered for CUDA needs a `stream: cuda.CUstream = None` parameter
    that its host function launches on.
    """,
)


JAX_SPEC_INVALID = _entry(
    "CB907",
    "jax-spec-invalid",
    _E.KernelDefinitionError,
    summary="The outputs or mutates_args given to cute_bind.jax.op do not fit the kernel.",
    message="kernel '{kernel}': {got}; expected {expected}",
    explanation="""
    `outputs` names the tensor or pointer parameters the op allocates and
    returns (each mapped to an input's name, `like(...)`, `shaped(...)`, a
    `jax.ShapeDtypeStruct` or a function of the inputs); `mutates_args` the
    array parameters the kernel writes in place, which the op returns as new
    arrays sharing the inputs' buffers (input/output aliasing; donate them to
    `jax.jit` to avoid a copy). A name may be in one of them only, must be an
    array parameter, and the op must return at least one array (XLA drops a
    call whose results are unused).
    """,
    example=_JAX
    + """
cute_bind.jax.op(scale, outputs={"alpha": "x"})   # alpha is a number, not an array -> CB907
""",
    fix="""
    Name tensor or pointer parameters only, each in `outputs` or in `mutates_args`,
    and give every output a shape: an input's name, `cute_bind.jax.like(name, dtype=...)`,
    `cute_bind.jax.shaped(shape, dtype)` or a function returning a `jax.ShapeDtypeStruct`.
    """,
)


JAX_ARRAY_MISMATCH = _entry(
    "CB908",
    "jax-array-mismatch",
    _E.LaunchArgumentError,
    summary="An array given to (or declared as output of) a cute_bind.jax op does not fit its parameter.",
    message="kernel '{kernel}': parameter '{parameter}' takes {expected}; got {got}",
    explanation="""
    Checked when the op is traced, before anything is compiled: each array
    parameter takes a JAX array (or anything `jnp.asarray` takes) whose dtype
    has a CuTe element type (complex and 2-bit or 4-bit integer arrays have
    none) and is the annotation's, and whose rank is the annotation's. The
    same holds for each declared output shape.
    """,
    example=_JAX
    + """
f = cute_bind.jax.op(scale, outputs={"out": "x"})
f(jnp.ones(8, jnp.float16), 2.0)   # a float16 array for a Float32 tensor -> CB908
""",
    fix="Convert the array (`x.astype(jnp.float32)`, `x.reshape(...)`) or declare the parameter with the dtype and rank it gets.",
)


JAX_TRANSFORM_UNSUPPORTED = _entry(
    "CB909",
    "jax-transform-unsupported",
    _E.LaunchRuntimeError,
    summary="A JAX transformation (vmap, grad, jvp) was applied to a cute_bind.jax call.",
    message="kernel '{kernel}': {got}; expected {expected}",
    explanation="""
    A cute_bind kernel is opaque to JAX: it has no batching rule (the
    compiled code has fixed ranks) and no derivative. `jax.vmap`, `jax.grad`,
    `jax.jvp` and `jax.linearize` of a function that calls one raise this
    error when they reach it; `jax.jit`, `jax.lax.scan`/`fori_loop`/`cond`
    bodies and `shard_map` bodies are fine.
    """,
    example=_JAX
    + """
f = cute_bind.jax.op(scale, outputs={"out": "x"})
jax.vmap(lambda x: f(x, 2.0))(jnp.ones((4, 8), jnp.float32))   # -> CB909
""",
    fix="""
    Batch inside the kernel (a leading batch mode) or loop with `jax.lax.map`;
    for gradients wrap the call in `jax.custom_vjp` with a backward kernel.
    """,
)


JAX_EXPORT_UNSUPPORTED = _entry(
    "CB910",
    "jax-export-unsupported",
    _E.LaunchRuntimeError,
    summary="jax.export was asked to serialize a program holding a cute_bind.jax call.",
    message="kernel '{kernel}': {got}; expected {expected}",
    explanation="""
    An exported program must run in another process, where the kernel's
    prepared launch (the compiled module, its loaded code and argument
    layout) does not exist: the custom call names it by a process-local id.
    `cute_bind.jax` refuses to lower for export instead of producing an
    artifact that fails later (CB902).
    """,
    example=_JAX
    + """
import jax.export
f = cute_bind.jax.op(scale, outputs={"out": "x"})
jax.export.export(jax.jit(lambda x: f(x, 2.0)), platforms=["cpu"])(jax.ShapeDtypeStruct((8,), jnp.float32))   # -> CB910
""",
    fix="""
    Export the program without the kernel, or keep the kernel in the process:
    call the jitted function directly (jax's persistent compilation cache and
    cute_bind's disk cache make a warm start cheap).
    """,
)


JAX_DEVICE_MISMATCH = _entry(
    "CB911",
    "jax-device-mismatch",
    _E.LaunchRuntimeError,
    summary="XLA ran a cute_bind.jax call on another GPU than the one its launch was prepared for.",
    message="kernel '{kernel}': {got}; expected {expected}",
    explanation="""
    A frame is bound when the call is lowered, for the first CUDA device
    (device 0): its compiled module is loaded there, and a launch elsewhere
    would run code of another device's context. XLA compiles a program once
    for every device of the process, so the handler asks XLA which device it
    runs on and refuses another one before any launch, instead of faulting.
    Raised by XLA (as the message of its own error).
    """,
    example=_illustration(
        "Raised by the XLA FFI handler inside XLA's error: a program run on the second GPU.",
        kernel="scale",
        expected="device 0, the one its launch was prepared for",
        got="XLA runs the call on device 1",
    ),
    fix="""
    Run cute_bind.jax calls on one GPU per process (the device JAX lowers on
    first), e.g. with `CUDA_VISIBLE_DEVICES` set per process.
    """,
)
