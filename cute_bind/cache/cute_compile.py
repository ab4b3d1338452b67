"""``cute_bind.compile``: ``cute.compile`` backed by the disk cache, and the hook that routes every ``cute.compile`` through it.

``cute_bind.compile(fn, *args, options=..., **kwargs)`` takes what
``cute.compile`` takes (``cute_bind.compile[opts](...)`` too) and gives what it
gives: on a miss the DSL's own compiled function (with a ``prepare`` method
added where the object takes one), on a hit a :class:`CachedFunction` loaded
from the cache, called with the same arguments. The entry's key is the
decorator's (:func:`~cute_bind.cache.key.entry_key`: the traced function's
source and everything it names, a callable object's or bound method's
``self``, the DSL and cute_bind versions, the machine, ``CUTE_DSL_*``) over a
compile key of what ``cute.compile`` reads: every argument (fake tensors'
guards, ``from_dlpack`` tensors' layouts, pointers, ``SymInt`` scalars,
streams, plain values spelled exactly), the resolved options and the target
architecture. Anything it cannot spell is compiled and not stored (CB608); a
compile that writes files besides the function (``--keep-ptx``,
``--dump-dir``, ``CUTE_DSL_KEEP_PTX``...) is never served from the cache.

:func:`install` routes every ``cute.compile`` of the process through it
(``CUTE_BIND_COMPILE_HOOK=1`` does it when cute_bind is imported);
:func:`uninstall` or leaving :func:`installed` undoes it. See
docs/concepts/cache.md, "Caching a package's compiles".
"""

from __future__ import annotations

import inspect
import os
import stat
import threading
import time
import types
import typing
from typing import Any, Callable

from .. import diagnostics as D
from .. import dsl
from . import exact as _exact
from . import key as _key
from . import settings as _settings
from . import store as _store
from .lookup import _record, _warn_once, claim, load_payload

__all__ = [
    "CachedFunction",
    "adopt",
    "Compile",
    "compile",
    "install",
    "installed",
    "is_installed",
    "uninstall",
]


class _Subject:
    """What the cache's claim and key read of a kernel, for one ``cute.compile`` target."""

    __slots__ = ("name", "fn", "cache", "cache_key")

    def __init__(self, name: str, fn: object) -> None:
        self.name = name
        self.fn = fn
        self.cache = True
        self.cache_key = None


def _target_name(owner: object, function: object) -> str:
    f = inspect_unwrap(function)
    module = getattr(f, "__module__", None)
    qualname = getattr(f, "__qualname__", None)
    return f"{module if type(module) is str else '?'}.{qualname if type(qualname) is str else '?'}"


def inspect_unwrap(function: object) -> object:
    """The function along ``__wrapped__`` (read from the function's own dictionary)."""
    for _ in range(16):
        inner = getattr(function, "__dict__", {}).get("__wrapped__") if isinstance(function, types.FunctionType) else None
        if inner is None:
            return function
        function = inner
    return function


# ------------------------------------------------------------------ the compile key
def _spell(value: object, state: dsl.CompileOnly, depth: int = 0) -> object:
    """One argument of the compile as the compile key holds it: a DSL value by :func:`dsl.argument_spelling`,
    containers and dataclasses item by item (a tensor inside a tuple or a dataclass is a DSL value too), any
    other value as it is (the key spells it as data, or refuses it: CB608)."""
    if depth > 12:
        raise _key.Uncacheable("an argument nested too deeply to spell")
    spelled = dsl.argument_spelling(value, state)
    if spelled is not None:
        return ("dsl-value",) + spelled
    t = type(value)
    if type(value) is tuple or type(value) is list:
        return (t.__name__, tuple(_spell(v, state, depth + 1) for v in value))
    if issubclass(t, tuple):  # a NamedTuple: its class (source) and its items
        items = typing.cast("tuple[object, ...]", value)
        return ("named", t, tuple(_spell(tuple.__getitem__(items, i), state, depth + 1) for i in range(tuple.__len__(items))))
    if type(value) is dict:
        return ("dict", tuple(sorted(((_key.canonical(k), _spell(v, state, depth + 1)) for k, v in value.items()), key=lambda kv: kv[0])))
    fields = _exact._class_lookup(t, "__dataclass_fields__")
    if fields is not _exact._MISSING and type(fields) is dict and not isinstance(value, type):
        names = _exact.dataclass_field_names(fields)
        return ("dataclass", t, tuple((n, _spell(_exact._read(value, t, n), state, depth + 1)) for n in names))
    return value


