"""What cute_bind hooks into the DSL's decoration and compile: the source rewriter's decorator
rule (widened for the functions cute_bind jits), the DSL's decorator marks, option checks at
decoration, and the process-wide compile lock (new in a forked child).
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
import os
import threading
import types
import warnings
import weakref
from typing import Any, Callable

from .imports import dsl

__all__ = [
    "DSL_DECORATION_MARKS",
    "is_dsl_decorated",
    "jit",
    "compile_options_problem",
    "preprocessing_source",
    "compile_jit",
]


#: The attributes ``cute.jit``/``cute.kernel`` set on the object they decorate
#: (``BaseDSL.jit_runner``); a :class:`cute_bind.Kernel` refuses them, which is
#: how a DSL decorator stacked *above* ``@cute_bind.kernel`` fails at decoration.
DSL_DECORATION_MARKS = frozenset({"_dsl_cls", "_decorator_kind"})


# The plain functions cute_bind jits (weakly held): the DSL's source rewriter
# treats them as if their innermost source decorator were ``@cute.jit``.
_OWNED: weakref.WeakSet[object] = weakref.WeakSet()
_OWNED_NOW = contextvars.ContextVar("cute_bind_owned_now", default=False)
_HOOK_MARK = "__cute_bind_decorator_hook__"
_HOOK_LOCK = threading.Lock()


def _install_decorator_hook() -> None:
    """Let the DSL's AST rewriter accept every decorator spelling for functions cute_bind owns.

    The rewriter (``DSLPreprocessor.transform_function``) re-reads the
    function's source and rewrites it only when ``check_decorator`` finds the
    innermost decorator spelled ``@<x>.jit``/``@<x>.kernel``; it raises
    UNSUP_DECORATOR_ORDER when such a decorator is not innermost. It takes any
    attribute named ``kernel`` for its own, so ``@cute_bind.kernel`` over
    ``@cute.jit`` fails and ``@kernel`` or ``@cute_bind.kernel(checked=True)``
    alone are silently not rewritten. For a function cute_bind jits, the
    source's decorators say nothing the rewriter needs (they are all dropped
    from the rewritten function): it is rewritten exactly as under a plain
    ``@cute.jit``. Every other function keeps the DSL's own rule.
    """
    from cutlass.base_dsl.ast_preprocessor import DSLPreprocessor

    with _HOOK_LOCK:
        if getattr(DSLPreprocessor, _HOOK_MARK, False):
            return
        transform_function = DSLPreprocessor.transform_function
        check_decorator = DSLPreprocessor.check_decorator

        @functools.wraps(transform_function)
        def owned_transform_function(self: Any, func_name: str, function_pointer: Any) -> Any:
            try:
                owned = function_pointer in _OWNED
            except TypeError:
                owned = False
            token = _OWNED_NOW.set(owned)
            try:
                return transform_function(self, func_name, function_pointer)
            finally:
                _OWNED_NOW.reset(token)

        @functools.wraps(check_decorator)
        def owned_check_decorator(self: Any, node: Any) -> bool:
            import ast

            if _OWNED_NOW.get() and isinstance(node, ast.FunctionDef):
                return True
            return bool(check_decorator(self, node))

        DSLPreprocessor.transform_function = owned_transform_function
        DSLPreprocessor.check_decorator = owned_check_decorator
        setattr(DSLPreprocessor, _HOOK_MARK, True)


#: ``BaseDSL.jit_runner``'s executor names before 4.8 recorded ``_decorator_kind``
_EXECUTOR_KINDS = {"_func": "jit", "_kernel_helper": "kernel"}


def is_dsl_decorated(fn: object) -> str | None:
    """``"jit"`` or ``"kernel"`` when ``fn`` is ``@cute.jit``/``@cute.kernel``-decorated, else ``None``.

    4.8 marks the wrapper with ``_decorator_kind``. 4.5 to 4.7 mark it with
    ``_dsl_cls`` only; there the kind is the ``executor_name`` the wrapper
    closes over (``"_func"`` for ``cute.jit``, ``"_kernel_helper"`` for
    ``cute.kernel``). The plain function under the wrapper carries
    ``_dsl_cls`` too but closes over nothing, so it is not taken for one.
    """
    kind = getattr(fn, "_decorator_kind", None)
    if kind is not None:
        return str(kind)
    if getattr(fn, "_dsl_cls", None) is None:
        return None
    code, closure = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    names = getattr(code, "co_freevars", ())
    if not closure or "executor_name" not in names:
        return None
    try:
        executor = closure[names.index("executor_name")].cell_contents
    except (ValueError, IndexError):  # an empty cell
        return None
    return _EXECUTOR_KINDS.get(executor) if isinstance(executor, str) else None


def jit(fn: object, raw: object) -> Any:
    """``fn`` ready for ``cute.compile``, rewritten exactly as under a plain ``@cute.jit``.

    ``fn`` is what the user decorated (a plain function or a ``@cute.jit``
    wrapper, with its options); ``raw`` the plain Python function under it,
    the one the DSL rewrites. Whatever decorators the source spells above
    ``def`` (``@cute_bind.kernel`` over ``@cute.jit``, ``@kernel``,
    ``@cb.kernel(checked=True)``, none for ``cute_bind.kernel(fn)``), the
    DSL rewrites ``raw``'s control flow as it would for ``@cute.jit``.
    """
    _install_decorator_hook()
    try:
        _OWNED.add(raw)
    except TypeError:  # not weak-referenceable: not a Python function, the DSL reports it
        pass
    if is_dsl_decorated(fn) is None:
        if inspect.ismethod(fn):  # a plain method, bound: its function jitted, bound to the same object
            return types.MethodType(dsl().cute.jit(fn.__func__), fn.__self__)
        fn = dsl().cute.jit(fn)
    return fn


def compile_options_problem(options: str) -> str | None:
    """Why ``cute.compile(..., options=options)`` would refuse ``options``, or ``None``.

    Parsed with the DSL's own parser (``base_dsl.compiler._parse_compile_options_from_str``)
    so that a typo is reported at decoration instead of at the first compile;
    argparse's usage text goes nowhere. Where the DSL has no such parser, nothing
    is checked here (the compile still refuses a bad string).
    """
    import contextlib
    import io

    try:
        parse = importlib.import_module("cutlass.base_dsl.compiler")._parse_compile_options_from_str
    except Exception:
        return None
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parse(options)
    except BaseException as exc:  # the DSL's DSLUserCodeError, or argparse's SystemExit
        if isinstance(exc, (KeyboardInterrupt, MemoryError)):
            raise
        said = [line.split("error:", 1)[1].strip() for line in err.getvalue().splitlines() if "error:" in line]
        return said[0] if said else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return None


def preprocessing_source(fn: Callable[..., object]) -> str | None:
    """Why the DSL cannot rewrite ``fn``'s control flow (it reads the source), or ``None`` if it can."""
    import inspect

    try:
        inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        return f"its source cannot be read ({exc})"
    return None


