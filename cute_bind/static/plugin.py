"""mypy plugin: cute_bind's eligibility errors (CB101, CB102, CB104, CB106, CB107, CB113,
CB114, CB125) and decorator-form errors (CB116, CB117) in editors and CI.

Enable it in the mypy configuration::

    [mypy]
    plugins = cute_bind.mypy

    # or, in pyproject.toml
    [tool.mypy]
    plugins = ["cute_bind.mypy"]

Every parameter of a function decorated with ``@cute_bind.kernel`` that the
decorator would reject at import time is reported where it is declared, with
the catalog code and the runtime's message, under the mypy error code
``cute-bind-<code>`` (a sub-code of ``cute-bind``)::

    kernels.py:12:5: error: [CB113] kernel 'scale', parameter 'sizes': sequence annotation ...  [cute-bind-cb113]

Silence one code on a line with ``# type: ignore[cute-bind-cb113]``, every
code with ``# type: ignore[cute-bind]``, or all of them everywhere with
``disable_error_code = cute-bind``. The plugin also makes
``cute_bind.Pointer[dtype, align, space]`` and ``cute_bind.Tensor[dtype, rank,
align, layout]`` valid annotations (typed ``Any``).

How it works. mypy has no hook for function decorators, so the plugin uses
the function hook of ``cute_bind.kernel`` itself: mypy type-checks the
decorator's application to the function, with the decorated function as
context, so the decorator is found through mypy's own name resolution (any
import spelling or alias). ``@cute_bind.kernel(...)`` returns a callable that
the plugin names after the decorator, so its application to the function
comes back to the same hook. The function's parameters are then checked by
:mod:`cute_bind.static.rules` on the file's source text, the rules
``cute-bind check`` uses, so the two tools always agree.

Settings: ``[tool.cute-bind]`` of the nearest ``pyproject.toml`` holding one
above each checked file (:class:`cute_bind.static.config.Resolver`, as for
``cute-bind check`` and the language server): ``exclude`` leaves a file's
kernels unchecked, ``ignore`` drops codes. A file that is not a regular file,
holds more than 8 MiB or nests an expression too deeply to analyse is reported
at each kernel with CB126 (``cute-bind-cb126``), never as a crash of mypy.

Limitations: functions inside an unannotated function are only checked with
``check_untyped_defs``, as mypy skips their bodies otherwise; code mypy reads
from a string (``mypy -c``) has no file to read: its kernels are reported as
not checked. When mypy cannot find the ``cute_bind`` package at all, the
plugin stops the run with the fix rather than check nothing. A kernel's
parameters are typed ``Any`` in ``bind``/``launch``/calls (slots take Python
values for DSL-typed parameters); their number and names are still checked. A string
argument of ``cute_bind.Tensor[...]`` (the layout ``"dynamic"`` or ``"static"``)
is read by mypy as a forward reference and looked up as a name before any
plugin hook runs, so mypy reports ``Name "static" is not defined
[name-defined]`` there; name the layout with a module-level constant
(``STATIC = "static"``, then ``cute_bind.Tensor[cutlass.Float32, 2, 16, STATIC]``)
or silence that line with ``# type: ignore[name-defined]``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

from mypy.errorcodes import ErrorCode
from mypy.nodes import ARG_STAR, ARG_STAR2, CallExpr, Context, Decorator, FuncDef, NameExpr, RefExpr, StrExpr
from mypy.options import Options
from mypy.plugin import AnalyzeTypeContext, CheckerPluginInterface, FunctionContext, Plugin, ReportConfigContext
from mypy.types import AnyType, CallableType, Instance, Parameters, TupleType, Type, TypeOfAny, get_proper_type

from ..diagnostics import CuteBindError
from .config import ConfigError, Resolver, Settings
from .rules import (
    KERNEL_DECORATORS,
    DECORATOR_CODES,
    NOT_CHECKED,
    REPORTED_CODES,
    SUBSCRIPTED_POINTERS,
    SUBSCRIPTED_TENSORS,
    ModuleAnalysis,
    StaticDiagnostic,
    analyze_source,
    module_name_for_path,
    refused,
    rules_fingerprint,
    too_deep,
)
from .source import read_source

__all__ = ["CATALOG_CODES", "CUTE_BIND", "CuteBindPlugin", "plugin"]

#: The mypy error code of every eligibility error (``# type: ignore[cute-bind]``).
CUTE_BIND = ErrorCode(
    "cute-bind", f"cute_bind kernel eligibility (catalog codes {', '.join(sorted(REPORTED_CODES | DECORATOR_CODES))})", "cute_bind"
)

#: One mypy error code per catalog code (``cute-bind-cb101``...), each a sub-code of
#: ``cute-bind``: ``# type: ignore[cute-bind-cb102]`` silences that finding alone,
#: ``# type: ignore[cute-bind]`` (or ``disable_error_code``) every finding.
CATALOG_CODES: dict[str, ErrorCode] = {
    cb: ErrorCode(f"cute-bind-{cb.lower()}", f"cute_bind {cb} (python -m cute_bind explain {cb})", "cute_bind", sub_code_of=CUTE_BIND)
    for cb in sorted(REPORTED_CODES | DECORATOR_CODES | {NOT_CHECKED})
}

# The name given to the callable ``@cute_bind.kernel(...)`` returns: mypy calls a
# callable's function hook by its name, so applying it comes back to this plugin.
_DECORATOR_NAME = "cute_bind.jit.decorator.kernel"
assert _DECORATOR_NAME in KERNEL_DECORATORS

# Annotation helpers that are only an annotation when subscripted, typed Any then.
_SUBSCRIPTED_HELPERS = SUBSCRIPTED_POINTERS | SUBSCRIPTED_TENSORS


class CuteBindPlugin(Plugin):
    """Reports eligibility errors of ``@cute_bind.kernel`` functions; types ``cute_bind.Pointer[...]``
    and ``cute_bind.Tensor[...]``."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        # path -> (file signature, analysis or why it was not checked): each file is parsed
        # once per run (and once per change under dmypy), however many kernels it has.
        self._analyses: dict[str, tuple[tuple[int, int, int], ModuleAnalysis | StaticDiagnostic | None]] = {}
        # [tool.cute-bind] of each file's folder, as `cute-bind check` and the language server read it
        self._settings = Resolver()
        problem = _not_visible(options)
        if problem is not None:
            # Never inert in silence: a run that cannot see cute_bind would type
            # `cute_bind.kernel` as Any and report nothing, however wrong the kernels.
            raise SystemExit(problem)

    # ------------------------------------------------------------------ hooks
    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        """The decorator's own hook: called for ``kernel(fn)``, ``kernel(...)`` and the latter's result."""
        return self._kernel_hook if fullname in KERNEL_DECORATORS else None

    def get_type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        """``cute_bind.Pointer[...]`` and ``cute_bind.Tensor[...]`` annotations."""
        if fullname not in _SUBSCRIPTED_HELPERS:
            return None
        return lambda ctx: _helper_annotation(ctx, fullname)

    def report_config_data(self, ctx: ReportConfigContext) -> str:
        """Refresh mypy's cache when the rules change (a cute_bind upgrade)."""
        return rules_fingerprint()

    # ------------------------------------------------------------------ kernels
    def _kernel_hook(self, ctx: FunctionContext) -> Type:
        if isinstance(ctx.context, Decorator):
            self._check_kernel(ctx.context, ctx.api)
            return _runtime_values(_own_parameters(ctx.default_return_type, ctx.context))
        returned = get_proper_type(ctx.default_return_type)
        if isinstance(returned, CallableType):
            # ``kernel(name=...)``: the decorator proper is what this returns.
            return returned.copy_modified(name=_DECORATOR_NAME)
        self._check_call_form(ctx)
        return _runtime_values(ctx.default_return_type)  # ``kernel(fn)`` called directly: not a definition

    def _check_call_form(self, ctx: FunctionContext) -> None:
        """``k = cute_bind.kernel(fn)`` among the module's statements, ``fn`` a def of this file: its
        diagnostics, as ``cute-bind check`` reports them (at the first such call only)."""
        first = ctx.args[0][0] if ctx.args and ctx.args[0] else None
        node = first.node if isinstance(first, NameExpr) else None
        func = node.func if isinstance(node, Decorator) else node
        if not isinstance(func, FuncDef) or not isinstance(ctx.context, CallExpr):
            return
        analysis = self._analysis(ctx.api.path, ctx.api.options)
        if not isinstance(analysis, ModuleAnalysis):
            return  # unreadable or unanalysable: the def's own decorators (if any) report that
        kernel = analysis.call_form_kernel(ctx.context.line, func.name, func.line)
        settings = self._file_settings(ctx.api, ctx.context) if kernel is not None else None
        if settings is not None:
            found = _check_def(analysis, func, kernel, ctx.api.path, ctx.context)
            self._report(found or [], settings.ignore, ctx.api)

    def _check_kernel(self, dec: Decorator, api: CheckerPluginInterface) -> None:
        # The bare form is an overloaded call: mypy first tries the overload item
        # with errors filtered (an error there only rejects the item), then, as no
        # item matched, checks the call again for real. So errors are reported on
        # every call here and the unfiltered set is the one mypy prints, with no
        # "no overload variant" error of its own (tests/static/test_plugin.py checks
        # this for the pinned mypy).
        settings = self._file_settings(api, dec)
        if settings is None:
            return
        analysis = self._analysis(api.path, api.options)
        func = dec.func
        found: list[StaticDiagnostic] | None
        if isinstance(analysis, StaticDiagnostic):  # CB126: the file could not be read or analysed
            found = [dataclasses.replace(analysis, line=dec.line, column=dec.column, end_line=dec.line, end_column=dec.column)]
        elif analysis is None:
            found = None
        else:
            found = _check_def(analysis, func, _kernel_name(dec), api.path, dec)
        if found is None:  # no file to read (mypy -c), or it changed under mypy: say so, never pass silently
            api.fail(
                f"cute_bind: the source of '{func.name}' could not be read from {api.path!r}, so its parameters "
                "were not checked; run mypy on files (not -c) or run `cute-bind check` on them",
                dec,
                code=CUTE_BIND,
            )
            return
        self._report(found, settings.ignore, api)

    def _file_settings(self, api: CheckerPluginInterface, where: Context) -> Settings | None:
        """The ``[tool.cute-bind]`` settings of the file mypy checks; None where it is excluded, or its
        table is wrong (reported at ``where``)."""
        try:
            settings = self._settings.for_file(api.path)
        except ConfigError as exc:
            api.fail(f"cute_bind: {exc}", where, code=CUTE_BIND)
            return None
        return None if settings.excludes(api.path) else settings

    @staticmethod
    def _report(found: list[StaticDiagnostic], ignore: frozenset[str], api: CheckerPluginInterface) -> None:
        for d in found:
            if d.code in ignore:
                continue
            where = Context(line=d.line, column=d.column)
            where.end_line, where.end_column = d.end_line, d.end_column
            api.fail(d.message, where, code=CATALOG_CODES.get(d.code, CUTE_BIND))

    def _analysis(self, path: str, options: Options) -> ModuleAnalysis | StaticDiagnostic | None:
        """The analysis of the file mypy is checking, read from disk (or its ``--shadow-file``);
        CB126 where it cannot be read or analysed (not a regular file, too large, too deep)."""
        source_path = path
        for original, shadow in options.shadow_file or ():
            if os.path.abspath(original) == os.path.abspath(path):
                source_path = shadow
        try:
            st = os.stat(source_path)
        except OSError:
            return None  # ``mypy -c`` or a vanished file: nothing to read
        signature = (st.st_mtime_ns, st.st_size, st.st_ino)
        cached = self._analyses.get(source_path)
        if cached is not None and cached[0] == signature:
            return cached[1]
        analysis: ModuleAnalysis | StaticDiagnostic | None
        try:
            analysis = analyze_source(read_source(source_path), path, module_name_for_path(path))
        except CuteBindError as exc:
            analysis = refused(path, exc)
        except (RecursionError, MemoryError) as exc:
            analysis = too_deep(path, exc)
        except (OSError, SyntaxError, ValueError):
            analysis = None  # mypy reports the syntax error itself
        self._analyses[source_path] = (signature, analysis)
        return analysis