def compile_key(callable_: object, args: tuple[object, ...], kwargs: dict[str, object], options: object) -> tuple[object, ...]:
    """The compile key of ``callable_(fn, *args, options=options, **kwargs)`` (the function itself is the
    entry key's business); :class:`~cute_bind.cache.key.Uncacheable` when a part cannot be spelled."""
    resolved = dsl.resolved_options(callable_, options)
    state = dsl.CompileOnly()
    spelled_args = tuple(_spell(a, state) for a in args)
    spelled_kwargs = tuple((k, _spell(kwargs[k], state)) for k in sorted(kwargs))
    return ("cute.compile", spelled_args, spelled_kwargs, resolved.spelling, dsl.target_arch(), resolved.tvm_ffi)


# ------------------------------------------------------------------ results
class CachedFunction:
    """A function ``cute_bind.compile`` loaded from the disk cache, called as the DSL's compiled function is.

    ``result(*args, **kwargs)`` calls it with the arguments the DSL's own
    compiled function takes (a TVM-FFI function through TVM-FFI's keyword
    wrapper, built as the DSL builds it). :meth:`prepare` (or
    ``cute_bind.prepare(result, ...)``) gives its prepared launch. What needs
    the compile's IR, which a loaded function has not (``export_to_c``,
    ``ir_module``, ``__ptx__``...), is read from a fresh compile of the same
    arguments, made on first use (:meth:`fresh`): correct, at the cost of
    that compile. :attr:`function` is the loaded function itself.
    """

    __slots__ = ("function", "key", "tvm_ffi", "argument_types", "_call", "_signature", "_recompile", "_fresh", "_lock", "__weakref__")

    def __init__(
        self,
        function: Any,
        key: str | None,
        tvm_ffi: bool,
        call: Callable[..., object],
        recompile: Callable[[], object],
        signature: inspect.Signature | None = None,
        argument_types: list[str] | None = None,
    ) -> None:
        self.function, self.key, self.tvm_ffi = function, key, tvm_ffi
        #: the C argument types its compile's IR held (kept in the entry): what ``prepare`` checks tensors against
        self.argument_types = argument_types
        # how it is called, how its arguments bind, and how a fresh compile of the same arguments is made
        self._call, self._signature, self._recompile = call, signature, recompile
        self._fresh: object = None
        self._lock = threading.Lock()

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self._call(*args, **kwargs)

    @property
    def __cute_bind_compiled__(self) -> object:
        """What ``cute_bind.prepare`` prepares for this result: the loaded function (``result.prepare(...)``
        also maps keyword arguments and defaults as the call does)."""
        return self.function

    def prepare(self, *args: object, **kwargs: object) -> Any:
        """The prepared launch of the loaded function for these arguments (``cute_bind.prepare``), taken as
        the call takes them (keywords and defaults of a TVM-FFI function included)."""
        # itself, not .function: prepare unwraps it and keeps the argument types its entry held
        return _prepare()(self, *self.positional(args, kwargs))

    def positional(self, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, ...]:
        """A call's arguments as the loaded function takes them: positionally, defaults filled in (a TVM-FFI
        function reloaded from disk takes nothing else); as given for a plain compiled function."""
        if self._signature is None:
            if kwargs and self.tvm_ffi:
                raise TypeError("this TVM-FFI function takes positional arguments only")
            return args if not kwargs else _plain_positional(self.function, args, kwargs)
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def fresh(self) -> Any:
        """The DSL's own compiled function for the same arguments (compiled once, on first use)."""
        with self._lock:
            if self._fresh is None:
                self._fresh = self._recompile()
            return self._fresh

    def export_to_c(self, *args: object, **kwargs: object) -> object:
        """The DSL's ``export_to_c`` (it needs the compile's IR: see :meth:`fresh`)."""
        return self.fresh().export_to_c(*args, **kwargs)

    def to(self, device: object = None) -> Any:
        """As the DSL's ``to``: a TVM-FFI function runs on every device (itself); a plain one's executor."""
        if self.tvm_ffi:
            return self
        return self.function.to(device)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self.fresh(), name)

    def __repr__(self) -> str:
        kind = "TVM-FFI function" if self.tvm_ffi else "compiled function"
        return f"<cute_bind cached {kind} {str(self.key)[:12]}>"


