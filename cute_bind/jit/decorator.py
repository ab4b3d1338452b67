"""``@cute_bind.kernel``: an annotated CuTe DSL host function that binds, compiles and calls."""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import TYPE_CHECKING, Any, Callable, Generic, ParamSpec, overload

from .. import dsl
from .. import _whitelist as W
from .. import cache as disk_cache
from .. import diagnostics as D
from ..launch.arguments import bind_arguments
from ..launch.prepared import PreparedLaunch, build
from ..launch.tvm_ffi import PreparedTvmFfiLaunch, prepare_tvm_ffi
from ..slots import Bound, OptionalKind, PointerKind, ScalarKind, SlotKind, StreamKind, TensorKind, Where, describe_value
from .dispatch import DEFAULT_LIMIT, FALLBACK, ON_LIMIT, CallBase, Dispatcher, PythonCallBase, Specialization
from .signature import KernelSignature, read_signature, unwrap

__all__ = ["Kernel", "kernel"]

P = ParamSpec("P")

if TYPE_CHECKING:
    _CallBase = PythonCallBase
else:  # the C fast path of __call__ (jit/_cdispatch.c) when built, else an empty class
    _CallBase = CallBase


class Kernel(_CallBase, Generic[P]):
    """A CuTe DSL host function checked for prepared launches.

    Made by :func:`kernel`. Calling the kernel (``kernel(*args, **kwargs)``)
    specializes on the argument values and launches through a prepared handle
    per specialization and thread (:mod:`cute_bind.jit.dispatch`);
    ``bind(*args, **kwargs)`` compiles (cached per compile key) and returns a
    :class:`PreparedLaunch` to replay explicitly. ``tvm_ffi`` is true when
    ``compile_options`` hold ``--enable-tvm-ffi``: compiles are then TVM-FFI
    functions and handles their prepared TVM-FFI launches.
    """

    def __init__(
        self,
        fn: Callable[P, Any],
        *,
        name: str | None = None,
        compile_options: str | None = None,
        checked: bool = False,
        max_specializations: int | None = DEFAULT_LIMIT,
        on_limit: str = "raise",
        cache: bool = True,
        cache_key: str | int | None = None,
    ) -> None:
        self.fn = fn
        # what was asked for, so that re-wrapping this kernel keeps it (see _make)
        self._options: dict[str, Any] = dict(
            name=name, compile_options=compile_options, checked=checked, max_specializations=max_specializations,
            on_limit=on_limit, cache=cache, cache_key=cache_key,
        )  # fmt: skip
        self.name: str = str(name or getattr(unwrap(fn), "__name__", None) or type(fn).__name__)
        # compiled as asked: bind() then gives the TVM-FFI handle of cute_bind.prepare (launch/tvm_ffi.py)
        self.tvm_ffi: bool = "--enable-tvm-ffi" in (compile_options or "")
        if compile_options:
            problem = dsl.compile_options_problem(compile_options)
            if problem is not None:
                raise D.error(
                    D.INVALID_OPTION, kernel=self.name, parameter="compile_options",
                    expected=f"options cute.compile accepts ({problem})", got=repr(compile_options),
                )  # fmt: skip
        self.compile_options = compile_options
        self.checked = checked
        self.cache = cache  # the disk cache (cute_bind/cache/); the in-process one below is always on
        self.cache_key = cache_key
        self.signature: KernelSignature = read_signature(fn, self.name)
        self._jit: Any = None
        self._no_source: str | None = None
        self._cache: dict[Any, Any] = {}
        self._lock = threading.Lock()
        # a callable object's own attributes are its configuration, not the wrapper's
        functools.update_wrapper(self, unwrap(fn), updated=() if _is_jit_object(fn) else functools.WRAPPER_UPDATES)
        p = self.signature.params
        self._names = tuple(x.name for x in p)
        self._kwonly = frozenset(x.name for x in p if x.keyword_only)
        self._defaults = {x.name: x.default for x in p if x.has_default}
        self._hints = {x.name: (x.slot.expected() if x.slot else "a compile-time value") for x in p}
        # stream parameters declared ``= None``: a left-out stream (see dispatch.current_stream)
        self._none_streams = frozenset(x.name for x in p if isinstance(x.slot, StreamKind) and x.has_default and x.default is None)
        if max_specializations is not None and (isinstance(max_specializations, bool) or not isinstance(max_specializations, int) or max_specializations < 1):
            raise D.error(D.INVALID_OPTION, kernel=self.name, parameter="max_specializations", expected="an int >= 1 or None", got=describe_value(max_specializations))
        if on_limit not in ON_LIMIT:
            raise D.error(D.INVALID_OPTION, kernel=self.name, parameter="on_limit", expected=" or ".join(map(repr, ON_LIMIT)), got=describe_value(on_limit))
        # compiles made by compile() with the TVM-FFI environment stream, by compile key: their
        # entries take no stream, so calls and bind() that leave the stream out launch them
        self._env: dict[Any, _EnvCompile] = {}
        self._streams = tuple(x.name for x in p if isinstance(x.slot, StreamKind))
        self._calls = _Dispatcher(self, max_specializations, on_limit)

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}: {p.slot.describe() if p.slot else 'Constexpr'}" for p in self.signature.params)
        return f"<cute_bind.Kernel {self.name}({params})>"

    def __setattr__(self, name: str, value: Any) -> None:
        # @cute.jit / @cute.kernel stacked *above* @cute_bind.kernel marks this
        # object as its function; the result would be a DSL wrapper without bind()
        if name in dsl.DSL_DECORATION_MARKS:
            got, expected = W.DECORATOR_ORDER
            raise D.error(D.DSL_DECORATOR_ABOVE, kernel=self.name, got=got, expected=expected)
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ compile
    def _jit_function(self) -> Any:
        if self._jit is None:
            if _is_jit_object(self.fn):  # a callable object with a @cute.jit __call__: cute.compile takes it as it is
                self._jit = self.fn
            else:
                # The function compiles exactly as under a plain @cute.jit, whatever the
                # source spells above `def` (see dsl.jit); only a source the DSL cannot
                # read stops it from rewriting Python control flow (CB111).
                self._no_source = dsl.preprocessing_source(unwrap(self.fn))
                self._jit = dsl.jit(self.fn, unwrap(self.fn))
        return self._jit

    def _bind_values(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Bound], dict[str, Any]]:
        values = bind_arguments(self.name, self._names, self._kwonly, self._defaults, args, kwargs, self._hints)
        bounds: list[Bound] = []
        dsl_values: dict[str, Any] = {}
        key: list[Any] = []
        for p in self.signature.params:
            v = values[p.name]
            if v is None and p.name in self._none_streams:
                v = 0  # a left-out stream: its value is not part of the compile, and launches take it anew
            if p.slot is None:
                try:
                    hash(v)
                except TypeError:
                    raise D.error(
                        D.CONSTEXPR_UNHASHABLE, kernel=self.name, parameter=p.name, expected="a hashable value", got=describe_value(v)
                    ) from None
                # compared exactly, not by ==: -0.0 is not 0.0, a NaN is itself (constexpr_key)
                key.append((p.name, type(v), disk_cache.key.constexpr_key(v)))
                dsl_values[p.name] = v
            else:
                b = p.slot.bind(v, Where(self.name, p.name))
                bounds.append(b)
                key.append((p.name, b.key))
                dsl_values[p.name] = b.dsl_value
        compile_key = (tuple(key), dsl.target_arch(), self.compile_options)
        return compile_key, bounds, dsl_values

    def _compiled(self, compile_key: Any, dsl_values: dict[str, Any]) -> Any:
        compiled = self._cache.get(compile_key)
        if compiled is not None:
            return compiled
        # a TVM-FFI function exports, but loads back only as a bare tvm_ffi.Function: never on disk
        with self._lock, (_NoDisk() if self.tvm_ffi else disk_cache.claim(self, compile_key)) as disk:
            compiled = self._cache.get(compile_key)
            if compiled is None:
                compiled = disk.load()  # None: not on disk (then this process holds the key's lock)
            if compiled is None:
                pos = [dsl_values[p.name] for p in self.signature.params if not p.keyword_only]
                kw = {p.name: dsl_values[p.name] for p in self.signature.params if p.keyword_only}
                if self.compile_options:
                    kw["options"] = self.compile_options
                jit_fn = self._jit_function()
                try:
                    compiled = dsl.compile_jit(jit_fn, *pos, **kw)  # one compile at a time in the process
                except D.CuteBindError:
                    raise
                except Exception as exc:  # the DSL's own error, kept whole and chained
                    if self._no_source is not None:
                        raise D.error(D.NOT_PREPROCESSED, kernel=self.name, got=D.exception_summary(exc), detail=self._no_source) from exc
                    raise D.error(D.COMPILE_FAILED, kernel=self.name, got=type(exc).__name__, detail=D.exception_text(exc)) from exc
                disk.store(compiled)
            self._cache[compile_key] = compiled
        return compiled

    def compile(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Compile for these arguments (cached) and return the compiled function; nothing is launched.

        Works without a GPU for device kernels when ``CUTE_DSL_ARCH`` is set.
        Takes what ``cute.compile`` takes: besides real values, the DSL's
        compile-time placeholders (``make_fake_tensor``/``make_fake_compact_tensor``
        tensors, ``make_fake_stream(...)``, ``from_dlpack`` tensors of meta or
        fake tensors), which are the compile's spec as given (the compile key
        holds their spelling). With ``--enable-tvm-ffi`` the result is the
        TVM-FFI compiled function, as ``cute.compile`` returns it.
        """
        with dsl.compile_only():
            compile_key, bounds, dsl_values = self._bind_values(args, kwargs)
        given = bind_arguments(self.name, self._names, self._kwonly, self._defaults, args, kwargs, self._hints)
        for p, b in zip(self.signature.runtime, bounds):
            v = given[p.name]
            if isinstance(getattr(b.slot, "inner", None) or b.slot, ScalarKind) and (type(v) in (bool, int, float) or dsl.is_numeric_type(type(v))):
                # the number as given (checked by its slot): the DSL names the compiled function
                # after the values it is given, so cute.compile(fn, ..., 0.5) and this are one function
                dsl_values[p.name] = v
        compiled = self._compiled(compile_key, dsl_values)
        env = frozenset(part[0] for part in compile_key[0] if part[0] in self._streams and part[1] == _ENV_SPELLING)
        if env and self.tvm_ffi:
            with self._lock:
                self._env.pop(compile_key, None)  # the newest compile is tried first
                self._env[compile_key] = _EnvCompile(self.name, env, tuple(x for x in compile_key[0] if len(x) == 3), compiled)
        return compiled

    def bind(self, *args: P.args, **kwargs: P.kwargs) -> PreparedLaunch[P]:
        """Compile (cached) and return a :class:`PreparedLaunch` holding these values.

        A kernel compiled with ``--enable-tvm-ffi`` gives the TVM-FFI handle
        ``cute_bind.prepare`` gives for the compiled function and these values
        (:class:`~cute_bind.launch.tvm_ffi.PreparedTvmFfiLaunch`, same
        ``launch``); its entry checks every launch's values itself.
        """
        env = self._env_find(args, kwargs) if self._env else None
        if env is not None:
            return self._env_handle(env[0][0], env[1])  # type: ignore[return-value]  # the same launch protocol
        compile_key, bounds, dsl_values = self._bind_values(args, kwargs)
        compiled = self._compiled(compile_key, dsl_values)
        return self._handle(compiled, bounds)

    # ------------------------------------------------------------------ the TVM-FFI environment stream
    def _env_find(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[_EnvCompile], dict[str, Any]] | None:
        """For a call that leaves out the streams a ``compile()`` made with the TVM-FFI environment
        stream left out of its entry: those compiles whose Constexpr values are the call's (newest
        first) and the call's values by name, the streams dropped; else ``None`` (the normal path
        then binds the call, and a required stream left out is CB201 as ever)."""
        defaults = {**self._defaults, **dict.fromkeys(self._streams, _LEFT_OUT)}
        try:
            values = bind_arguments(self.name, self._names, self._kwonly, defaults, args, kwargs, self._hints)
        except D.CuteBindError:
            return None  # the normal path reports it
        # a stream declared ``= None`` and given None is left out as well (the current stream either way)
        left = frozenset(n for n in self._streams if values[n] is _LEFT_OUT or (values[n] is None and n in self._none_streams))
        if not left:
            return None
        matches = []
        for entry in reversed(list(self._env.values())):
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

    def _env_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[_EnvCompile, dict[str, Any], bool, Any] | None:
        """``(compile, values, newest, result)`` when the call leaves the environment stream out and a
        compile takes it (``newest``: no newer compile matched), else ``None``: the compiled
        function's own call with the call's values (its entry checks them; one that refuses them
        is CB309, from the newest compile when none takes them)."""
        env = self._env_find(args, kwargs)
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

    def _env_handle(self, entry: _EnvCompile, values: dict[str, Any]) -> PreparedTvmFfiLaunch | _TvmFfiCall:
        """bind() for an environment-stream compile: the handle ``prepare(compiled, *values)`` gives,
        the stream left out as the entry leaves it out."""
        slots = {p.name: p.slot for p in self.signature.runtime}
        bounds = [_env_bind(slots[n], v, Where(self.name, n)) for n, v in values.items()]  # type: ignore[arg-type]  # runtime params have slots
        return self._tvm_ffi_handle(entry.compiled, bounds)

    def _handle(self, compiled: Any, bounds: list[Bound]) -> PreparedLaunch[P]:
        if self.tvm_ffi:
            return self._tvm_ffi_handle(compiled, bounds)  # type: ignore[return-value]  # the same launch protocol
        runtime = self.signature.runtime
        compiled = _on_device(self.name, compiled, runtime, bounds)  # several GPUs: the values' device's executor
        return build(
            kernel=self.name,
            compiled=compiled,
            names=[p.name for p in runtime],
            bounds=bounds,
            # a stream declared ``= None`` stays required at launch: a handle takes its stream explicitly
            defaults={p.name: p.default for p in runtime if p.has_default and p.name not in self._none_streams},
            constexpr_names=[p.name for p in self.signature.constexpr],
            checked=True if self.checked else None,
        )

    def _tvm_ffi_handle(self, compiled: Any, bounds: list[Bound]) -> PreparedTvmFfiLaunch | _TvmFfiCall:
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
            return _TvmFfiCall(self.name, compiled)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Launch with these arguments: specialize on their values, compile on first sight, replay a prepared handle.

        Returns what the compiled call returns. The thread's handle of its last
        specialization is tried first; a value it does not take goes to the
        dispatch path (:mod:`cute_bind.jit.dispatch`). A stream parameter
        declared ``= None`` may be left out: see
        :func:`cute_bind.jit.dispatch.current_stream` for the stream used.
        """
        local = self._calls.local
        try:
            result = local.call(*args, **kwargs)
        except FALLBACK:
            return self._calls.dispatch(args, kwargs)
        local.hits += 1
        return result

    def call_dsl(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Compile (cached) and call the compiled function the DSL's normal way, building its argument objects anew.

        The slow reference path (what calling the kernel did before it
        specialized): no prepared handle is involved, so tests and benchmarks
        compare cute_bind's launches against it.
        """
        env = self._env_find(args, kwargs) if self._env else None
        if env is not None:  # the entry of an environment-stream compile takes no stream
            return env[0][0].compiled(*env[1].values())
        compile_key, _, dsl_values = self._bind_values(args, kwargs)
        compiled = self._compiled(compile_key, dsl_values)
        if self.tvm_ffi:  # a TVM-FFI function takes the values themselves (torch tensors, numbers)
            values = bind_arguments(self.name, self._names, self._kwonly, self._defaults, args, kwargs, self._hints)
            return compiled(*(0 if values[p.name] is None and p.name in self._none_streams else values[p.name] for p in self.signature.runtime))
        return compiled(*(dsl_values[p.name] for p in self.signature.runtime))

    if _CallBase is not PythonCallBase:
        # the C base's tp_call does what this method does: a Python __call__ here would shadow it
        # (kept as _python_call, so the Python path stays testable where the C one is built)
        _python_call = __call__
        del __call__

    def cache_info(self) -> dict[str, int | None]:
        """Counts: ``compiled`` variants held, and of calls: ``hits``, ``misses`` (calls that made a
        specialization), ``specializations`` and the ``max_specializations`` limit."""
        calls = self._calls.cache_info()
        return {
            "compiled": len(self._cache),
            "hits": calls.hits,
            "misses": calls.misses,
            "specializations": calls.specializations,
            "max_specializations": calls.max_specializations,
        }

    def specializations(self) -> tuple[SourcedSpecialization, ...]:
        """The specializations calls made, in order: what each was compiled for, why (the recompile reason),
        and where its compiled function came from (``source``: ``"compiled"`` here for that call, ``"disk"``:
        loaded from the disk compile cache, ``"memory"``: compiled earlier in this process by ``bind()``,
        ``compile()`` or a call before ``clear_cache()``). ``compiled`` is True for ``"compiled"`` only."""
        records = self._calls.specializations()
        # Where a cold key came from is the disk cache's record of its entry: the last consultation of the
        # entry this kernel and key hash to says "hit" when it was loaded. (The dispatcher's own record only
        # knows the key was not in memory.) Past the history's last 1024 consultations a load reads "compiled".
        keys = {id(spec.info): spec.key for spec in tuple(getattr(self._calls, "_specs", {}).values())}
        last = {e.key: e.outcome for e in disk_cache.history() if e.kernel == self.name and e.key is not None}
        out = []
        for r in records:
            source = "compiled" if r.compiled else "memory"
            key = keys.get(id(r))
            if r.compiled and key is not None and last and not self.tvm_ffi:
                try:
                    entry, _ = disk_cache.entry_key(self, key)
                except disk_cache.Uncacheable:
                    entry = ""
                if last.get(entry) == "hit":
                    source = "disk"
            fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
            out.append(SourcedSpecialization(**{**fields, "compiled": source == "compiled"}, source=source))
        return tuple(out)

    def clear_cache(self) -> None:
        """Drop the compiled variants and the calls' specializations and counts (handles keep theirs alive)."""
        with self._lock:
            self._cache.clear()
            self._env.clear()
        self._calls.clear()


@dataclasses.dataclass(frozen=True)
class SourcedSpecialization(Specialization):
    """A :class:`~cute_bind.jit.dispatch.Specialization` as :meth:`Kernel.specializations` reports it, with
    ``source``: ``"compiled"`` (compiled by this process for that call), ``"disk"`` (loaded from the disk
    compile cache) or ``"memory"`` (already compiled in this process)."""

    source: str = "compiled"


def _is_jit_object(fn: Any) -> bool:
    """A callable object whose class's ``__call__`` is ``@cute.jit``: ``cute.compile`` takes it as it is."""
    return not callable(getattr(fn, "__wrapped__", None)) and dsl.is_dsl_decorated(getattr(type(fn), "__call__", None)) is not None


_LEFT_OUT: Any = object()  # a stream the call did not give (see Kernel._env_find)
_ENV_SPELLING = ("fake stream", True)  # dsl.fake_stream_spelling of make_fake_stream(use_tvm_ffi_env_stream=True)


class _EnvCompile:
    """A compile made with the TVM-FFI environment stream: which streams its entry leaves out,
    the Constexpr parts of its key, the compiled function and its call."""

    __slots__ = ("streams", "constexpr", "compiled", "call", "proto")

    def __init__(self, kernel: str, streams: frozenset[str], constexpr: tuple[Any, ...], compiled: Any) -> None:
        self.streams = streams
        self.constexpr = constexpr
        self.compiled = compiled
        self.call = _TvmFfiCall(kernel, compiled)
        # the prepared handle calls clone per thread (_Dispatcher._env_use), made by the first call it took
        self.proto: PreparedTvmFfiLaunch | _TvmFfiCall | None = None


class _Dispatcher(Dispatcher):
    """The kernel's dispatcher: a call that leaves out a stream compiled as the TVM-FFI
    environment stream launches that compile (``Kernel._env_call``) before the normal path; the
    thread's prepared handle of that compile then becomes its current caller (``_env_use``)."""

    def dispatch(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
        k = self.kernel
        if k._env:
            try:
                took = k._env_call(args, kwargs or {})
            except D.CuteBindError as exc:
                # a stream declared ``= None`` may be left out without any such compile (the current
                # stream): values its entry refuses take that path; a required stream has no other
                if exc.code != "CB309" or not k._none_streams:
                    raise
                took = None
            if took is not None:
                entry, values, newest, result = took
                local = self.local
                self._hit(local)
                # only the newest match, as _env_call tries them; with Constexpr parameters the
                # call's arguments are not the entry's (the handle could take another key's call)
                if newest and not k.signature.constexpr:
                    self._env_use(local, entry, values)
                return result
        return super().dispatch(args, kwargs)

    def _env_use(self, local: Any, entry: _EnvCompile, values: dict[str, Any]) -> None:
        """Make this thread's prepared handle of ``entry`` its current caller: the entry's parameters
        are the call's own (the streams left out), so a call of the same shape is one call of the
        handle's launch; any other it refuses (CB202, CB309: FALLBACK) and dispatches again."""
        launch = local.env.get(entry)
        if launch is None:
            if entry.proto is None:
                try:
                    entry.proto = self.kernel._env_handle(entry, values)  # bind()'s handle, built once
                except D.CuteBindError:
                    return  # calls keep the dispatch path, as before
            launch = entry.proto.clone().launch  # one handle per thread: the handle contract
            local.env[entry] = launch
        if self._c:
            self.kernel._set_call(launch)
        else:
            local.call = launch


class _NoDisk:
    """The disk cache's claim for a compile that is never stored (a TVM-FFI function)."""

    def __enter__(self) -> _NoDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def load(self) -> Any:
        return None

    def store(self, compiled: Any) -> None:
        pass


def _env_bind(slot: SlotKind, value: Any, where: Where) -> Bound:
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


def _tvm_ffi_value(bound: Bound) -> Any:
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


class _TvmFfiCall:
    """A TVM-FFI kernel's handle for values ``prepare`` does not take: each launch is the compiled call.

    The entry checks every value itself; an error it reports is CB309, as
    from a prepared TVM-FFI handle (so a call with values of another
    specialization dispatches again).
    """

    fast_path = "direct"

    def __init__(self, kernel: str, compiled: Any) -> None:
        self.kernel_name = kernel
        self.compiled = compiled
        self.closed = False

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        """Call the compiled function with these values."""
        if self.closed:
            raise D.error(D.HANDLE_CLOSED, kernel=self.kernel_name, expected="an open handle")
        try:
            return self.compiled(*args, **kwargs)
        except D.CuteBindError:
            raise
        except Exception as exc:
            text = str(exc).strip()
            got = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
            raise D.error(D.TVM_FFI_CALL_ERROR, kernel=self.kernel_name, expected="arguments the compiled function takes", got=got) from exc

    def clone(self) -> _TvmFfiCall:
        """Another handle (it holds no per-launch state)."""
        return _TvmFfiCall(self.kernel_name, self.compiled)

    def close(self) -> None:
        """Later launches raise CB404."""
        self.closed = True

    def __repr__(self) -> str:
        return f"<TVM-FFI call {self.kernel_name}{' closed' if self.closed else ''}>"


def _on_device(kernel: str, compiled: Any, params: Any, bounds: list[Bound]) -> Any:
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
    return dsl.executor_on_device(compiled, first[1][1], kernel)


_OPTIONS = {
    "name": (str, type(None)),
    "compile_options": (str, type(None)),
    "checked": (bool,),
    "max_specializations": (int, type(None)),
    "on_limit": (str,),
    "cache": (bool,),
    "cache_key": (str, int, type(None)),
}


@overload
def kernel(fn: Callable[P, Any], /) -> Kernel[P]: ...


@overload
def kernel(
    *,
    name: str | None = None,
    compile_options: str | None = None,
    checked: bool = False,
    max_specializations: int | None = DEFAULT_LIMIT,
    on_limit: str = "raise",
    cache: bool = True,
    cache_key: str | int | None = None,
) -> Callable[[Callable[P, Any]], Kernel[P]]: ...


def kernel(fn: Any = None, /, **options: Any) -> Any:
    """Decorate a CuTe DSL host function for prepared launches.

    Usable bare (``@cute_bind.kernel``) or with options
    (``@cute_bind.kernel(name=..., compile_options=..., checked=...)``):

    - ``name``: the name used in messages (default: the function's name);
    - ``compile_options``: passed to ``cute.compile(..., options=...)``;
    - ``checked``: handles from ``bind()`` run the full checks on every launch;
    - ``max_specializations``: how many specializations calls may make (default
      8; ``None``: no limit); the call that would make one more raises CB601;
    - ``on_limit``: ``"raise"`` (default) or ``"warn"`` (compile it anyway and
      issue the CB602 warning).
    - ``cache``: ``False`` keeps this kernel out of the disk compile cache
      (``CUTE_BIND_CACHE=0`` does it for all);
    - ``cache_key``: a version of what the disk cache key cannot see (a value
      read while tracing that has no stable spelling); change it when that
      changes (see docs/concepts/cache.md).

    Decoration reads the annotated signature and raises a
    :class:`cute_bind.KernelDefinitionError` (CB1xx) for any parameter that is
    not an eligible slot. It does not compile and needs no GPU.
    """
    for key, value in options.items():
        where = getattr(fn, "__name__", "kernel") if fn is not None else options.get("name") or "kernel"
        if key not in _OPTIONS:
            hint = D.did_you_mean(key, tuple(_OPTIONS))
            raise D.error(D.INVALID_OPTION, kernel=str(where), parameter=key, expected=f"one of {', '.join(_OPTIONS)}{hint}", got=f"{key}=...")
        if isinstance(value, bool) and bool not in _OPTIONS[key] or not isinstance(value, _OPTIONS[key]):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in _OPTIONS[key])
            raise D.error(D.INVALID_OPTION, kernel=str(where), parameter=key, expected=expected, got=describe_value(value))
    if fn is None:
        return lambda f: _make(f, options)
    return _make(fn, options)


def _make(fn: Any, options: dict[str, Any]) -> Kernel[Any]:
    if isinstance(fn, Kernel):
        # cute_bind.kernel over a Kernel (a helper module re-wrapping, a decorator applied twice):
        # a new kernel over the same function, the options given now over the ones it had
        return Kernel(fn.fn, **{**fn._options, **options})
    if dsl.is_dsl_decorated(fn) == "kernel":
        # a device kernel runs on the GPU; a prepared launch calls a host function
        name = options.get("name") or getattr(unwrap(fn), "__name__", "kernel")
        got, expected = W.DEVICE_KERNEL
        raise D.error(D.DEVICE_KERNEL, kernel=str(name), got=got, expected=expected)
    if _wrapped_without_jit(fn):
        inner = unwrap(fn)
        name = options.get("name") or getattr(inner, "__name__", "kernel")
        raise D.error(
            D.WRAPPED_WITHOUT_JIT,
            kernel=str(name),
            # functools.wraps copies the names: the wrapper's own is its code's
            got=f"a wrapper ({getattr(fn.__code__, 'co_qualname', fn.__code__.co_name)}) of {getattr(inner, '__qualname__', name)} with no @cute.jit under it",
            expected="@cute.jit directly over def, under your own decorator",
        )
    return Kernel(fn, **options)


def _wrapped_without_jit(fn: Any) -> bool:
    """A functools.wraps wrapper chain over a plain function, no DSL decorator anywhere along it."""
    import inspect

    if not inspect.isfunction(fn) or not callable(getattr(fn, "__wrapped__", None)):
        return False
    try:  # down the __wrapped__ chain, stopping at the first DSL wrapper
        innermost = inspect.unwrap(fn, stop=lambda f: dsl.is_dsl_decorated(f) is not None)
    except ValueError:  # a cycle: not a chain over one function
        return False
    return dsl.is_dsl_decorated(innermost) is None
