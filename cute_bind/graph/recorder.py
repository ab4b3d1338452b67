"""Record prepared launches as one CUDA graph; replay it with new values, no recapture.

Recording (``with cute_bind.graph(stream) as g: g.launch(handle, ...)``) runs
each launch under stream capture and keeps a copy of the handle's bytes per
step. When the block ends, each step is captured again on its own: twice with
its own values (bytes that differ are uninitialised padding, ignored), then
once per probe value of each item of its storage (:mod:`.mapping`). That says,
for every item, where its bytes went in the step's kernel nodes, or that it is
derived (transformed, a TMA descriptor, the grid...): each derived slot is a
:class:`Finding` with a catalog code. The step's nodes are then found in the
recorded graph by their parameters, and the graph is instantiated.

Replay writes new values into per-node parameter buffers the graph owns,
hands every node that changed to ``cuGraphExecKernelNodeSetParams`` and
launches the executable graph. A derived value that changes is refused
(CB803, policy ``"fixed"``) or makes the graph re-record itself before the
launch (policy ``"rerecord"``, counted in :attr:`Graph.stats`).
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections import abc
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, Mapping, Sequence

from .. import diagnostics as D
from .. import settings
from ..diagnostics.errors import CuteBindError
from ..launch import PreparedLaunch
from ..launch.lifecycle import HandleState, Lifecycle, Refusal
from ..launch.arguments import bind_arguments
from ..slots import StreamKind, Where
from .driver import CudaDriver, Driver, KernelParams, Node
from .mapping import LAUNCH_EFFECTS, Capture, Effect, Item, classify, combine, items_of, noise_mask, probe_values

__all__ = ["Graph", "Step", "Finding", "GraphStats", "graph", "Policy"]


def _c_setter() -> Any:
    """The C pointer setter class (``_cgraph.PointerSetter``), or None: not built, or
    ``CUTE_BIND_PURE_PYTHON=1`` (read when an updater is made, like the launch paths)."""
    if settings.PURE_PYTHON.flag():
        return None
    try:
        from ._cgraph import PointerSetter
    except ImportError:
        return None
    return PointerSetter


Policy = Literal["fixed", "rerecord", "error"]
_POLICIES = ("fixed", "rerecord", "error")
_U64 = 1 << 64


@dataclass
class GraphStats:
    """Counters of one graph (host-side work only)."""

    replays: int = 0
    nodes_updated: int = 0  # cuGraphExecKernelNodeSetParams calls
    rerecords: int = 0
    rerecord_seconds: float = 0.0
    captures: int = 0  # stream captures made to map values (record and re-record)
    record_seconds: float = 0.0


@dataclass(frozen=True)
class Finding:
    """A parameter of a recorded step whose value does not pass straight through to kernel parameters.

    ``effects`` lists, per item of the value (a tensor's address, extents,
    strides...), what changing it does: ``transformed``, ``tensor map``
    (CB801), ``grid``, ``block``, ``shared memory``, ``launches`` (CB802).
    ``policy`` is what a replay does when it changes: ``"fixed"`` refuses
    (CB803), ``"rerecord"`` re-records the graph.
    """

    step: int
    kernel: str
    parameter: str
    effects: tuple[tuple[str, str, str], ...]  # (item, effect, detail)
    code: str
    policy: str

    @property
    def message(self) -> str:
        """The catalog message of this finding."""
        return D.format_message(D.lookup(self.code), **self._fields())[0]

    def _fields(self) -> dict[str, str]:
        what = "; ".join(
            ("" if item == "value" else f"{item}: ") + how + (f" ({detail})" if detail else "") for item, how, detail in self.effects
        )
        return {
            "kernel": self.kernel,
            "parameter": self.parameter,
            "expected": "a value whose bytes reach kernel parameters unchanged",
            "got": f"step {self.step}: {what}",
        }

    def error(self) -> CuteBindError:
        """The finding as its catalog error (what ``derived="error"`` raises)."""
        f = self._fields()
        diagnostic = D.GRAPH_VALUE_SHAPES_LAUNCH if self.code == "CB802" else D.GRAPH_VALUE_TRANSFORMED
        return D.error(diagnostic, kernel=f["kernel"], parameter=f["parameter"], expected=f["expected"], got=f["got"])


class _NodeBuffer:
    """One kernel node's parameters as the graph will next set them: our buffer, our ``void*`` array."""

    __slots__ = ("handle", "buf", "cbuf", "argv", "offsets", "params", "key", "pair")

    def __init__(self, driver: Driver, node: Node, index: int) -> None:
        assert node.kernel is not None
        blobs = node.kernel.params
        self.offsets = []
        total = 0
        for b in blobs:
            total = (total + 15) // 16 * 16  # every parameter 16-aligned, as kernel parameters may require
            self.offsets.append(total)
            total += len(b)
        self.buf = bytearray(max(16, total))
        for off, b in zip(self.offsets, blobs):
            self.buf[off : off + len(b)] = b
        self.cbuf = (ctypes.c_char * len(self.buf)).from_buffer(self.buf)
        base = ctypes.addressof(self.cbuf)
        self.argv = (ctypes.c_void_p * max(1, len(blobs)))(*[base + off for off in self.offsets])
        self.handle = node.handle
        self.params = driver.params_object(node, ctypes.addressof(self.argv))
        self.key = index  # the dirty set's key (an int hashes fast)
        self.pair = driver.record(self.handle, self.params)  # what the replay loop passes to the driver


