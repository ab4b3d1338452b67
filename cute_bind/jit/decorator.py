"""``@cute_bind.kernel``: an annotated CuTe DSL host function that binds, compiles and calls."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Generic, ParamSpec, overload

from .. import _dsl
from .. import _whitelist as W
from .. import diagnostics as D
from ..launch.arguments import bind_arguments
from ..launch.prepared import PreparedLaunch, build
from ..slots import Bound, Where, describe_value
from .signature import KernelSignature, read_signature, unwrap

__all__ = ["Kernel", "kernel"]

P = ParamSpec("P")


class Kernel(Generic[P]):
    """A CuTe DSL host function checked for prepared launches.

    Made by :func:`kernel`. ``bind(*args, **kwargs)`` compiles (cached per
    compile key) and returns a :class:`PreparedLaunch`; calling the kernel
    compiles (cached) and calls the compiled function the normal way.
    """

    def __init__(self, fn: Callable[P, Any], *, name: str | None = None, compile_options: str | None = None, checked: bool = False) -> None:
        self.fn = fn
        self.name: str = str(name or getattr(unwrap(fn), "__name__", None) or type(fn).__name__)
        if "--enable-tvm-ffi" in (compile_options or ""):
            # handles rewrite the DSL's own argument array; TVM-FFI functions are cute_bind.prepare's
            raise D.error(
                D.TVM_FFI_KERNEL,
                kernel=self.name,
                expected="compile options without it (TVM-FFI compiled functions: cute_bind.prepare)",
                got=repr(compile_options),
            )
        self.compile_options = compile_options
        self.checked = checked
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

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}: {p.slot.describe() if p.slot else 'Constexpr'}" for p in self.signature.params)
        return f"<cute_bind.Kernel {self.name}({params})>"

    def __setattr__(self, name: str, value: Any) -> None:
        # @cute.jit / @cute.kernel stacked *above* @cute_bind.kernel marks this
        # object as its function; the result would be a DSL wrapper without bind()
        if name in _dsl.DSL_DECORATION_MARKS:
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
                # source spells above `def` (see _dsl.jit); only a source the DSL cannot
                # read stops it from rewriting Python control flow (CB111).
                self._no_source = _dsl.preprocessing_source(unwrap(self.fn))
                self._jit = _dsl.jit(self.fn, unwrap(self.fn))
        return self._jit

    def _bind_values(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Bound], dict[str, Any]]:
        values = bind_arguments(self.name, self._names, self._kwonly, self._defaults, args, kwargs, self._hints)
        bounds: list[Bound] = []
        dsl_values: dict[str, Any] = {}
        key: list[Any] = []
        for p in self.signature.params:
            v = values[p.name]
            if p.slot is None:
                try:
                    hash(v)
                except TypeError:
                    raise D.error(
                        D.CONSTEXPR_UNHASHABLE, kernel=self.name, parameter=p.name, expected="a hashable value", got=describe_value(v)
                    ) from None
                key.append((p.name, type(v), v))
                dsl_values[p.name] = v
            else:
                b = p.slot.bind(v, Where(self.name, p.name))
                bounds.append(b)
                key.append((p.name, b.key))
                dsl_values[p.name] = b.dsl_value
        compile_key = (tuple(key), _dsl.target_arch(), self.compile_options)
        return compile_key, bounds, dsl_values

    def _compiled(self, compile_key: Any, dsl_values: dict[str, Any]) -> Any:
        compiled = self._cache.get(compile_key)
        if compiled is not None:
            return compiled
        with self._lock:
            compiled = self._cache.get(compile_key)
            if compiled is None:
                pos = [dsl_values[p.name] for p in self.signature.params if not p.keyword_only]
                kw = {p.name: dsl_values[p.name] for p in self.signature.params if p.keyword_only}
                if self.compile_options:
                    kw["options"] = self.compile_options
                jit_fn = self._jit_function()
                try:
                    compiled = _dsl.dsl().cute.compile(jit_fn, *pos, **kw)
                except D.CuteBindError:
                    raise
                except Exception as exc:  # the DSL's own error, kept whole and chained
                    if self._no_source is not None:
                        raise D.error(D.NOT_PREPROCESSED, kernel=self.name, got=D.exception_summary(exc), detail=self._no_source) from exc
                    raise D.error(D.COMPILE_FAILED, kernel=self.name, got=type(exc).__name__, detail=D.exception_text(exc)) from exc
                self._cache[compile_key] = compiled
        return compiled

    def compile(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Compile for these arguments (cached) and return the compiled function; nothing is launched.

        Works without a GPU for device kernels when ``CUTE_DSL_ARCH`` is set.
        """
        compile_key, _, dsl_values = self._bind_values(args, kwargs)
        return self._compiled(compile_key, dsl_values)

    def bind(self, *args: P.args, **kwargs: P.kwargs) -> PreparedLaunch[P]:
        """Compile (cached) and return a :class:`PreparedLaunch` holding these values."""
        compile_key, bounds, dsl_values = self._bind_values(args, kwargs)
        compiled = _on_device(self.name, self._compiled(compile_key, dsl_values), self.signature.runtime, bounds)
        runtime = self.signature.runtime
        return build(
            kernel=self.name,
            compiled=compiled,
            names=[p.name for p in runtime],
            bounds=bounds,
            defaults={p.name: p.default for p in runtime if p.has_default},
            constexpr_names=[p.name for p in self.signature.constexpr],
            checked=True if self.checked else None,
        )

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Compile (cached) and call the compiled function the DSL's normal way."""
        compile_key, _, dsl_values = self._bind_values(args, kwargs)
        compiled = self._compiled(compile_key, dsl_values)
        return compiled(*(dsl_values[p.name] for p in self.signature.runtime))

    def cache_info(self) -> dict[str, int]:
        """Number of compiled variants held."""
        return {"compiled": len(self._cache)}

    def clear_cache(self) -> None:
        """Drop the compiled variants (handles keep theirs alive)."""
        with self._lock:
            self._cache.clear()


