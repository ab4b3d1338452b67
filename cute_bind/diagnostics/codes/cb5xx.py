"""CB5xx, environment: the catalog entries of this range, in code order.

Raised when the installed CuTe DSL is missing, incompatible or untested, or
has changed under a compiled specialization.
"""

from .. import errors as _E
from ..define import entry as _entry
from .examples import PRELUDE as _PRELUDE

#: The nvidia-cutlass-dsl versions cute_bind is tested with (mirrors
#: pyproject.toml; ``cute_bind.dsl.SUPPORTED_VERSIONS`` is this value). Here so
#: that CB501's fix names the range on its page too, not only in a message.
SUPPORTED_DSL_VERSIONS = ">=4.5.3,<4.9"


DSL_INCOMPATIBLE = _entry(
    "CB501",
    "dsl-incompatible",
    _E.DSLCompatibilityError,
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
    _E.DSLCompatibilityError,
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


DSL_UNTESTED_VERSION = _entry(
    "CB503",
    "dsl-untested-version",
    _E.DSLVersionWarning,
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
    _E.LaunchRuntimeError,
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
