"""A CPU emulation of the driver calls a graph makes, for tests and examples without a GPU.

Host functions "launch" a kernel by writing a launch record into the
driver's mailbox, a host array at a fixed address they receive as a
compile-time constant (``cutlass.Constexpr[int]``), so that the mailbox is no
runtime slot. A record is :data:`RECORD` 64-bit cells: the kernel id, grid x, y,
z, block x, dynamic shared memory, then the parameters, each starting on a new
cell (a 4-byte parameter in the low half, a 128-byte one over 16 cells), and
cell 0 of the mailbox counts the records. While a stream captures, new records
become kernel nodes of its graph; otherwise :meth:`FakeDriver.synchronize`
runs them. Running a kernel node calls the Python body registered for its id
with the node's parameter bytes.

Executable graphs copy the node parameters, :meth:`FakeDriver.set_kernel_params`
reads the new ones through the ``void*`` array it is given (as the driver
does), :meth:`FakeDriver.launch` runs the nodes in order. ``fail(call, code)``
makes the next such call fail with that ``CUresult``; ``calls`` counts every
call by name.
"""

from __future__ import annotations

import ctypes
import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from .driver import Driver, KernelParams, Node, driver_error

__all__ = ["FakeDriver", "FakeKernel", "RECORD", "HEADER"]

#: Cells (int64) per launch record.
RECORD = 40
#: Cells before a record's parameters: kernel id, grid x/y/z, block x, shared memory.
HEADER = 6

Body = Callable[[tuple[int, int, int], tuple[int, int, int], list[bytes]], None]


@dataclass(frozen=True)
class FakeKernel:
    """A kernel the fake can run: its parameter sizes and a Python body over their bytes."""

    kid: int
    name: str
    param_sizes: tuple[int, ...]
    body: Body | None = None


@dataclass
class _FakeGraph:
    nodes: list[Node] = field(default_factory=list)
    destroyed: bool = False


@dataclass
class _FakeExec:
    graph: _FakeGraph
    params: dict[int, KernelParams]  # id(node handle) -> current parameters
    destroyed: bool = False


_MAX_CAPACITY = 1 << 20
# mailbox address -> (its array, capacity); never emptied (compiled host functions keep the address)
_MAILBOXES: dict[int, tuple[object, int]] = {}


class _FakeNodeHandle:
    __slots__ = ("serial",)

    def __init__(self, serial: int) -> None:
        self.serial = serial

    def __repr__(self) -> str:
        return f"<fake node {self.serial}>"


