"""``@cute_bind.kernel``: an annotated CuTe DSL host function that binds, compiles and calls."""

from __future__ import annotations

import dataclasses
import functools
import pickle
import sys
from types import FunctionType
from typing import TYPE_CHECKING, Any, Callable, Generic, ParamSpec, TypedDict, TypeGuard, cast, overload

from .. import dsl
from .. import _whitelist as W
from .. import diagnostics as D
from ..launch.prepared import PreparedLaunch
from ..slots import ScalarKind, StreamKind, describe_value
from ..slots.registry import InferredKind, infer_slot
from .compiler import Binding, Compiler, is_jit_object
from .keys import Handle
from .guards import Refusal
from .dispatch import DEFAULT_LIMIT, FALLBACK, ON_LIMIT, CallBase, Dispatcher, PythonCallBase, Specialization
from .signature import KernelSignature, is_method_definition, read_signature, unwrap

__all__ = ["Kernel", "KernelOptions", "kernel"]

P = ParamSpec("P")

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

    _CallBase = PythonCallBase
else:  # the C fast path of __call__ (jit/_cdispatch.c) when built, else an empty class
    _CallBase = CallBase


class KernelOptions(TypedDict, total=False):
    """The options of ``@cute_bind.kernel(...)`` (see :func:`kernel`; :class:`Kernel` holds their defaults)."""

    name: str | None
    compile_options: str | None
    checked: bool
    max_specializations: int | None
    on_limit: str
    cache: bool
    cache_key: str | int | None