class Step:
    """One recorded launch: ``g.launch(handle, ...)`` returns it; name it in ``g.replay(...)`` to update it."""

    def __init__(self, graph: Graph, index: int, handle: PreparedLaunch[Any], data: bytes) -> None:
        sh = handle._shared
        self._graph = weakref.ref(graph)
        self.index = index
        self.handle = handle
        self.kernel = sh.kernel
        self.names = sh.names
        self.slots = sh.slots
        self.wheres = sh.wheres
        self.data = bytearray(data)  # the values this step's nodes hold now
        self.scratch = bytearray(data)
        self.items: list[Item] = items_of(sh.names, sh.slots, sh.layout.slot_parts)
        self.slot_items: list[list[Item]] = [[it for it in self.items if it.slot == j] for j in range(len(sh.names))]
        self.writers: list[list[tuple[struct.Struct, int, int]]] = []
        for parts in sh.layout.slot_parts:
            w = []
            for fmt, off in parts:
                st = struct.Struct("@" + fmt)
                w.append((st, off, len(st.unpack(bytes(st.size)))))
            self.writers.append(w)
        self.effects: dict[Item, Effect] = {}
        self.base: Capture | None = None
        self.mapped: bytes = b""  # the values the base capture was taken with
        self.noise: dict[tuple[int, int], set[int]] = {}
        self.nodes: list[int] = []  # graph node index of each of the step's kernel nodes
        self.plan: dict[Item, list[tuple[_NodeBuffer, int]]] = {}
        self.fast: dict[Item, list[Any]] = {}  # the pointer fast paths' targets (see Graph.updater)
        #: per slot, what its last staged value was read through (a DLPack capsule, a buffer export):
        #: the nodes use addresses into it until the slot's next update or the graph's end
        self.owners: dict[int, Any] = {}
        # per parameter: (item, effect, node locations) of each non-stream item, for updates
        self.state: list[list[tuple[Item, Effect, list[tuple[_NodeBuffer, int]]]]] = []

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(self.names)

    # A step names a recorded launch of one graph: a copy is the same name (a copy with its own
    # buffers would drift from the nodes), and it means nothing in another process.
    def __copy__(self) -> Step:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Step:
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        graph = self._graph()
        detail = "a step cannot be pickled: it names a launch recorded in this process's graph"
        if graph is not None:
            raise graph._misuse(detail, "the graph's own step object (g.launch's result) in this process", repr(self))
        raise D.error(D.GRAPH_MISUSE, kernel=self.kernel, detail=detail, expected="a step of a live graph", got=repr(self))

    def effect(self, parameter: str) -> dict[str, str]:
        """What each item of ``parameter`` does in the graph: ``{"address": "in place", ...}``."""
        return {it.label: self.effects[it].how for it in self.items if it.parameter == parameter and it in self.effects}

    def __repr__(self) -> str:
        return f"<graph step {self.index}: {self.kernel}>"


def _stream_handle(stream: Any) -> int:
    return StreamKind().coerce(stream, Where("graph", "stream"))


