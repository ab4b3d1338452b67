"""The driver calls a graph makes, behind one small interface.

:class:`Driver` is everything :mod:`cute_bind.graph` asks of CUDA: stream
capture, the nodes of a captured graph and their kernel parameters, an
executable graph, rewriting a kernel node's parameters in it, launching it.
:class:`CudaDriver` makes those calls through ``cuda.bindings.driver``;
:class:`cute_bind.graph.fake.FakeDriver` emulates them on the CPU (node lists,
parameter buffers) so the recording, mapping and update logic runs in tests
without a GPU.

A failing call raises CB804 naming the call and its ``CUresult``.
"""

from __future__ import annotations

import ctypes
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable

from .. import diagnostics as D
from .. import settings
from ..launch import native

__all__ = ["Driver", "CudaDriver", "KernelParams", "Node", "driver_error"]


@dataclass(frozen=True)
class KernelParams:
    """What a kernel node launches: function, configuration and the bytes of each parameter."""

    func: int  # identifies the kernel (a CUfunction handle, or the fake's kernel id)
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    params: tuple[bytes, ...]
    raw: object = None  # the driver's own record of the node (copied when parameters are rewritten)

    def signature(self) -> tuple[object, ...]:
        """Everything but the parameter bytes."""
        return (self.func, self.grid, self.block, self.shared_mem, tuple(len(p) for p in self.params))


@dataclass(frozen=True)
class Node:
    """One node of a captured graph: its handle, its type name and, for a kernel node, its parameters."""

    handle: object
    kind: str  # "kernel", "memset", "memcpy", ...
    kernel: KernelParams | None


def driver_error(call: str, code: int, name: str, kernel: str | None = None) -> Exception:
    return D.error(
        D.GRAPH_DRIVER_ERROR,
        kernel=kernel or "cute_bind.graph",
        expected="CUDA_SUCCESS (0)",
        got=f"{name} ({code}) from {call}",
        details={"cuda_error": code, "cuda_error_name": name, "call": call},
    )


class Driver(ABC):
    """The driver calls of a graph. Stream and graph objects are whatever the driver uses."""

    #: which loop :meth:`replay` runs: "python" (a driver call per node) or "c" (``_cgraph``)
    replay_path: str = "python"
    #: why :attr:`replay_path` is "python" where a C loop exists ("" otherwise)
    replay_path_reason: str = ""

    @abstractmethod
    def stream(self, handle: int) -> object:
        """The driver's stream object for a raw stream handle."""

    @abstractmethod
    def begin_capture(self, stream: object) -> None:
        """Start capturing the work launched on ``stream`` (relaxed mode)."""

    @abstractmethod
    def end_capture(self, stream: object) -> object:
        """End the capture on ``stream``; return the captured graph."""

    @abstractmethod
    def nodes(self, graph: object) -> list[Node]:
        """The nodes of ``graph``, in creation order, kernel nodes with their parameters."""

    @abstractmethod
    def instantiate(self, graph: object) -> object:
        """An executable graph of ``graph``."""

    @abstractmethod
    def params_object(self, node: Node, argv_address: int) -> object:
        """A reusable parameter record for ``node`` whose kernel arguments are read from the
        ``void*`` array at ``argv_address`` each time it is passed to :meth:`set_kernel_params`."""

    #: ``set_kernel_params(graph_exec, node, params)``: rewrite kernel node ``node``'s parameters in
    #: ``graph_exec`` (copies what ``params`` points to); a method of the subclass, or a function it
    #: binds per instance (CudaDriver: a closure over the bindings' entry point)
    set_kernel_params: Callable[[object, object, object], None]
    #: ``launch(graph_exec, stream)``: launch ``graph_exec`` on ``stream`` (likewise)
    launch: Callable[[object, object], None]

    def record(self, node: object, params: object) -> tuple[object, object]:
        """What :meth:`replay` takes for one node to rewrite: ``(node, params)`` by default."""
        return (node, params)

    def replay(self, graph_exec: object, dirty: dict[int, tuple[object, object]], stream: object) -> None:
        """Rewrite every node of ``dirty`` (values made by :meth:`record`), empty it, launch the graph."""
        for node, params in dirty.values():
            self.set_kernel_params(graph_exec, node, params)
        dirty.clear()
        self.launch(graph_exec, stream)

    @abstractmethod
    def destroy_graph(self, graph: object) -> None: ...

    @abstractmethod
    def destroy_exec(self, graph_exec: object) -> None: ...

    def wrap_graph(self, raw: int) -> object:
        """The driver's graph object for a raw ``CUgraph`` (torch's ``raw_cuda_graph()``)."""
        raise NotImplementedError

    def wrap_exec(self, raw: int) -> object:
        """The driver's executable-graph object for a raw ``CUgraphExec``."""
        raise NotImplementedError


