"""``@cute_bind.kernel``: an annotated CuTe DSL host function that binds, compiles and calls."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Generic, ParamSpec, overload

from .. import _dsl
from .. import cache as disk_cache
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

    def __init__(
        self,
        fn: Callable[P, Any],
        *,
        name: str | None = None,
        compile_options: str | None = None,
        checked: bool = False,
        cache: bool = True,
        cache_key: str | int | None = None,
    ) -> None:
        self.fn = fn
        self.name: str = str(name or getattr(unwrap(fn), "__name__", "kernel"))
        self.compile_options = compile_options
        self.checked = checked
        self.cache = cache  # the disk cache (cute_bind/cache/); the in-process one below is always on
        self.cache_key = cache_key
        self.signature: KernelSignature = read_signature(fn, self.name)
        self._jit: Any = None
        self._preprocessing: tuple[bool, str] = (True, "")
        self._cache: dict[Any, Any] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, unwrap(fn))
        p = self.signature.params
        self._names = tuple(x.name for x in p)
        self._kwonly = frozenset(x.name for x in p if x.keyword_only)
        self._defaults = {x.name: x.default for x in p if x.has_default}
        self._hints = {x.name: (x.slot.expected() if x.slot else "a compile-time value") for x in p}

    def __repr__(self) -> str:
        params = ", ".join(f"{p.name}: {p.slot.describe() if p.slot else 'Constexpr'}" for p in self.signature.params)
        return f"<cute_bind.Kernel {self.name}({params})>"

    # ------------------------------------------------------------------ compile
    def _jit_function(self) -> Any:
        if self._jit is None:
            fn = self.fn
            # read before wrapping: cute.jit marks the function object itself
            self._preprocessing = _dsl.preprocessing_decorator(fn)
            if getattr(fn, "_decorator_kind", None) is None:
                fn = _dsl.dsl().cute.jit(fn)
            self._jit = fn
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
        with self._lock, disk_cache.claim(self, compile_key) as disk:
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
                    compiled = _dsl.dsl().cute.compile(jit_fn, *pos, **kw)
                except Exception as exc:
                    ok, spelled = self._preprocessing
                    if ok:
                        raise
                    summary = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise D.error(D.NOT_PREPROCESSED, kernel=self.name, got=f"{type(exc).__name__}: {summary[:120]}", detail=spelled) from exc
                disk.store(compiled)
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
        compiled = self._compiled(compile_key, dsl_values)
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


_OPTIONS = {
    "name": (str, type(None)),
    "compile_options": (str, type(None)),
    "checked": (bool,),
    "cache": (bool,),
    "cache_key": (str, int, type(None)),
}


@overload
def kernel(fn: Callable[P, Any], /) -> Kernel[P]: ...


@overload
def kernel(
    *, name: str | None = None, compile_options: str | None = None, checked: bool = False, cache: bool = True, cache_key: str | int | None = None
) -> Callable[[Callable[P, Any]], Kernel[P]]: ...


def kernel(fn: Any = None, /, **options: Any) -> Any:
    """Decorate a CuTe DSL host function for prepared launches.

    Usable bare (``@cute_bind.kernel``) or with options
    (``@cute_bind.kernel(name=..., compile_options=..., checked=...)``):

    - ``name``: the name used in messages (default: the function's name);
    - ``compile_options``: passed to ``cute.compile(..., options=...)``;
    - ``checked``: handles from ``bind()`` run the full checks on every launch;
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
            raise D.error(D.INVALID_OPTION, kernel=str(where), parameter=key, expected=f"one of {', '.join(_OPTIONS)}", got=f"{key}=...")
        if isinstance(value, bool) and bool not in _OPTIONS[key] or not isinstance(value, _OPTIONS[key]):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in _OPTIONS[key])
            raise D.error(D.INVALID_OPTION, kernel=str(where), parameter=key, expected=expected, got=describe_value(value))
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)
