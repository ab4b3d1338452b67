"""Runtime, ``cute-bind check`` and the mypy plugin report the same problems on the corpus.

For every corpus file:

- runtime: the file is imported with ``cute_bind.kernel`` replaced by a
  recorder that calls the real decorator and keeps every error of each
  function (``KernelDefinitionError.details["all"]``) instead of raising at
  the first; each error's parameter is located in the source with :mod:`ast`;
- ``cute-bind check``: :func:`cute_bind.static.checker.check_file`;
- mypy with the plugin: one run over the whole corpus.

All three must give the same ``(code, kernel, parameter, line)`` multiset,
equal to the file's ``# expect:`` comments, and the static message must be
the runtime's first line except for the spelling of the annotation (``got``:
the runtime names the defining module, ``cutlass.cute.typing.Tensor``; the
static tools the public path the file imports, ``cutlass.cute.Tensor``). The
offending element in CB113's ``detail`` is spelled the same way, so there the
runtime's DSL module paths are mapped to the public ones before comparing.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("cutlass")  # the runtime side decorates the corpus for real
mypy_api = pytest.importorskip("mypy.api")

import cute_bind  # noqa: E402
from cute_bind import CATALOG, CuteBindError, KernelDefinitionError  # noqa: E402
from cute_bind.diagnostics import format_message  # noqa: E402
from cute_bind.static.checker import check_file  # noqa: E402
from cute_bind.static.rules import StaticDiagnostic  # noqa: E402
from tests.static.corpus_support import CORPUS, FILES, expected, mypy_config  # noqa: E402

Finding = tuple[str, str, str, int]  # (code, kernel, parameter, line)

_MYPY = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):\d+: error: (?P<message>\[(?P<code>CB\d{3})\] kernel '(?P<kernel>[^']*)', parameter '(?P<parameter>[^']*)': .*?)  \[cute-bind-cb\d{3}\]$"
)


# --------------------------------------------------------------------------- runtime side
def _parameter_lines(path: Path, fn: Callable[..., Any]) -> dict[str, int]:
    """Line of each parameter of ``fn``'s ``def`` in ``path`` (found by name and first line)."""
    base = inspect.unwrap(fn)
    first = base.__code__.co_firstlineno  # the first decorator's line
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == base.__name__:
            if min([node.lineno] + [d.lineno for d in node.decorator_list]) == first:
                a = node.args
                args = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]
                return {arg.arg: arg.lineno for arg in args}
    raise AssertionError(f"no def of {base.__name__} at line {first} in {path}")


def runtime_errors(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Finding, CuteBindError]]:
    """Import ``path`` with a recording ``cute_bind.kernel``; every error of every decorated function."""
    real = cute_bind.kernel
    recorded: list[tuple[Callable[..., Any], list[CuteBindError]]] = []

    def recorder(fn: Any = None, /, **options: Any) -> Any:
        if fn is None:  # @cute_bind.kernel(...): options first, as the real decorator
            return lambda f: recorder(f, **options)
        try:
            real(fn, **options)
        except KernelDefinitionError as exc:
            recorded.append((fn, list(exc.details.get("all", [exc]))))
        else:
            recorded.append((fn, []))
        return fn  # keep importing: the next kernels are checked too

    monkeypatch.setattr(cute_bind, "kernel", recorder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, path.stem, module)  # the module name the static tools assume
    spec.loader.exec_module(module)
    assert recorded, f"{path.name}: no kernel was decorated"
    out = []
    for fn, errors in recorded:
        lines = _parameter_lines(path, fn)
        for err in errors:
            assert err.kernel is not None and err.parameter is not None
            out.append(((err.code, err.kernel, err.parameter, lines[err.parameter]), err))
    return out


# --------------------------------------------------------------------------- static sides
@pytest.fixture(scope="module")
def mypy_findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[Finding, str]]]:
    """One mypy run over the corpus: findings and messages, by resolved file path."""
    d = tmp_path_factory.mktemp("mypy_agreement")
    (d / "mypy.ini").write_text(mypy_config())
    stdout, stderr, status = mypy_api.run(["--config-file", str(d / "mypy.ini"), "--cache-dir", str(d / "cache"), str(CORPUS)])
    assert status in (0, 1), f"mypy crashed (status {status}):\n{stdout}\n{stderr}"
    found: dict[str, list[tuple[Finding, str]]] = {}
    for line in stdout.splitlines():
        m = _MYPY.match(line)
        if m:
            key = str(Path(m["path"]).resolve())
            found.setdefault(key, []).append(((m["code"], m["kernel"], m["parameter"], int(m["line"])), m["message"]))
    return found


def _first_line(err: CuteBindError) -> str:
    return str(err).splitlines()[0]


# Where the DSL defines its public names: the runtime spells annotations by
# these modules, the static tools by the public package the names are used from.
_DEFINING_MODULES = {
    "cutlass.base_dsl.typing.": "cutlass.",
    "cutlass.cute.typing.": "cutlass.cute.",
    "cute_bind._types.": "cute_bind.",
}


