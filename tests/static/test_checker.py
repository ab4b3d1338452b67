"""``cute-bind check``: the static checker's CLI on the corpus, its output format and exit codes.

Expected diagnostics are the ``# expect: CBxxx`` comments in ``tests/static/corpus``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from cute_bind.diagnostics import CuteBindError

from cute_bind import CATALOG
from cute_bind.static.checker import main
from cute_bind.static.rules import REPORTED_CODES, analyze_source
from tests.static.corpus_support import CORPUS, FILES, ROOT, expected

LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>CB\d{3}) (?P<text>kernel '[^']*', parameter '[^']*': .+\.)$")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err


def parsed(lines: list[str]) -> list[re.Match[str]]:
    matches = [LINE.match(line) for line in lines]
    assert all(matches), f"lines not in 'path:line:col: CODE message' form: {[l for l, m in zip(lines, matches) if not m]}"
    return [m for m in matches if m is not None]


def test_corpus_has_every_reported_code() -> None:
    """The corpus exercises every code the static tools report, so the per-file tests below cover each."""
    codes = {code for path in FILES for code, _ in expected(path)}
    assert codes == REPORTED_CODES


def test_reported_codes_are_live_parameter_diagnostics() -> None:
    """What the static tools report is a current (not retired) definition-time entry whose
    message names the parameter (CB103/CB105 are retired: tensors and sequences are eligible)."""
    for code in REPORTED_CODES:
        entry = CATALOG[code]
        assert code.startswith("CB1") and not entry.retired, code
        assert "parameter '{parameter}'" in entry.message, code


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_file_reports_exactly_the_expected_codes(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = expected(path)
    rc, lines, err = run(capsys, str(path))
    found = parsed(lines)
    assert Counter((m["code"], int(m["line"])) for m in found) == want
    assert all(m["path"] == str(path) for m in found)
    assert rc == (1 if want else 0)
    problems = sum(want.values())
    assert err == f"cute-bind check: 1 file (1 naming cute_bind), {problems} problem{'' if problems == 1 else 's'}\n"


def test_quiet_drops_the_summary_and_a_file_without_cute_bind_says_what_is_not_seen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "made_by_a_call.py"
    plain.write_text("import os\n\ndef f(x):\n    return x\n", encoding="utf-8")
    rc, lines, err = run(capsys, str(plain))
    assert (rc, lines) == (0, [])
    assert err.startswith("cute-bind check: 1 file (0 naming cute_bind), 0 problems") and "only @cute_bind.kernel" in err
    rc, lines, err = run(capsys, "--quiet", str(CORPUS))
    assert rc == 1 and lines and err == ""


def test_directory_is_walked_and_output_is_sorted(capsys: pytest.CaptureFixture[str]) -> None:
    rc, lines, _ = run(capsys, str(CORPUS))
    found = parsed(lines)
    want: Counter[tuple[str, str, int]] = Counter()
    for path in FILES:
        want.update((str(path), code, line) for code, line in expected(path))
    assert Counter((m["path"], m["code"], int(m["line"])) for m in found) == want
    keys = [(m["path"], int(m["line"]), int(m["col"])) for m in found]
    assert keys == sorted(keys)
    assert rc == 1


def test_message_is_the_catalog_text(capsys: pytest.CaptureFixture[str]) -> None:
    """Columns are 1-based and point at the parameter; the text is the catalog's message."""
    _, lines, _ = run(capsys, str(CORPUS / "corpus_spellings.py"))
    first = parsed(lines)[0]
    source_line = (CORPUS / "corpus_spellings.py").read_text().splitlines()[int(first["line"]) - 1]
    assert source_line[int(first["col"]) - 1 :].startswith("n)")
    assert first["text"] == (
        "kernel 'attribute', parameter 'n': the parameter has no annotation, so cute_bind cannot tell which slot kind stores it."
    )
    renamed = [m for m in parsed(lines) if "'renamed'" in m["text"]]
    assert len(renamed) == 1, "the name= option is the kernel name in messages, as at run time"