def _plain_positional(function: object, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, ...]:
    raise TypeError("prepare() of a loaded plain function takes positional arguments (keywords: call cute_bind.prepare(result, ...))")


class _Prepare:
    """``compiled.prepare(...)`` on the DSL's own compiled function.

    It holds the function strongly: ``cute_bind.compile(...).prepare(...)`` in one expression
    drops the last other reference to the function before the call, so a weak one would be dead
    there. The cycle (function -> its ``prepare`` -> function) is the garbage collector's, as a
    bound method stored on its instance is.
    """

    __slots__ = ("_compiled",)

    def __init__(self, compiled: object) -> None:
        self._compiled = compiled

    def __call__(self, *args: object, **kwargs: object) -> Any:
        return _prepare()(self._compiled, *args, **kwargs)


#: ``cute_bind.prepare``, set by the package (``cute_bind/__init__.py``): the cache room imports no launch code
PREPARE: list[Callable[..., Any]] = []


def _prepare() -> Callable[..., Any]:
    if not PREPARE:  # pragma: no cover - importing cute_bind.cache imports cute_bind, which sets it
        raise RuntimeError("cute_bind.prepare is not wired (import cute_bind)")
    return PREPARE[0]


def _with_prepare(compiled: Any) -> Any:
    try:
        if "prepare" not in dir(type(compiled)):
            compiled.prepare = _Prepare(compiled)
    except (AttributeError, TypeError):
        pass  # an object without a dictionary: cute_bind.prepare(compiled, ...) still takes it
    return compiled


# ------------------------------------------------------------------ compile
def _refuse(name: str, why: str) -> None:
    _warn_once(D.CACHE_SKIPPED, f"{name}:{why}", kernel=name, expected="a compile whose inputs all have a stable spelling", got=why)


