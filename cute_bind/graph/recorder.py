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

import time
import weakref
from collections import abc
from typing import Any, ClassVar, Literal, Mapping, NoReturn, Sequence, SupportsIndex

from .. import diagnostics as D
from ..diagnostics.errors import CuteBindError
from ..launch import PreparedLaunch
from ..launch.arguments import bind_arguments
from ..launch.lifecycle import HandleState, Refusal
from .driver import CudaDriver, Driver, KernelParams, Node
from .mapping import LAUNCH_EFFECTS, Capture, Effect, Item, classify, combine, noise_mask, probe_values
from .steps import POLICIES, Finding, GraphStats, NodeBuffer, Phase, Policy, Step, stream_handle
from .updates import Updates

__all__ = ["Graph", "Step", "Finding", "GraphStats", "graph", "Policy"]


class Graph(Updates):
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
        stream: object = None,
        *,
        derived: Policy = "fixed",
        pool: object = None,
        driver: Driver | None = None,
    ) -> None:
        if derived not in POLICIES:
            raise D.error(
                D.GRAPH_MISUSE, detail="unknown policy for derived values", expected=" or ".join(map(repr, POLICIES)), got=repr(derived)
            )
        self._driver = driver if driver is not None else CudaDriver()
        self._derived: str = derived
        self._pool = pool
        self._torch_graph: Any = None
        self._torch_ctx: Any = None
        self._torch_stream: Any = None
        self._stream_arg = stream
        self._stream_handle = 0 if stream is None else stream_handle(stream)
        self._stream: Any = None
        self._open()
        #: recording progress while open (new -> recording -> ready); "closed" once closed, set with the
        #: lifecycle's state by _release, so the replay paths test one string
        self._phase = Phase.NEW
        self._steps: list[Step] = []
        self._graph: Any = None
        self._exec: Any = None
        self._nodes: list[Node] = []
        self._buffers: dict[int, NodeBuffer] = {}
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
        if self._phase is not Phase.NEW:
            raise self._misuse("a graph records once", "a new graph", f"a graph that is {self._phase.value}")
        if self._pool is not None:
            self._enter_torch()
        else:
            self._stream = self._driver.stream(self._stream_handle)
            self._driver.begin_capture(self._stream)
        self._phase = Phase.RECORDING
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

    def launch(self, handle: PreparedLaunch[...], /, *args: object, **kwargs: object) -> Step:
        """Record ``handle.launch(*args, **kwargs)`` as the next step (inside the ``with`` block)."""
        if self._phase is not Phase.RECORDING:
            raise self._misuse("g.launch records, inside the with block", "a recording graph", f"a graph that is {self._phase.value}")
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

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
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

    def _finish(self, graph: object) -> None:
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
        self._phase = Phase.READY
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
        self._buffers = {i: NodeBuffer(self._driver, nodes[i], i) for i in sorted(claimed)}
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
            step.refresh_fast()

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

    def set_policy(self, step: Step | int | PreparedLaunch[...], parameter: str, policy: Literal["fixed", "rerecord"]) -> None:
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

    def replay(
        self,
        updates: Mapping[Step | int | PreparedLaunch[...], Mapping[str, object] | Sequence[object]] | None = None,
        /,
        *,
        stream: object = None,
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
            handle = stream_handle(stream)
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
            s.sync(s.items)
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
        self._phase = Phase.CLOSED  # not "recording": _release has no capture to end
        self.close()

    def _release(self, state: HandleState) -> None:
        recording = self._phase is Phase.RECORDING
        self._phase = Phase.CLOSED
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
        return f"<cute_bind graph: {len(self._steps)} steps, {len(self._buffers)} kernel nodes mapped, {self._phase.value}>"

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

    def __deepcopy__(self, memo: dict[int, object]) -> Graph:
        raise self._not_copied("deep-copied")

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise self._not_copied("pickled")


def graph(stream: object = None, *, derived: Policy = "fixed", pool: object = None, driver: Driver | None = None) -> Graph:
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