def _check_def(analysis: ModuleAnalysis, func: FuncDef, kernel: str | None, path: str, where: Context) -> list[StaticDiagnostic] | None:
    """``analysis.check_def`` of ``func``; a definition nested too deeply to analyse is one diagnostic at ``where``."""
    try:
        return analysis.check_def(func.line, func.name, kernel)
    except (RecursionError, MemoryError) as exc:
        return [dataclasses.replace(too_deep(path, exc), line=where.line, column=where.column, end_line=where.line)]


def _not_visible(options: Options) -> str | None:
    """Why mypy, run with ``options``, cannot find the ``cute_bind`` package (``None`` when it can).

    The same search mypy makes for an ``import cute_bind`` (the current folder,
    ``mypy_path``, site-packages and their ``.pth`` path entries), except the
    folders of the files on the command line.
    """
    from mypy.build import default_data_dir
    from mypy.modulefinder import FindModuleCache, ModuleNotFoundReason, compute_search_paths

    paths = compute_search_paths([], options, default_data_dir())
    found = FindModuleCache(paths, None, options).find_module("cute_bind")
    if not isinstance(found, ModuleNotFoundReason):
        return None
    return (
        "cute_bind.mypy: error: the plugin is enabled but mypy cannot find the cute_bind package "
        f"({found.name.lower().replace('_', ' ')}), so @cute_bind.kernel would be typed Any and nothing "
        "would be checked. Install cute_bind where mypy looks (`pip install -e .` from a current "
        "checkout writes a plain path entry mypy reads; from an older one add "
        "`--config-settings editable_mode=compat`), or add the folder holding cute_bind/ to mypy_path."
    )