def test_show_fix_prints_the_catalog_fix(capsys: pytest.CaptureFixture[str]) -> None:
    rc, lines, _ = run(capsys, "--show-fix", str(CORPUS / "corpus_nested.py"))
    fix_lines = [l for l in lines if l.startswith("    ")]
    assert fix_lines[0].startswith("    fix: ")
    assert CATALOG["CB104"].fix.splitlines()[0] in fix_lines[0]
    assert rc == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "the following arguments are required"),
        (["--no-such-option", "x.py"], "unrecognized arguments"),
        (["does/not/exist.py"], "does/not/exist.py: no such file or directory"),
    ],
    ids=["no-paths", "unknown-option", "missing-path"],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, lines, err = run(capsys, *argv)
    assert rc == 2
    assert lines == []
    assert message in err


def test_leading_check_word_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    """``main`` can be wired as the whole ``cute-bind`` command line or as its ``check`` subcommand."""
    path = str(CORPUS / "corpus_rejected.py")
    with_word = run(capsys, "check", path)
    without = run(capsys, path)
    assert with_word == without
    assert with_word[0] == 1


def _write(tmp_path: Path, rel: str, text: str) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


BAD_KERNEL = """\
import cute_bind

@cute_bind.kernel
def k(n):
    pass
"""


def test_walk_skips_hidden_and_cache_dirs_but_checks_explicit_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, "pkg/mod.py", BAD_KERNEL)
    _write(tmp_path, ".venv/lib/dep.py", BAD_KERNEL)
    _write(tmp_path, "pkg/__pycache__/mod.py", BAD_KERNEL)
    script = _write(tmp_path, "pkg/script", BAD_KERNEL)  # no extension: only when named
    rc, lines, _ = run(capsys, str(tmp_path))
    assert [m["path"] for m in parsed(lines)] == [str(tmp_path / "pkg" / "mod.py")]
    assert rc == 1
    rc, lines, _ = run(capsys, str(script))
    assert [m["path"] for m in parsed(lines)] == [str(script)]


def test_unparsable_file_exits_2_and_others_are_still_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = _write(tmp_path, "a_broken.py", "import cute_bind\ndef f(:\n")
    good = _write(tmp_path, "b_kernel.py", BAD_KERNEL)
    rc, lines, err = run(capsys, str(tmp_path))
    assert rc == 2
    assert f"{broken}:2:" in err and "cannot parse" in err
    assert [m["path"] for m in parsed(lines)] == [str(good)]


def test_clean_file_and_file_without_cute_bind_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = _write(tmp_path, "plain.py", "def kernel(n, *args):\n    pass\n")
    rc, lines, _ = run(capsys, str(plain), str(CORPUS / "corpus_eligible.py"))
    assert (rc, lines) == (0, [])


