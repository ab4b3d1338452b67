"""The DSL's re-entry validation (4.8): a prepared launch refuses what a direct call of a
specialized function would refuse (CB504).
"""

from __future__ import annotations

import re
import typing
from typing import Any

from .. import diagnostics as D
from .compiled import execution_args_of
from .version import features
from .imports import dsl

__all__ = [
    "specialization_guard",
]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _dsl_error_line(exc: BaseException) -> str:
    """The one-line gist of a DSL user-code error (its ``error[...]`` line, colours removed)."""
    text = _ANSI.sub("", str(exc)).strip()
    for line in text.splitlines():
        if "error[" in line:
            return line.split("]:", 1)[-1].strip().rstrip(".")
    return (text.splitlines() or [type(exc).__name__])[0].rstrip(".")


def specialization_guard(compiled: Any, kernel: str, names: typing.Sequence[str]) -> typing.Callable[[], None] | None:
    """The DSL's re-entry validation of a compiled function, for a prepared launch.

    DSL 4.8 seals, with a function compiled under its PyIR frontend, the
    trace-time values the compiled code baked in (module globals, closure
    cells, the receiver of a jitted method, default objects) and re-checks
    them on every direct call, refusing when one has changed. A prepared
    launch must refuse too. The record never roots at a runtime parameter
    (the DSL traces those as staged values, so nothing about the value a
    slot receives is baked); this is checked here, and a record that does
    is refused at bind, since a handle could not re-check it per launch.

    Returns ``None`` when there is nothing to check (every version before
    4.8, and any function whose trace sealed no record). Otherwise runs the
    DSL's own check now (CB504 when a direct call would refuse) and returns
    a function that re-runs it, raising CB504, before every launch.
    """
    if not features().spec_reentry:
        return None
    spec = getattr(compiled, "_pyir_spec", None)
    if spec is None:
        return None
    runtime = sorted({str(root[1]) for root in spec[0] if root[0] == "arg" and root[1] in names})
    if runtime:
        raise D.error(
            D.STALE_SPECIALIZATION,
            kernel=kernel,
            parameter=", ".join(runtime),
            expected="a specialization on trace-time values only",
            got="the compiled code baked in a value read from a runtime parameter, which a prepared launch cannot re-check",
        )
    # The engine itself, not the executor's hook into it (which re-runs its
    # lazy import on every call).
    try:
        import importlib

        validate = importlib.import_module("cutlass.base_dsl.pyir_spec")._pyir_validate_spec_reentry
    except (ImportError, AttributeError):
        validate = dsl().jit_executor._pyir_validate_spec_reentry
    execution_args = execution_args_of(compiled)
    # The record never reads runtime parameters (checked above), so the
    # binding it is validated against needs their names only, not values.
    placeholders = (None,) * len(names)

    def check() -> None:
        try:
            validate(spec, execution_args, placeholders, {})
        except Exception as exc:
            raise D.error(
                D.STALE_SPECIALIZATION,
                kernel=kernel,
                expected="the trace-time values the compiled code was specialized on",
                got=_dsl_error_line(exc),
            ) from exc

    check()
    return check