def compile_with(callable_: object, fn: object, *args: object, **kwargs: object) -> Any:
    """``callable_(fn, *args, **kwargs)`` (``callable_`` is ``cute.compile`` or a ``cute.compile[...]``),
    through the disk cache: see the module docstring."""
    if dsl.compiling_inside_cute_bind():  # the decorator's own compile: it has its own claim on the cache
        return dsl.call_original(callable_, fn, *args, **kwargs)
    started = time.perf_counter()
    target = dsl.compile_target(fn)
    if target is None:
        return dsl.call_original(callable_, fn, *args, **kwargs)  # the DSL says what is wrong with it
    name = _target_name(*target)
    options = kwargs.get("options")
    call_kwargs = {k: v for k, v in kwargs.items() if k != "options"}

    def original() -> object:
        return dsl.call_original(callable_, fn, *args, **kwargs)

    why = None
    if "trace_finalize_hooks" in call_kwargs:
        why = "trace_finalize_hooks (they run while tracing, which a cached entry skips)"
    try:
        resolved = dsl.resolved_options(callable_, options)
    except Exception:
        return original()  # malformed options: the DSL's own error
    if why is None and resolved.side_effects:
        why = f"options that write files besides the function ({', '.join(resolved.side_effects)})"
    if why is None and dsl.side_effect_environment():
        why = f"settings that write files besides the function ({', '.join(dsl.side_effect_environment())})"
    key = None
    if why is None:
        try:
            key = compile_key(callable_, args, call_kwargs, options)
        except _key.Uncacheable as exc:
            why = str(exc)
        except Exception as exc:  # reading an argument failed: never str() of a foreign exception
            why = f"spelling the arguments raised {_exact._type_name(type(exc))}"
    if why is not None:
        _refuse(name, why)
        compiled = original()
        _record(name, None, "uncached", time.perf_counter() - started)
        return _with_prepare(compiled)
    tvm_ffi = resolved.tvm_ffi
    extra: dict[str, object] = {"compile": "cute.compile", "kind": "tvm-ffi" if tvm_ffi else "plain"}
    opts: dict[str, object] = {"header": extra}
    if tvm_ffi:
        opts["exporter"] = dsl.export_tvm_ffi_object
        opts["loader"] = dsl.load_tvm_ffi_object
    with claim(_Subject(name, fn), key, **opts) as c:
        loaded = c.load()
        call = typing.cast("Callable[..., object]", loaded)  # a loaded compiled function: called as the DSL's own
        signature = None
        if loaded is not None and tvm_ffi:
            try:
                call, signature = dsl.tvm_ffi_caller(loaded, c.header.get("call"), target[1])
            except ValueError as exc:  # the entry names a default this process's function lacks: compile
                _refuse(name, f"the entry's call cannot be rebuilt here ({exc})")
                loaded = None
        if loaded is not None:
            types = c.header.get("argument_types")
            if not (type(types) is list and all(type(t) is str for t in types)):
                types = None
            return CachedFunction(loaded, c.key, tvm_ffi, call, original, signature, types)
        compiled = original()
        if tvm_ffi and c.key is not None:
            spec = dsl.tvm_ffi_call_spec(compiled)
            if spec is None:
                _refuse(
                    name,
                    "a TVM-FFI function whose call converts Python integers for pointer parameters, or whose defaults are not plain data",
                )
                c.key = None
                c.outcome = "uncached"
            else:
                c.extra["call"] = spec
        if not tvm_ffi and c.key is not None:
            try:
                c.extra["argument_types"] = dsl.compiled_argument_types(compiled)
            except Exception:  # no IR to read: prepare() of a hit then refuses tensors (CB307), as of any loaded function
                c.extra["argument_types"] = None
        c.store(compiled)
    return _with_prepare(compiled)