def _own_parameters(kernel_type: Type, dec: Decorator) -> Type:
    """``Kernel[P]`` with ``P`` the decorated ``def``'s own parameters where the decorators under
    ``@cute_bind.kernel`` erased them (``@cute.jit`` is typed ``(*Any, **Any) -> Any``).

    cute_bind reads the signature of the function itself (through ``__wrapped__``), so the
    parameters of the ``def`` are the kernel's: with them, a wrong argument count or an
    unknown keyword is an error for the ``@cute_bind.kernel`` over ``@cute.jit`` spelling too.
    """
    proper = get_proper_type(kernel_type)
    if not isinstance(proper, Instance) or not proper.args:
        return kernel_type
    params = get_proper_type(proper.args[0])
    erased = (
        isinstance(params, Parameters)
        and params.arg_kinds == [ARG_STAR, ARG_STAR2]
        and all(isinstance(get_proper_type(t), AnyType) for t in params.arg_types)
    )
    own = get_proper_type(dec.func.type)
    if not erased or not isinstance(own, CallableType) or not dec.decorators[1:]:
        return kernel_type
    own_params = Parameters(own.arg_types, own.arg_kinds, own.arg_names)
    return proper.copy_modified(args=[own_params, *proper.args[1:]])


def _runtime_values(kernel_type: Type) -> Type:
    """``Kernel[P]`` with the DSL types in ``P`` typed ``Any``, keeping names, kinds and count.

    A slot takes Python values where the function declares DSL types: ``2.0``
    for ``cutlass.Float32``, an address or an array for a pointer, any DLPack
    tensor for ``cute.Tensor`` (the runtime checks each value, CB204). Typed as
    declared, ``kernel.bind(out, x, 2.0, n, s)`` would be flagged as passing
    ``float`` where ``Float32`` is expected. Python's own types (``int``,
    ``float``, ``bool``, tuples and lists of them) mean what they say and stay;
    a wrong number of arguments or an unknown keyword is still an error.
    """
    proper = get_proper_type(kernel_type)
    if not isinstance(proper, Instance) or not proper.args:
        return kernel_type
    args = []
    for arg in proper.args:
        params = get_proper_type(arg)
        if isinstance(params, Parameters):
            arg = params.copy_modified(arg_types=[_slot_value_type(t) for t in params.arg_types])
        args.append(arg)
    return proper.copy_modified(args=args)


