"""Calling a kernel: ``kernel(*args)`` specializes per call and replays a prepared handle per key and thread.

A call of a :class:`cute_bind.Kernel` goes three ways:

- **Hit, same key as the thread's last call** (the common case): the thread's
  current *caller* runs. It is the ``launch`` of the prepared handle the
  thread's last call used (the C fast path's bound method), or, when
  Constexpr values must be checked and left out or a left-out stream filled
  in, a small closure around it. Nothing is rebuilt: the handle's launch
  already checks every value against what was compiled (pointer dtypes and
  address spaces of typed values, tensor dtypes, ranks, layouts, devices and
  alignment), so a value of another key fails those checks instead of
  launching wrongly.
- **Another known key** (the handle refused a value, or the thread has not
  called yet): :meth:`Dispatcher.dispatch` binds the arguments, computes a
  cheap *probe* of the values (types, dtypes, devices, unit-stride patterns,
  Constexpr values: never a DSL object) and looks the specialization up by
  it; the thread's handle for it becomes the current caller.
- **A new key** (a miss): the kernel's :class:`~cute_bind.jit.compiler.Compiler`
  binds the values and computes the :class:`~cute_bind.jit.keys.CompileKey`,
  compiles it (or finds it compiled) and prepares a prototype handle, the reason (which parameter changed, from what to what) is logged
  on this module's logger and recorded, and the per-kernel limit is enforced
  (CB601, or the CB602 warning). Misses hold the kernel's dispatch lock, so a
  key seen first by several threads at once compiles once.

The probe is only a hint: a specialization found by probe that refuses the
values sends the call through the full compile key, which decides.

Each thread launches through its own clone of a specialization's handle (the
handle contract is one thread per handle); the per-thread state lives in a
``threading.local`` (the current caller and hits: in the kernel's C base,
``_cdispatch.c``, when built). It goes with the kernel (dropped, or reset by
``clear_cache()``) and, on the C path, with its thread. A forked child gets
new locks (``_reset_locks_in_child``).

Streams: a stream parameter declared ``stream: cuda.CUstream = None`` may be
left out (or given as ``None``); see :func:`cute_bind.jit.streams.current_stream` for the stream
used then. A call that leaves out a stream a ``compile()`` compiled as the
TVM-FFI environment stream launches that compile first (:meth:`Dispatcher.dispatch`).

A dispatcher talks to two objects, each through a small interface: its
kernel's C base (:class:`CallSite`: the thread's current caller and routes,
the hit count) and its kernel's compiler (bind, key, compiled, prepare).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Callable, Hashable, NamedTuple, Protocol, cast

from .. import diagnostics as D
from ..diagnostics.errors import CuteBindError, LaunchArgumentError, LaunchValueError
from ..cache.key import constexpr_value
from ..launch import native
from .compiler import Compiler, EnvCompile, served_key
from .keys import CompileKey, Handle
from .probes import ARCH, Probe, device_of, probes_for
from .probes import describe as describe_bound
from .routes import CallShape, Checks, Miss, Route, unset
from .streams import _DEFAULT_STREAM, _TORCH, _TorchStreams, current_stream  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from ..dsl import Compiled

__all__ = [
    "CallBase",
    "CallSite",
    "PythonCallBase",
    "CacheInfo",
    "DEFAULT_LIMIT",
    "Dispatcher",
    "FALLBACK",
    "ON_LIMIT",
    "Specialization",
    "ThreadHandle",
    "call_path",
    "current_stream",
]

log = logging.getLogger(__name__)

#: Default ``max_specializations`` (torch.compile's recompile limit is 8 as well).
DEFAULT_LIMIT = 8
#: Values of the ``on_limit`` option.
ON_LIMIT = ("raise", "warn")


_Miss = Miss  # the name tests and the decorator knew


#: What ``Kernel.__call__`` catches from the current caller to take the dispatch path:
#: a value a handle refuses before launching (a key change shows up as one of these).
FALLBACK = (_Miss, LaunchArgumentError, LaunchValueError)


_unset = unset


#: Every live dispatcher (weakly): a forked child gives each one, and its kernel, new locks.
_LIVE: weakref.WeakSet[Dispatcher] = weakref.WeakSet()


def _reset_locks_in_child() -> None:
    """After ``os.fork()``: new per-kernel locks in the child.

    A lock another thread held at the fork (a first call compiling, say) stays
    held in the child, where that thread does not exist: the kernel's next miss
    there would wait forever. The child has only the forking thread, which held
    none of them while it forked (it was calling ``os.fork``). The process-wide
    compile lock is ``dsl.hooks``', reset there the same way.
    """
    for dispatcher in list(_LIVE):
        dispatcher._lock = threading.RLock()
        dispatcher._compiler.lock = threading.Lock()  # the compile lock (jit/compiler.py)


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork
    os.register_at_fork(after_in_child=_reset_locks_in_child)

_ROUTES = 4  # specializations a thread's calls try in C before the dispatch path (the C path)
_SWITCHING = 3  # key switches in a row after which a thread's calls dispatch at once
_SETTLED = 16  # calls of one key in a row after which they take the fast path again


class PythonCallBase:
    """Kernel's base without the C extension: ``Kernel.__call__`` is then Python (a threading.local per kernel)."""