def _is_jit_object(fn: Any) -> bool:
    """A callable object whose class's ``__call__`` is ``@cute.jit``: ``cute.compile`` takes it as it is."""
    return not callable(getattr(fn, "__wrapped__", None)) and getattr(getattr(type(fn), "__call__", None), "_decorator_kind", None) is not None


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
    if first is None or _dsl.cuda_device_count() < 2:
        return compiled
    return _dsl.executor_on_device(compiled, first[1][1], kernel)


_OPTIONS = {"name": (str, type(None)), "compile_options": (str, type(None)), "checked": (bool,)}


@overload
def kernel(fn: Callable[P, Any], /) -> Kernel[P]: ...


@overload
def kernel(*, name: str | None = None, compile_options: str | None = None, checked: bool = False) -> Callable[[Callable[P, Any]], Kernel[P]]: ...


def kernel(fn: Any = None, /, **options: Any) -> Any:
    """Decorate a CuTe DSL host function for prepared launches.

    Usable bare (``@cute_bind.kernel``) or with options
    (``@cute_bind.kernel(name=..., compile_options=..., checked=...)``):

    - ``name``: the name used in messages (default: the function's name);
    - ``compile_options``: passed to ``cute.compile(..., options=...)``;
    - ``checked``: handles from ``bind()`` run the full checks on every launch.

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
    if _dsl.is_dsl_decorated(fn) == "kernel":
        # a device kernel runs on the GPU; a prepared launch calls a host function
        name = options.get("name") or getattr(unwrap(fn), "__name__", "kernel")
        got, expected = W.DEVICE_KERNEL
        raise D.error(D.DEVICE_KERNEL, kernel=str(name), got=got, expected=expected)
    return Kernel(fn, **options)