# The DSL's compiler is not thread-safe across functions: its session data is
# process-wide and it redirects file descriptor 2 while it compiles, so two
# compiles at once (of different kernels, in two threads) fail with spurious
# errors and can leave fd 2 pointing at a deleted temporary file. Every compile
# and export cute_bind makes holds this lock.
_COMPILE_LOCK = threading.RLock()


def _reset_locks_in_child() -> None:
    """After ``os.fork()``: new locks in the child. A lock held by another thread at the fork (one
    compiling, say) stays held in the child for good, since that thread does not exist there: the
    child's first compile would wait forever."""
    global _COMPILE_LOCK, _HOOK_LOCK
    _COMPILE_LOCK = threading.RLock()
    _HOOK_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork
    os.register_at_fork(after_in_child=_reset_locks_in_child)


#: the DSL's warning for an argument it compiles in as a constant (FlashAttention-4's ``aux_data``, a
#: NamedTuple of Nones): the slot kinds of the functions cute_bind compiles already took each value
#: (a structure slot is such a constant by design), so the advice to annotate it is noise on every compile
_CONSTANT_ARGUMENT_WARNING = r"Argument \S+ \(position \d+\) cannot be converted to a JitArgument"


def compile_jit(fn: object, *args: object, **kwargs: object) -> Any:
    """``cute.compile(fn, *args, **kwargs)``, one at a time in the process (see ``_COMPILE_LOCK``)."""
    with _COMPILE_LOCK, warnings.catch_warnings():
        # under the compile lock: no other compile's warnings are filtered meanwhile
        warnings.filterwarnings("ignore", message=_CONSTANT_ARGUMENT_WARNING, category=UserWarning)
        return dsl().cute.compile(fn, *args, **kwargs)
