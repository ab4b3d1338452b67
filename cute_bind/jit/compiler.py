"""Compiling a kernel: bind → key → cache → compile, in one place, for calls, ``bind()`` and ``compile()``.

A :class:`Compiler` belongs to one :class:`cute_bind.Kernel`. It reads the
path the way Triton's ``JITFunction.run`` does:

1. **bind** (:meth:`Compiler.bind`, :meth:`Compiler.bind_values`): each
   runtime value through its slot (a :class:`~cute_bind.slots.Bound`: the
   packed value, the DSL value, the slot's key part), each Constexpr value
   checked hashable (CB209);
2. **key**: a :class:`CompileKey` with named parts (slot keys, Constexpr
   values as compared exactly, target architecture, compile options, the
   streams compiled as the TVM-FFI environment stream);
3. **cache**: the in-process table (:attr:`Compiler.table`), then the disk
   cache's claim (``cache.claim``), under the kernel's compile lock;
4. **compile**: ``cute.compile`` (one at a time in the process), stored back
   to both caches;
5. **prepare**: the launch handle for a compiled function and bound values
   (:meth:`Compiler.prepare`), which :mod:`cute_bind.jit.dispatch` replays.

The dispatcher talks to a compiler through this interface only.

Compiles made by ``compile()`` with the TVM-FFI environment stream
(``make_fake_stream(use_tvm_ffi_env_stream=True)``) are kept apart as well
(:attr:`Compiler.env`): their compiled entry takes no stream, and a call that
leaves that stream out launches them (:meth:`Compiler.env_call`). Why they are
not ordinary specializations: see docs/concepts/architecture.md.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Protocol, Sequence, cast

from .. import cache as disk_cache
from .. import diagnostics as D
from .. import dsl
from ..launch.arguments import bind_arguments
from ..launch.prepared import build
from ..launch.tvm_ffi import PreparedTvmFfiLaunch, prepare_tvm_ffi
from ..slots import (
    Bound,
    OptionalKind,
    PointerKind,
    SlotKind,
    StreamKind,
    TensorKind,
    Where,
    compile_copy,
    describe_value,
    is_stream_value,
)
from ..launch.prepare import prepare as prepare_compiled
from .keys import CompileKey, ConstexprPart, Handle, SlotPart, TvmFfiCall
from .guards import Record, Records, Refusal, Served, composite_guard, holds_fake, real_tensor_guard, shared_symbol, tensor_guard
from .signature import KernelSignature, Param, unwrap

if TYPE_CHECKING:
    from ..dsl import Compiled

__all__ = ["Binding", "Compiler", "EnvCompile", "Owner", "served_key"]


class Owner(Protocol):
    """What a :class:`Compiler` belongs to (a :class:`cute_bind.Kernel`): its ``fn`` is traced (and keyed
    by the disk cache, which reads ``name`` and ``cache_key`` where it has them); ``compile`` makes the
    DSL's compiled function for a TVM-FFI sibling."""

    @property
    def fn(self) -> object: ...

    def compile(self, *args: Any, **kwargs: Any) -> Any: ...


class Binding(NamedTuple):
    """One set of values bound for compiling: the key, each runtime slot's bound value, the DSL values by name."""

    key: CompileKey
    bounds: list[Bound]
    dsl_values: dict[str, object]


#: dsl.fake_stream_spelling of make_fake_stream(use_tvm_ffi_env_stream=True): a stream slot's key part
ENV_SPELLING = ("fake stream", True)
_LEFT_OUT = object()  # a stream the call did not give (see Compiler.env_find)


