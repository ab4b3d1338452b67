"""The C eager call of a :mod:`cute_bind.torch` op (``cute_bind.torch._ceager``), when an op uses it, and its place under ``torch.compile``.

An op's generated eager call (:func:`cute_bind.torch.generate.generate`)
calls the kernel directly when nothing else must see the call, on torch's
current stream. Deciding that is a handful of torch calls (the mode checks,
the tensors' class and ``requires_grad``, the device, the stream), each cheap,
with bytecode between them: most of what the op adds to the kernel's own
call. Where the extension is built, the generated call first asks
``EagerCheck.check(*tensors)`` for the stream: the same checks in the same
order, from C. ``None`` means the Python call decides (it then makes every
check again, so whatever it does, taking the registered op, raising, or
launching, is what it does without the extension).

The tracer check (``torch.compiler.is_dynamo_compiling``) stays in Python,
first: under ``torch.compile`` the generated call is traced and the C checks
are never reached.

Where torch offers them, three of those torch calls are C functions instead of
Python calls: the first tensor's device and torch's current stream come from
torch's DLPack exchange API (``dltensor_from_py_object_no_sync`` and
``current_work_stream``, the table the launcher reads tensors through), and
grad mode from libtorch's ``aoti_torch_grad_mode_is_enabled``. When the spec
is made (:func:`make_spec`) the reader must read a host tensor as one and the
grad-mode function answer as ``torch.is_grad_enabled`` both ways; the stream
function is not called then (on a CUDA build it would start CUDA), the GPU
tests compare it with torch's current stream.

An op uses the checks when its kernel takes a stream (not TVM-FFI's
environment stream), every tensor input is a plain ``Tensor`` (no ``Tensor?``
or ``Tensor[]``), and torch's attributes resolve as checked here
(:func:`make_spec`).

A mutating op whose inputs are all positional goes further: its eager call is
``EagerCall.call`` (:func:`install`), the checks, the kernel call and the
version bump in C, with the generated Python call as its fallback for
everything else (keywords, a missing argument, any check that says no). The op
object is a ``functools.partial`` of its call (:class:`cute_bind.torch.TorchOp`):
calling a partial is cheaper than calling an object with a ``__call__``
method, and ``torch.compile`` traces a partial by tracing its function. That
function being C here, ``torch.compile`` is told to trace the op's Python call
in its place (``torch.compiler.substitute_in_graph``). Registering needs
``torch._dynamo``, which takes a second to import: an op made before
anything imported it is registered when ``torch._dynamo`` is imported (an
import hook that runs once, then leaves ``sys.meta_path``). An op whose
registration fails gets its Python call back as its function.

Before the kernel, both calls check the tensors the op writes against
torch's in-place rules (CB708: a stride 0, memory shared with another written
tensor or with part of an input): ``EagerCheck.writes(nmut, *tensors)`` in C,
through torch's DLPack reader, says True where nothing overlaps; otherwise (an
overlap, or no reader) the Python check
(:func:`cute_bind.torch.generate.writes_checker`) decides and raises, and
``EagerCall`` hands such a call to the Python call.

``CUTE_BIND_PURE_PYTHON=1`` (read when an op is made) keeps the Python call
and its Python checks.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.abc
import inspect
import os
import sys
import threading
import types
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, Callable, Sequence

from .. import settings
from ..launch import native

if TYPE_CHECKING:
    import torch

    from ..jit import Kernel
    from ._ceager import EagerCheck
    from .runtime import Runtime
    from .schema import OpPlan

__all__ = ["EagerSpec", "EagerCallSpec", "make_spec", "checker", "unavailable", "checks_apply", "call_spec", "install", "rebind", "STREAM"]


def _extension() -> types.ModuleType | None:
    """``cute_bind.torch._ceager``, or None: not built, or ``CUTE_BIND_PURE_PYTHON=1`` (:func:`cute_bind.launch.native.load`)."""
    return native.load("cute_bind.torch._ceager")


#: the most tensor types and mode checks the C checks hold (their fixed arrays)
MAX_TYPES = 8
MAX_MODES = 8
#: the most inputs and kernel arguments the C call takes (its fixed arrays); a larger op keeps the Python call
MAX_ARGS = 64
#: the kernel_args entry of the stream (an input is its index >= 0, fixed[j] is -2 - j)
STREAM = -1


@dataclass(frozen=True)
class EagerSpec:
    """What ``_ceager.EagerCheck`` reads once, validated here (and again in C).

    ``tensor_types``: the exact types taken (``torch.Tensor``, ``nn.Parameter``);
    ``modes``: no-argument checks, any true sends the call to Python (torch
    dispatch modes, torch function modes, functorch transforms);
    ``grad_enabled``; ``requires_grad``, ``is_meta``: the data descriptors
    those attributes of every taken type resolve to; ``get_device``: the
    tensor method; ``raw_stream``: ``device -> stream``; ``current_device``:
    ``() -> device`` with several visible devices, else None.

    ``reader``, ``work_stream``: the addresses of torch's DLPack exchange API
    functions ``dltensor_from_py_object_no_sync`` and ``current_work_stream``,
    with ``exchange``, the capsule holding their table (kept alive); where
    given, the device and the stream come from them instead of
    ``get_device``/``is_meta`` and ``raw_stream`` (0, 0 and None: not given).
    ``grad_mode``: the address of libtorch's ``aoti_torch_grad_mode_is_enabled``
    (0: ``grad_enabled`` is called instead).
    """

    tensor_types: tuple[type, ...]
    modes: tuple[Callable[[], int], ...]
    grad_enabled: Callable[[], bool]
    requires_grad: object  # a data descriptor (checked below)
    is_meta: object
    get_device: Callable[[torch.Tensor], int]
    raw_stream: Callable[[int], int]
    current_device: Callable[[], int] | None
    reader: int = 0
    work_stream: int = 0
    exchange: object = None  # a PyCapsule
    grad_mode: int = 0

    def __post_init__(self) -> None:
        if not 1 <= len(self.tensor_types) <= MAX_TYPES or not all(isinstance(t, type) for t in self.tensor_types):
            raise ValueError(f"EagerSpec: tensor_types must be 1 to {MAX_TYPES} types, got {self.tensor_types!r}")
        if len(self.modes) > MAX_MODES or not all(callable(m) for m in self.modes):
            raise ValueError(f"EagerSpec: modes must be at most {MAX_MODES} callables, got {self.modes!r}")
        for name in ("grad_enabled", "get_device", "raw_stream"):
            if not callable(getattr(self, name)):
                raise ValueError(f"EagerSpec: {name} must be callable")
        if self.current_device is not None and not callable(self.current_device):
            raise ValueError("EagerSpec: current_device must be callable or None")
        for name in ("requires_grad", "is_meta"):
            descriptor = getattr(self, name)
            if not (hasattr(type(descriptor), "__get__") and hasattr(type(descriptor), "__set__")):
                raise ValueError(f"EagerSpec: {name} must be a data descriptor, got {type(descriptor).__name__}")
        for name in ("reader", "work_stream", "grad_mode"):
            address = getattr(self, name)
            if type(address) is not int or not 0 <= address < 1 << 64:
                raise ValueError(f"EagerSpec: {name} must be a function's address (an int in [0, 2**64), 0: none), got {address!r}")
        if bool(self.reader) != bool(self.work_stream) or bool(self.reader) == (self.exchange is None):
            raise ValueError("EagerSpec: reader, work_stream and exchange come together (all, or 0, 0 and None)")


def unavailable() -> str | None:
    """Why no op uses the C checks in this process (None: they are available)."""
    if _extension() is not None:
        return None
    return "CUTE_BIND_PURE_PYTHON=1" if settings.PURE_PYTHON.flag() else "the extension cute_bind.torch._ceager is not built"


def _resolved(types_: tuple[type, ...], name: str) -> object:
    """The one object ``name`` resolves to on every type in ``types_``, or None."""
    found = [inspect.getattr_static(t, name, None) for t in types_]
    first = found[0]
    return first if first is not None and all(f is first for f in found) else None


def make_spec(rt: Runtime, several_devices: bool) -> EagerSpec | None:
    """The spec for torch's entry points in ``rt`` (``runtime.Runtime``), or None where torch differs from what the C checks read.

    Every mode check must be torch's own (a torch without one sends every call
    to the dispatcher, so checking in C gains nothing), and ``requires_grad``
    and ``is_meta`` must be one data descriptor (a getset of torch's C tensor
    type) on both taken types, so reading it through the descriptor is reading
    the attribute.
    """
    modes = (rt.dispatch_modes, rt.function_modes, rt.functorch)
    if not all(isinstance(m, types.BuiltinFunctionType) for m in modes):
        return None
    tensor_types = (rt.Tensor, rt.Parameter)
    requires_grad = _resolved(tensor_types, "requires_grad")
    is_meta = _resolved(tensor_types, "is_meta")
    get_device = _resolved(tensor_types, "get_device")
    if not all(isinstance(d, types.GetSetDescriptorType) for d in (requires_grad, is_meta)) or not callable(get_device):
        return None
    reader, work_stream, exchange = _exchange(rt, tensor_types)
    return EagerSpec(
        tensor_types=tensor_types,
        modes=modes,
        grad_enabled=rt.grad_enabled,
        requires_grad=requires_grad,
        is_meta=is_meta,
        get_device=get_device,
        raw_stream=rt.raw_stream,
        current_device=rt.current_device if several_devices else None,
        reader=reader,
        work_stream=work_stream,
        exchange=exchange,
        grad_mode=_grad_mode(rt.torch),
    )


def _exchange(rt: Runtime, tensor_types: tuple[type, ...]) -> tuple[int, int, object]:
    """``(reader, work_stream, capsule)`` of torch's DLPack exchange API where every taken type
    resolves to one table of the major version cute_bind reads, whose reader reads a host tensor
    as one; else ``(0, 0, None)`` (the checks call ``get_device`` and ``raw_stream``)."""
    from ..slots import dlpack

    none: tuple[int, int, object] = (0, 0, None)
    capsule = _resolved(tensor_types, "__dlpack_c_exchange_api__")
    found = dlpack.exchange_table(tensor_types[0])  # read now: once per op
    if capsule is None or found is None or found.capsule is not capsule or not found.work_stream:
        return none
    try:  # the reader must read a host tensor as one (what a host call's stream, 0, rests on)
        view = dlpack.read_exchange(found, rt.torch.empty(0))
    except Exception:  # noqa: BLE001 - a reader that cannot: the Python calls
        return none
    return (found.address, found.work_stream, capsule) if view is not None and view.device == (1, 0) else none


@functools.cache
def _grad_mode(torch: types.ModuleType) -> int:
    """The address of libtorch's ``aoti_torch_grad_mode_is_enabled`` (a plain C function of the
    library torch has loaded) where it answers as ``torch.is_grad_enabled`` does both ways, else 0."""
    if not sys.platform.startswith("linux"):
        return 0  # the library's name and loading flags below are Linux's
    path = os.path.join(os.path.dirname(torch.__file__ or ""), "lib", "libtorch_cpu.so")
    try:  # RTLD_NOLOAD: the copy torch loaded, or nothing (never a second copy)
        function = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL).aoti_torch_grad_mode_is_enabled
    except (OSError, AttributeError):
        return 0
    function.restype, function.argtypes = ctypes.c_bool, []
    with torch.no_grad():
        off = function()
    with torch.enable_grad():
        on = function()
    return int(ctypes.cast(function, ctypes.c_void_p).value or 0) if on and not off else 0


def checker(rt: Runtime, several_devices: bool) -> EagerCheck | None:
    """A new ``_ceager.EagerCheck`` for ``rt``, or None (:func:`unavailable`, or :func:`make_spec` found none)."""
    extension = _extension()
    if extension is None:  # unavailable()
        return None
    spec = make_spec(rt, several_devices)
    made: EagerCheck | None = None if spec is None else extension.EagerCheck(spec)
    return made


@dataclass(frozen=True)
class EagerCallSpec:
    """What ``_ceager.EagerCall`` reads once, validated here (and again in C).

    ``n``: the op's inputs, all positional; ``tensors``: indices of its plain
    tensor inputs (the first gives the device); ``mutated``: those the op
    writes (their versions are bumped after the kernel); ``kernel_args``: per
    kernel parameter, in order, an input index, :data:`STREAM`, or ``-2 - j``
    for ``fixed[j]``; ``check``: the op's ``_ceager.EagerCheck``; ``kernel``;
    ``bump``: torch's ``_increment_version``; ``fallback``: the op's Python call.
    """

    n: int
    tensors: tuple[int, ...]
    mutated: tuple[int, ...]
    kernel_args: tuple[int, ...]
    fixed: tuple[object, ...]
    check: EagerCheck
    kernel: Callable[..., object]
    bump: Callable[[torch.Tensor], None]
    fallback: Callable[..., object]

    def __post_init__(self) -> None:
        if not 1 <= self.n <= MAX_ARGS:
            raise ValueError(f"EagerCallSpec: n={self.n} outside [1, {MAX_ARGS}]")
        if not self.tensors:
            raise ValueError("EagerCallSpec: no plain tensor input (the device comes from the first)")
        for name in ("tensors", "mutated"):
            for i in getattr(self, name):
                if type(i) is not int or not 0 <= i < self.n:
                    raise ValueError(f"EagerCallSpec: {name} holds {i!r}, not an input index in [0, {self.n})")
        if not set(self.mutated) <= set(self.tensors):
            raise ValueError("EagerCallSpec: a mutated input that is not a plain tensor input")
        if len(self.kernel_args) > MAX_ARGS or len(self.fixed) > MAX_ARGS:
            raise ValueError(f"EagerCallSpec: more than {MAX_ARGS} kernel arguments or fixed values")
        for k in self.kernel_args:
            if type(k) is not int or not -1 - len(self.fixed) <= k < self.n:
                raise ValueError(f"EagerCallSpec: kernel_args holds {k!r}, not an input, the stream or a fixed value")
        if self.kernel_args.count(STREAM) != 1:
            raise ValueError("EagerCallSpec: the kernel takes the stream exactly once")
        for name in ("kernel", "bump", "fallback"):
            if not callable(getattr(self, name)):
                raise ValueError(f"EagerCallSpec: {name} must be callable")


def checks_apply(plan: OpPlan, kernel: Kernel[...]) -> bool:
    """Whether the C checks decide for the op ``plan`` describes: its tensor inputs are all plain
    ``Tensor`` s (at least one: the first gives the device) and its kernel takes the stream (not
    TVM-FFI's environment stream, whose compile is called without one)."""
    tensors = [p for p in plan.inputs if p.tensor]
    plain = all(not (p.optional or p.sequence) for p in tensors)
    return bool(tensors) and plain and plan.stream is not None and not getattr(kernel, "tvm_ffi", False)


def call_spec(
    plan: OpPlan, kernel: Kernel[...], check: EagerCheck | None, bump: Callable[[torch.Tensor], None], fallback: Callable[..., object]
) -> EagerCallSpec | None:
    """The spec of the C call of the op ``plan`` describes, or None where it keeps its Python call.

    The C call takes a mutating op (no outputs to allocate) whose inputs are
    all positional, whose tensor inputs are plain ``Tensor`` s, and whose
    kernel takes the stream (not TVM-FFI's environment stream) and only
    positional parameters; ``check`` is the op's ``EagerCheck`` (None: no C call).
    """
    inputs = plan.inputs
    if check is None or plan.outputs or not checks_apply(plan, kernel):
        return None
    if len(inputs) > MAX_ARGS or any(p.keyword_only for p in inputs):
        return None
    index = {p.name: i for i, p in enumerate(inputs)}
    fixed: list[object] = []
    kernel_args: list[int] = []
    for p in plan.params:
        if p.keyword_only:
            return None
        if p.role == "stream":
            kernel_args.append(STREAM)
        elif p.role == "fixed":
            kernel_args.append(-2 - len(fixed))
            fixed.append(p.default)
        elif p.name in index:
            kernel_args.append(index[p.name])
        else:  # a role the C call does not know: the Python call
            return None
    tensors = tuple(i for i, p in enumerate(inputs) if p.tensor)
    if len(kernel_args) > MAX_ARGS or kernel_args.count(STREAM) != 1:
        return None
    return EagerCallSpec(
        n=len(inputs),
        tensors=tensors,
        mutated=tuple(i for i, p in enumerate(inputs) if p.tensor and p.mutated),
        kernel_args=tuple(kernel_args),
        fixed=tuple(fixed),
        check=check,
        kernel=kernel,
        bump=bump,
        fallback=fallback,
    )


def install(op: functools.partial[object], spec: EagerCallSpec | None, fallback: Callable[..., object]) -> None:
    """Make ``EagerCall(spec).call`` the function of ``op`` (a partial of ``fallback``, the op's
    Python call) where ``torch.compile`` can be told to trace ``fallback`` in its place; else leave it.

    With ``torch._dynamo`` already imported the stand-in is registered first and the C call bound
    after, so no trace meets an unregistered call. Before that, the C call is bound now and its
    stand-in registered when ``torch._dynamo`` is imported (before that import returns); if torch
    refuses it then, the op gets ``fallback`` back. Registering runs outside this module's lock:
    it imports parts of ``torch._dynamo``, which another thread may be importing while it waits
    for that lock.
    """
    compiler = getattr(sys.modules.get("torch"), "compiler", None)
    extension = _extension()
    if spec is None or extension is None or not callable(getattr(compiler, "substitute_in_graph", None)):
        return
    call: Callable[..., object] = extension.EagerCall(spec).call  # one bound builtin: torch.compile knows its stand-in by identity

    def lost() -> None:
        rebind(op, fallback)

    with _LOCK:
        imported = "torch._dynamo" in sys.modules
        if not imported:
            rebind(op, call)  # under the lock: a refusal (lost) can only come after
            _PENDING.append((call, fallback, lost))
            _watch_dynamo_import()
            if "torch._dynamo" not in sys.modules:
                return
            _unwatch()  # imported by another thread before the hook was in place
    if imported:
        if _substitute(call, fallback):
            rebind(op, call)
        return
    _register_pending()


_LOCK = threading.RLock()
#: C calls made before torch._dynamo was imported: (C call, its Python stand-in, what to do if refused)
_PENDING: list[tuple[Callable[..., object], Callable[..., object], Callable[[], None]]] = []


def _substitute(call: Callable[..., object], traced: Callable[..., object]) -> bool:
    try:
        sys.modules["torch"].compiler.substitute_in_graph(call, skip_signature_check=True)(traced)
    except Exception:  # noqa: BLE001 - a torch that refuses the stand-in: the op keeps its Python call
        return False
    return True


def _register_pending() -> None:
    """Register every pending stand-in (torch._dynamo has just been imported); a refused one's op gets its Python call back."""
    with _LOCK:
        pending = list(_PENDING)
        _PENDING.clear()
    for call, traced, on_lost in pending:  # outside the lock (see install)
        if not _substitute(call, traced):
            with _LOCK:
                on_lost()


class _AfterExec(importlib.abc.Loader):
    """A module's own loader, then :func:`_register_pending` once the module has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        _register_pending()

    def __getattr__(self, name: str) -> object:  # get_source, is_package, resource readers...
        return getattr(self._loader, name)


class _DynamoWatch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``torch._dynamo`` is imported, wraps the loader the other
    finders give it in :class:`_AfterExec`, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> ModuleSpec | None:
        if fullname != "torch._dynamo":
            return None
        _unwatch()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _AfterExec(spec.loader)
                return spec
        return None


_WATCH: list[_DynamoWatch] = []


def _watch_dynamo_import() -> None:
    if not _WATCH:
        _WATCH.append(_DynamoWatch())
        sys.meta_path.insert(0, _WATCH[0])


def _unwatch() -> None:
    while _WATCH:
        watch = _WATCH.pop()
        if watch in sys.meta_path:
            sys.meta_path.remove(watch)


def rebind(op: functools.partial[object], func: Callable[..., object]) -> None:
    """Make ``func`` the function of the partial ``op``, keeping its attributes."""
    op.__setstate__((func, (), None, op.__dict__))  # type: ignore[attr-defined] # partial's own, not in its stub