def _public_spelling(text: str) -> str:
    for defining, public in _DEFINING_MODULES.items():
        text = text.replace(defining, public)
    return text


def _runtime_detail(d: StaticDiagnostic, err: CuteBindError) -> str | None:
    """The ``{detail}`` the runtime filled in ``err``'s message: the text between the
    template's fixed parts around it (the error object keeps ``got``, not ``detail``)."""
    if d.detail is None:
        return None
    marker = "\x00detail\x00"
    template = format_message(CATALOG[d.code], kernel=d.kernel, parameter=d.parameter, expected=d.expected, got=err.got, detail=marker)[0]
    before, _, after = template.splitlines()[0].partition(marker)
    line = _first_line(err)
    assert line.startswith(before) and line.endswith(after), (line, template)
    return line[len(before) : len(line) - len(after)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_runtime_cli_and_mypy_agree(
    path: Path, monkeypatch: pytest.MonkeyPatch, mypy_findings: dict[str, list[tuple[Finding, str]]]
) -> None:
    runtime = runtime_errors(path, monkeypatch)
    cli = check_file(str(path))
    plugin = mypy_findings.get(str(path.resolve()), [])

    runtime_set = Counter(f for f, _ in runtime)
    assert Counter((d.code, d.kernel, d.parameter, d.line) for d in cli) == runtime_set, "cute-bind check vs runtime"
    assert Counter(f for f, _ in plugin) == runtime_set, "mypy plugin vs runtime"
    assert Counter((code, line) for code, _, _, line in runtime_set.elements()) == expected(path), "runtime vs # expect:"

    # Same message, but for how the annotation is spelled (see the module docstring).
    static_by_key = {(d.code, d.kernel, d.parameter, d.line): d for d in cli}
    for key, err in runtime:
        d = static_by_key[key]
        assert (d.expected, d.kernel, d.parameter) == (err.expected, err.kernel, err.parameter)
        runtime_detail = _runtime_detail(d, err)
        assert d.detail == (None if runtime_detail is None else _public_spelling(runtime_detail)), key
        with_runtime_spelling = format_message(
            CATALOG[d.code], kernel=d.kernel, parameter=d.parameter, expected=d.expected, got=err.got, detail=runtime_detail
        )[0]
        assert with_runtime_spelling.splitlines()[0] == _first_line(err)
    assert sorted(message for _, message in plugin) == sorted(d.message for d in cli)


# --------------------------------------------------------------------------- cases outside the corpus
# Runtime and ``cute-bind check`` on annotations the corpus leaves out because
# mypy itself rejects them or they are odd, each with the code both must give
# (None: eligible). Where the verdict follows a runtime detail rather than a
# documented rule, the comment says which.
GAP_CASES = [
    # The abstract DSL numeric bases have no storage of their own; the whitelist
    # lists them so the name-based reading agrees.
    ("x: cutlass.Numeric", "CB104"),
    ("x: cutlass.Integer", "CB104"),
    ("x: cutlass.Float", "CB104"),
    # Every DSL numeric type without runtime storage, one per family.
    ("x: cutlass.Float8E8M0FNU", "CB104"),
    ("x: cutlass.Float6E3M2FN", "CB104"),
    ("x: cutlass.Float4E2M1FN", "CB104"),
    # ``typing.Tuple[()]`` is the empty tuple, like ``tuple[()]``.
    ("x: typing.Tuple[()]", None),
    # A non-tuple sequence's first parameter is the annotation of every element;
    # the runtime ignores the rest (``list`` accepts any number at run time).
    ("x: list[int, Params]", None),
    ("x: list[Params, int]", "CB113"),
    # ``...`` is only "repeated" as the second of exactly two parameters.
    ("x: tuple[int, str, ...]", "CB113"),
    ("x: tuple[int, int, ...]", "CB113"),
    # Annotated around a sequence is looked through, at the top and as an element.
    ("x: typing.Annotated[typing.Annotated[list[cute.Tensor], 1], 2]", None),
    ("x: tuple[typing.Annotated[tuple, 1]]", "CB113"),
    # Constexpr inside Annotated is no longer a compile-time marker.
    ("x: typing.Annotated[cutlass.Constexpr[int], 1]", "CB102"),
    ("x: typing.Annotated[cuda.CUstream, 1]", "CB102"),
]


@pytest.mark.parametrize("params, code", GAP_CASES, ids=[c[0] for c in GAP_CASES])
def test_cases_outside_the_corpus(params: str, code: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "corpus_gap.py"
    path.write_text(
        textwrap.dedent(f"""\
        import typing
        import cuda.bindings.driver as cuda
        import cutlass
        import cutlass.cute as cute
        import cute_bind

        class Params:
            pass

        @cute_bind.kernel
        def gap({params}):
            pass
        """)
    )
    runtime = Counter(f for f, _ in runtime_errors(path, monkeypatch))
    assert Counter((d.code, d.kernel, d.parameter, d.line) for d in check_file(str(path))) == runtime
    assert [c for c, _, _, _ in runtime] == ([code] if code else [])
