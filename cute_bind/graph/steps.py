"""The records of a recorded graph: its steps, their parameter buffers, findings, counters and phase.

A :class:`Step` is one recorded launch (what ``g.launch`` returns and ``g.replay`` names), with
the bytes its nodes hold now, where each item of its storage lands (:mod:`.mapping`) and the
per-node buffers (:class:`NodeBuffer`) a replay hands to the driver. :class:`Phase` is the
graph's recording progress while it is open.
"""

from __future__ import annotations

import ctypes
import enum
import struct
import weakref
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, Protocol, Sequence, SupportsIndex

from .. import diagnostics as D
from ..diagnostics.errors import CuteBindError
from ..launch import PreparedLaunch
from ..slots import StreamKind, Where
from .driver import Driver, Node
from .mapping import Capture, Effect, Item, items_of

__all__ = ["POLICIES", "Finding", "GraphStats", "NodeBuffer", "Phase", "Policy", "Step", "stream_handle"]


class _Owner(Protocol):
    """What a step needs of its graph: the graph's misuse error (CB806)."""

    def _misuse(self, detail: str, expected: str, got: str) -> CuteBindError: ...


class Phase(enum.Enum):
    """A graph's recording progress: ``NEW`` -> ``RECORDING`` (its ``with`` block) -> ``READY``
    (replayable); ``CLOSED`` once closed, set with the lifecycle's state, so the replay paths
    test one value."""

    NEW = "new"
    RECORDING = "recording"
    READY = "ready"
    CLOSED = "closed"


Policy = Literal["fixed", "rerecord", "error"]
POLICIES = ("fixed", "rerecord", "error")


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


class NodeBuffer:
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

    def __init__(self, graph: _Owner, index: int, handle: PreparedLaunch[...], data: bytes) -> None:
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
        self.plan: dict[Item, list[tuple[NodeBuffer, int]]] = {}
        self.fast: dict[Item, list[Any]] = {}  # the pointer fast paths' targets (see Graph.updater)
        #: per slot, what its last staged value was read through (a DLPack capsule, a buffer export):
        #: the nodes use addresses into it until the slot's next update or the graph's end
        self.owners: dict[int, object] = {}
        # per parameter: (item, effect, node locations) of each non-stream item, for updates
        self.state: list[list[tuple[Item, Effect, list[tuple[NodeBuffer, int]]]]] = []

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(self.names)

    # A step names a recorded launch of one graph: a copy is the same name (a copy with its own
    # buffers would drift from the nodes), and it means nothing in another process.
    def __copy__(self) -> Step:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Step:
        return self

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        graph = self._graph()
        detail = "a step cannot be pickled: it names a launch recorded in this process's graph"
        if graph is not None:
            raise graph._misuse(detail, "the graph's own step object (g.launch's result) in this process", repr(self))
        raise D.error(D.GRAPH_MISUSE, kernel=self.kernel, detail=detail, expected="a step of a live graph", got=repr(self))

    def effect(self, parameter: str) -> dict[str, str]:
        """What each item of ``parameter`` does in the graph: ``{"address": "in place", ...}``."""
        return {it.label: self.effects[it].how for it in self.items if it.parameter == parameter and it in self.effects}

    def refresh_fast(self) -> None:
        """Point the pointer fast paths of this step at the current node buffers (one location each)."""
        for it, ref in self.fast.items():
            where = self.plan.get(it, [])
            if len(where) == 1:
                buf, off = where[0]
                ref[:] = [buf.buf, off, buf.key, buf.pair]
            else:
                ref[:] = [None, 0, 0, None]

    def sync(self, items: Sequence[Item]) -> None:
        """Read in-place items back from their first node location (the pointer fast path writes only there)."""
        data = self.data
        for it in items:
            where = self.plan.get(it)
            if where:
                buf, off = where[0]
                data[it.start : it.end] = buf.buf[off : off + it.end - it.start]

    def __repr__(self) -> str:
        return f"<graph step {self.index}: {self.kernel}>"


def stream_handle(stream: object) -> int:
    """The int handle of a stream a graph records or replays on (an int, ``cuda.CUstream``, a torch stream)."""
    return StreamKind().coerce(stream, Where("graph", "stream"))