def _call_base() -> type:
    """The C fast path's base class of Kernel (``_cdispatch.c``), or :class:`PythonCallBase` when absent or disabled.

    Read once, at import: ``CUTE_BIND_PURE_PYTHON=1`` set before importing
    cute_bind selects the Python ``Kernel.__call__``.
    """
    module = native.load("cute_bind.jit._cdispatch")
    return PythonCallBase if module is None else module.CallBase


#: Base class of :class:`cute_bind.Kernel`: its ``tp_call`` is the hit path when the C extension is built.
CallBase = _call_base()


def call_path() -> str:
    """Which ``kernel(...)`` fast path this process uses: "c" or "python"."""
    return "python" if CallBase is PythonCallBase else "c"


# --------------------------------------------------------------------------- records
@dataclasses.dataclass(frozen=True)
class Specialization:
    """One specialization of a kernel: what it was compiled for and why it was made.

    ``parameters`` maps each parameter that is part of the key (pointers,
    tensors, sequences, Constexpr values) to its description; ``reason`` says
    what differed from the previous specialization (``"first call"`` for the
    first); ``compiled`` is False when the compile was already cached (by
    ``bind()``, ``compile()`` or before a ``clear_cache()`` of the dispatch);
    ``seconds`` is the time the miss took (compile and prepare); ``source``
    says where the compiled function came from: ``"compiled"`` (compiled for
    that call), ``"disk"`` (loaded from the disk compile cache: as
    :meth:`cute_bind.Kernel.specializations` reports it) or ``"memory"``
    (already compiled in this process).
    """

    index: int
    parameters: tuple[tuple[str, str], ...]
    arch: str | None
    reason: str
    compiled: bool
    seconds: float
    source: str = "compiled"


@dataclasses.dataclass(frozen=True)
class CacheInfo:
    """Counts of a kernel's calls (see :meth:`cute_bind.Kernel.cache_info`)."""

    hits: int
    misses: int
    specializations: int
    max_specializations: int | None


class _Spec:
    """One specialization: its compile key, prototype handle (or the compiled function), stream device."""

    __slots__ = ("key", "info", "proto", "compiled", "device", "devices", "describe")

    def __init__(
        self,
        key: CompileKey,
        info: Specialization,
        proto: Handle | None,
        compiled: Compiled,
        devices: tuple[int, ...],
        describe: dict[str, str],
    ) -> None:
        self.key = key
        self.info = info
        self.proto = proto  # None: the compiled function cannot be prepared; calls go through the DSL
        self.compiled = compiled
        self.devices = devices  # the CUDA devices of its tensor slots, in order
        self.device = None if not devices else (devices[0] if len(devices) == 1 else -1)  # None: none; -1: several
        self.describe = describe  # each key parameter's description (the recompile reasons compare them)


class ThreadHandle(NamedTuple):
    """One thread's way to a specialization: its handle's ``launch`` (runtime values in order), the
    ``caller`` the fast path calls with a call's own arguments, the ``handle`` (None: the compiled
    function cannot be prepared, ``launch`` is the DSL's call) and, for the ``f(..., stream=None)``
    form, ``fill``: the positional count and stream getter with which C appends a left-out stream."""

    launch: Callable[..., object]
    caller: Callable[..., object]
    handle: Handle | None
    fill: tuple[int, Callable[[], int]] | None