class Compiler:
    """One kernel's compiles: binding, the compile key, the in-process table, the disk cache's claim and the lock.

    ``owner`` is the :class:`cute_bind.Kernel` (the disk cache reads its name,
    options and function to key entries).
    """

    def __init__(
        self,
        owner: Owner,
        fn: Callable[..., object],
        signature: KernelSignature,
        name: str,
        compile_options: str | None,
        tvm_ffi: bool,
        checked: bool,
    ) -> None:
        self.owner = owner
        self.fn = fn
        self.signature = signature
        self.name = name
        self.compile_options = compile_options
        self.tvm_ffi = tvm_ffi
        self.checked = checked
        p = signature.params
        self.names = tuple(x.name for x in p)
        self.kwonly = frozenset(x.name for x in p if x.keyword_only)
        self.defaults = {x.name: x.default for x in p if x.has_default}
        self.hints = {x.name: (x.slot.expected() if x.slot else "a compile-time value") for x in p}
        #: every stream parameter, and those declared ``= None`` (a left-out stream: see streams.current_stream)
        self.streams = tuple(x.name for x in p if isinstance(x.slot, StreamKind))
        self.none_streams = frozenset(x.name for x in p if isinstance(x.slot, StreamKind) and x.has_default and x.default is None)
        #: compiled functions by compile key (the in-process cache; always on)
        self.table: dict[CompileKey, Compiled] = {}
        #: the keys of the table whose compiled function the disk cache gave (kernel.specializations()'s "disk")
        self.loaded: set[CompileKey] = set()
        #: compiles made by compile() with the TVM-FFI environment stream, by compile key, newest last
        self.env: dict[CompileKey, EnvCompile] = {}
        #: every compile() (the client's fakes): calls whose own key is not compiled are offered to them first
        self.records = Records(name)
        #: held around one compile (and the table's writes); a forked child gets a new one (dispatch.py)
        self.lock = threading.Lock()
        self._jit: Callable[..., object] | None = None
        self._no_source: str | None = None

    # ------------------------------------------------------------------ bind
    def arguments(self, args: tuple[object, ...], kwargs: dict[str, object]) -> dict[str, object]:
        """The call's values by parameter name, defaults filled in (CB201/CB202/CB203)."""
        return bind_arguments(self.name, self.names, self.kwonly, self.defaults, args, kwargs, self.hints)

    def bind(self, args: tuple[object, ...], kwargs: dict[str, object]) -> Binding:
        """Bind a call's arguments for compiling: :meth:`arguments`, then :meth:`bind_values`."""
        return self.bind_values(self.arguments(args, kwargs))

    def bind_values(self, values: dict[str, object]) -> Binding:
        """Bind every parameter's value (by name) through its slot and compute the compile key."""
        bounds: list[Bound] = []
        dsl_values: dict[str, object] = {}
        slots: list[SlotPart] = []
        constexpr: list[ConstexprPart] = []
        env: list[str] = []
        for p in self.signature.params:
            v = values[p.name]
            if v is None and p.name in self.none_streams:
                v = 0  # a left-out stream: its value is not part of the compile, and launches take it anew
            if p.slot is None:
                try:
                    hash(v)
                except TypeError:
                    raise D.error(
                        D.CONSTEXPR_UNHASHABLE, kernel=self.name, parameter=p.name, expected="a hashable value", got=describe_value(v)
                    ) from None
                # compared exactly, not by ==: -0.0 is not 0.0, a NaN is itself (constexpr_key)
                constexpr.append(ConstexprPart(p.name, type(v), disk_cache.key.constexpr_key(v)))
                dsl_values[p.name] = v
            else:
                try:
                    b = p.slot.bind(v, Where(self.name, p.name))
                except D.CuteBindError as exc:
                    b = self._compiled_address(p, v, exc)
                bounds.append(b)
                slots.append(SlotPart(p.name, b.key))
                if b.key == ENV_SPELLING and isinstance(b.slot, StreamKind):  # the bound kind: an unannotated stream too
                    env.append(p.name)
                dsl_values[p.name] = b.dsl_value
        key = CompileKey(tuple(slots), tuple(constexpr), dsl.target_arch(), self.compile_options, frozenset(env))
        return Binding(key, bounds, dsl_values)

    def _compiled_address(self, p: Param, value: object, refused: D.CuteBindError) -> Bound:
        """An int for a union's pointer member where a ``compile()`` of this TVM-FFI kernel was given a
        ``make_ptr`` pointer there: the address that compile's entry takes (quack's split-k passes
        ``alpha.data_ptr()``), bound so whatever the stream's form; else the slot's refusal (CB230: a
        number or an address?)."""
        if self.tvm_ffi and refused.code == "CB230" and isinstance(p.slot, OptionalKind):
            if any(dsl.is_runtime_pointer(r.values.get(p.name)) for r in self.records.newest_first()):
                bound = p.slot.bind_address(value, Where(self.name, p.name))
                if bound is not None:
                    return bound
        raise refused

    def cache_form(self, key: CompileKey) -> tuple[object, ...]:
        """The key as the disk cache hashes it: ``((parts in parameter order), arch, options)``, each part a
        plain ``(name, slot key)`` or ``(name, type, exact value)`` tuple (so entries keep their keys)."""
        parts: dict[str, tuple[object, ...]] = {p.name: tuple(p) for p in key.slots}
        parts.update((p.name, tuple(p)) for p in key.constexpr)
        return (tuple(parts[n] for n in self.names), key.arch, key.options)

    # ------------------------------------------------------------------ cache and compile
    def holds(self, key: CompileKey) -> bool:
        """Whether this process holds a compiled function for ``key``."""
        return key in self.table

    def jit_function(self) -> Callable[..., object]:
        """The ``@cute.jit`` function ``cute.compile`` takes (made once)."""
        if self._jit is None:
            if is_jit_object(self.fn):  # a callable object with a @cute.jit __call__: cute.compile takes it as it is
                self._jit = self.fn
            else:
                # The function compiles exactly as under a plain @cute.jit, whatever the
                # source spells above `def` (see dsl.jit); only a source the DSL cannot
                # read stops it from rewriting Python control flow (CB111).
                self._no_source = dsl.preprocessing_source(unwrap(self.fn))
                self._jit = dsl.jit(self.fn, unwrap(self.fn))
        return self._jit

    def compiled(self, binding: Binding) -> Compiled:
        """The compiled function for ``binding``: the table, else the disk cache, else ``cute.compile``."""
        key = binding.key
        compiled = self.table.get(key)
        if compiled is not None:
            return compiled
        # a TVM-FFI function exports, but loads back only as a bare tvm_ffi.Function: never on disk
        with self.lock, _NoDisk() if self.tvm_ffi else disk_cache.claim(self.owner, self.cache_form(key)) as disk:
            compiled = self.table.get(key)
            if compiled is None:
                # None: not on disk (then this process holds the key's lock); else the compiled function it stored
                compiled = cast("Compiled | None", disk.load())
                if compiled is not None:
                    self.loaded.add(key)
            if compiled is None:
                dsl_values = binding.dsl_values
                # copies of the structures: the DSL's tracing writes into the objects it compiles,
                # and the bound ones are marshalled next (slots/structure.py compile_copy)
                pos = [compile_copy(dsl_values[p.name]) for p in self.signature.params if not p.keyword_only]
                kw = {p.name: compile_copy(dsl_values[p.name]) for p in self.signature.params if p.keyword_only}
                if self.compile_options:
                    kw["options"] = self.compile_options
                jit_fn = self.jit_function()
                try:
                    compiled = dsl.compile_jit(jit_fn, *pos, **kw)  # one compile at a time in the process
                except D.CuteBindError:
                    raise
                except Exception as exc:  # the DSL's own error, kept whole and chained
                    if self._no_source is not None:
                        raise D.error(D.NOT_PREPROCESSED, kernel=self.name, got=D.exception_summary(exc), detail=self._no_source) from exc
                    raise D.error(D.COMPILE_FAILED, kernel=self.name, got=type(exc).__name__, detail=D.exception_text(exc)) from exc
                disk.store(compiled)
                self.loaded.discard(key)
            self.table[key] = compiled
        return compiled

    def remember_env(self, key: CompileKey, compiled: Compiled) -> None:
        """Keep a compile made with the TVM-FFI environment stream (``key.env_streams``), newest last."""
        if not key.env_streams or not self.tvm_ffi:
            return
        with self.lock:
            self.env.pop(key, None)  # the newest compile is tried first
            self.env[key] = EnvCompile(self.name, key.env_streams, key.constexpr, compiled)

    def source(self, key: CompileKey, cold: bool) -> str:
        """Where a specialization's compiled function came from: ``"compiled"``, ``"disk"`` or ``"memory"``.

        ``cold``: it was not in memory when the call needed it. Whether the disk cache gave it is
        recorded when it is loaded (not read back from the cache's history, where another kernel of
        the same name and key, or a history past its last 1024 events, would answer for this one)."""
        if not cold:
            return "memory"
        return "disk" if key in self.loaded else "compiled"

    def clear(self) -> None:
        """Drop every compiled function (handles keep theirs alive)."""
        with self.lock:
            self.table.clear()
            self.loaded.clear()
            self.env.clear()
        self.records.clear()

    # ------------------------------------------------------------------ specializations as guards
    def record(self, given: dict[str, object], key: CompileKey, compiled: Compiled) -> None:
        """Record a ``compile()`` (the arguments as given: the client's fakes) for :meth:`serve`."""
        self.records.add(given, key, compiled)

    def serve(self, values: dict[str, object], binding: Binding) -> tuple[Served | None, list[Refusal]]:
        """The newest ``compile()`` that takes a call's values (by name, defaults filled in; ``binding``:
        the call's own), with a handle for them; else ``None``, and why each one did not
        (:mod:`cute_bind.jit.guards`)."""
        if not self.records:
            return None, []
        left = frozenset(n for n in self.streams if values.get(n) is None) if self.tvm_ffi else frozenset()
        # a plain launch takes every stream: one left out is the handle's to pass (0 until then)
        named = {n: (0 if n in self.streams and values.get(n) is None and n not in left else v) for n, v in values.items()}

        def check(record: Record) -> list[Bound]:
            return self._guarded_bounds(record, named, binding)

        def handle_for(record: Record, compiled: Compiled, bounds: list[Bound]) -> Handle:
            if self.tvm_ffi:  # the entry checks every launch itself; its handle takes the values
                return prepare_compiled(compiled, *(named[p.name] for p in self.signature.runtime if p.name not in left))
            return self.prepare(compiled, bounds)

        return self.records.serve(binding.key.constexpr, left, check, handle_for, self._sibling)

    def _guarded_bounds(self, record: Record, values: dict[str, object], binding: Binding) -> list[Bound]:
        """The call's bounds where ``record``'s compile assumed what they hold: a fake tensor's guards
        (:func:`~cute_bind.jit.guards.tensor_guard`); any other parameter's key part must be the call's."""
        held = {p.name: p.key for p in record.key.slots}
        symbols: dict[int, tuple[str, int, int]] = {}
        bounds = list(binding.bounds)
        shared = shared_symbol(record.values)
        if shared is not None and not self.tvm_ffi:
            # the TVM-FFI entry checks that modes sharing a SymInt agree at every call; a plain
            # launch writes each tensor's extents as they are, and the compiled code may index one
            # tensor by another's extent: such a compile serves no call of a plain handle
            raise D.error(
                D.TENSOR_LAYOUT_MISMATCH,
                kernel=self.name,
                parameter=shared,
                detail="compiled from fakes whose modes share a SymInt, which a plain launch does not check at every launch",
                expected="fakes with a SymInt per mode, or a compile with --enable-tvm-ffi (its entry checks them)",
                got="a SymInt shared between modes",
            )
        for i, (p, part) in enumerate(zip(self.signature.runtime, binding.key.slots)):
            given = record.values.get(p.name)
            where = Where(self.name, p.name)
            if dsl.is_fake_tensor(given):
                bounds[i] = tensor_guard(p.slot, given, values[p.name], where, symbols, on_gpu=self.tvm_ffi)
            elif self.tvm_ffi and holds_fake(given):
                # a structure of fakes (quack's epilogue arguments): the TVM-FFI entry takes the call's
                # own values and checks them at every call; the guards check what the compile assumed
                composite_guard(given, values[p.name], where, symbols)
            elif isinstance(p.slot, StreamKind):
                continue  # the stream's form is the record's sibling's business
            elif self.tvm_ffi and dsl.is_runtime_pointer(given) and values[p.name].__class__ is int:
                continue  # an address for the pointer the compile was given: the entry takes it as one
            elif held.get(p.name) == part.key:
                continue
            elif isinstance(p.slot, (TensorKind, OptionalKind)) and dsl.is_dsl_tensor(given):
                # a real tensor at compile() (from_dlpack(a)): the layout the compile read from it
                bounds[i] = real_tensor_guard(p.slot, given, values[p.name], where)
            else:
                raise D.error(
                    D.TENSOR_LAYOUT_MISMATCH if isinstance(p.slot, TensorKind) else D.WRONG_KIND,
                    kernel=self.name,
                    parameter=p.name,
                    detail="compiled for another value",
                    expected=f"what the compile was given: {describe_value(given)}",
                    got=describe_value(values[p.name]),
                )
        return bounds

    def _sibling(self, record: Record, env_streams: frozenset[str]) -> Compiled:
        """``record``'s compile with ``env_streams`` as the TVM-FFI environment stream and every other
        stream explicit: the same fakes, another stream form (never the call's own values)."""
        values = dict(record.values)
        for name in self.streams:
            values[name] = dsl.fake_stream(name in env_streams)
        args = [values[n] for n in self.names if n not in self.kwonly]
        kwargs = {n: values[n] for n in self.names if n in self.kwonly}
        sibling: Compiled = self.owner.compile(*args, **kwargs)  # the DSL's compiled function
        return sibling

    # ------------------------------------------------------------------ prepare
    def prepare(self, compiled: Compiled, bounds: list[Bound]) -> Handle:
        """The launch handle of ``compiled`` holding the bound values (``bind()``'s result)."""
        if self.tvm_ffi:
            return self.tvm_ffi_handle(compiled, bounds)
        runtime = self.signature.runtime
        compiled = _on_device(self.name, compiled, runtime, bounds)  # several GPUs: the values' device's executor
        return build(
            kernel=self.name,
            compiled=compiled,
            names=[p.name for p in runtime],
            bounds=bounds,
            # a stream declared ``= None`` stays required at launch: a handle takes its stream explicitly
            defaults={p.name: p.default for p in runtime if p.has_default and p.name not in self.none_streams},
            constexpr_names=[p.name for p in self.signature.constexpr],
            checked=True if self.checked else None,
        )

    def tvm_ffi_handle(self, compiled: Compiled, bounds: list[Bound]) -> PreparedTvmFfiLaunch | TvmFfiCall:
        """The TVM-FFI handle for the values ``bounds`` were bound from (``prepare(compiled, *values)``).

        The values are the bound ones: a tensor slot's own value (while the
        call that bound it holds it), a pointer's address, a number's Python
        value. Values ``prepare`` does not take give a handle whose launches
        are the compiled function's own call (never the DSL values of the
        plain convention, which a TVM-FFI entry does not take).
        """
        values = tuple(_tvm_ffi_value(b) for b in bounds)
        try:
            return prepare_tvm_ffi(compiled, self.name, values, {})
        except D.CuteBindError as exc:
            if not exc.code.startswith("CB3"):
                raise
            return TvmFfiCall(self.name, compiled)

    # ------------------------------------------------------------------ the TVM-FFI environment stream
    def env_find(self, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[list[EnvCompile], dict[str, object]] | None:
        """For a call that leaves out the streams a ``compile()`` made with the TVM-FFI environment
        stream left out of its entry: those compiles whose Constexpr values are the call's (newest
        first) and the call's values by name, the streams dropped; else ``None`` (the normal path
        then binds the call, and a required stream left out is CB201 as ever)."""
        defaults = {**self.defaults, **dict.fromkeys(self.streams, _LEFT_OUT)}
        try:
            values = bind_arguments(self.name, self.names, self.kwonly, defaults, args, kwargs, self.hints)
        except D.CuteBindError:
            # the host's call shape does not bind it; the entry's own call shape may (else the normal path reports it)
            shifted = self._entry_shaped(args, kwargs, None)
            if shifted is None:
                return None
            values = shifted
        # a stream declared ``= None`` and given None is left out as well (the current stream either way)
        left = frozenset(n for n in self.streams if values[n] is _LEFT_OUT or (values[n] is None and n in self.none_streams))
        if not left:
            shifted = self._entry_shaped(args, kwargs, values)
            if shifted is None:
                return None
            values, left = shifted, frozenset(self.streams)
        matches = []
        for entry in reversed(list(self.env.values())):
            if entry.streams != left:
                continue
            try:
                if all(type(values[n]) is t and disk_cache.key.constexpr_key(values[n]) == v for n, t, v in entry.constexpr):
                    matches.append(entry)
            except TypeError:  # an unhashable Constexpr value: no compile holds it
                continue
        if not matches:
            return None
        return matches, {p.name: values[p.name] for p in self.signature.runtime if p.name not in left}

    def _entry_shaped(
        self, args: tuple[object, ...], kwargs: dict[str, object], values: dict[str, object] | None
    ) -> dict[str, object] | None:
        """A call shaped like an environment-stream entry's own call, by name (the streams left out), or ``None``.

        Such an entry has no stream parameter, so a client that calls it positionally passes the
        arguments after the stream one place earlier (quack's GEMM: ``compiled(A, B, D, C, epi,
        sched, varlen, SFA, SFB)`` for ``(mA, ..., varlen_args, stream, mSFA, mSFB)``). Read so only
        where the value the host's signature puts on a stream is no stream (a stream given there is
        what the host's own call shape says; ``values``: the host-shaped binding, ``None`` where that
        failed), and the call binds without the streams."""
        if not self.env or not self.streams:
            return None
        if values is not None and all(values[n] is _LEFT_OUT or is_stream_value(values[n]) for n in self.streams):
            return None
        names = tuple(n for n in self.names if n not in self.streams)
        try:
            shifted = bind_arguments(self.name, names, self.kwonly, self.defaults, args, kwargs, self.hints)
        except D.CuteBindError:
            return None
        return {n: shifted[n] if n in shifted else _LEFT_OUT for n in self.names}

    def env_call(self, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[EnvCompile, dict[str, object], bool, object] | None:
        """``(compile, values, newest, result)`` when the call leaves the environment stream out and a
        compile takes it (``newest``: no newer compile matched), else ``None``: the compiled
        function's own call with the call's values (its entry checks them; one that refuses them
        is CB309, from the newest compile when none takes them)."""
        env = self.env_find(args, kwargs)
        if env is None:
            return None
        matches, values = env
        first: D.CuteBindError | None = None
        for entry in matches:
            try:
                return entry, values, entry is matches[0], entry.call.launch(*values.values())
            except D.CuteBindError as exc:
                if exc.code != "CB309":
                    raise
                first = first or exc
        assert first is not None  # internal invariant: at least one match, each raised
        raise first

    def env_handle(self, entry: EnvCompile, values: dict[str, object]) -> PreparedTvmFfiLaunch | TvmFfiCall:
        """bind() for an environment-stream compile: the handle ``prepare(compiled, *values)`` gives,
        the stream left out as the entry leaves it out."""
        slots = {p.name: p.slot for p in self.signature.runtime if p.slot is not None}  # every one: runtime params have slots
        bounds = [_env_bind(slots[n], v, Where(self.name, n)) for n, v in values.items()]
        return self.tvm_ffi_handle(entry.compiled, bounds)


def served_key(key: CompileKey, compiled: Compiled) -> CompileKey:
    """The key of a specialization a ``compile()``'s function serves (:meth:`Compiler.serve`): the call's
    key marked with that function, so calls of the call's key that the function refuses stay apart."""
    return key._replace(options=f"{key.options or ''}\x00served by the compile() of function {id(compiled):#x}")


def is_jit_object(fn: object) -> bool:
    """A callable object whose class's ``__call__`` is ``@cute.jit``: ``cute.compile`` takes it as it is."""
    return not callable(getattr(fn, "__wrapped__", None)) and dsl.is_dsl_decorated(getattr(type(fn), "__call__", None)) is not None


class EnvCompile:
    """A compile made with the TVM-FFI environment stream: which streams its entry leaves out,
    the Constexpr parts of its key, the compiled function and its call."""

    __slots__ = ("call", "compiled", "constexpr", "proto", "streams")

    def __init__(self, kernel: str, streams: frozenset[str], constexpr: tuple[ConstexprPart, ...], compiled: Compiled) -> None:
        self.streams = streams
        self.constexpr = constexpr
        self.compiled = compiled
        self.call = TvmFfiCall(kernel, compiled)
        # the prepared handle calls clone per thread (Dispatcher._env_use), made by the first call it took
        self.proto: PreparedTvmFfiLaunch | TvmFfiCall | None = None


class _NoDisk:
    """The disk cache's claim for a compile that is never stored (a TVM-FFI function)."""

    def __enter__(self) -> _NoDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def load(self) -> None:
        return None

    def store(self, compiled: Compiled) -> None:
        pass


def _env_bind(slot: SlotKind, value: object, where: Where) -> Bound:
    """A value of an environment-stream call bound for its handle: as ``bind`` does, except that an
    int for a union with a pointer member is the address the compiled entry takes (the call itself
    passes it to the entry as it is; quack's split-k passes ``alpha`` as ``data_ptr()``)."""
    try:
        return slot.bind(value, where)
    except D.CuteBindError as exc:
        address = slot.bind_address(value, where) if exc.code == "CB230" and isinstance(slot, OptionalKind) else None
        if address is None:
            raise
        return address


def _tvm_ffi_value(bound: Bound) -> object:
    """What a TVM-FFI handle is prepared with for one bound slot: the value as its call takes it."""
    slot = bound.slot
    inner = getattr(slot, "inner", None) or slot  # a present optional: its element
    if isinstance(inner, TensorKind):
        sample = inner.sample()
        # the bound value is alive while its bind() or call runs; else the DSL value (prepare refuses it)
        return sample if sample is not None else bound.dsl_value
    if isinstance(inner, PointerKind):
        return bound.packed  # the address, as an int (what the entry's pointer arguments take)
    return dsl.numeric_value(bound.dsl_value)  # cutlass.Int32(3) -> 3; a CUstream, None, ... as they are


def _on_device(kernel: str, compiled: Compiled, params: Sequence[Param], bounds: list[Bound]) -> Compiled:
    """What a handle bound with ``bounds`` calls: on a machine with several GPUs, the
    compiled function's executor for the one CUDA device the bound values live on.

    Values on two devices are CB214. With one GPU (or no device named) the
    compiled function itself is used, as its direct call would.
    """
    first: tuple[str, tuple[int, int]] | None = None
    for p, b in zip(params, bounds):
        for slot in (b.slot, *(getattr(b.slot, "elements", None) or ())):
            device = getattr(slot, "device", None)
            if device is None or device[0] not in (2, 13):  # DLPack kDLCUDA, kDLCUDAManaged
                continue
            if first is None:
                first = (p.name, device)
            elif device[1] != first[1][1]:
                raise D.error(
                    D.TENSOR_DEVICE_MISMATCH,
                    kernel=kernel,
                    parameter=p.name,
                    expected=f"cuda:{first[1][1]}, the device of '{first[0]}' (one handle launches on one device)",
                    got=f"a value on cuda:{device[1]}",
                )
    if first is None or dsl.cuda_device_count() < 2:
        return compiled
    executor: Compiled = dsl.executor_on_device(compiled, first[1][1], kernel)  # the DSL's executor
    return executor
