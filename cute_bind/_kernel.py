"""``@cute_bind.kernel`` and ``cute_bind.prepare``."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Generic, ParamSpec, overload

from . import _diagnostics as D
from . import _dsl
from ._prepared import PreparedLaunch, build
from ._signature import KernelSignature, bind_arguments, read_signature, unwrap
from ._sequence_slot import infer_kind
from ._slots import KINDS, Bound, PointerKind, Rejected, SlotKind, Where, classify, describe_value

__all__ = ["Kernel", "kernel", "prepare"]

P = ParamSpec("P")


class Kernel(Generic[P]):
    """A CuTe DSL host function checked for prepared launches.

    Made by :func:`kernel`. ``bind(*args, **kwargs)`` compiles (cached per
    compile key) and returns a :class:`PreparedLaunch`; calling the kernel
    compiles (cached) and calls the compiled function the normal way.
    """

    def __init__(self, fn: Callable[P, Any], *, name: str | None = None, compile_options: str | None = None, checked: bool = False) -> None:
        self.fn = fn
        self.name: str = str(name or getattr(unwrap(fn), "__name__", "kernel"))
        self.compile_options = compile_options
        self.checked = checked
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
                except Exception as exc:
                    ok, spelled = self._preprocessing
                    if ok:
                        raise
                    summary = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise D.error(D.NOT_PREPROCESSED, kernel=self.name, got=f"{type(exc).__name__}: {summary[:120]}", detail=spelled) from exc
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
            raise D.error(D.INVALID_OPTION, kernel=str(where), parameter=key, expected=f"one of {', '.join(_OPTIONS)}", got=f"{key}=...")
        if isinstance(value, bool) and bool not in _OPTIONS[key] or not isinstance(value, _OPTIONS[key]):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in _OPTIONS[key])
            raise D.error(D.INVALID_OPTION, kernel=str(where), parameter=key, expected=expected, got=describe_value(value))
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


# ---------------------------------------------------------------------- prepare
def _infer_slot(value: Any) -> SlotKind | None:
    """Slot kind for a parameter the compiled function declares without annotation.

    The value's type is read as if it were the annotation, as the DSL does:
    ``bool``/``int``/``float`` map to Boolean/Int32/Float32, a ``make_ptr``
    pointer is a pointer, a ``cuda.CUstream`` a stream, a tuple or list a
    sequence, a DLPack tensor a tensor.
    """
    for kind in KINDS:
        found = kind.recognize(type(value))
        if found is not None:
            return found
    return infer_kind(value)


def prepare(compiled: Any, /, *args: Any, **kwargs: Any) -> PreparedLaunch[Any]:
    """Prepare a function compiled with ``cute.compile`` (or its ``.to(device)`` executor).

    Takes the same arguments as calling ``compiled``; eligibility comes from
    the compiled function's declared annotations and the values given.
    """
    if not _dsl.is_compiled(compiled):
        raise D.error(D.NOT_COMPILED, expected="the result of cute.compile(...) or compiled.to(device)", got=describe_value(compiled))
    if _dsl.is_tvm_ffi_compiled(compiled):
        # TVM-FFI entry points take TVM-FFI packed arguments, not the DSL's void** array.
        raise D.error(
            D.NOT_COMPILED,
            expected="a function compiled without --enable-tvm-ffi",
            got=f"{type(compiled).__name__} (a TVM-FFI compiled function)",
        )
    rsig = _dsl.runtime_signature(compiled)
    name = _dsl.function_name(compiled)
    values = bind_arguments(name, rsig.names, frozenset(rsig.kwonly), rsig.defaults, args, kwargs, {})
    bounds: list[Bound] = []
    for pname, annotation in zip(rsig.names, rsig.annotations):
        value = values[pname]
        where = Where(name, pname)
        slot: SlotKind | None
        if annotation is None:
            slot = _infer_slot(value)
            if slot is None:
                from . import _whitelist as W

                raise D.error(D.MISSING_ANNOTATION, kernel=name, parameter=pname, expected=W.ELIGIBLE_SUMMARY, got="no annotation")
        else:
            found = classify(annotation)
            if isinstance(found, Rejected):
                from . import _whitelist as W

                raise D.error(found.diagnostic, kernel=name, parameter=pname, expected=W.ELIGIBLE_SUMMARY, got=found.got, detail=found.detail)
            if not isinstance(found, SlotKind):  # pragma: no cover - constexprs are not runtime parameters
                continue
            slot = found
        bounds.append(slot.prepare(value, where) if isinstance(slot, PointerKind) else slot.bind(value, where))
    _check_tensor_descriptors(name, compiled, list(rsig.names), bounds)
    return build(
        kernel=name,
        compiled=compiled,
        names=list(rsig.names),
        bounds=bounds,
        defaults=dict(rsig.defaults),
    )


def _check_tensor_descriptors(name: str, compiled: Any, names: list[str], bounds: list[Bound]) -> None:
    """A prepared tensor's layout must be the one compiled in.

    ``prepare()`` learns a tensor slot's layout from the value it is given (a
    torch tensor is read as dynamic, as the DSL's direct call reads it); the
    compiled function may have been built for another marking (e.g. a static
    layout, another leading dimension, a divisibility). The entry's symbol
    spells each tensor's layout and its argument types give each descriptor's
    fields; a tensor whose layout is not the compiled one is refused (the
    direct call would get it silently wrong). The assumed alignment is in
    neither: a ``from_dlpack`` tensor must carry the compile's ``assumed_align``.
    """
    from ._sequence_slot import SequenceKind
    from ._tensor_slot import TensorKind

    types = _dsl.entry_argument_types(compiled)
    symbol = _dsl.mangled_name(compiled)
    at = 0  # tensor symbols appear in the entry's symbol in parameter order
    k = 0
    for pname, b in zip(names, bounds):
        leaves = list(b.slot.elements or ()) if isinstance(b.slot, SequenceKind) else [b.slot]
        for i, leaf in enumerate(leaves):
            for part in leaf.parts:
                if isinstance(leaf, TensorKind) and leaf.layout is not None:
                    label = pname if not isinstance(b.slot, SequenceKind) else f"{pname}[{i}]"
                    ours = ["ptr"] + [{"i": "i32", "q": "i64"}[c] for c in part[1:] if c in "iq"]
                    theirs = _dsl.descriptor_fields(types[k]) if types is not None and k < len(types) else ours
                    spelled = _dsl.tensor_symbol(leaf.layout)
                    found = symbol.find(spelled, at)
                    if ours != theirs or found < 0:
                        raise D.error(
                            D.TENSOR_LAYOUT_MISMATCH,
                            kernel=name,
                            parameter=label,
                            detail="prepare(): the compiled function takes another tensor layout; pass the from_dlpack tensor "
                            "marked as when compiling",
                            expected=f"the layout compiled into {symbol}",
                            got=f"a tensor read as {leaf.layout.text}",
                        )
                    at = found + len(spelled)
                k += 1