def _read_artifact(path: str) -> bytes:
    """A package's object file, read as the cache reads its own files: not through a link or FIFO, a regular
    file of this user's that nobody else can write, at most the cache's entry size
    (:class:`~cute_bind.cache.UntrustedPath` otherwise)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        problem = "not a regular file" if not stat.S_ISREG(st.st_mode) else _store.untrusted_reason(st, shared=False)
        if problem is None and st.st_size > _settings.MAX_ENTRY_SIZE:
            problem = f"{st.st_size} bytes, over the entry limit of {_settings.MAX_ENTRY_SIZE}"
        if problem is not None:
            raise _store.UntrustedPath(path, problem, "adopt only object files your own build wrote (yours, mode 0644 or 0600)", "file")
        return _store.read_exact(fd, st.st_size)
    finally:
        os.close(fd)


def adopt(path: str | os.PathLike[str], fn: object, *args: object, function_name: str = "func", **kwargs: object) -> str | None:
    """Import an object file a package already made (quack's ``.o`` cache: ``export_to_c(path, function_name)``
    of a TVM-FFI compile) into the cache, under the key ``cute_bind.compile(fn, *args, **kwargs)`` computes:
    that call then loads it instead of compiling. Returns the entry's key; ``None`` where the compile is one
    the cache never stores (CB608 said why).

    ``path`` vouches for the compile: it must be the export of exactly this function and these arguments (the
    file's symbols cannot say which compile made them), so adopt only files your own build wrote. It is read
    with the cache's checks (a regular file of yours nobody else can write, no link: UntrustedPath), and
    loaded once before it is stored (the DSL's loader refuses anything else). An adopted entry is called as
    the package calls its own loaded function: positionally, every argument given.
    """
    source = os.fspath(path)
    options = kwargs.get("options")
    callable_ = dsl.compile_callable()
    target = dsl.compile_target(fn)
    if target is None:
        raise TypeError(f"cute.compile does not take a {type(fn).__name__}")
    name = _target_name(*target)
    call_kwargs = {k: v for k, v in kwargs.items() if k != "options"}
    try:
        key = compile_key(callable_, args, call_kwargs, options)
    except _key.Uncacheable as exc:
        _refuse(name, str(exc))
        return None
    tvm_ffi = dsl.resolved_options(callable_, options).tvm_ffi
    data = _read_artifact(source)
    loader = dsl.load_tvm_ffi_object if tvm_ffi else dsl.load_object
    load_payload(data, function_name, None, loader)  # the DSL's loader takes it, or raises
    header: dict[str, object] = {
        "compile": "cute.compile",
        "kind": "tvm-ffi" if tvm_ffi else "plain",
        "adopted": source,
        "prefix": function_name,
    }
    if tvm_ffi:
        header["call"] = {"wrapped": False, "names": [], "defaulted": [], "kwonly": [], "unpack": []}
    with claim(_Subject(name, fn), key, exporter=lambda compiled, prefix: data, loader=loader, header=header) as c:
        if c.load() is not None:
            return c.key  # already cached: the cache's own entry stays
        c.store(None)
        return c.key if c.outcome == "compiled" else None


class Compile:
    """``cute_bind.compile``: call it as ``cute.compile`` (``cute_bind.compile[opts](fn, ...)`` too)."""

    def __init__(self, options: object = None) -> None:
        self._options = options

    def __getitem__(self, options: object) -> Compile:
        return Compile(options)

    def __call__(self, fn: object, *args: object, **kwargs: object) -> Any:
        """Compile ``fn`` for ``args`` as ``cute.compile`` does, through the disk cache (see the module docstring)."""
        cute_compile = dsl.compile_callable()
        callable_ = cute_compile if self._options is None else cute_compile[self._options]
        return compile_with(callable_, fn, *args, **kwargs)

    def __repr__(self) -> str:
        return "cute_bind.compile" + ("" if self._options is None else f"[{self._options!r}]")


#: ``cute_bind.compile``
compile = Compile()


# ------------------------------------------------------------------ the hook
_INSTALL_LOCK = threading.Lock()
_DEPTH = 0


def install() -> None:
    """Route every ``cute.compile`` (and ``cute.compile[...]``) of the process through :data:`compile`.

    Packages that call ``cute.compile`` themselves (quack, FlashAttention-4)
    then load their kernels from the disk cache in every later process,
    unmodified. Counted: each ``install()`` is undone by one :func:`uninstall`
    (so :func:`installed` blocks nest). A package's own cache in front of
    ``cute.compile`` keeps working: it sees a miss as before, and what it
    reads of the result (``export_to_c``) is there. cute_bind's own
    compiles (``@cute_bind.kernel``) keep their own claim on the cache.
    """
    global _DEPTH
    with _INSTALL_LOCK:
        _DEPTH += 1
        if _DEPTH == 1:
            dsl.install_compile_hook(compile_with)


def uninstall() -> None:
    """Undo one :func:`install`; the last one restores the DSL's own ``cute.compile``."""
    global _DEPTH
    with _INSTALL_LOCK:
        if _DEPTH == 0:
            return
        _DEPTH -= 1
        if _DEPTH == 0:
            dsl.remove_compile_hook()


def is_installed() -> bool:
    """Whether ``cute.compile`` goes through the cache now."""
    with _INSTALL_LOCK:
        return _DEPTH > 0


class installed:
    """``with cute_bind.cache.installed():`` the hook for the block (:func:`install` ... :func:`uninstall`)."""

    def __enter__(self) -> installed:
        install()
        return self

    def __exit__(self, *exc: object) -> None:
        uninstall()
