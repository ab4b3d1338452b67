"""CB8xx, prepared graphs: the catalog entries of this range, in code order.

Raised by ``cute_bind.graph`` while recording, mapping slots to kernel-node
parameters and replaying.
"""

from .. import errors as _E
from ..define import entry as _entry
from .examples import PRELUDE as _PRELUDE

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
    _E.LaunchValueError,
    summary="A slot's value reaches the graph's kernel parameters transformed, so it cannot be rewritten in place.",
    message="kernel '{kernel}': parameter '{parameter}' does not pass straight through to the kernel ({got}); expected {expected}",
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
    _E.LaunchValueError,
    summary="A slot's value decides the launch itself (grid, block, shared memory, which kernels run).",
    message="kernel '{kernel}': parameter '{parameter}' changes the launch, not only its parameters ({got}); expected {expected}",
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
    _E.LaunchValueError,
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
    _E.LaunchRuntimeError,
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
    _E.LaunchRuntimeError,
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
    _E.LaunchRuntimeError,
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