class _Local(threading.local):
    """Per-thread state: the current caller, this thread's handles, its hit count."""

    def __init__(self, registry: list[dict[str, Any]] | None) -> None:
        self.call: Callable[..., object] = _unset
        self.hits = 0
        #: per specialization: this thread's handle of it and how its calls reach it
        self.handles: dict[_Spec, ThreadHandle] = {}
        self.last: _Spec | None = None
        #: per TVM-FFI environment-stream compile: this thread's handle's launch (Dispatcher._env_use)
        self.env: dict[EnvCompile, Callable[..., object]] = {}
        #: the C path's routes: per specialization its route (or None), and the specializations
        #: this thread used, most recent first (the routes it tries, in that order)
        self.routes: dict[_Spec, Route | None] = {}
        self.recent: list[_Spec] = []
        self.switches = 0  # dispatches that changed specialization, since the last settled streak
        self.streak = 0  # dispatches in a row that kept the specialization
        if registry is not None:  # the Python path: so cache_info() can add up every thread's hits
            registry.append(self.__dict__)


# --------------------------------------------------------------------------- the dispatcher
class CallSite(Protocol):
    """What a dispatcher tells its kernel's C base (``_cdispatch.c``; unused on the Python path)."""

    def _reset_calls(
        self, dispatch: Callable[[tuple[object, ...], dict[str, object] | None], object], fallback: tuple[type[BaseException], ...]
    ) -> None: ...
    def _set_call(self, caller: Callable[..., object] | None, fill_n: int = ..., stream_fn: Callable[[], int] | None = ...) -> None: ...
    def _set_routes(self, routes: tuple[Route, ...] | None) -> None: ...
    def _set_params(self, params: tuple[tuple[str, ...], int, tuple[object, ...]] | None) -> None: ...
    def _count_hit(self) -> None: ...
    def _hits(self) -> int: ...