# Rules that only the static reading has to get right (how names are bound in
# a file); the corpus and tests/static/test_agreement.py cover the rest
# against the runtime. Each case: a module body, then the expected codes of
# kernel ``k``'s parameters in order (None: eligible).
RESOLUTION_CASES = [
    ("import cutlass.cute\n", "x: cutlass.cute.Tensor", [None]),
    ("from cutlass import *\n", "x: Float8E5M2, y: Int32, z: Float16", ["CB104", None, None]),
    (
        "import cutlass as c2\nfrom cutlass import cute as cu\n",
        "x: c2.Int8, y: cu.Pointer, z: cu.Tensor, w: cu.Layout",
        [None, None, None, "CB102"],
    ),
    ("import cuda.bindings.driver as drv\n", "s: drv.CUstream", [None]),
    ("from cuda.bindings.driver import CUstream\n", "s: CUstream", [None]),
    ("from cuda import cuda\n", "s: cuda.CUstream", [None]),
    ("from cutlass.base_dsl.typing import Constexpr\n", "x: Constexpr", [None]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    from cutlass import Int32\n", "x: 'Int32'", [None]),
    ("import typing\nif typing.TYPE_CHECKING:\n    from cutlass import Int32\n", "x: 'Int32'", ["CB107"]),
    ("from . import helpers\n", "x: helpers.Int32", ["CB102"]),
    ("import cutlass\nint = cutlass.Float8E4M3FN\n", "x: int", ["CB104"]),
    ("import cutlass\nA = B = cutlass.Int16\n", "x: A, y: B", [None, None]),
    ("import cutlass\nX = 1\nX = cutlass.Float8E4M3FN\n", "x: X", ["CB104"]),
    ("import cutlass\nA = B\nB = A\n", "x: A", ["CB102"]),
    ("import typing\nimport cutlass\n", "x: typing.Annotated[typing.Annotated[cutlass.Int4, 1], 2]", ["CB104"]),
    ("import typing\nimport cute_bind\nimport cutlass\n", "x: typing.Annotated[cute_bind.Pointer[cutlass.Int8], 1]", [None]),
    ("import typing_extensions\nimport cutlass.cute as cute\n", "x: typing_extensions.Annotated[cute.Pointer, 1]", [None]),
    ("", "x: None, y: 'None'", ["CB102", "CB102"]),
    ("", "x: dict[str, int], y: 'lambda: 1'", ["CB102", "CB102"]),
    # Tensors: the helper only counts subscripted, in any spelling the imports allow.
    ("from cute_bind import Tensor as T\nimport cutlass\n", "x: T[cutlass.Float32, 2], y: T", [None, "CB102"]),
    (
        "import typing\nimport cute_bind as cb\nimport cutlass\n",
        "x: typing.Annotated[cb.Tensor[cutlass.Int8, 1], 1], y: typing.Annotated[cb.Tensor, 1]",
        [None, "CB102"],
    ),
    ("from cutlass.cute.typing import Tensor\n", "x: Tensor", [None]),
    # Sequences: the origin by qualified name, the elements through the same resolution.
    (
        "from typing import Tuple, List\nfrom collections.abc import Sequence as Seq\n",
        "x: Tuple[int, ...], y: List[float], z: Seq",
        [None, None, None],
    ),
    (
        "import cutlass\nimport cute_bind\nP = cute_bind.Pointer[cutlass.Int8]\nPair = tuple[int, int]\n",
        "x: tuple[P, int], y: tuple[Pair, int], z: list[Pair]",
        [None, "CB113", "CB113"],
    ),
    ("import cutlass\nN = cutlass.Float8E5M2\nH = cutlass.BFloat16\n", "x: tuple[H, H], y: tuple[H, N], z: N", [None, "CB113", "CB104"]),
    ("import cutlass\nfrom cutlass import Constexpr as C\n", "x: tuple[C[int], int], y: C[tuple[int, tuple[int]]]", ["CB113", None]),
    ("import typing\nimport cutlass\n", "x: typing.Tuple[()], y: tuple[()], z: tuple[int, ...]", [None, None, None]),
    ("from typing import List as list\n", "x: list[list[int]]", ["CB113"]),
    ("class tuple:\n    pass\n", "x: tuple, y: 'tuple'", ["CB102", "CB102"]),
]


@pytest.mark.parametrize("prelude, params, codes", RESOLUTION_CASES, ids=[c[1] for c in RESOLUTION_CASES])
def test_name_resolution(prelude: str, params: str, codes: list[str | None]) -> None:
    source = f"import cute_bind\n{prelude}\n@cute_bind.kernel\ndef k({params}):\n    pass\n"
    found = {d.parameter: d.code for d in analyze_source(source).diagnostics()}
    names = [a.arg for a in ast.parse(f"def k({params}): pass").body[0].args.args]  # type: ignore[attr-defined]
    assert [found.get(n) for n in names] == codes


# CB113 names the first offending element by its index and spells it as the
# runtime sees it (aliases expanded). The agreement test compares these texts
# with the runtime's on the corpus; these pin the rule where the DSL is absent.
DETAIL_CASES = [
    ("x: tuple[int, tuple[int, int]]", "element 1: tuple[int, int] is a sequence"),
    ("x: list[Pair]", "element 0: tuple[int, int] is a sequence"),
    ("x: tuple[int, list[Params]]", "element 1: list[m.Params] is a sequence"),
    ("x: tuple[int, cutlass.Constexpr[int]]", "element 1: cutlass.Constexpr[int] is not a pointer, scalar, stream or tensor"),
    ("x: tuple[Narrow, ...]", "element 0: cutlass.Float8E4M3FN is not a pointer, scalar, stream or tensor"),
    ("x: tuple[int, cute.Pointer, Params]", "element 2: m.Params is not a pointer, scalar, stream or tensor"),
]


@pytest.mark.parametrize("params, detail", DETAIL_CASES, ids=[c[0] for c in DETAIL_CASES])
def test_sequence_element_detail(params: str, detail: str) -> None:
    source = (
        "import cute_bind\nimport cutlass\nimport cutlass.cute as cute\n"
        "Pair = tuple[int, int]\nNarrow = cutlass.Float8E4M3FN\nclass Params:\n    pass\n"
        f"@cute_bind.kernel\ndef k({params}):\n    pass\n"
    )
    (found,) = analyze_source(source, module="m").diagnostics()
    assert (found.code, found.detail) == ("CB113", detail)
    assert f"({detail})" in found.message


def test_class_bodies_are_not_visible_from_nested_functions() -> None:
    source = textwrap.dedent(
        """\
        import cute_bind
        import cutlass

        class Box:
            Scalar = cutlass.Int32

            @cute_bind.kernel
            def method_level(x: Scalar):
                pass

            def factory(self):
                @cute_bind.kernel
                def nested(x: Scalar):
                    pass
        """
    )
    found = [(d.kernel, d.code) for d in analyze_source(source).diagnostics()]
    # ``method_level`` sees the class body (annotations are evaluated there); ``nested`` does not.
    assert found == [("nested", "CB107")]


def test_no_dsl_import_and_module_entry_point() -> None:
    """The checker runs without importing the DSL (fast, works where it is not installed)."""
    path = str(CORPUS / "corpus_rejected.py")
    code = (
        "import sys; from cute_bind.static.checker import main; rc = main(sys.argv[1:]); "
        "print('dsl imported:', any(m.split('.')[0] in ('cutlass', 'cuda', 'torch') for m in sys.modules)); "
        "sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code, path], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "dsl imported: False"
    module = subprocess.run(
        [sys.executable, "-m", "cute_bind.static.checker", "check", path], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert module.returncode == 1
    assert module.stdout.splitlines() == proc.stdout.splitlines()[:-1]


def test_pre_commit_hook_definition() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = {h["id"]: h for h in hooks}["cute-bind-check"]
    assert hook["entry"] == "cute-bind check"
    assert hook["language"] == "python"
    assert hook["types"] == ["python"]


DECORATOR_PRELUDE = """\
import cutlass
import cutlass.cute as cute
import cute_bind
import cute_bind as cb
from cute_bind import kernel
"""


@pytest.mark.parametrize(
    "decorators, codes",
    [
        ("@cute.jit\n@cute_bind.kernel", ["CB116"]),
        ("@cute.jit()\n@cb.kernel(checked=True)", ["CB116"]),
        ("@cute.kernel\n@kernel", ["CB116"]),
        ("@cute_bind.kernel\n@cute.kernel", ["CB117"]),
        ("@kernel(checked=True)\n@cute.kernel", ["CB117"]),
        ("@cute_bind.kernel\n@cute.jit", []),
        ("@cb.kernel(checked=True)\n@cute.jit(preprocess=True)", []),
        ("@kernel", []),
        ("@cute.jit", []),  # not a cute_bind kernel: nothing to say
    ],
)
def test_decorator_forms_that_cannot_work(decorators: str, codes: list[str]) -> None:
    """CB116/CB117 as the decorator raises them at import, on the decorator's line, with the runtime's text."""
    source = DECORATOR_PRELUDE + decorators + "\ndef f(n: cutlass.Int32):\n    pass\n"
    found = analyze_source(source).diagnostics()
    assert [d.code for d in found] == codes
    for d in found:
        assert source.splitlines()[d.line - 1].lstrip().startswith("@cute.")
        assert d.message.startswith(f"[{d.code}] kernel 'f': ")


CALL_FORM_CASES = [
    # (module text after the prelude, [(code, kernel, parameter)]): cute_bind.kernel(fn) as a call
    ("def f(n: cutlass.Int32, m):\n    pass\nk = cute_bind.kernel(f)\n", [("CB101", "f", "m")]),
    ("def f(m):\n    pass\nk = cb.kernel(f, name='fast')\n", [("CB101", "fast", "m")]),
    ("def f(m):\n    pass\nk = kernel(f)\nj = kernel(f, name='again')\n", [("CB101", "f", "m")]),  # the first call names it
    ("def f(*rest):\n    pass\nKERNELS = {'f': cute_bind.kernel(f)}\n", [("CB106", "f", "rest")]),
    ("def f(m):\n    pass\nk = cute_bind.kernel(checked=True, name='safe')(f)\n", [("CB101", "safe", "m")]),
    ("def f(m):\n    pass\nk = kernel()(f)\n", [("CB101", "f", "m")]),
    ("@cute.jit\ndef f(m):\n    pass\nif True:\n    k = cute_bind.kernel(f)\n", [("CB101", "f", "m")]),
    ("@cute.kernel\ndef f(n: cutlass.Int32):\n    pass\nk = cute_bind.kernel(f)\n", [("CB117", "f", "")]),
    # not this def: the call comes before it, a later def rebinds the name, or the call is in a body
    ("k = None\ndef f(m):\n    pass\n", []),
    ("def f(m):\n    pass\nk = cute_bind.kernel(f)\ndef f(n: cutlass.Int32):\n    pass\n", [("CB101", "f", "m")]),
    ("def f(m):\n    pass\ndef f(n: cutlass.Int32):\n    pass\nk = cute_bind.kernel(f)\n", []),
    ("def f(m):\n    pass\ndef make():\n    return cute_bind.kernel(f)\n", []),
    ("def f(m):\n    pass\ntry:\n    k = cute_bind.kernel(f)\nexcept TypeError:\n    k = None\n", []),  # guarded: a probe
    ("def f(m):\n    pass\ntry:\n    pass\nfinally:\n    k = cute_bind.kernel(f)\n", [("CB101", "f", "m")]),
    ("def f(m):\n    pass\ntry:\n    k = cute_bind.kernel(f)\nexcept* TypeError:\n    k = None\n", []),
    ("def f(m):\n    pass\nk = other.kernel(f)\nj = cute_bind.kernel(lambda m: m)\n", []),
    ("class C:\n    def f(self, m):\n        pass\n    k = cute_bind.kernel(f)\n", []),
]


@pytest.mark.parametrize("body, expected", CALL_FORM_CASES, ids=[str(i) for i in range(len(CALL_FORM_CASES))])
def test_the_call_form_of_the_decorator(body: str, expected: list[tuple[str, str, str]]) -> None:
    """``k = cute_bind.kernel(f)`` among the module's statements checks ``f`` as the decorator does
    (the runtime raises the same codes at that call)."""
    source = DECORATOR_PRELUDE + "other = None\n" + body
    found = analyze_source(source).diagnostics()
    assert [(d.code, d.kernel, d.parameter) for d in found] == expected
    if expected:  # the runtime, at the first call form, raises the first code the check reports
        with pytest.raises(CuteBindError) as info:
            exec(compile(source, "<call form>", "exec"), {})
        assert info.value.code == expected[0][0]


def test_the_eligibility_page_names_every_code_the_check_reports() -> None:
    """docs/concepts/eligibility.md, "Before you run anything": its list of the rules checked statically is the check's."""
    text = " ".join((ROOT / "docs" / "concepts" / "eligibility.md").read_text(encoding="utf-8").split())
    listed = re.search(r"The same rules \(([^)]*)\)", text)
    assert listed is not None
    assert set(re.findall(r"CB\d{3}", listed[1])) == REPORTED_CODES


@pytest.mark.parametrize(
    "body, codes",
    [
        # @cute_bind.kernel over a method in its class body: CB127 at the decorator, its self not a CB101
        ("class K:\n    @cute_bind.kernel\n    @cute.jit\n    def host(self, n: cutlass.Int32):\n        pass\n", ["CB127"]),
        ("class K:\n    @kernel\n    def host(self, n):\n        pass\n", ["CB127", "CB101"]),  # its other parameters still checked
        ("class K:\n    @cute_bind.kernel\n    def host(self: cute.Tensor):\n        pass\n", []),  # an annotated self: a parameter
        ("@cute_bind.kernel\ndef host(self, n: cutlass.Int32):\n    pass\n", ["CB101"]),  # not in a class body
    ],
)
def test_a_method_in_its_class_body_is_cb127_as_at_import(body: str, codes: list[str]) -> None:
    source = DECORATOR_PRELUDE + body
    found = analyze_source(source).diagnostics()
    assert [d.code for d in found] == codes
    if codes[:1] == ["CB127"]:
        assert source.splitlines()[found[0].line - 1].lstrip().startswith("@")
        assert "the method host in its class body" in found[0].message
