"""Reading a host function's signature into slots, once, at decoration time."""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Callable, TypeVar, cast

from .. import dsl
from .. import _whitelist as W
from .. import diagnostics as D
from ..diagnostics.errors import CuteBindError
from ..slots import Constexpr, Rejected, SlotKind, Where, classify, describe_value
from ..slots.registry import InferredKind

__all__ = ["Defaulted", "Param", "KernelSignature", "read_signature", "check_function", "unwrap"]

_EMPTY = inspect.Parameter.empty

_F = TypeVar("_F")


class Defaulted:
    """A parameter's record that keeps its ``default`` (``inspect.Parameter.empty`` where it has none):
    :class:`Param` here, and the torch and JAX ops' own records."""

    default: object

    @property
    def has_default(self) -> bool:
        return self.default is not _EMPTY


@dataclass(frozen=True)
class Param(Defaulted):
    """One parameter of a kernel's host function."""

    name: str
    index: int
    annotation: object
    slot: SlotKind | None  # None for Constexpr parameters
    default: object = _EMPTY
    keyword_only: bool = False

    @property
    def is_constexpr(self) -> bool:
        return self.slot is None


@dataclass(frozen=True)
class KernelSignature:
    """All parameters in order; ``runtime`` are the slots, ``constexpr`` the compile-time ones."""

    name: str
    params: tuple[Param, ...]

    @property
    def runtime(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not p.is_constexpr)

    @property
    def constexpr(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_constexpr)


def unwrap(fn: _F) -> _F:
    """The plain Python function under ``@cute.jit`` (and other ``functools.wraps`` wrappers), which
    ``functools.wraps`` makes the wrapper stand for."""
    if inspect.ismethod(fn):  # a bound method: the function it binds (its ``self`` is the caller's)
        fn = cast(_F, fn.__func__)
    seen = set()
    while hasattr(fn, "__wrapped__") and id(fn) not in seen:
        seen.add(id(fn))
        fn = getattr(fn, "__wrapped__")  # noqa: B009 - typed as the wrapper: it stands for this function
    return fn


def _resolve(fn: Callable[..., object], name: str, raw: object, kernel: str) -> tuple[object, CuteBindError | None]:
    if not isinstance(raw, str):
        return raw, None
    module = sys.modules.get(getattr(fn, "__module__", ""), None)
    namespace = dict(vars(module)) if module is not None else {}
    namespace.update(getattr(fn, "__globals__", {}) or {})
    try:
        return eval(raw, namespace), None  # noqa: S307 - evaluating the user's own annotation, as typing.get_type_hints does
    except Exception as exc:
        return None, D.error(
            D.UNRESOLVED_ANNOTATION,
            kernel=kernel,
            parameter=name,
            expected=W.ELIGIBLE_SUMMARY,
            got=repr(raw),
            detail=f"{type(exc).__name__}: {exc}",
        )