class Dispatcher:
    """The call path of one :class:`cute_bind.Kernel`: specializations, per-thread handles, counts.

    ``kernel`` is the kernel whose calls these are (its C base, when built, is
    the :class:`CallSite`); ``compiler`` binds, keys, compiles and prepares.
    """

    def __init__(self, kernel: object, compiler: Compiler, max_specializations: int | None, on_limit: str) -> None:
        self.kernel = cast(CallSite, kernel)  # used only where its C base is built (self._c)
        self._compiler = compiler
        self._name = compiler.name
        self.limit = max_specializations
        self.on_limit = on_limit
        params = compiler.signature.params
        self._runtime = tuple(p.name for p in params if p.slot is not None)
        #: the positional shape of the kernel's calls: keyword placement, callers and C routes (jit/routes.py)
        self._shape = shape = CallShape(params)
        self._streams = shape.stream_names
        #: each key parameter's probe, or None: a kind without one (the full key decides every call)
        self._probes: tuple[tuple[str, Probe], ...] | None = probes_for(params)
        self._lock = threading.RLock()
        _LIVE.add(self)  # for the reset of its locks in a forked child
        #: the kernel's C base keeps each thread's caller and hits (else the threading.local does)
        self._c = CallBase is not PythonCallBase and getattr(type(kernel), "__call__", None) is getattr(CallBase, "__call__", None)
        if self._c:
            self.kernel._set_params(shape.params)
        self._reset()

    def _reset(self) -> None:
        self._specs: dict[CompileKey, _Spec] = {}
        self._order: list[_Spec] = []  # the specializations in the order made (their records' order)
        self._by_probe: dict[Hashable, _Spec] = {}
        self._records: list[Specialization] = []
        self._threads: list[dict[str, Any]] = []
        self._misses = 0
        self._latest: _Spec | None = None
        # the C path counts hits itself: registering this thread's dict would keep its handles
        # after the thread is gone
        self.local = _Local(None if self._c else self._threads)
        if self._c:
            self.kernel._reset_calls(self.dispatch, FALLBACK)

    def _hit(self, local: _Local) -> None:
        if self._c:
            self.kernel._count_hit()
        else:
            local.hits += 1

    # ------------------------------------------------------------------ public
    def cache_info(self) -> CacheInfo:
        if self._c:
            hits = int(self.kernel._hits())
        else:
            hits = sum(int(d.get("hits", 0)) for d in list(self._threads))
        return CacheInfo(hits=hits, misses=self._misses, specializations=len(self._specs), max_specializations=self.limit)

    def specializations(self) -> tuple[Specialization, ...]:
        return tuple(self._records)

    def keyed_specializations(self) -> tuple[tuple[Specialization, CompileKey], ...]:
        """Each specialization's record with its compile key, in order."""
        with self._lock:
            return tuple((spec.info, spec.key) for spec in self._order)

    def clear(self) -> None:
        """Forget every specialization and count (every thread's next call dispatches again)."""
        with self._lock:
            self._reset()

    def positional(self, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, ...] | None:
        """A keyword call as the positional call it stands for, or None where the dispatch path must
        bind it (:meth:`CallShape.positional <cute_bind.jit.routes.CallShape.positional>`)."""
        return self._shape.positional(args, kwargs)

    # ------------------------------------------------------------------ the dispatch path
    def dispatch(self, args: tuple[object, ...], kwargs: dict[str, object] | None) -> object:
        """A call the thread's current caller did not take: find or make its specialization, then launch.

        In order: a compile with the TVM-FFI environment stream that takes the
        call (:meth:`_dispatch_env`); a specialization found by probe; one found
        or made by the full compile key (:meth:`_specialize`)."""
        if self._compiler.env:
            took, result = self._dispatch_env(args, kwargs or {})
            if took:
                return result
        values = self._compiler.arguments(args, kwargs or {})
        probe = self._probe(values)
        spec = self._by_probe.get(probe) if probe is not None else None
        local = self.local
        by_probe = spec is not None
        if spec is None:
            spec, created = self._specialize(values)
            if not created:
                self._hit(local)
            if probe is not None:
                self._remember(probe, spec)
        else:
            self._hit(local)
        launch = self._use(local, spec, self._track(local, spec))
        runtime = self._runtime_values(spec, values)
        try:
            return launch(*runtime)
        except FALLBACK:
            if not by_probe:
                raise
            # the probe was a hint; the compile key decides
            full, created = self._specialize(values)
            if full is spec:
                raise
            if probe is not None:
                self._remember(probe, full)
            return self._use(local, full, self._track(local, full))(*self._runtime_values(full, values))

    def _dispatch_env(self, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[bool, object]:
        """``(True, result)`` when the call leaves out a stream a ``compile()`` compiled as the TVM-FFI
        environment stream and that compile takes it (``Compiler.env_call``); else ``(False, None)``."""
        compiler = self._compiler
        try:
            took = compiler.env_call(args, kwargs)
        except D.CuteBindError as exc:
            # a stream declared ``= None`` may be left out without any such compile (the current
            # stream): values its entry refuses take that path; a required stream has no other
            if exc.code != "CB309" or not compiler.none_streams:
                raise
            took = None
        if took is None:
            return False, None
        entry, values, newest, result = took
        local = self.local
        self._hit(local)
        # only the newest match, as env_call tries them; with Constexpr parameters the
        # call's arguments are not the entry's (the handle could take another key's call)
        if newest and not compiler.signature.constexpr:
            self._env_use(local, entry, values)
        return True, result

    def _env_use(self, local: _Local, entry: EnvCompile, values: dict[str, object]) -> None:
        """Make this thread's prepared handle of ``entry`` its current caller: the entry's parameters
        are the call's own (the streams left out), so a call of the same shape is one call of the
        handle's launch; any other it refuses (CB202, CB309: FALLBACK) and dispatches again."""
        launch = local.env.get(entry)
        if launch is None:
            if entry.proto is None:
                try:
                    entry.proto = self._compiler.env_handle(entry, values)  # bind()'s handle, built once
                except D.CuteBindError:
                    return  # calls keep the dispatch path, as before
            launch = self._env_caller(entry, entry.proto.clone().launch)  # one handle per thread: the handle contract
            local.env[entry] = launch
        if self._c:
            self.kernel._set_call(launch)
        else:
            local.call = launch

    def _env_caller(self, entry: EnvCompile, launch: Callable[..., object]) -> Callable[..., object]:
        """The caller of an environment-stream handle: the entry's parameters are the kernel's
        without the streams it leaves out. Where a left-out stream comes before another positional
        parameter, a positional call (a keyword call placed by name is one) holds it (None) at its
        position: the caller drops it there, and refuses one given a stream (FALLBACK: dispatch)."""
        positions = self._shape.positions or {}
        drop = frozenset(positions[n] for n in entry.streams if n in positions)
        if not drop or max(drop) == self._shape.npos - 1 and len(drop) == 1:
            return launch  # the stream last: a call leaving it out is the entry's call as it is
        if any(n not in self._compiler.none_streams for n in entry.streams):
            # a required stream: None on its place is no stream, so a positional call past it is the
            # entry's own call shape (Compiler._entry_shaped: quack's GEMM), taken as it is
            return launch
        first = min(drop)

        def env_call(*args: object, **kwargs: object) -> object:
            if len(args) <= first:
                return launch(*args, **kwargs)
            if any(args[i] is not None for i in drop if i < len(args)):
                raise _Miss  # a stream given: another compile's call
            return launch(*(a for i, a in enumerate(args) if i not in drop), **kwargs)

        return env_call

    @staticmethod
    def _track(local: _Local, spec: _Spec) -> bool:
        """Whether the thread's calls keep changing key (then each call dispatches at once).

        A key switch costs a refusal by the last handle (its slow path builds
        the catalog error) plus the dispatch; a thread alternating keys skips
        the refusal. Three switches with fewer than 16 calls of one key in a
        row between them start that; 16 calls of one key in a row end it.
        """
        if local.last is not None and spec is not local.last:
            local.switches += 1
            local.streak = 0
        else:
            local.streak += 1
            if local.streak >= _SETTLED:
                local.switches = 0
        return local.switches >= _SWITCHING

    def _remember(self, probe: Hashable, spec: _Spec) -> None:
        if len(self._by_probe) > 4096:  # values of ever new probes: keep the table bounded
            self._by_probe = {}
        self._by_probe[probe] = spec

    def _probe(self, values: dict[str, object]) -> Hashable | None:
        probes = self._probes
        if probes is None:
            return None
        try:
            return (ARCH.now(), *(fn(values[name]) for name, fn in probes))
        except Exception:  # unprobeable, unhashable, or a hostile attribute that raised: the full path decides (and reports)
            return None

    def _runtime_values(self, spec: _Spec, values: dict[str, object]) -> list[object]:
        out = [values[n] for n in self._runtime]
        for name in self._streams:
            if values[name] is None:
                out[self._runtime.index(name)] = self._stream_for(spec, name)
        return out

    def _stream_for(self, spec: _Spec, parameter: str) -> int:
        if spec.device == -1:
            raise D.error(
                D.STREAM_DEVICE_AMBIGUOUS,
                kernel=self._name,
                parameter=parameter,
                expected="tensor arguments on one CUDA device",
                got=", ".join(f"cuda:{d}" for d in spec.devices),
            )
        return current_stream(spec.device, self._name, parameter)

    def _use(self, local: _Local, spec: _Spec, switching: bool = False) -> Callable[..., object]:
        """Make ``spec`` the thread's current specialization; its handle's launch (runtime values in order).

        ``switching``: the thread's calls keep changing key, so its next call
        goes to the dispatch path at once."""
        pair = local.handles.get(spec)
        if pair is None:
            handle = None
            if spec.proto is not None:
                handle = spec.proto.clone()  # one handle per thread: the handle contract
                launch = handle.launch
            else:
                launch = self._direct(spec)
            caller, fill = self._caller(spec, launch)
            pair = ThreadHandle(launch, caller, handle, fill)
            local.handles[spec] = pair
        if self._c:
            self._set_routes(local, spec, pair.handle)
        if switching:
            if self._c:
                self.kernel._set_call(None)
            else:
                local.call = _unset
        elif self._c:
            fill = pair.fill
            if fill is not None:  # the C path appends the stream itself: no Python frame on a hit
                self.kernel._set_call(pair.launch, fill[0], fill[1])
            else:
                self.kernel._set_call(pair.caller)
        else:
            local.call = pair.caller
        local.last = spec
        return pair.launch

    # ------------------------------------------------------------------ routes (the C path)
    def _set_routes(self, local: _Local, spec: _Spec, handle: Handle | None) -> None:
        """The thread's routes, ``spec``'s first, then the other specializations it used most
        recently (:data:`_ROUTES` in all): a call switching between compiled keys finds its
        handle in C (each handle's ``try_launch`` refuses a value of another key without its
        slow path) instead of on the dispatch path."""
        if spec not in local.routes:
            local.routes[spec] = self._route(spec, handle)
        recent = local.recent
        if spec in recent:
            recent.remove(spec)
        recent.insert(0, spec)
        del recent[_ROUTES:]
        routes = tuple(r for r in (local.routes.get(s) for s in recent) if r is not None)
        if not routes or local.routes.get(spec) is None:
            routes = ()  # the current specialization has no route: its caller decides first, as before
        self.kernel._set_routes(routes or None)

    def _route(self, spec: _Spec, handle: Handle | None) -> Route | None:
        """``spec``'s route (:meth:`CallShape.route <cute_bind.jit.routes.CallShape.route>`), or None
        where the handle has no C launcher with a ``try_launch`` (the TVM-FFI launcher has none)."""
        launcher = getattr(handle, "_launcher", None) if handle is not None else None
        attempt = getattr(launcher, "try_launch", None) if launcher is not None else None
        if attempt is None:
            return None
        return self._shape.route(attempt, spec.device, self._constexpr_checks(spec))

    # ------------------------------------------------------------------ callers
    def _caller(self, spec: _Spec, launch: Callable[..., object]) -> tuple[Callable[..., object], tuple[int, Callable[[], int]] | None]:
        """The function the fast path calls with the call's own arguments, for one specialization
        (:meth:`CallShape.caller <cute_bind.jit.routes.CallShape.caller>`)."""
        return self._shape.caller(self._name, spec.device, self._constexpr_checks(spec), launch)

    def _constexpr_checks(self, spec: _Spec) -> Checks:
        # each value as the compile key holds it (cache.key.constexpr_key): compared exactly by the caller
        values = {p.name: p for p in spec.key.constexpr}
        return tuple((i, values[n].type, values[n].value) for i, n in self._shape.constexpr)

    def _direct(self, spec: _Spec) -> Callable[..., object]:
        """For a compiled function cute_bind cannot prepare (CB3xx): the DSL's own call, key checked each time."""
        bind_values = self._compiler.bind_values
        runtime = self._runtime

        def launch(*values: object) -> object:
            named = dict(zip(runtime, values))
            key, _, dsl_values = bind_values(self._for_compile(named, constexpr_from=spec))
            if key != spec.key:
                raise _Miss
            return spec.compiled(*(dsl_values[n] for n in runtime))

        return launch

    # ------------------------------------------------------------------ misses
    def _for_compile(self, values: dict[str, object], constexpr_from: _Spec | None = None) -> dict[str, object]:
        out = dict(values)
        if constexpr_from is not None:
            for p in constexpr_from.key.constexpr:
                out[p.name] = constexpr_value(p.value)  # the value itself, not its key form
        for name in self._streams:
            if out.get(name) is None:
                out[name] = _DEFAULT_STREAM  # the stream value is not part of the compile
        return out

    def _specialize(self, values: dict[str, object]) -> tuple[_Spec, bool]:
        """The specialization for these values by their full compile key; ``(spec, created)``.

        The compiler's path, in order: bind and key, then (a new key, under the
        dispatch lock) the compiled function from its caches or a compile, then
        the prototype handle."""
        compiler = self._compiler
        for_compile = self._for_compile(values)
        binding = compiler.bind_values(for_compile)
        key = binding.key
        spec = self._specs.get(key)
        if spec is not None:
            return spec, False
        with self._lock:  # one compile per key, however many threads see it first
            spec = self._specs.get(key)
            if spec is not None:
                return spec, False
            cold = not compiler.holds(key)
            # a compile() from the client's fakes that takes these values serves them (jit/guards.py);
            # kept under a key of its own: the call's key (a dynamic layout) also holds values it refuses
            served, refusals = compiler.serve(for_compile, binding) if cold else (None, [])
            if served is not None:
                key = served_key(key, served.compiled)
                spec = self._specs.get(key)
                if spec is not None:
                    return spec, False
            name = self._name
            index = len(self._specs) + 1
            describe = {
                p.name: (describe_bound(b) if b.key is not None else "") for p, b in zip(compiler.signature.runtime, binding.bounds)
            }
            describe = {n: d for n, d in describe.items() if d}
            for c in key.constexpr:
                describe[c.name] = repr(c.value)
            previous = self.local.last or self._latest
            reason = self._reason(previous, describe, key)
            if self.limit is not None and index > self.limit:
                if self.on_limit == "raise":
                    raise D.error(D.SPECIALIZATION_LIMIT, kernel=name, expected=str(self.limit), got=str(index), detail=reason)
                warning = D.error(D.SPECIALIZATION_LIMIT_WARNING, kernel=name, expected=str(self.limit), got=str(index), detail=reason)
                assert isinstance(warning, Warning)  # internal invariant: CB602's class is a warning category
                warnings.warn(warning, stacklevel=4)
            t0 = time.perf_counter()
            if served is not None:
                compiled, proto, cold = served.compiled, served.handle, False
                reason += " (served by a compile() of the kernel)"
            else:
                try:
                    compiled = compiler.compiled(binding)
                except CuteBindError as exc:
                    if refusals and exc.code == "CB310":
                        raise compiler.records.refused(refusals, exc) from exc
                    raise
                try:
                    proto = compiler.prepare(compiled, binding.bounds)
                except CuteBindError as exc:
                    # CB304: the module does not load here (no GPU, no driver): the DSL's own call
                    # would fail the same way with its uncoded error, so the coded one is raised
                    if not exc.code.startswith("CB3") or exc.code == D.NO_ENGINE.code:
                        raise
                    log.info("kernel '%s': %s; calls go through the DSL's own call", name, exc.code)
                    proto = None
            seconds = time.perf_counter() - t0
            devices: set[int] = set()
            for b in binding.bounds:
                devices |= device_of(b)
            info = Specialization(
                index=index,
                parameters=tuple(describe.items()),
                arch=key.arch,
                reason=reason,
                compiled=cold,
                seconds=seconds,
                source="compiled" if cold else "memory",
            )
            spec = _Spec(key, info, proto, compiled, tuple(sorted(devices)), describe)
            self._specs[key] = spec
            self._order.append(spec)
            self._records.append(info)
            self._misses += 1
            self._latest = spec
            # where the compiled function came from, in words: a disk-cache load is no compile (issue 44 item 5)
            source = compiler.source(key, cold)
            how = {"compiled": "compiled", "disk": "loaded from the disk cache"}.get(source, "compiled earlier in this process")
            log.info("kernel '%s': specialization #%d (%s in %.3f s): %s", name, index, how, seconds, reason)
            return spec, True

    @staticmethod
    def _reason(previous: _Spec | None, describe: dict[str, str], key: CompileKey) -> str:
        if previous is None:
            return "first call"
        changes = []
        for name in describe.keys() | previous.describe.keys():
            old, new = previous.describe.get(name), describe.get(name)
            if old != new:
                changes.append(f"parameter '{name}': {old} -> {new}")
        if previous.key.arch != key.arch:
            changes.append(f"target arch: {previous.key.arch} -> {key.arch}")
        if not changes:  # the descriptions agree but the keys differ (e.g. alignment): show the keys
            old_parts, new_parts = _key_parts(previous.key), _key_parts(key)
            changes = [
                f"parameter '{n}': {old_parts.get(n)!r} -> {new_parts.get(n)!r}" for n in new_parts if old_parts.get(n) != new_parts.get(n)
            ]
        return "; ".join(sorted(changes)) or "a new compile key"


def _key_parts(key: CompileKey) -> dict[str, Hashable]:
    """Each parameter's key part as the recompile reason shows it: a slot's key, a Constexpr value's type."""
    parts: dict[str, Hashable] = {p.name: p.key for p in key.slots}
    parts.update((p.name, p.type) for p in key.constexpr)
    return parts