def _slot_value_type(declared: Type) -> Type:
    """What a slot declared ``declared`` takes: Python types as they are, DSL (and other) types as ``Any``."""
    proper = get_proper_type(declared)
    if isinstance(proper, Instance) and proper.type.fullname.startswith("builtins."):
        return proper.copy_modified(args=[_slot_value_type(a) for a in proper.args])
    if isinstance(proper, TupleType):
        return proper.copy_modified(items=[_slot_value_type(t) for t in proper.items])
    if isinstance(proper, AnyType):
        return declared
    return AnyType(TypeOfAny.special_form)


def _kernel_name(dec: Decorator) -> str | None:
    """The literal ``name=`` given to ``@cute_bind.kernel(...)``, as the runtime uses it in messages."""
    for expr in dec.decorators:
        if isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname in KERNEL_DECORATORS:
            for name, arg in zip(expr.arg_names, expr.args):
                if name == "name" and isinstance(arg, StrExpr):
                    return arg.value or None
    return None


def _helper_annotation(ctx: AnalyzeTypeContext, fullname: str) -> Type:
    """``cute_bind.Pointer[dtype, align, space]`` / ``cute_bind.Tensor[dtype, rank, align, layout]``:
    a ``cute.Pointer`` / ``cute.Tensor`` slot described in the annotation.

    Both are typed ``Any``: ``Kernel.bind`` takes the function's parameters
    (``ParamSpec``), a pointer slot accepts addresses (``int``), pointers and
    tensors, and a tensor slot any DLPack tensor (torch, NumPy, CuPy...) or a
    DSL tensor, which no single type describes. Their arguments (a dtype,
    integers, an address space, a layout string) are not types, so they are
    not analysed. Unsubscripted, each is the helper class (which the decorator
    rejects: CB102).
    """
    if not ctx.type.args:
        return ctx.api.named_type(fullname, [])
    return AnyType(TypeOfAny.special_form)


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point (``plugins = cute_bind.mypy``)."""
    return CuteBindPlugin
