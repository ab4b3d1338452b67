"""The C eager call of a :mod:`cute_bind.torch` op, and its place under ``torch.compile``.

An op's generated Python call (:func:`cute_bind.torch.custom_op._generate`)
makes a handful of torch calls before and after the kernel: the tracer and
mode checks, the tensors' class and ``requires_grad``, the device, the current
stream, the version bump. Each is cheap; the bytecode between them is most of
the rest. Where the extension ``cute_bind.torch._ceager`` is built, an op whose
inputs are all positional plain tensors and numbers, with no outputs to
allocate, calls ``_ceager.EagerOp(spec).call`` instead: the
same checks, in the same order, from C, and the Python call for everything it
does not take as is (keywords, a missing argument, a mode, autograd, a tensor
subclass, a meta tensor: the Python call then decides exactly as before).

``torch.compile`` must not see a C function in the op's place (it cannot trace
into one): the op's Python call is registered as its stand-in with
``torch.compiler.substitute_in_graph``, so the traced program is the one the
Python call gives. Registering needs ``torch._dynamo``, which takes a second
to import; an op made before anything imported it is registered when
``torch._dynamo`` is imported (an import hook that runs once, then leaves
``sys.meta_path``). Where registering fails, the op keeps its Python call.
``CUTE_BIND_PURE_PYTHON=1`` (read when an op is made) keeps the Python call.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable

from .. import settings
from .schema import OpPlan

__all__ = ["EagerSpec", "spec_for", "install", "c_eager_class"]

#: inputs and kernel arguments the C call takes (its fixed arrays); a larger op keeps the Python call
MAX_ARGS = 64
#: kernel_args entries that are not inputs
STREAM = -1


@dataclass(frozen=True)
class EagerSpec:
    """What the C eager call of one op reads once (``_ceager.EagerOp(spec)``), validated here.

    ``tensors``, ``mutated``: indices of the plain tensor inputs and of those the
    op writes; ``kernel_args``: per kernel parameter, in order, an input index,
    :data:`STREAM`, or ``-2 - j`` for ``fixed[j]``; ``fallback``: the op's Python
    call (first parameter the op object, unused); the rest are torch's entry
    points the Python call uses (:class:`cute_bind.torch.custom_op._Runtime`).
    """

    n: int
    tensors: tuple[int, ...]
    mutated: tuple[int, ...]
    kernel_args: tuple[int, ...]
    fixed: tuple[Any, ...]
    kernel: Any
    fallback: Callable[..., Any]
    tensor_types: tuple[type, type]
    dispatch_modes: Callable[[], Any]
    function_modes: Callable[[], Any]
    functorch: Callable[[], Any]
    grad_enabled: Callable[[], Any]
    bump: Callable[[Any], Any]
    raw_stream: Callable[[int], int]
    current_device: Callable[[], int]
    capturing: Callable[[], bool]
    get_device: Callable[[Any], int]
    default_stream_only: Callable[[int], None] | None
    several_devices: bool

    def __post_init__(self) -> None:
        if not 1 <= self.n <= MAX_ARGS:
            raise ValueError(f"EagerSpec: n={self.n} outside [1, {MAX_ARGS}]")
        if not self.tensors:
            raise ValueError("EagerSpec: no plain tensor input (the device comes from the first)")
        for name in ("tensors", "mutated"):
            for i in getattr(self, name):
                if type(i) is not int or not 0 <= i < self.n:
                    raise ValueError(f"EagerSpec: {name} holds {i!r}, not an input index in [0, {self.n})")
        if len(self.kernel_args) > MAX_ARGS:
            raise ValueError(f"EagerSpec: {len(self.kernel_args)} kernel arguments (at most {MAX_ARGS})")
        for k in self.kernel_args:
            if type(k) is not int or not -1 - len(self.fixed) <= k < self.n:
                raise ValueError(f"EagerSpec: kernel_args holds {k!r}, not an input, the stream or a fixed value")
        if not set(self.mutated) <= set(self.tensors):
            raise ValueError("EagerSpec: a mutated input that is not a plain tensor input")
        if (self.default_stream_only is None) != (STREAM in self.kernel_args):
            raise ValueError("EagerSpec: default_stream_only is for a kernel without a stream parameter, and only for one")


def c_eager_class() -> Any:
    """``_ceager.EagerOp``, or None: not built, or ``CUTE_BIND_PURE_PYTHON=1``."""
    if settings.PURE_PYTHON.flag():
        return None
    try:
        from ._ceager import EagerOp
    except ImportError:
        return None
    return EagerOp


def spec_for(
    plan: OpPlan, rt: Any, kernel: Any, fallback: Callable[..., Any], default_stream_only: Callable[[int], None]
) -> EagerSpec | None:
    """The spec of the C call for this op, or None where it keeps the Python call: an op that
    allocates outputs, takes optional or sequence tensors or keyword-only inputs, has a TVM-FFI
    environment-stream compile, has no plain tensor input, or more than :data:`MAX_ARGS`
    arguments. ``default_stream_only``: the Python call's CB705 check of a kernel without a
    stream parameter."""
    inputs = plan.inputs
    if plan.outputs or getattr(kernel, "tvm_ffi", False) or not inputs or len(inputs) > MAX_ARGS:
        return None
    if any(p.keyword_only or (p.tensor and (p.optional or p.sequence)) for p in inputs):
        return None
    index = {p.name: i for i, p in enumerate(inputs)}
    fixed: list[Any] = []
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
        else:  # a role this call does not know: the Python call
            return None
    tensors = tuple(i for i, p in enumerate(inputs) if p.tensor)
    if not tensors or len(kernel_args) > MAX_ARGS:
        return None
    torch = rt.torch
    return EagerSpec(
        n=len(inputs),
        tensors=tensors,
        mutated=tuple(i for i, p in enumerate(inputs) if p.tensor and p.mutated),
        kernel_args=tuple(kernel_args),
        fixed=tuple(fixed),
        kernel=kernel,
        fallback=fallback,
        tensor_types=(rt.Tensor, rt.Parameter),
        dispatch_modes=rt.dispatch_modes,
        function_modes=rt.function_modes,
        functorch=rt.functorch,
        grad_enabled=rt.grad_enabled,
        bump=rt.bump,
        raw_stream=rt.raw_stream,
        current_device=rt.current_device,
        capturing=rt.capturing,
        get_device=torch.Tensor.get_device,
        default_stream_only=None if plan.stream is not None else default_stream_only,
        several_devices=rt.several_devices(),
    )


def install(cls: type, spec: EagerSpec) -> bool:
    """Make the C call ``cls.__call__`` (the op's own class) with the Python call as its stand-in
    under ``torch.compile``; False (nothing changed) where the extension is not there or torch
    cannot take the stand-in."""
    eager_op = c_eager_class()
    compiler = getattr(sys.modules.get("torch"), "compiler", None)
    if eager_op is None or not callable(getattr(compiler, "substitute_in_graph", None)):
        return False
    call = eager_op(spec).call  # one bound builtin: torch.compile knows its stand-in by identity
    python_call = spec.fallback

    def traced(*args: Any, **kwargs: Any) -> Any:
        # torch.compile passes the op object first (it binds __call__ as a method; Python does
        # not bind a builtin class attribute): the Python call's first parameter is that object
        if args and isinstance(args[0], cls):
            args = args[1:]
        return python_call(None, *args, **kwargs)

    traced.__name__ = traced.__qualname__ = getattr(python_call, "__name__", "__call__")
    with _LOCK:
        if "torch._dynamo" in sys.modules:
            if not _substitute(call, traced):
                return False
            cls.__call__ = call  # type: ignore[method-assign]
            return True
        cls.__call__ = call  # type: ignore[method-assign]
        _PENDING.append((cls, call, traced, python_call))
        _watch_dynamo_import()
        if "torch._dynamo" in sys.modules:  # imported by another thread before the hook was in place
            _unwatch()
            _register_pending()
    return True


_LOCK = threading.RLock()
#: ops made before torch._dynamo was imported: (class, C call, stand-in, Python call)
_PENDING: list[tuple[type, Any, Callable[..., Any], Callable[..., Any]]] = []


def _substitute(call: Any, traced: Callable[..., Any]) -> bool:
    try:
        sys.modules["torch"].compiler.substitute_in_graph(call, skip_signature_check=True)(traced)
    except Exception:  # noqa: BLE001 - a torch that refuses the stand-in: the op keeps its Python call
        return False
    return True


def _register_pending() -> None:
    """Register every pending op's stand-in (torch._dynamo has just been imported); an op whose
    registration fails gets its Python call back."""
    with _LOCK:
        pending = list(_PENDING)
        _PENDING.clear()
        for cls, call, traced, python_call in pending:
            if not _substitute(call, traced):
                cls.__call__ = python_call  # type: ignore[method-assign]


class _AfterExec(importlib.abc.Loader):
    """A module's own loader, then :func:`_register_pending` once the module has run."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _register_pending()

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, resource readers...
        return getattr(self._loader, name)


class _DynamoWatch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``torch._dynamo`` is imported, wraps the loader the other
    finders give it in :class:`_AfterExec`, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "torch._dynamo":
            return None
        _unwatch()
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
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