def _c_replay(drv: Any) -> tuple[Callable[..., Any], int, int] | str:
    """The C replay loop and the driver entry points it calls, or why the Python loop
    is used instead (the extension is absent, ``CUTE_BIND_PURE_PYTHON=1``, or an
    entry point cannot be found).

    The addresses come from ``cuGetProcAddress`` for the older of the CUDA
    version the bindings were built for and the driver's own version: asking a
    driver for a newer version than it has fails with CUDA_ERROR_INVALID_VALUE
    (bindings for CUDA 13.2 on a 13.0 driver), and the entry points of either
    version take the parameter records the bindings build.
    """
    module = native.load("cute_bind.graph._cgraph")
    if module is None:
        return "CUTE_BIND_PURE_PYTHON=1" if settings.PURE_PYTHON.flag() else "the C extension is not built"
    replay = module.replay
    try:
        version = int(drv.CUDA_VERSION) if hasattr(drv, "CUDA_VERSION") else 12000
        get_version = getattr(drv, "cuDriverGetVersion", None)
        if get_version is not None:
            err, driver_version = get_version()
            if int(err) == 0 and int(driver_version) > 0:
                version = min(version, int(driver_version))
        flags = drv.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
        found = []
        for name in (b"cuGraphExecKernelNodeSetParams", b"cuGraphLaunch"):
            res = drv.cuGetProcAddress(name, version, flags)
            if int(res[0]) != 0 or not int(res[1] or 0):
                return f"cuGetProcAddress({name.decode()}, {version}) found no entry point (CUresult {int(res[0])})"
            found.append(int(res[1]))
    except Exception as exc:  # an old binding without the call, no driver library: the Python loop works
        return f"the driver's entry points could not be looked up ({type(exc).__name__}: {exc})"
    return replay, found[0], found[1]


