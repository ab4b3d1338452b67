"""Binding call arguments to parameter names: one rule set for bind, prepare and launch."""

from __future__ import annotations

from typing import Mapping, Sequence

from .. import diagnostics as D

__all__ = ["bind_arguments"]


def bind_arguments(
    kernel: str,
    names: Sequence[str],
    kwonly: frozenset[str],
    defaults: Mapping[str, object],
    args: tuple[object, ...],
    kwargs: Mapping[str, object],
    hints: Mapping[str, str],
    constexpr_names: frozenset[str] = frozenset(),
) -> dict[str, object]:
    """Bind ``args``/``kwargs`` to parameter names the way a call does, raising CB201/CB202/CB203.

    One rule set for ``bind()``, ``prepare()`` and the launch slow path.
    ``hints`` says what each parameter expects (for CB201); ``constexpr_names``
    are compile-time parameters a prepared launch no longer takes (CB202).
    """
    positional = [n for n in names if n not in kwonly]
    if len(args) > len(positional):
        # the usual cause at launch: bind()'s argument list reused, Constexpr values included
        fixed = (
            f"; the Constexpr values ({', '.join(sorted(constexpr_names))}) are fixed at bind and not passed again"
            if constexpr_names
            else ""
        )
        raise D.error(
            D.UNEXPECTED_ARGUMENT,
            kernel=kernel,
            parameter=f"#{len(positional) + 1}",
            expected=f"at most {len(positional)} positional argument(s) ({', '.join(positional)}){fixed}",
            got=f"{len(args)} positional arguments",
        )
    for key in kwargs:
        if not isinstance(key, str):  # f(**{1: 0}): what Python says of a function's own call
            raise TypeError(f"{kernel}() keywords must be strings, got {key!r}")
    values = dict(zip(positional, args))
    for key, value in kwargs.items():
        if key in constexpr_names or key not in names:
            if key in constexpr_names:
                expected = "runtime parameters only (Constexpr values are fixed at bind)"
            else:
                expected = f"one of ({', '.join(names)}){D.did_you_mean(key, tuple(names))}"
            raise D.error(D.UNEXPECTED_ARGUMENT, kernel=kernel, parameter=key, expected=expected, got=f"{key}=...")
        if key in values:
            raise D.error(D.DUPLICATE_ARGUMENT, kernel=kernel, parameter=key)
        values[key] = value
    for name in names:
        if name not in values:
            if name in defaults:
                values[name] = defaults[name]
            else:
                raise D.error(D.MISSING_ARGUMENT, kernel=kernel, parameter=name, expected=hints.get(name, "a value"))
    return values
