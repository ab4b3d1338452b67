"""CB7xx, PyTorch integration: the catalog entries of this range, in code order.

Raised by ``cute_bind.torch`` when a kernel is made a torch op or the op is called.
"""

from .. import errors as _E
from ..define import entry as _entry
from ..define import illustration as _illustration
from .examples import PRELUDE as _PRELUDE

# The host-only tensor function of this range's examples: they run on the CPU with CPU tensors.
_TSCALE_KERNEL = """
@cute_bind.kernel
def tscale(out: cute.Tensor, inp: cute.Tensor, alpha: cutlass.Float32):
    for i in range(cute.size(out)):
        out[i] = inp[i] * alpha
"""


# The op examples' first lines: the imports (CB701 imports all but torch) and the function.
_TSCALE = (
    _PRELUDE
    + """
import torch
import cute_bind.torch
"""
    + _TSCALE_KERNEL
)


TORCH_MISSING = _entry(
    "CB701",
    "torch-missing",
    _E.OptionalDependencyError,
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
"""
    + _TSCALE_KERNEL
    + """
cute_bind.torch.op("demo::tscale", tscale, mutates_args=("out",))   # no torch -> CB701
""",
    fix="Install PyTorch (`pip install torch`), or call the kernel or its handle without an op.",
)


OP_PARAMETER_UNSUPPORTED = _entry(
    "CB702",
    "op-parameter-unsupported",
    _E.KernelDefinitionError,
    summary="A kernel parameter has no torch operator schema type.",
    message="kernel '{kernel}', parameter '{parameter}': {got} cannot be an argument of a torch op ({detail}); expected {expected}",
    explanation="""
    A torch custom op has a schema: each argument is a `Tensor`, a number
    (`Scalar`, `int`, `float`, `bool`), a `str` or a list of one of them.
    `cute_bind.torch.op` writes that schema from the kernel's signature:
    tensors and pointers become `Tensor`, number scalars (integer, float, half,
    Boolean) `Scalar` (torch hands the value over as given, and the kernel
    checks it as its own call does), `Constexpr[int|float|bool|str]` the plain type, a
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
    _E.KernelDefinitionError,
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
    _E.KernelDefinitionError,
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
    _E.LaunchRuntimeError,
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
    example=_illustration(
        kernel="scale",
        expected="a stream parameter (stream: cuda.CUstream = None) so the op can launch on torch's current stream",
        got="no stream parameter (the kernel launches on the default stream) while a CUDA graph is being captured",
    ),
    fix="""
    Give the kernel a stream parameter (`stream: cuda.CUstream = None`) and
    launch its device code with `stream=stream`; the op fills it. Keep the
    op's tensors on the capturing device.
    """,
)


OP_OUTPUT_INVALID = _entry(
    "CB706",
    "op-output-invalid",
    _E.LaunchArgumentError,
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


OP_AUTOGRAD_TOO_LATE = _entry(
    "CB707",
    "op-autograd-too-late",
    _E.KernelDefinitionError,
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
    example=_TSCALE
    + """
op = cute_bind.torch.op("cbexample707::scale", tscale, outputs={"out": cute_bind.torch.like("inp")})
torch.compile(lambda x: op(x, 2.0), backend="eager", fullgraph=True)(torch.ones(4))  # traced once

op.register_autograd(lambda ctx, grad: (grad * 2.0, None))   # -> CB707
""",
    fix="""
    Call `op.register_autograd(...)` right after `cute_bind.torch.op(...)`,
    before anything compiles, traces or opchecks the op.
    """,
)


OP_OUTPUT_OVERLAP = _entry(
    "CB708",
    "op-output-overlap",
    _E.LaunchArgumentError,
    summary="A tensor a torch op writes overlaps itself, another written tensor, or part of an input.",
    message="kernel '{kernel}', parameter '{parameter}': expected {expected}, got {got}",
    explanation="""
    A mutating op writes the tensors named in `mutates_args` in place. As
    torch's own in-place operations do, it refuses a written tensor whose
    elements share memory: one with stride 0 in a dimension of extent > 1
    (made by `expand` or broadcasting), so that several elements are one
    memory location; one that shares memory with another tensor the op
    writes; or one that overlaps part of an input (`x[1:]` written while
    `x[:-1]` is read). An input that is exactly the written tensor (the same
    memory, as in `op(x, x, 2.0)`) is allowed, as `x.mul_(x)` is. Layouts
    torch cannot decide cheaply either (two interleaved strided views) are
    allowed, as torch allows them. Every door checks: the eager call, the
    dispatcher (`torch.ops.<ns>.<name>`, an input that requires grad) and a
    compiled graph's call.
    """,
    example=_TSCALE
    + """
op = cute_bind.torch.op("cbexample708::scale_", tscale, mutates_args=("out",))
op(torch.zeros(1).expand(4), torch.ones(4), 2.0)   # out has stride 0 -> CB708
""",
    fix="""
    Write into a tensor of its own: `.clone()` (or `.contiguous()`) the
    expanded or overlapping tensor first, and copy the result back where
    it belongs.
    """,
)
