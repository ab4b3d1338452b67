"""Generated source (``cute_bind._generated``): tracebacks, ``pdb`` and ``inspect`` show its lines."""

from __future__ import annotations

import inspect
import linecache
import traceback

import pytest

from cute_bind._generated import compile_source

SOURCE = "def f(x):\n    y = x + 1\n    raise ValueError(y)\n"


def _f(what: str = "test f") -> object:
    namespace: dict[str, object] = {}
    exec(compile_source(SOURCE, what), namespace)  # noqa: S102 - the constant above
    return namespace["f"]


def test_a_traceback_through_generated_code_shows_its_line() -> None:
    f = _f()
    with pytest.raises(ValueError) as info:
        f(1)  # type: ignore[operator]
    frames = traceback.extract_tb(info.value.__traceback__)
    assert frames[-1].filename.startswith("<cute_bind test f-") and frames[-1].lineno == 3
    assert frames[-1].line == "raise ValueError(y)"
    assert "    raise ValueError(y)\n" in "".join(traceback.format_exception(info.value))


def test_inspect_and_pdb_read_the_source() -> None:
    f = _f()
    assert inspect.getsource(f) == SOURCE  # type: ignore[arg-type]
    filename = f.__code__.co_filename  # type: ignore[attr-defined]
    linecache.checkcache()  # no modification time: a check for edited files keeps the entry
    assert linecache.getline(filename, 2) == "    y = x + 1\n"


@pytest.mark.parametrize("what", ["launch 3 slots", "launch 3 slots", "op ns::name"])
def test_each_source_gets_a_filename_of_its_own(what: str) -> None:
    names = {_f(what).__code__.co_filename for _ in range(3)}  # type: ignore[attr-defined]
    assert len(names) == 3 and all(n.startswith(f"<cute_bind {what}-") and n.endswith(">") for n in names)