class CudaDriver(Driver):
    """The real calls, through ``cuda.bindings.driver``."""

    def __init__(self) -> None:
        import cuda.bindings.driver as drv

        self._d = drv
        self._kernel_type = drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL
        self._param_sizes: dict[int, tuple[int, ...]] = {}
        # the hot calls as closures over the binding's functions: no attribute look-ups per call
        set_params, graph_launch = drv.cuGraphExecKernelNodeSetParams, drv.cuGraphLaunch

        def set_kernel_params(graph_exec: object, node: object, params: object) -> None:
            (err,) = set_params(graph_exec, node, params)
            if err:  # CUresult is an int enum: CUDA_SUCCESS is falsy
                raise driver_error("cuGraphExecKernelNodeSetParams", int(err), str(getattr(err, "name", err)))

        def launch(graph_exec: object, stream: object) -> None:
            (err,) = graph_launch(graph_exec, stream)
            if err:
                raise driver_error("cuGraphLaunch", int(err), str(getattr(err, "name", err)))

        self.set_kernel_params = set_kernel_params  # the bindings' entry points, bound once
        self.launch = launch
        found = _c_replay(drv)
        self._creplay = None if isinstance(found, str) else found
        #: why :attr:`replay_path` is "python" ("" when it is "c")
        self.replay_path_reason = found if isinstance(found, str) else ""
        if self._creplay is not None:
            self.record = self._record_addresses  # type: ignore[method-assign]  # the C loop's record form
            self.replay = self._replay_c  # type: ignore[method-assign]  # the C loop
            self.replay_path = "c"

    @staticmethod
    def _record_addresses(node: Any, params: Any) -> tuple[object, object]:
        # raw addresses for the C loop; the recorder keeps ``params`` (and the
        # buffers its kernelParams points to) alive as long as the graph
        return (int(node), int(params.getPtr()))

    def _replay_c(self, graph_exec: Any, dirty: dict[int, tuple[object, object]], stream: Any) -> None:
        assert self._creplay is not None  # set together with this method
        replay, set_params, launch = self._creplay
        failed = replay(set_params, launch, int(graph_exec), dirty, int(stream))
        if failed is not None:
            call, code = failed
            try:
                name = self._d.CUresult(code).name
            except ValueError:
                name = "CUresult"
            raise driver_error(call, code, name)

    def _check(self, call: str, result: Any) -> Any:
        err = result[0]
        if int(err) != 0:
            name = getattr(err, "name", "CUresult")
            raise driver_error(call, int(err), str(name))
        return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)

    def _call(self, call: str, *args: object) -> Any:
        try:
            result = getattr(self._d, call)(*args)
        except Exception as exc:  # no driver library, a binding without the call...
            raise driver_error(call, -1, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}") from exc
        return self._check(call, result)

    def stream(self, handle: int) -> object:
        return self._d.CUstream(handle)

    def begin_capture(self, stream: object) -> None:
        self._call("cuStreamBeginCapture", stream, self._d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)

    def end_capture(self, stream: object) -> object:
        return self._call("cuStreamEndCapture", stream)

    def _sizes(self, params: Any) -> tuple[int, ...]:
        func = int(params.func)
        known = self._param_sizes.get(func)
        if known is not None:
            return known
        kern = int(getattr(params, "kern", 0) or 0)
        best: list[int] = []
        # a node names its kernel by CUfunction, or by CUkernel (library loading): ask both ways
        queries: list[tuple[Any, Any]] = [(self._d.cuFuncGetParamInfo, params.func)] if func else []
        if kern:
            queries.append((self._d.cuKernelGetParamInfo, self._d.CUkernel(kern)))
        failure: tuple[int, str] | None = None
        for query, target in queries:
            sizes: list[int] = []
            for i in range(4096):
                try:
                    res = query(target, i)
                except Exception as exc:
                    failure = failure or (-1, f"{type(exc).__name__}: {exc}"[:160])
                    break
                if int(res[0]) != 0:
                    # past the last parameter the call answers CUDA_ERROR_INVALID_VALUE (1);
                    # anything else at the first one means the sizes cannot be read at all
                    if i == 0 and int(res[0]) != 1:
                        failure = failure or (int(res[0]), str(getattr(res[0], "name", res[0])))
                    break
                sizes.append(int(res[2]))
            if len(sizes) > len(best):
                best = sizes
        if not best and failure is not None and int(params.kernelParams or 0):
            # without the sizes no value could be found in the parameters: refuse rather than
            # report every value as unused (replays would then silently change nothing)
            raise driver_error("cuFuncGetParamInfo", *failure)
        self._param_sizes[func] = tuple(best)
        return tuple(best)

    def nodes(self, graph: object) -> list[Node]:
        _nodes, count = self._call("cuGraphGetNodes", graph, 0)
        found, count = self._call("cuGraphGetNodes", graph, count) if count else ([], 0)
        out = []
        for node in list(found)[: int(count)]:
            kind = self._call("cuGraphNodeGetType", node)
            if kind != self._kernel_type:
                out.append(Node(node, str(getattr(kind, "name", kind)).removeprefix("CU_GRAPH_NODE_TYPE_").lower(), None))
                continue
            p = self._call("cuGraphKernelNodeGetParams", node)
            sizes = self._sizes(p)
            argv = int(p.kernelParams or 0)
            blobs = []
            for i, size in enumerate(sizes):
                addr = ctypes.c_void_p.from_address(argv + 8 * i).value if argv else None
                blobs.append(ctypes.string_at(addr, size) if addr else bytes(size))
            kp = KernelParams(
                func=int(p.func),
                grid=(int(p.gridDimX), int(p.gridDimY), int(p.gridDimZ)),
                block=(int(p.blockDimX), int(p.blockDimY), int(p.blockDimZ)),
                shared_mem=int(p.sharedMemBytes),
                params=tuple(blobs),
                raw=p,
            )
            out.append(Node(node, "kernel", kp))
        return out

    def instantiate(self, graph: object) -> object:
        return self._call("cuGraphInstantiate", graph, 0)

    def params_object(self, node: Node, argv_address: int) -> object:
        assert node.kernel is not None  # only kernel nodes get parameter records
        src = node.kernel.raw
        p = self._d.CUDA_KERNEL_NODE_PARAMS()
        for field in ("func", "gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ", "sharedMemBytes"):
            setattr(p, field, getattr(src, field))
        for field in ("kern", "ctx"):
            if hasattr(src, field) and hasattr(p, field):
                setattr(p, field, getattr(src, field))
        p.kernelParams = argv_address  # ``extra`` stays NULL: the arguments come from our array
        return p

    def destroy_graph(self, graph: object) -> None:
        self._call("cuGraphDestroy", graph)

    def destroy_exec(self, graph_exec: object) -> None:
        self._call("cuGraphExecDestroy", graph_exec)

    def wrap_graph(self, raw: int) -> object:
        return self._d.CUgraph(raw)

    def wrap_exec(self, raw: int) -> object:
        return self._d.CUgraphExec(raw)