def _analyse(fn: object, kernel: str | None = None) -> tuple[KernelSignature | None, list[CuteBindError]]:
    name = kernel or getattr(fn, "__name__", None) or repr(fn)
    if isinstance(fn, type) or not callable(fn):
        return None, [
            D.error(
                D.NOT_A_FUNCTION,
                kernel=str(name),
                expected="a CuTe DSL host function (plain or @cute.jit)",
                got=type(fn).__name__ + " " + repr(fn)[:40],
            )
        ]
    # a bound method (``cute.compile(self._host_function)``, as the DSL's own HardwareInfo compiles a
    # @cute.jit method): ``self`` is bound, the parameters are the method's after it
    bound_self = inspect.ismethod(fn)
    base: object = unwrap(fn)
    call = getattr(type(fn), "__call__", None)
    if not inspect.isfunction(base) and dsl.is_dsl_decorated(call) == "jit" and inspect.isfunction(unwrap(call)):
        # a callable object (quack and FlashAttention style: ``__call__`` decorated with
        # @cute.jit): its parameters are those of ``__call__`` after ``self``
        base, bound_self = unwrap(call), True
        if kernel is None:
            name = type(fn).__name__
    if not inspect.isfunction(base):
        return None, [
            D.error(D.NOT_A_FUNCTION, kernel=str(name), expected="a CuTe DSL host function (plain or @cute.jit)", got=type(base).__name__)
        ]
    if dsl.is_dsl_decorated(fn) == "kernel" or dsl.is_dsl_decorated(base) == "kernel":
        return None, [
            D.error(
                D.NOT_A_FUNCTION,
                kernel=str(name),
                expected="a host function (@cute.jit), not a @cute.kernel device function",
                got="@cute.kernel function",
            )
        ]
    sig = inspect.signature(base)
    params: list[Param] = []
    problems: list[CuteBindError] = []
    for index, p in enumerate(list(sig.parameters.values())[1 if bound_self else 0 :]):
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            star = "*" if p.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            problems.append(
                D.error(
                    D.VARIADIC_PARAMETER, kernel=name, parameter=p.name, expected="named parameters, one per slot", got=f"{star}{p.name}"
                )
            )
            continue
        if p.annotation is _EMPTY:
            if bound_self:
                # a class kernel, taken as its authors wrote it (cute_bind.kernel(obj)): the parameter's
                # kind is read from the value given at compile()/bind()/the first call, as the DSL reads it
                params.append(
                    Param(
                        name=p.name,
                        index=index,
                        annotation=_EMPTY,
                        slot=InferredKind(),
                        default=p.default,
                        keyword_only=p.kind is inspect.Parameter.KEYWORD_ONLY,
                    )
                )
                continue
            problems.append(D.error(D.MISSING_ANNOTATION, kernel=name, parameter=p.name, expected=W.ELIGIBLE_SUMMARY, got="no annotation"))
            continue
        annotation, err = _resolve(base, p.name, p.annotation, name)
        if err is not None:
            problems.append(err)
            continue
        found = classify(annotation)
        if isinstance(found, Rejected):
            problems.append(
                D.error(
                    found.diagnostic,
                    kernel=name,
                    parameter=p.name,
                    expected=W.expected_for(found.diagnostic.code),
                    got=found.got,
                    detail=found.detail,
                )
            )
            continue
        if p.default is not _EMPTY and not isinstance(found, Constexpr) and found.kind == "scalar":
            # a scalar default is written by every launch that leaves it out: check it once, now
            try:
                found.coerce(p.default, Where(name, p.name))
            except CuteBindError:
                problems.append(
                    D.error(
                        D.INVALID_DEFAULT,
                        kernel=name,
                        parameter=p.name,
                        expected=found.expected(),
                        got=describe_value(p.default),
                    )  # fmt: skip
                )
                continue
        params.append(
            Param(
                name=p.name,
                index=index,
                annotation=annotation,
                slot=None if isinstance(found, Constexpr) else found,
                default=p.default,
                keyword_only=p.kind is inspect.Parameter.KEYWORD_ONLY,
            )
        )
    if problems:
        return None, problems
    return KernelSignature(name=name, params=tuple(params)), []


def check_function(fn: object, kernel: str | None = None) -> list[CuteBindError]:
    """Every eligibility diagnostic for ``fn``, in parameter order (empty when eligible)."""
    return _analyse(fn, kernel)[1]


def read_signature(fn: object, kernel: str | None = None) -> KernelSignature:
    """Read ``fn``'s signature; raise the first eligibility diagnostic if any."""
    sig, problems = _analyse(fn, kernel)
    if problems:
        first = problems[0]
        if len(problems) > 1:
            others = ", ".join(f"{e.code} at '{e.parameter}'" for e in problems[1:])
            first.args = (first.args[0] + f"\n  also: {others}",)
        first.details["all"] = problems
        raise first
    assert sig is not None  # internal invariant: no problems means a signature
    return sig


def is_method_definition(fn: object) -> bool:
    """A function defined in a class body whose first parameter is an unannotated ``self``: decorated
    there (``@cute_bind.kernel`` over a method), its object does not exist yet (CB127)."""
    base = unwrap(fn)
    if inspect.ismethod(fn) or not inspect.isfunction(base):
        return False  # a bound method has its object
    parts = base.__qualname__.split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        return False  # a module-level or nested function: not in a class body
    params = list(inspect.signature(base).parameters.values())
    return bool(params) and params[0].name == "self" and params[0].annotation is inspect.Parameter.empty