class FakeDriver(Driver):
    """The driver calls of a graph, emulated on host memory."""

    def __init__(self, capacity: int = 4096) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or not 1 <= capacity <= _MAX_CAPACITY:
            raise ValueError(f"FakeDriver capacity must be an int in [1, {_MAX_CAPACITY}], got {capacity!r}")
        # one spare record past the capacity: the launches after the mailbox is full all write
        # there (fake_launch clamps), so an overflow is reported by the next drain, never a write
        # past the array
        self._box = (ctypes.c_int64 * (1 + (capacity + 1) * RECORD))()
        self._capacity = capacity
        #: address of the mailbox (pass it to host functions as a Constexpr)
        self.mailbox = ctypes.addressof(self._box)
        # compiled host functions keep the address: the mailbox lives as long as the process
        _MAILBOXES[self.mailbox] = (self._box, capacity)
        self.kernels: dict[int, FakeKernel] = {}
        self.calls: Counter[str] = Counter()
        self._capturing: dict[int, list[Node]] = {}
        self._fail: dict[str, int] = {}
        self._serial = itertools.count(1)
        #: kernel nodes run so far (by launches and synchronize)
        self.executed = 0

    # ------------------------------------------------------------------ set-up
    def kernel(self, kid: int, name: str, param_sizes: tuple[int, ...], body: Body | None = None) -> FakeKernel:
        """Register the kernel that records with id ``kid`` launch."""
        k = FakeKernel(kid, name, tuple(param_sizes), body)
        self.kernels[kid] = k
        return k

    def fail(self, call: str, code: int = 1) -> None:
        """Make the next call named ``call`` (e.g. ``"launch"``) fail with CUresult ``code``."""
        self._fail[call] = code

    def _enter(self, call: str) -> None:
        self.calls[call] += 1
        code = self._fail.pop(call, None)
        if code is not None:
            raise driver_error(call, code, "CUDA_ERROR_FAKE")

    # ------------------------------------------------------------------ the mailbox
    def _drain(self) -> list[Node]:
        box = self._box
        count = int(box[0])
        if count > self._capacity:
            box[0] = 0  # the records past the capacity are lost: said once, then the mailbox is usable again
            raise driver_error(
                "launch record",
                2,
                f"CUDA_ERROR_OUT_OF_MEMORY (mailbox full: {count} launches since the last drain, room for {self._capacity})",
            )
        nodes = []
        raw = ctypes.string_at(self.mailbox + 8, count * RECORD * 8)
        for r in range(count):
            cells = raw[r * RECORD * 8 : (r + 1) * RECORD * 8]
            word = [int.from_bytes(cells[8 * i : 8 * i + 8], "little", signed=True) for i in range(HEADER)]
            kid = word[0]
            kernel = self.kernels.get(kid)
            if kernel is None:
                raise driver_error("cuLaunchKernel", 98, f"CUDA_ERROR_INVALID_HANDLE (no fake kernel {kid})")
            params, cell = [], HEADER
            for size in kernel.param_sizes:
                params.append(cells[8 * cell : 8 * cell + size])
                cell += (size + 7) // 8
            kp = KernelParams(kid, (word[1], word[2], word[3]), (word[4], 1, 1), word[5], tuple(params))
            nodes.append(Node(_FakeNodeHandle(next(self._serial)), "kernel", kp))
        box[0] = 0
        return nodes

    def _run(self, kp: KernelParams) -> None:
        kernel = self.kernels[kp.func]
        if kp.grid[0] <= 0 or kp.block[0] <= 0:
            raise driver_error("cuLaunchKernel", 1, "CUDA_ERROR_INVALID_VALUE (empty grid)")
        if kernel.body is not None:
            kernel.body(kp.grid, kp.block, list(kp.params))
        self.executed += 1

    def synchronize(self) -> None:
        """Run the launches recorded outside any capture (what a stream synchronize waits for)."""
        if self._capturing:
            return
        for node in self._drain():
            assert node.kernel is not None
            self._run(node.kernel)

    # ------------------------------------------------------------------ Driver
    def stream(self, handle: int) -> int:
        return int(handle)

    def begin_capture(self, stream: object) -> None:
        self._enter("begin_capture")
        assert isinstance(stream, int)  # what stream() made
        if self._capturing:
            raise driver_error("cuStreamBeginCapture", 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (one capture at a time)")
        self.synchronize()  # launched before the capture began
        self._capturing[int(stream)] = []

    def end_capture(self, stream: object) -> _FakeGraph:
        self._enter("end_capture")
        assert isinstance(stream, int)
        if int(stream) not in self._capturing:
            raise driver_error("cuStreamEndCapture", 901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (not capturing)")
        nodes = self._capturing.pop(int(stream)) + self._drain()
        return _FakeGraph(nodes)

    def nodes(self, graph: object) -> list[Node]:
        self._enter("nodes")
        assert isinstance(graph, _FakeGraph)  # what end_capture made
        return list(graph.nodes)

    def instantiate(self, graph: object) -> _FakeExec:
        self._enter("instantiate")
        assert isinstance(graph, _FakeGraph)
        return _FakeExec(graph, {id(n.handle): n.kernel for n in graph.nodes if n.kernel is not None})

    def params_object(self, node: Node, argv_address: int) -> tuple[KernelParams, int]:
        assert node.kernel is not None
        return (node.kernel, argv_address)

    def set_kernel_params(self, graph_exec: object, node: object, params: object) -> None:
        self._enter("set_kernel_params")
        assert isinstance(graph_exec, _FakeExec) and isinstance(params, tuple)  # what instantiate and params_object made
        kernel, argv = params
        if graph_exec.destroyed or id(node) not in graph_exec.params:
            raise driver_error("cuGraphExecKernelNodeSetParams", 400, "CUDA_ERROR_INVALID_HANDLE")
        blobs = []
        for i, old in enumerate(kernel.params):
            addr = ctypes.c_void_p.from_address(argv + 8 * i).value
            blobs.append(ctypes.string_at(addr, len(old)) if addr else bytes(len(old)))
        graph_exec.params[id(node)] = KernelParams(kernel.func, kernel.grid, kernel.block, kernel.shared_mem, tuple(blobs))

    def launch(self, graph_exec: object, stream: object) -> None:
        self._enter("launch")
        assert isinstance(graph_exec, _FakeExec)
        if graph_exec.destroyed:
            raise driver_error("cuGraphLaunch", 400, "CUDA_ERROR_INVALID_HANDLE")
        if self._capturing:
            raise driver_error("cuGraphLaunch", 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED")
        self.synchronize()
        for node in graph_exec.graph.nodes:
            if node.kernel is not None:
                self._run(graph_exec.params[id(node.handle)])

    def destroy_graph(self, graph: object) -> None:
        self._enter("destroy_graph")
        assert isinstance(graph, _FakeGraph)
        graph.destroyed = True

    def destroy_exec(self, graph_exec: object) -> None:
        self._enter("destroy_exec")
        assert isinstance(graph_exec, _FakeExec)
        graph_exec.destroyed = True


def fake_launch(mailbox: int, kernel: int, grid: object, block: int, *params: tuple[str, Any], shared_mem: int = 0) -> None:
    """Write one launch record from inside a ``@cute.jit`` host function (called while it is traced).

    ``grid`` is an x extent (an int or an Int32 value) or an (x, y, z) tuple;
    each parameter is ``(kind, value)`` with kind ``"ptr"`` (a pointer: its
    address), ``"i32"``, ``"i64"``, ``"f32"``, ``"f64"`` or ``"map"`` (an
    Int64 value spread over a 128-byte block the way a TMA descriptor mixes
    its address in: every cell holds a different function of it).
    """
    import cutlass
    import cutlass.cute as cute

    if mailbox not in _MAILBOXES:
        raise ValueError(f"fake_launch: {mailbox:#x} is not the mailbox of a FakeDriver (pass its .mailbox)")
    capacity = _MAILBOXES[mailbox][1]
    cells_n = RECORD * (capacity + 1) + 1
    space = cute.AddressSpace.generic
    cells = cute.make_tensor(cute.make_ptr(cutlass.Int64, mailbox, space, assumed_align=8), cute.make_layout(cells_n))
    halves32 = cute.make_tensor(cute.make_ptr(cutlass.Int32, mailbox, space, assumed_align=8), cute.make_layout(2 * cells_n))
    floats32 = cute.make_tensor(cute.make_ptr(cutlass.Float32, mailbox, space, assumed_align=8), cute.make_layout(2 * cells_n))
    floats64 = cute.make_tensor(cute.make_ptr(cutlass.Float64, mailbox, space, assumed_align=8), cute.make_layout(cells_n))
    # the record index, clamped to the spare record past the capacity: min(count, capacity)
    # without a branch (count - capacity is negative exactly when there is room)
    over = cells[0] - cutlass.Int64(capacity)
    index = cutlass.Int64(capacity) + (over & (over >> 63))
    base = index * RECORD + 1
    xyz = tuple(grid) if isinstance(grid, tuple) else (grid, 1, 1)
    cells[base] = cutlass.Int64(kernel)
    for i in range(3):
        cells[base + 1 + i] = cutlass.Int64(xyz[i])
    cells[base + 4] = cutlass.Int64(block)
    cells[base + 5] = cutlass.Int64(shared_mem)
    cell = HEADER
    for kind, value in params:
        if kind == "ptr":
            cells[base + cell] = value.toint()
        elif kind == "i64":
            cells[base + cell] = cutlass.Int64(value)
        elif kind == "i32":
            cells[base + cell] = cutlass.Int64(0)
            halves32[(base + cell) * 2] = cutlass.Int32(value)
        elif kind == "f32":
            cells[base + cell] = cutlass.Int64(0)
            floats32[(base + cell) * 2] = cutlass.Float32(value)
        elif kind == "f64":
            floats64[base + cell] = cutlass.Float64(value)
        elif kind == "map":
            v = cutlass.Int64(value)
            for k in range(16):
                cells[base + cell + k] = (v >> (k % 5)) * (2 * k + 1) + k
            cell += 15
        else:
            raise ValueError(f"unknown fake parameter kind {kind!r}")
        cell += 1
    cells[0] = cells[0] + 1