class Kernel(_CallBase, Generic[P]):
    """A CuTe DSL host function checked for prepared launches.

    Made by :func:`kernel`. Calling the kernel (``kernel(*args, **kwargs)``)
    specializes on the argument values and launches through a prepared handle
    per specialization and thread (:mod:`cute_bind.jit.dispatch`);
    ``bind(*args, **kwargs)`` compiles (cached per compile key) and returns a
    :class:`PreparedLaunch` to replay explicitly. ``tvm_ffi`` is true when
    ``compile_options`` hold ``--enable-tvm-ffi``: compiles are then TVM-FFI
    functions and handles their prepared TVM-FFI launches.

    Compiling (binding, the compile key, the caches, the lock) is its
    :attr:`compiler`'s (:mod:`cute_bind.jit.compiler`); calling is its
    dispatcher's, which talks to that compiler.
    """

    def __init__(
        self,
        fn: Callable[P, object],
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
        self._options = KernelOptions(
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
        self.cache = cache  # the disk cache (cute_bind/cache/); the in-process one (the compiler's table) is always on
        self.cache_key = cache_key
        self.signature: KernelSignature = read_signature(fn, self.name)
        # a callable object's own attributes are its configuration, not the wrapper's
        functools.update_wrapper(self, unwrap(fn), updated=() if is_jit_object(fn) else functools.WRAPPER_UPDATES)
        if max_specializations is not None and (
            isinstance(max_specializations, bool) or not isinstance(max_specializations, int) or max_specializations < 1
        ):
            raise D.error(
                D.INVALID_OPTION,
                kernel=self.name,
                parameter="max_specializations",
                expected="an int >= 1 or None",
                got=describe_value(max_specializations),
            )
        if on_limit not in ON_LIMIT:
            raise D.error(
                D.INVALID_OPTION,
                kernel=self.name,
                parameter="on_limit",
                expected=" or ".join(map(repr, ON_LIMIT)),
                got=describe_value(on_limit),
            )
        #: binding, the compile key, the in-process and disk caches, the compile lock
        self.compiler = Compiler(self, fn, self.signature, self.name, compile_options, self.tvm_ffi, checked)
        self._calls = Dispatcher(self, self.compiler, max_specializations, on_limit)

    # A kernel is a function with state (its compiles, specializations, counters): a copy is the
    # kernel itself, as copying a function gives the function (a second object sharing that state
    # would count and clear the first's), and pickling is by reference, as a function's is.
    def __copy__(self) -> Kernel[P]:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Kernel[P]:
        return self

    def __reduce_ex__(self, protocol: object) -> str:
        module = sys.modules.get(str(getattr(self, "__module__", "")))
        qualname = str(getattr(self, "__qualname__", ""))
        found: object = module
        for part in qualname.split("."):
            found = getattr(found, part, None)
        if found is not self:
            raise pickle.PicklingError(
                f"cannot pickle kernel '{self.name}': a kernel is pickled by reference, as a function is, and "
                f"{getattr(module, '__name__', '?')}.{qualname} is not this kernel; decorate a module-level function "
                "(@cute_bind.kernel) to pickle it, or pickle the function and wrap it again after loading"
            )
        return qualname  # pickle looks the name up in the kernel's module (as it does a function's)

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}: {p.slot.describe() if p.slot else 'Constexpr'}" for p in self.signature.params)
        return f"<cute_bind.Kernel {self.name}({params})>"

    def __setattr__(self, name: str, value: object) -> None:
        # @cute.jit / @cute.kernel stacked *above* @cute_bind.kernel marks this
        # object as its function; the result would be a DSL wrapper without bind()
        if name in dsl.DSL_DECORATION_MARKS:
            got, expected = W.DECORATOR_ORDER
            raise D.error(D.DSL_DECORATOR_ABOVE, kernel=self.name, got=got, expected=expected)
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ compile
    def _jit_function(self) -> Callable[..., object]:
        return self.compiler.jit_function()

    def _bind_values(self, args: tuple[object, ...], kwargs: dict[str, object]) -> Binding:
        """``(compile key, bounds, DSL values)`` for these arguments (the compiler's :meth:`~Compiler.bind`)."""
        return self.compiler.bind(args, kwargs)

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
        self._read_stream_kinds(args, kwargs)
        c = self.compiler
        with dsl.compile_only():
            binding = c.bind(args, kwargs)
        given = c.arguments(args, kwargs)
        dsl_values = binding.dsl_values
        for p, b in zip(self.signature.runtime, binding.bounds):
            v = given[p.name]
            if isinstance(getattr(b.slot, "inner", None) or b.slot, ScalarKind) and (
                type(v) in (bool, int, float) or dsl.is_numeric_type(type(v))
            ):
                # the number as given (checked by its slot): the DSL names the compiled function
                # after the values it is given, so cute.compile(fn, ..., 0.5) and this are one function
                dsl_values[p.name] = v
        compiled = c.compiled(binding)
        c.remember_env(binding.key, compiled)  # a compile with the TVM-FFI environment stream: calls that leave it out launch it
        c.record(given, binding.key, compiled)  # real calls its compiled function takes launch it (jit/guards.py)
        return compiled

    def _read_stream_kinds(self, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        """A class kernel's unannotated parameter given a stream at its first ``compile()`` (the
        client's fake stream, or a ``cuda.CUstream``) is a stream parameter from then on, as if
        annotated ``cuda.CUstream``: its kind is read from the compile's value, and a stream
        parameter is what lets that compile (from the client's fakes) serve calls passing any
        stream form, an ``int`` handle or ``None`` included (an inferred slot reads an ``int`` as
        an Int32). Only before the kernel has compiled or been called: its state is rebuilt."""
        c = self.compiler
        if c.table or c.records or self._calls.specializations():
            return
        inferred = [p for p in self.signature.params if isinstance(p.slot, InferredKind)]
        if not inferred:
            return
        given = c.arguments(args, kwargs)
        # the kind the inferred slot reads from the value (a fake stream, a cuda.CUstream; an int is an Int32)
        streams = {p.name for p in inferred if given.get(p.name) is not None and isinstance(infer_slot(given[p.name]), StreamKind)}
        if not streams:
            return
        params = tuple(dataclasses.replace(p, slot=StreamKind()) if p.name in streams else p for p in self.signature.params)
        self.signature = KernelSignature(self.signature.name, params)
        self.compiler = Compiler(self, self.fn, self.signature, self.name, self.compile_options, self.tvm_ffi, self.checked)
        self._calls = Dispatcher(self, self.compiler, self._calls.limit, self._calls.on_limit)

    def bind(self, *args: P.args, **kwargs: P.kwargs) -> PreparedLaunch[P]:
        """Compile (cached) and return a :class:`PreparedLaunch` holding these values.

        A kernel compiled with ``--enable-tvm-ffi`` gives the TVM-FFI handle
        ``cute_bind.prepare`` gives for the compiled function and these values
        (:class:`~cute_bind.launch.tvm_ffi.PreparedTvmFfiLaunch`, same
        ``launch``); its entry checks every launch's values itself.
        """
        # a TVM-FFI kernel's handle is a PreparedTvmFfiLaunch (or its compiled call), with the same launch
        return cast("PreparedLaunch[P]", self._handle(args, kwargs))

    def _handle(self, args: tuple[object, ...], kwargs: dict[str, object]) -> Handle:
        c = self.compiler
        env = c.env_find(args, kwargs) if c.env else None
        if env is not None:
            return c.env_handle(env[0][0], env[1])
        binding = c.bind(args, kwargs)
        refusals: list[Refusal] = []
        if not c.holds(binding.key) and c.records:
            # a compile() made from the client's fakes that takes these values serves them, whatever
            # stream form the call has (its sibling compiled from the same fakes): see jit/guards.py
            served, refusals = c.serve(c.arguments(args, kwargs), binding)
            if served is not None:
                return served.handle
        try:
            compiled = c.compiled(binding)
        except D.CuteBindError as exc:
            if refusals and exc.code == "CB310":
                raise c.records.refused(refusals, exc) from exc
            raise
        return c.prepare(compiled, binding.bounds)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Launch with these arguments: specialize on their values, compile on first sight, replay a prepared handle.

        Returns what the compiled call returns. The thread's handle of its last
        specialization is tried first; a value it does not take goes to the
        dispatch path (:mod:`cute_bind.jit.dispatch`). A stream parameter
        declared ``= None`` may be left out: see
        :func:`cute_bind.jit.streams.current_stream` for the stream used.
        """
        local = self._calls.local
        try:
            if kwargs and (placed := self._calls.positional(args, kwargs)) is not None:
                result = local.call(*placed)  # keywords placed by name: the caller of a positional call
            else:
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
        c = self.compiler
        env = c.env_find(args, kwargs) if c.env else None
        if env is not None:  # the entry of an environment-stream compile takes no stream
            return env[0][0].compiled(*env[1].values())
        binding = c.bind(args, kwargs)
        compiled = c.compiled(binding)
        if self.tvm_ffi:  # a TVM-FFI function takes the values themselves (torch tensors, numbers)
            values = c.arguments(args, kwargs)
            return compiled(*(0 if values[p.name] is None and p.name in c.none_streams else values[p.name] for p in self.signature.runtime))
        return compiled(*(binding.dsl_values[p.name] for p in self.signature.runtime))

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
            "compiled": len(self.compiler.table),
            "hits": calls.hits,
            "misses": calls.misses,
            "specializations": calls.specializations,
            "max_specializations": calls.max_specializations,
        }

    def specializations(self) -> tuple[Specialization, ...]:
        """The specializations calls made, in order: what each was compiled for, why (the recompile reason),
        and where its compiled function came from (``source``: ``"compiled"`` here for that call, ``"disk"``:
        loaded from the disk compile cache, ``"memory"``: compiled earlier in this process by ``bind()``,
        ``compile()`` or a call before ``clear_cache()``). ``compiled`` is True for ``"compiled"`` only."""
        # the dispatcher knows whether a key was in memory; the compiler whether the disk cache gave it
        out = []
        for record, key in self._calls.keyed_specializations():
            source = self.compiler.source(key, record.compiled)
            out.append(dataclasses.replace(record, compiled=source == "compiled", source=source))
        return tuple(out)

    def clear_cache(self) -> None:
        """Drop the compiled variants and the calls' specializations and counts (handles keep theirs alive)."""
        self.compiler.clear()
        self._calls.clear()


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
def kernel(fn: Callable[P, object], /) -> Kernel[P]: ...


@overload
def kernel(**options: Unpack[KernelOptions]) -> Callable[[Callable[P, object]], Kernel[P]]: ...


def kernel(
    fn: Callable[..., object] | None = None, /, **options: Unpack[KernelOptions]
) -> Kernel[...] | Callable[[Callable[..., object]], Kernel[...]]:
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
    # checked now, before any function comes (the error points at the decorator's line); without
    # the function a message names what it will be: the `name` option, or the decorated function
    name = options.get("name")
    if isinstance(name, str) and name:
        where = name
    else:
        where = getattr(unwrap(fn), "__name__", "kernel") if fn is not None else "<the function @cute_bind.kernel(...) decorates>"
    for key, value in options.items():
        if key not in _OPTIONS:
            hint = D.did_you_mean(key, tuple(_OPTIONS))
            raise D.error(
                D.INVALID_OPTION, kernel=str(where), parameter=key, expected=f"one of {', '.join(_OPTIONS)}{hint}", got=f"{key}=..."
            )
        if isinstance(value, bool) and bool not in _OPTIONS[key] or not isinstance(value, _OPTIONS[key]):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in _OPTIONS[key])
            raise D.error(D.INVALID_OPTION, kernel=str(where), parameter=key, expected=expected, got=describe_value(value))
    if fn is None:
        return lambda f: _make(f, options)
    return _make(fn, options)


def _make(fn: Callable[..., object], options: KernelOptions) -> Kernel[...]:
    if isinstance(fn, Kernel):
        # cute_bind.kernel over a Kernel (a helper module re-wrapping, a decorator applied twice):
        # a new kernel over the same function, the options given now over the ones it had
        merged = fn._options.copy()
        merged.update(options)
        return Kernel(fn.fn, **merged)
    if dsl.is_dsl_decorated(fn) == "kernel":
        # a device kernel runs on the GPU; a prepared launch calls a host function
        name = options.get("name") or getattr(unwrap(fn), "__name__", "kernel")
        got, expected = W.DEVICE_KERNEL
        raise D.error(D.DEVICE_KERNEL, kernel=str(name), got=got, expected=expected)
    if is_method_definition(fn):
        method = unwrap(fn).__name__  # a function (is_method_definition checked it)
        raise D.error(
            D.METHOD_IN_CLASS_BODY, kernel=str(options.get("name") or method), expected=W.METHOD_EXPECTED, got=W.method_got(method)
        )
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


def _wrapped_without_jit(fn: object) -> TypeGuard[FunctionType]:
    """A functools.wraps wrapper chain over a plain function, no DSL decorator anywhere along it."""
    import inspect

    if not inspect.isfunction(fn) or not callable(getattr(fn, "__wrapped__", None)):
        return False
    try:  # down the __wrapped__ chain, stopping at the first DSL wrapper
        innermost = inspect.unwrap(fn, stop=lambda f: dsl.is_dsl_decorated(f) is not None)
    except ValueError:  # a cycle: not a chain over one function
        return False
    return dsl.is_dsl_decorated(innermost) is None
