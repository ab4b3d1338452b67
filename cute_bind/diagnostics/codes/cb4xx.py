"""CB4xx, launch runtime: the catalog entries of this range, in code order.

Raised by ``launch()`` when the handle cannot launch or CUDA reports an error.
"""

from .. import errors as _E
from ..define import entry as _entry
from ..define import illustration as _illustration
from .examples import FILL as _FILL
from .examples import FILL_HANDLE as _FILL_HANDLE
from .examples import PRELUDE as _PRELUDE

CUDA_ERROR = _entry(
    "CB401",
    "cuda-error",
    _E.CudaLaunchError,
    summary="The compiled entry point returned a non-zero CUDA result.",
    message="kernel '{kernel}': the launch returned CUDA error {got}; expected {expected}",
    explanation="""
    The entry point reports the result of its CUDA calls (module load,
    kernel launch) in a result slot the handle owns. A non-zero value is
    raised as this error; `error.cuda_error` holds the number and
    `error.cuda_error_name` its name.
    """,
    example=_illustration(
        "Needs a GPU to occur for real: e.g. a grid larger than the device allows.",
        kernel="k",
        expected="cudaSuccess (0)",
        got="cudaErrorInvalidValue (1)",
    ),
    fix="Read the CUDA error name: it is the launch configuration, the device or the inputs, as for any CUDA launch.",
)


MODULE_UNLOADED = _entry(
    "CB402",
    "module-unloaded",
    _E.LaunchRuntimeError,
    summary="The compiled module was unloaded; the handle can no longer launch.",
    message="kernel '{kernel}': the compiled module this handle was prepared from has been unloaded; expected {expected}",
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
    _E.LaunchRuntimeError,
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
    _E.LaunchRuntimeError,
    summary="The handle was closed.",
    message="kernel '{kernel}': the handle was closed; expected {expected}",
    explanation="`handle.close()` releases the handle's pin on the compiled module; it cannot launch afterwards.",
    example=_FILL_HANDLE
    + """
handle.close()
handle.launch(addr, 2)   # -> CB404
""",
    fix="Bind a new handle.",
)


HANDLE_NOT_PICKLABLE = _entry(
    "CB405",
    "handle-not-picklable",
    _E.LaunchArgumentError,
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
    _E.LaunchRuntimeError,
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
    fix='Declare the C class matching the format (`fast` "I" for integer formats, "R" for f/d...), or "X" to write through the kind\'s converter.',
)