class Graph(Lifecycle):
    """Prepared launches recorded as one CUDA graph, replayable with new values.

    Made by ``cute_bind.graph(...)``. Inside its ``with`` block,
    ``launch`` records; afterwards ``replay`` launches the graph,
    optionally with new values for some parameters of some steps. One thread
    at a time; the recorded handles must not be launched by others while the
    graph records or re-records (it writes their storage to capture them).

    Lifecycle (:class:`~cute_bind.launch.lifecycle.Lifecycle`): ``close()``
    is idempotent and releases the driver's graph objects, also when the
    graph is collected; a closed graph refuses every use with CB806. Its
    ``with`` block records (it does not close), so the recording progress is
    a phase of its own within OPEN: ``new``, ``recording``, ``ready``.
    """

    REFUSALS: ClassVar[dict[HandleState, Refusal]] = {
        HandleState.CLOSED: (
            D.GRAPH_MISUSE,
            {"detail": "the graph was closed", "expected": "a recorded graph", "got": "a graph that is closed"},
        ),
    }

    def __init__(
        self,
        stream: Any = None,
        *,
        derived: Policy = "fixed",
        pool: Any = None,
        driver: Driver | None = None,
    ) -> None:
        if derived not in _POLICIES:
            raise D.error(
                D.GRAPH_MISUSE, detail="unknown policy for derived values", expected=" or ".join(map(repr, _POLICIES)), got=repr(derived)
            )
        self._driver = driver if driver is not None else CudaDriver()
        self._derived: str = derived
        self._pool = pool
        self._torch_graph: Any = None
        self._torch_ctx: Any = None
        self._torch_stream: Any = None
        self._stream_arg = stream
        self._stream_handle = 0 if stream is None else _stream_handle(stream)
        self._stream: Any = None
        self._open()
        #: recording progress while open (new -> recording -> ready); "closed" once closed, set with the
        #: lifecycle's state by _release, so the replay paths test one string
        self._phase = "new"
        self._steps: list[Step] = []
        self._graph: Any = None
        self._exec: Any = None
        self._nodes: list[Node] = []
        self._buffers: dict[int, _NodeBuffer] = {}
        self._dirty: dict[int, tuple[Any, Any]] = {}  # node index -> (node handle, parameter record) to rewrite
        self._pending: set[int] = set()
        self._policy: dict[tuple[int, int], str] = {}
        self._foreign = 0
        self._findings: list[Finding] = []
        self.stats = GraphStats()
        self._replay_stream: tuple[int, Any] = (0, None)
        # What keeps each recorded launch's compiled module loaded (its handle's pin): the graph's kernel
        # nodes point into the modules, and a closed handle or a cleared kernel cache would otherwise let
        # one be unloaded under a graph that still replays it. Released by close().
        self._pins: list[Any] = []

    # ------------------------------------------------------------------ recording
    def __enter__(self) -> Graph:
        if self._phase != "new":
            raise self._misuse("a graph records once", "a new graph", f"a graph that is {self._phase}")
        if self._pool is not None:
            self._enter_torch()
        else:
            self._stream = self._driver.stream(self._stream_handle)
            self._driver.begin_capture(self._stream)
        self._phase = "recording"
        return self

    def _enter_torch(self) -> None:
        from .. import dsl

        torch = dsl.import_torch()

        stream = self._stream_arg
        if stream is None:
            stream = torch.cuda.Stream()
        elif not isinstance(stream, torch.cuda.Stream):
            stream = torch.cuda.ExternalStream(self._stream_handle)
        self._torch_stream = stream
        self._stream_handle = int(stream.cuda_stream)
        self._stream = self._driver.stream(self._stream_handle)
        self._torch_graph = torch.cuda.CUDAGraph(keep_graph=True)
        self._torch_ctx = torch.cuda.graph(self._torch_graph, pool=self._pool, stream=stream, capture_error_mode="relaxed")
        self._torch_ctx.__enter__()

    @property
    def stream(self) -> int:
        """The stream handle the graph records on (launch the recorded handles on it) and replays on by default."""
        return self._stream_handle

    def launch(self, handle: PreparedLaunch[Any], /, *args: Any, **kwargs: Any) -> Step:
        """Record ``handle.launch(*args, **kwargs)`` as the next step (inside the ``with`` block)."""
        if self._phase != "recording":
            raise self._misuse("g.launch records, inside the with block", "a recording graph", f"a graph that is {self._phase}")
        if not isinstance(handle, PreparedLaunch):
            raise self._misuse("g.launch records a prepared launch", "a PreparedLaunch", type(handle).__name__)
        handle.launch(*args, **kwargs)
        self._pins.append(handle._pinned())  # the launch succeeded: the handle is open and pinned
        step = Step(self, len(self._steps), handle, handle.storage_bytes())
        for it in step.items:
            if it.role == "stream":  # the step runs on the graph's stream, whatever it named
                step.data[it.start : it.end] = self._stream_handle.to_bytes(it.end - it.start, "little")
        self._hold_recorded(step, args, kwargs)
        self._steps.append(step)
        return step

    @staticmethod
    def _hold_recorded(step: Step, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Hold the objects a step was recorded with (a tensor, an array, a buffer) until each slot's
        next update, as a staged value is held: the nodes keep their addresses, so a temporary
        (``g.launch(h, torch.empty(n, device="cuda"), ...)``) must not be freed while the graph
        can replay it. Numbers and int addresses hold nothing."""
        sh = step.handle._shared
        bound = bind_arguments(sh.kernel, sh.names, frozenset(), sh.defaults, args, kwargs, sh.hints, sh.constexpr_names)
        for j, name in enumerate(step.names):
            value = bound.get(name)
            if value is not None and type(value) not in (int, float, bool):
                step.owners[j] = value

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._state is not HandleState.OPEN:  # closed inside the block: close() ended the capture already
            return
        t0 = time.perf_counter()
        try:
            graph = self._end_recording(exc_type is not None)
        except BaseException:
            self._close_after_recording()
            if exc_type is None:
                raise
            return  # the block's own exception is the one to see
        if exc_type is not None:
            self._close_after_recording()
            return
        try:
            self._finish(graph)
        except BaseException:
            self.close()
            raise
        self.stats.record_seconds = time.perf_counter() - t0

    def _end_recording(self, failed: bool) -> Any:
        if self._torch_ctx is not None:
            ctx, self._torch_ctx = self._torch_ctx, None
            ctx.__exit__(None, None, None)
            if failed:
                return None
            return self._driver.wrap_graph(int(self._torch_graph.raw_cuda_graph()))
        graph = self._driver.end_capture(self._stream)
        if failed:
            self._driver.destroy_graph(graph)
            return None
        return graph

    def _finish(self, graph: Any) -> None:
        self._graph = graph
        for step in self._steps:
            self._map(step)
        self._nodes = self._driver.nodes(graph)
        self._match()
        if self._torch_graph is not None:
            self._torch_graph.instantiate()
            self._exec = self._driver.wrap_exec(int(self._torch_graph.raw_cuda_graph_exec()))
        else:
            self._exec = self._driver.instantiate(graph)
        self._phase = "ready"
        self._findings = self._collect_findings()
        if self._derived == "error" and self._findings:
            raise self._findings[0].error()
        if self._derived == "rerecord" and self._findings:
            self._check_rerecordable(self._findings[0].step, self._findings[0].parameter)

    # ------------------------------------------------------------------ mapping
    def _capture(self, step: Step, data: bytes) -> Capture:
        """Capture one step alone with ``data`` in its handle's storage."""
        self.stats.captures += 1
        drv = self._driver
        drv.begin_capture(self._stream)
        failed = ""
        try:
            step.handle._call_with(data)
        except CuteBindError as exc:
            failed = str(exc).splitlines()[0]
        try:
            graph = drv.end_capture(self._stream)
        except CuteBindError as exc:
            return Capture((), failed or str(exc).splitlines()[0])
        try:
            return Capture(tuple(drv.nodes(graph)), failed)
        finally:
            drv.destroy_graph(graph)

    def _map(self, step: Step) -> None:
        """Find where each item of ``step`` goes in its kernel nodes (see :mod:`.mapping`)."""
        handle = step.handle
        saved = handle.storage_bytes()
        try:
            data = bytes(step.data)
            base = self._capture(step, data)
            again = self._capture(step, data)
            if base.failed or again.failed or base.shape() != again.shape():
                raise D.error(
                    D.GRAPH_CAPTURE_MISMATCH,
                    kernel=step.kernel,
                    detail=f"step {step.index} could not be captured twice alike",
                    expected="the same kernel nodes for the same values",
                    got=base.failed or again.failed or f"{len(base.nodes)} and {len(again.nodes)} nodes",
                )
            if not base.nodes:
                raise D.error(
                    D.GRAPH_CAPTURE_MISMATCH,
                    kernel=step.kernel,
                    detail=f"step {step.index} put no node into the capture (did it launch on the graph's stream?)",
                    expected=f"kernel launches on stream {self._stream_handle}",
                    got="no nodes",
                )
            noise = noise_mask(base, again)
            effects: dict[Item, Effect] = {}
            for it in step.items:
                if it.role == "stream":
                    continue
                old = data[it.start : it.end]
                results = []
                for new in probe_values(it, old):
                    probe = bytearray(data)
                    probe[it.start : it.end] = new
                    results.append(classify(base, self._capture(step, bytes(probe)), old, new, noise))
                effects[it] = combine(results)
            step.base, step.noise, step.effects = base, noise, effects
            step.mapped = data  # the values the base capture holds (what _match looks for)
        finally:
            handle._storage[: len(saved)] = saved

    def _match(self) -> None:
        """Find each step's kernel nodes in the recorded graph; build the parameter buffers and update plans."""
        nodes = self._nodes
        claimed: set[int] = set()
        cursor = 0
        for step in self._steps:
            assert step.base is not None
            step.nodes = []
            for k, kp in enumerate(step.base.kernels):
                found = self._find(nodes, kp, step, k, claimed, cursor)
                if found is None:
                    found = self._find(nodes, kp, step, k, claimed, 0)
                if found is None:
                    raise D.error(
                        D.GRAPH_CAPTURE_MISMATCH,
                        kernel=step.kernel,
                        detail=f"kernel node {k} of step {step.index} is not in the recorded graph (was it launched on the graph's stream?)",
                        expected="the launch's nodes, as captured on their own",
                        got=f"{sum(n.kernel is not None for n in nodes)} kernel nodes, none with these parameters",
                    )
                claimed.add(found)
                cursor = found + 1
                step.nodes.append(found)
        self._foreign = len(nodes) - len(claimed)
        self._buffers = {i: _NodeBuffer(self._driver, nodes[i], i) for i in sorted(claimed)}
        self._dirty.clear()
        for step in self._steps:
            step.plan = {}
            for it, eff in step.effects.items():
                if eff.how == "in place":
                    step.plan[it] = [
                        (buf, buf.offsets[loc.param] + loc.offset)
                        for loc in eff.locations
                        for buf in (self._buffers[step.nodes[loc.node]],)
                    ]
            step.state = [
                [(it, step.effects[it], step.plan.get(it, [])) for it in items if it in step.effects] for items in step.slot_items
            ]
            self._refresh_fast(step)

    @staticmethod
    def _refresh_fast(step: Step) -> None:
        """Point the pointer fast paths of ``step`` at the current node buffers (one location each)."""
        for it, ref in step.fast.items():
            where = step.plan.get(it, [])
            if len(where) == 1:
                buf, off = where[0]
                ref[:] = [buf.buf, off, buf.key, buf.pair]
            else:
                ref[:] = [None, 0, 0, None]

    @staticmethod
    def _find(nodes: Sequence[Node], kp: KernelParams, step: Step, k: int, claimed: set[int], start: int) -> int | None:
        sig = kp.signature()
        for i in range(start, len(nodes)):
            other = nodes[i].kernel
            if i in claimed or other is None or other.signature() != sig:
                continue
            same = True
            for p, (x, y) in enumerate(zip(kp.params, other.params)):
                if x != y:
                    ignore = step.noise.get((k, p), set())
                    if any(x[j] != y[j] and j not in ignore for j in range(len(x))):
                        same = False
                        break
            if same:
                return i
        return None

    def _collect_findings(self) -> list[Finding]:
        out = []
        for step in self._steps:
            for j, name in enumerate(step.names):
                bad = [
                    (it.label, e.how, e.detail) for it in step.slot_items[j] if (e := step.effects.get(it)) is not None and not e.in_place
                ]
                if not bad:
                    continue
                code = "CB802" if any(how in LAUNCH_EFFECTS for _, how, _ in bad) else "CB801"
                policy = self._policy.get((step.index, j), "rerecord" if self._derived == "rerecord" else "fixed")
                out.append(Finding(step.index, step.kernel, name, tuple(bad), code, policy))
        return out

    # ------------------------------------------------------------------ policies and reports
    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every parameter whose value cannot be rewritten in place, with its code and policy."""
        return tuple(self._findings)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    def report(self) -> str:
        """The findings as text, one per line (empty when every value updates in place)."""
        return "\n".join(f.message.splitlines()[0] + f"  [policy: {f.policy}]" for f in self._findings)

    def set_policy(self, step: Step | int | PreparedLaunch[Any], parameter: str, policy: Literal["fixed", "rerecord"]) -> None:
        """What a replay does when ``parameter`` of ``step`` changes and is not updatable in place."""
        self._require_ready("set_policy applies to a recorded graph")
        st = self._step(step)
        j = self._slot_index(st, parameter)
        if policy not in ("fixed", "rerecord"):
            raise self._misuse("unknown policy", "'fixed' or 'rerecord'", repr(policy))
        if policy == "rerecord":
            self._check_rerecordable(st.index, parameter)
        self._policy[(st.index, j)] = policy
        self._findings = self._collect_findings()

    def _check_rerecordable(self, step: int, parameter: str) -> None:
        why, got = "", ""
        if self._torch_graph is not None:
            why, got = "the graph was recorded through torch.cuda.graph (pool=...)", "a torch-recorded graph"
        elif self._foreign:
            why, got = f"the graph holds {self._foreign} nodes besides the recorded launches", f"{self._foreign} other nodes"
        if why:
            raise D.error(
                D.GRAPH_CAPTURE_MISMATCH,
                kernel=self._steps[step].kernel,
                detail=f"parameter '{parameter}' of step {step} cannot be re-recorded: {why}",
                expected="a graph of prepared launches only",
                got=got,
            )

    # ------------------------------------------------------------------ replay
    def _require_ready(self, detail: str) -> None:
        if self._phase != "ready":
            if self._state is not HandleState.OPEN:
                raise self._refusal_error(detail=detail)
            raise self._misuse(detail, "a recorded graph", f"a graph that is {self._phase}")

    def _misuse(self, detail: str, expected: str, got: str) -> CuteBindError:
        kernel = self._steps[0].kernel if self._steps else "(none recorded yet)"
        return D.error(D.GRAPH_MISUSE, kernel=kernel, detail=detail, expected=expected, got=got)

    def _step(self, key: Step | int | PreparedLaunch[Any]) -> Step:
        if isinstance(key, Step):
            if key._graph() is self:
                return key
        elif isinstance(key, int) and not isinstance(key, bool):
            if 0 <= key < len(self._steps):
                return self._steps[key]
        elif isinstance(key, PreparedLaunch):
            found = [s for s in self._steps if s.handle is key]
            if len(found) == 1:
                return found[0]
            raise self._misuse(
                "a handle names a step only when it was recorded once", "a handle recorded once", f"{len(found)} steps of it"
            )
        raise self._misuse("updates name a recorded step", f"a step of this graph (0..{len(self._steps) - 1})", repr(key))

    def _slot_index(self, step: Step, parameter: str) -> int:
        try:
            return step.names.index(parameter)
        except ValueError:
            raise self._misuse(
                f"step {step.index} has no runtime parameter '{parameter}'", ", ".join(step.names), repr(parameter)
            ) from None

    def _updatable(self, step: Step, parameter: str) -> int:
        """The slot index of a parameter an update names; a stream is refused (it was accepted and
        did nothing: every step runs on the replay's stream)."""
        j = self._slot_index(step, parameter)
        if step.slots[j].kind == "stream":
            raise self._misuse(
                f"step {step.index}'s stream '{parameter}' is not updated: the graph runs on the replay's stream",
                "g.replay(stream=s) to run the graph on another stream",
                f"an update of '{parameter}'",
            )
        return j

    @staticmethod
    def _bind_all(st: Step, args: Sequence[Any]) -> dict[str, Any]:
        sh = st.handle._shared
        return bind_arguments(sh.kernel, sh.names, frozenset(), sh.defaults, tuple(args), {}, sh.hints, sh.constexpr_names)

    def update(self, step: Step | int | PreparedLaunch[Any], /, **values: Any) -> None:
        """Stage new values for parameters of ``step``; the next ``replay`` runs with them."""
        self._require_ready("updates apply to a recorded graph")
        st = self._step(step)
        for name, value in values.items():
            self._set(st, self._updatable(st, name), value)

    @staticmethod
    def _sync(st: Step, items: Sequence[Item]) -> None:
        """Read in-place items back from their first node location (the pointer fast path writes only there)."""
        data = st.data
        for it in items:
            where = st.plan.get(it)
            if where:
                buf, off = where[0]
                data[it.start : it.end] = buf.buf[off : off + it.end - it.start]

    def _set(self, st: Step, j: int, value: Any) -> None:
        self._require_ready("updates apply to a recorded graph")  # also a saved updater after close()
        slot = st.slots[j]
        packed = slot.coerce(value, st.wheres[j])
        vals = packed if slot.packs_tuple else (packed,)
        scratch, data = st.scratch, st.data
        k = 0
        for s, off, n in st.writers[j]:
            s.pack_into(scratch, off, *vals[k : k + n])
            k += n
        changed = []
        for it, eff, where in st.state[j]:  # stream items are not in it
            a, b = it.start, it.end
            new = scratch[a:b]
            # an in-place item's current value is in its node buffer (the pointer fast path writes only there)
            cur = where[0][0].buf[where[0][1] : where[0][1] + b - a] if where else data[a:b]
            if new != cur:
                changed.append((it, eff, where, new))
        derived = [c for c in changed if not c[1].in_place]
        if derived:
            policy = self._policy.get((st.index, j), "rerecord" if self._derived == "rerecord" else "fixed")
            if policy != "rerecord":
                it, eff = derived[0][0], derived[0][1]
                raise D.error(
                    D.GRAPH_FIXED_VALUE_CHANGED,
                    kernel=st.kernel,
                    parameter=st.names[j],
                    detail=f"{it.name}: {eff.how}, in step {st.index}",
                    expected="the recorded value (policy 'fixed')",
                    got=repr(value),
                )
            self._pending.add(st.index)
        # the graph holds what it was given (the tensor, array or buffer itself, and what its address
        # was read through) until the slot's next update or close(): the caller may drop it after
        # update()/replay() returns while the nodes keep its address
        st.owners[j] = None if type(value) in (int, float, bool) else (value, packed)
        dirty = self._dirty
        for it, _eff, where, new in changed:
            data[it.start : it.end] = new
            for buf, off in where:
                buf.buf[off : off + len(new)] = new
                dirty[buf.key] = buf.pair

    def updater(self, step: Step | int | PreparedLaunch[Any], parameter: str) -> Callable[[Any], None]:
        """A function that stages a new value of ``parameter`` of ``step`` (the replay loop's fast path).

        For a pointer rewritten in place it writes an int address straight
        into the node buffers; other values go through ``update``'s checks.
        """
        self._require_ready("updaters belong to a recorded graph (after the with block)")
        st = self._step(step)
        j = self._updatable(st, parameter)
        items = st.slot_items[j]
        set_slow = self._set
        if st.slots[j].kind == "pointer" and len(items) == 1 and st.effects[items[0]].in_place:
            it = items[0]
            pack = struct.Struct("<Q").pack_into
            dirty = self._dirty

            def locations() -> tuple[tuple[tuple[bytearray, int], ...], tuple[tuple[int, Any], ...]]:
                """(bytearray, offset) pairs, the step's own copy first, then each node buffer; and the dirty keys."""
                plan = st.plan.get(it, ())
                return ((st.data, it.start), *((buf.buf, off) for buf, off in plan)), tuple({buf.key: buf.pair for buf, _ in plan}.items())

            targets, keys = locations()
            if len(targets) == 2 and len(keys) == 1:  # the common case: one location in one node
                # only the node buffer is written: the step's copy is read back from it when
                # needed (_sync), so the fast path is one pack and one dict store. ``ref``
                # ([buffer, offset, node index, (node, record)]) is rewritten by every
                # (re-)recording, so this function stays valid across re-records.
                ref = st.fast.setdefault(it, [None, 0, 0, None])
                self._refresh_fast(st)
                cset = _c_setter()
                if cset is not None:  # the same steps in C: a bound METH_O method, no Python frame
                    return cset(ref, dirty, functools.partial(set_slow, st, j)).set  # type: ignore[no-any-return]

                def set_pointer(value: Any) -> None:
                    r = ref
                    if value.__class__ is not int or not 0 <= value < _U64 or r[0] is None:
                        set_slow(st, j, value)
                        return
                    pack(r[0], r[1], value)
                    dirty[r[2]] = r[3]

                return set_pointer

            # several locations: (targets, keys) of the current recording, rebuilt after a re-record
            where: list[Any] = [self.stats.rerecords, targets, keys]

            def set_pointer_n(value: Any) -> None:
                if value.__class__ is not int or not 0 <= value < _U64 or self._phase != "ready":
                    set_slow(st, j, value)
                    return
                if where[0] != self.stats.rerecords:
                    where[:] = [self.stats.rerecords, *locations()]
                for b, off in where[1]:
                    pack(b, off, value)
                dirty.update(where[2])

            return set_pointer_n

        def set_value(value: Any) -> None:
            set_slow(st, j, value)

        return set_value

    def updaters(self, targets: Sequence[tuple[Step | int | PreparedLaunch[Any], str]], /) -> Callable[[Sequence[Any]], None]:
        """One function that stages a value for each ``(step, parameter)`` of ``targets``: the
        batched form of :meth:`updater`, for a replay loop that changes the same parameters of
        many steps each time (``set_all([out0, out1, ...])``, a list or tuple of as many values,
        in the order of ``targets``).

        Int addresses for pointers rewritten in place are written in one C call (no Python
        frame per value); every other value goes through that parameter's :meth:`updater`.
        A value list of another length raises CB806 and stages nothing.
        """
        self._require_ready("updaters belong to a recorded graph (after the with block)")
        if isinstance(targets, (str, bytes)) or not isinstance(targets, abc.Sequence):  # type: ignore[unreachable]
            raise self._misuse("updaters takes a sequence of (step, parameter) pairs", "a list of pairs", type(targets).__name__)
        setters = []
        for target in targets:
            if not (isinstance(target, tuple) and len(target) == 2 and isinstance(target[1], str)):
                raise self._misuse("updaters takes a sequence of (step, parameter) pairs", "a (step, parameter) pair", repr(target))
            setters.append(self.updater(*target))
        count = len(setters)
        cset = _c_setter()
        batch = None
        if cset is not None and all(getattr(f, "__self__", None).__class__ is cset for f in setters):
            from ._cgraph import set_pointers

            batch = functools.partial(set_pointers, tuple(f.__self__ for f in setters))  # type: ignore[attr-defined]
        misuse = self._misuse

        def wrong(values: Any) -> CuteBindError:
            got = f"{len(values)} values" if isinstance(values, (list, tuple)) else type(values).__name__
            return misuse(
                "a batched updater takes one value per (step, parameter) it was made for", f"a list or tuple of {count} values", got
            )

        if batch is not None:

            def set_all_c(values: Sequence[Any]) -> None:
                if batch(values) is False:
                    raise wrong(values)

            return set_all_c

        def set_all(values: Sequence[Any]) -> None:
            if not isinstance(values, (list, tuple)) or len(values) != count:
                raise wrong(values)
            # a snapshot: a setter's conversion may change the list (the C batch reads one too)
            for f, v in zip(setters, tuple(values)):
                f(v)

        return set_all

    def replay(
        self, updates: Mapping[Step | int | PreparedLaunch[Any], Mapping[str, Any] | Sequence[Any]] | None = None, /, *, stream: Any = None
    ) -> None:
        """Launch the graph, after applying ``updates``: ``{step: {parameter: value}}``, or
        ``{step: (arguments...)}`` with the step's whole argument list as its handle's ``launch`` takes it.

        Values that pass straight through are rewritten in the executable
        graph's kernel nodes; a changed derived value raises CB803 or, under
        policy ``"rerecord"``, re-records the graph first. ``stream``
        (default: the recording stream) is where the graph runs.
        """
        self._require_ready("replay launches a recorded graph")
        if updates:
            if not isinstance(updates, abc.Mapping):
                raise self._misuse(
                    "replay takes {step: {parameter: value}} or {step: (arguments...)}", "a mapping of steps", type(updates).__name__
                )
            for key, values in updates.items():
                st = self._step(key)
                # the whole argument list (as handle.launch takes it), or some parameters by name
                if not isinstance(values, (abc.Mapping, tuple, list)):
                    raise self._misuse(
                        f"the update of step {st.index} is its parameters by name or its whole argument list",
                        "a mapping {parameter: value} or a tuple/list of arguments", type(values).__name__,
                    )  # fmt: skip
                if isinstance(values, abc.Mapping):
                    for name, value in values.items():
                        self._set(st, self._updatable(st, name), value)
                else:  # the whole argument list: its stream is the handle's own argument, not updated
                    for name, value in self._bind_all(st, values).items():
                        self._set(st, self._slot_index(st, name), value)
        if self._pending:
            self._rerecord()
        dirty = self._dirty
        updated = len(dirty)
        if stream is None:
            target = self._stream
        else:
            handle = _stream_handle(stream)
            if self._replay_stream[0] != handle or self._replay_stream[1] is None:
                self._replay_stream = (handle, self._driver.stream(handle))
            target = self._replay_stream[1]
        # every dirty node rewritten, then one launch (in C where built: one call for both)
        self._driver.replay(self._exec, dirty, target)
        self.stats.nodes_updated += updated
        self.stats.replays += 1

    def _rerecord(self) -> None:
        """Capture every step again with its current values; a new executable graph replaces the old one."""
        t0 = time.perf_counter()
        first = min(self._pending)
        self._check_rerecordable(first, "?")
        for s in self._steps:
            s.handle._pinned()  # a closed handle cannot be captured again: its CB404, before any capture
        for s in self._steps:
            self._sync(s, s.items)
        # A step is found in the new graph by its nodes as captured when it was mapped: one whose
        # values changed since (an in-place update) is mapped again too, or it would not be found.
        for s in self._steps:
            if s.index in self._pending or bytes(s.data) != s.mapped:
                self._map(s)
        drv = self._driver
        saved = [(s.handle, s.handle.storage_bytes()) for s in self._steps]
        drv.begin_capture(self._stream)
        try:
            for s in self._steps:
                s.handle._call_with(bytes(s.data))
        finally:
            graph = drv.end_capture(self._stream)
            for h, data in saved:
                h._storage[: len(data)] = data
        old_graph, old_exec, old_nodes = self._graph, self._exec, self._nodes
        try:
            self._graph, self._nodes = graph, drv.nodes(graph)
            self._match()
            self._exec = drv.instantiate(graph)
        except BaseException:
            # the new capture is dropped (no leak); the step stays pending, so the next replay tries again
            self._graph, self._exec, self._nodes = old_graph, old_exec, old_nodes
            drv.destroy_graph(graph)
            raise
        drv.destroy_exec(old_exec)
        drv.destroy_graph(old_graph)
        self._pending.clear()
        self.stats.rerecords += 1
        self.stats.rerecord_seconds += time.perf_counter() - t0

    # ------------------------------------------------------------------ lifetime
    @property
    def kernel_name(self) -> str:
        """The first recorded step's kernel (what the graph's errors name), or ``"graph"``."""
        return self._steps[0].kernel if self._steps else "graph"

    def close(self) -> None:
        """Release the executable graph and the graph (a torch-recorded graph stays torch's).

        Idempotent; later uses raise CB806 (:class:`~cute_bind.launch.lifecycle.Lifecycle`).
        """
        self._leave_state(HandleState.CLOSED)

    def _close_after_recording(self) -> None:
        """A recording that failed (or whose block raised) ended its capture already: close, keeping nothing."""
        self._phase = "closed"  # not "recording": _release has no capture to end
        self.close()

    def _release(self, state: HandleState) -> None:
        recording = self._phase == "recording"
        self._phase = "closed"
        if recording:  # closed (or collected) inside the with block: end the stream capture, keep nothing
            try:
                self._end_recording(failed=True)
            except CuteBindError:
                pass
        if self._torch_graph is None:
            try:
                if self._exec is not None:
                    self._driver.destroy_exec(self._exec)
                if self._graph is not None:
                    self._driver.destroy_graph(self._graph)
            except CuteBindError:
                pass  # a driver gone at shutdown: nothing left to release
        self._exec = self._graph = None
        self._release_pins()
        self._buffers.clear()
        self._dirty.clear()
        for step in self._steps:  # saved pointer updaters now take the checked path (CB806)
            for ref in step.fast.values():
                ref[:] = [None, 0, 0, None]
            if self._torch_graph is None:  # nothing replays the nodes now (a torch graph still can: it keeps them)
                step.owners.clear()

    def _release_pins(self) -> None:
        """Let the recorded launches' modules go, once nothing can launch the graph's nodes any more."""
        pins, self._pins = self._pins, []
        if self._torch_graph is not None and pins:
            # a torch-recorded graph stays torch's (and replayable through it): its modules stay with it
            try:
                weakref.finalize(self._torch_graph, pins.clear)
            except TypeError:  # not weakly referable: kept as long as this graph object instead
                self._pins = pins

    def __del__(self) -> None:
        self._close_quietly()  # the driver's graph objects are outside resources: released at collection too

    @property
    def torch_graph(self) -> Any:
        """The ``torch.cuda.CUDAGraph`` that recorded this graph (``pool=...``), else ``None``."""
        return self._torch_graph

    def __repr__(self) -> str:
        return f"<cute_bind graph: {len(self._steps)} steps, {len(self._buffers)} kernel nodes mapped, {self._phase}>"

    def _not_copied(self, how: str) -> CuteBindError:
        return self._misuse(
            f"a graph cannot be {how}: it owns driver objects (the executable graph) that exactly one object releases",
            "one graph per recording (record another with cute_bind.graph(...) for a second one)",
            f"{how.split()[0]} of {self!r}",
        )

    def __copy__(self) -> Graph:
        # a copy would share the executable graph and its release: collecting the copy destroyed
        # the original's driver objects while the original still reported itself ready
        raise self._not_copied("copied")

    def __deepcopy__(self, memo: dict[int, Any]) -> Graph:
        raise self._not_copied("deep-copied")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise self._not_copied("pickled")


def graph(stream: Any = None, *, derived: Policy = "fixed", pool: Any = None, driver: Driver | None = None) -> Graph:
    """Record prepared launches as one CUDA graph whose parameters can change between replays.

    ::

        with cute_bind.graph(stream) as g:
            a = g.launch(h1, out, x, 2.0, n, stream)
            b = g.launch(h2, y, out, 0.5, n, stream)
        g.replay({a: {"inp": x2}, b: {"out": y2}})   # rewrite node parameters, launch; no recapture

    ``stream``: where to record (and replay by default): an int handle,
    ``cuda.CUstream`` or ``torch.cuda.Stream``. Launch the recorded handles
    on it. ``derived``: what to do with values that do not pass straight
    through to kernel parameters (reported in ``g.findings``): ``"fixed"``
    (replaying another value raises CB803), ``"rerecord"`` (re-record when
    one changes) or ``"error"`` (raise CB801/CB802 at record time).
    ``pool``: a torch graph pool (``torch.cuda.graph_pool_handle()``) to
    record through ``torch.cuda.graph``, so torch allocations inside the
    block come from it. ``driver``: the driver calls (default: CUDA through
    ``cuda.bindings``; ``cute_bind.graph.fake.FakeDriver`` on a CPU).
    """
    return Graph(stream, derived=derived, pool=pool, driver=driver)
