"""The mypy plugin (``plugins = cute_bind.mypy``) on the static corpus.

mypy runs once over the whole corpus (plus a few extra files written here);
the tests read that one report. A second, plugin-less run shows what the
plugin changes for ``cute_bind.Pointer[...]`` and ``cute_bind.Tensor[...]`` annotations.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

from tests.static.corpus_support import CORPUS, FILES, expected, mypy_config  # noqa: E402

_REPORT = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|note): (?P<message>.*?)(?:  \[(?P<code>[a-z0-9-]+)\])?$"
)
_OURS = re.compile(r"^\[(?P<cb>CB\d{3})\] kernel '(?P<kernel>[^']*)', parameter '(?P<parameter>[^']*)': .+\.$")


# Written next to the corpus run: what an editor user relies on besides the codes.
EXTRA = """\
import cutlass.cute as cute

import cute_bind


@cute_bind.kernel
def silenced(n):  # type: ignore[cute-bind]
    pass


@cute_bind.kernel
def still_typed(out: cute.Pointer, n) -> None:
    pass


reveal_type(still_typed)


@cute_bind.kernel
def silenced_one(n):  # type: ignore[cute-bind-cb101]
    pass


@cute_bind.kernel
def other_code_ignored(n):  # type: ignore[cute-bind-cb102]
    pass
"""

# Tensor layouts in the spellings users write: the string form trips mypy's own
# forward-reference lookup before the plugin runs (a documented limitation).
TENSOR_LAYOUTS = """\
import cutlass

import cute_bind

STATIC = "static"


@cute_bind.kernel
def layouts(
    constant: cute_bind.Tensor[cutlass.Float32, 2, 16, STATIC],
    leading: cute_bind.Tensor[cutlass.Float32, 2, None, 1],
    string: cute_bind.Tensor[cutlass.Float32, 2, 16, "static"],
    in_tuple: tuple[cute_bind.Tensor[cutlass.Float32, 1], int],
) -> None:
    pass


def plain(in_tuple: tuple[cute_bind.Tensor[cutlass.Float32, 1], int]) -> None:
    pass


reveal_type(layouts)
reveal_type(plain)
"""

# On disk: an eligible kernel. The editor's unsaved buffer (``--shadow-file``): not.
SHADOWED_ON_DISK = """\
import cute_bind


@cute_bind.kernel
def edited(n: int) -> None:
    pass
"""
SHADOW_BUFFER = """\
import cute_bind


# a line added in the editor
@cute_bind.kernel
def edited(n) -> None:
    pass
"""


@dataclass(frozen=True)
class Report:
    path: str
    line: int
    col: int
    severity: str
    message: str
    code: str | None


def run_mypy(config: Path, *args: str) -> list[Report]:
    stdout, stderr, status = mypy_api.run(["--config-file", str(config), "--cache-dir", str(config.parent / "cache"), *args])
    assert status in (0, 1), f"mypy crashed (status {status}):\n{stdout}\n{stderr}"
    reports = []
    for line in stdout.splitlines():
        m = _REPORT.match(line)
        assert m, f"unexpected mypy output line: {line!r}"
        reports.append(Report(str(Path(m["path"]).resolve()), int(m["line"]), int(m["col"]), m["severity"], m["message"], m["code"]))
    return reports


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("mypy")
    (d / "extra").mkdir()
    (d / "extra" / "plugin_extras.py").write_text(EXTRA)
    (d / "extra" / "shadowed.py").write_text(SHADOWED_ON_DISK)
    (d / "extra" / "tensor_layouts.py").write_text(TENSOR_LAYOUTS)
    (d / "shadow_buffer.py").write_text(SHADOW_BUFFER)
    return d


@pytest.fixture(scope="module")
def reports(workdir: Path) -> list[Report]:
    """One mypy run, with the plugin, over the corpus and the extra files."""
    config = workdir / "with_plugin" / "mypy.ini"
    config.parent.mkdir()
    config.write_text(mypy_config())
    shadowed = workdir / "extra" / "shadowed.py"
    return run_mypy(config, "--shadow-file", str(shadowed), str(workdir / "shadow_buffer.py"), str(CORPUS), str(workdir / "extra"))


def ours(reports: list[Report], path: Path) -> list[Report]:
    return [r for r in reports if r.path == str(path.resolve()) and (r.code or "").startswith("cute-bind")]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_codes_at_parameter_lines(reports: list[Report], path: Path) -> None:
    found = [(_OURS.match(r.message), r) for r in ours(reports, path)]
    assert all(m for m, _ in found), [r.message for m, r in found if not m]  # '[CBxxx] kernel ..., parameter ...: ...'
    assert Counter((m["cb"], r.line) for m, r in found if m) == expected(path)
    # each finding carries its own mypy code, a sub-code of cute-bind (one per catalog code)
    assert all(m and r.code == f"cute-bind-{m['cb'].lower()}" for m, r in found), [(r.code, r.message) for _, r in found]
    assert all(r.severity == "error" for _, r in found)


def test_columns_point_at_the_parameter(reports: list[Report]) -> None:
    path = CORPUS / "corpus_rejected.py"
    lines = path.read_text().splitlines()
    for r in ours(reports, path):
        parameter = _OURS.match(r.message)["parameter"]  # type: ignore[index]
        assert lines[r.line - 1][r.col - 1 :].lstrip("*").startswith(parameter), r


def test_eligible_file_type_checks_cleanly(reports: list[Report]) -> None:
    """No false positives, and cute_bind.Pointer[...] and cute_bind.Tensor[...] are valid annotations."""
    assert [r for r in reports if r.path == str((CORPUS / "corpus_eligible.py").resolve())] == []


# The annotation helpers the plugin types (their subscription is not a generic type).
HELPERS = ("cute_bind.Pointer[", "cute_bind.Tensor[")


def test_without_the_plugin_helper_annotations_are_errors(workdir: Path) -> None:
    """The control for the test above: mypy alone rejects ``cute_bind.Pointer[...]`` and
    ``cute_bind.Tensor[...]``, and nothing else in the file."""
    config = workdir / "without_plugin" / "mypy.ini"
    config.parent.mkdir()
    config.write_text(mypy_config(plugin=False))
    found = run_mypy(config, str(CORPUS / "corpus_eligible.py"))
    lines = (CORPUS / "corpus_eligible.py").read_text().splitlines()
    flagged = {lines[r.line - 1] for r in found if r.severity == "error"}
    assert all(any(h in line for h in HELPERS) for line in flagged), flagged
    for helper in HELPERS:  # each helper is flagged somewhere, so the plugin is what makes the file clean
        assert any(helper in line for line in flagged), helper


def test_type_ignore_and_decorated_type(reports: list[Report], workdir: Path) -> None:
    """``# type: ignore[cute-bind]`` silences every finding on its line and ``[cute-bind-cb101]`` that
    code alone (another code's ignore does not); errors do not break the decorator's typing."""
    path = workdir / "extra" / "plugin_extras.py"
    mine = [r for r in reports if r.path == str(path.resolve())]
    errors = [(r.line, r.code) for r in mine if r.severity == "error"]
    other = EXTRA.splitlines().index("def other_code_ignored(n):  # type: ignore[cute-bind-cb102]") + 1
    # ``still_typed``'s ``n`` and ``other_code_ignored``'s; not ``silenced``/``silenced_one``, no overload error
    assert errors == [(12, "cute-bind-cb101"), (other, "cute-bind-cb101")]
    notes = [r.message for r in mine if r.severity == "note" and r.message.startswith("Revealed type")]
    assert notes == ['Revealed type is "cute_bind.jit.decorator.Kernel[[out: Any, n: Any]]"']


def test_tensor_annotations_are_any_and_string_layouts_are_the_documented_gap(reports: list[Report], workdir: Path) -> None:
    """``cute_bind.Tensor[...]`` is ``Any`` wherever it appears; only the string layout is an
    error, mypy's own (cute_bind.mypy's docstring says so and gives the constant workaround)."""
    path = workdir / "extra" / "tensor_layouts.py"
    mine = [r for r in reports if r.path == str(path.resolve())]
    errors = [(r.line, r.code, r.message) for r in mine if r.severity == "error"]
    string_line = TENSOR_LAYOUTS.splitlines().index('    string: cute_bind.Tensor[cutlass.Float32, 2, 16, "static"],') + 1
    assert errors == [(string_line, "name-defined", 'Name "static" is not defined')]
    notes = [r.message for r in mine if r.severity == "note"]
    # in a kernel's parameters and in any other annotation alike
    assert notes == [
        'Revealed type is "cute_bind.jit.decorator.Kernel[[constant: Any, leading: Any, string: Any, in_tuple: tuple[Any, int]]]"',
        'Revealed type is "def (in_tuple: tuple[Any, int])"',
    ]


def test_shadow_file_is_what_gets_checked(reports: list[Report], workdir: Path) -> None:
    """Editors pass unsaved buffers with ``--shadow-file``: positions come from the buffer."""
    found = ours(reports, workdir / "extra" / "shadowed.py")
    assert [(r.line, _OURS.match(r.message)["cb"]) for r in found] == [(6, "CB101")]  # type: ignore[index]


def test_messages_equal_the_cli_output(reports: list[Report]) -> None:
    """The plugin and ``cute-bind check`` print the same text for the same parameter."""
    from cute_bind.static.checker import check_file

    for path in FILES:
        cli = [(d.line, d.column + 1, d.message) for d in check_file(str(path))]
        plugin = [(r.line, r.col, r.message) for r in ours(reports, path)]
        assert sorted(plugin) == sorted(cli)


def test_entry_point_and_error_code() -> None:
    """``plugins = cute_bind.mypy`` finds ``plugin()``; ``cute-bind`` is the code users silence."""
    from cute_bind.mypy import CUTE_BIND, CuteBindPlugin, plugin

    assert plugin("2.4.1") is CuteBindPlugin
    assert CUTE_BIND.code == "cute-bind"


# A type mypy can see where the function declares a DSL numeric type: typed as
# declared, bind(2.0, ...) would be "float, expected Float32" on correct code.
SLOT_VALUES = """\
import cute_bind


class Float32:
    \"\"\"Stands in for a DSL numeric type whose stubs mypy reads.\"\"\"


@cute_bind.kernel
def k(alpha: Float32, n: int) -> None:
    pass


k.bind(2.0, 3)
k.bind(2.0, 3).launch(4.0, 5)
k(2.0, n=3)
k.compile(2.0, 3)
k.bind(2.0)  # expect: call-arg
k.bind(2.0, 3, 4)  # expect: call-arg
k.bind(alpha=2.0, m=3)  # expect: call-arg
"""


def test_slots_take_python_values_and_the_arity_is_still_checked(workdir: Path) -> None:
    folder = workdir / "slot_values"
    folder.mkdir()
    (folder / "slot_values.py").write_text(SLOT_VALUES)
    config = folder / "mypy.ini"
    config.write_text(mypy_config())
    found = run_mypy(config, str(folder / "slot_values.py"))
    lines = SLOT_VALUES.splitlines()
    assert not [r for r in found if r.code == "arg-type"], found
    flagged = {r.line for r in found if r.code == "call-arg"}
    assert flagged == {i for i, line in enumerate(lines, 1) if "# expect: call-arg" in line}, found


def test_plugin_that_cannot_see_cute_bind_stops_mypy_with_the_fix(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.child import child_env

    (tmp_path / "user.py").write_text("import cute_bind\n\n\n@cute_bind.kernel\ndef f(n):\n    pass\n")
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = cute_bind.mypy\nignore_missing_imports = True\n")
    env = child_env()  # the plugin imports; mypy's own search does not see it
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-site-packages", "--config-file", "mypy.ini", "user.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "cannot find the cute_bind package" in output, output
    assert "mypy_path" in output and "pip install -e ." in output


def test_source_that_cannot_be_read_is_reported_not_skipped(workdir: Path) -> None:
    config = workdir / "from_string" / "mypy.ini"
    config.parent.mkdir()
    config.write_text(mypy_config())
    stdout, _, status = mypy_api.run(
        [
            "--config-file",
            str(config),
            "--cache-dir",
            str(config.parent / "cache"),
            "-c",
            "import cute_bind\n@cute_bind.kernel\ndef f(n): pass\n",
        ]
    )
    assert status == 1 and "could not be read" in stdout and "[cute-bind]" in stdout, stdout


#: the configuration docs/concepts/eligibility.md gives (mypy reads cutlass's own classes there),
#: plus the output settings run_mypy parses
DOCUMENTED_CONFIG = (
    "[mypy]\nplugins = cute_bind.mypy\nshow_column_numbers = True\nerror_summary = False\n"
    "[mypy-cutlass.*]\nignore_missing_imports = True\n[mypy-cuda.*]\nignore_missing_imports = True\n"
)


DSL_TYPED_DEFAULTS = """\
import cutlass
import cutlass.cute as cute

import cute_bind


@cute_bind.kernel
def with_defaults(
    out: cute_bind.Pointer[cutlass.Int32],
    value: cutlass.Int32,
    extra: cutlass.Int32 = cutlass.Int32(5),
    alpha: cutlass.Float32 = cutlass.Float32(0.5),
):
    o = cute.make_tensor(out, cute.make_layout(1))
    o[0] = value + extra


@cute_bind.kernel
def python_default(out: cute_bind.Pointer[cutlass.Int32], extra: cutlass.Int32 = 5):  # expect: assignment
    pass


def use() -> None:
    with_defaults(0, 1)
    with_defaults.bind(0, 1, 2, 0.25)
"""


def test_dsl_typed_defaults_type_check_and_python_ones_are_mypys_own_finding(workdir: Path) -> None:
    """What docs/concepts/eligibility.md says of defaults: mypy checks a default against its annotation
    itself (no cute_bind code), so the DSL-typed spelling is clean and `= 5` is mypy's [assignment]."""
    folder = workdir / "dsl_defaults"
    folder.mkdir()
    (folder / "dsl_defaults.py").write_text(DSL_TYPED_DEFAULTS)
    config = folder / "mypy.ini"
    config.write_text(DOCUMENTED_CONFIG)
    found = run_mypy(config, str(folder / "dsl_defaults.py"))
    lines = DSL_TYPED_DEFAULTS.splitlines()
    assert {(r.line, r.code) for r in found} == {(i, "assignment") for i, line in enumerate(lines, 1) if "# expect: assignment" in line}, (
        found
    )


OVER_JIT = """\
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

import cute_bind


@cute_bind.kernel
@cute.jit
def over_jit(a: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream = None):
    pass


def use(x: object) -> None:
    over_jit(x, 1)
    over_jit(x, 2.5, stream=None)  # a slot takes Python values: no arg-type error
    over_jit.bind(x, 1, None)
    over_jit(x)  # expect: call-arg
    over_jit.bind(x)  # expect: call-arg
    over_jit(x, 1, None, 7)  # expect: call-arg
    over_jit(x, 1, strem=None)  # expect: call-arg
"""


def test_the_parameters_of_a_def_under_cute_jit_are_the_kernels(workdir: Path) -> None:
    """@cute.jit is typed (*Any, **Any): under @cute_bind.kernel the def's own parameters count."""
    folder = workdir / "over_jit"
    folder.mkdir()
    (folder / "over_jit.py").write_text(OVER_JIT)
    config = folder / "mypy.ini"
    config.write_text(DOCUMENTED_CONFIG)
    found = run_mypy(config, str(folder / "over_jit.py"))
    lines = OVER_JIT.splitlines()
    assert {(r.line, r.code) for r in found if r.severity == "error"} == {
        (i, "call-arg") for i, line in enumerate(lines, 1) if "# expect: call-arg" in line
    }, found


CALL_FORMS = """\
import cutlass
import cutlass.cute as cute

import cute_bind


def plain(n: cutlass.Int32, m) -> None:  # expect: CB101
    pass


@cute.jit
def jitted(*rest) -> None:  # expect: CB106
    pass


def inside(m) -> None:
    pass


fast = cute_bind.kernel(plain)
again = cute_bind.kernel(plain)  # the second call: reported once, at the first
safe = cute_bind.kernel(checked=True)(jitted)


def make() -> object:
    return cute_bind.kernel(inside)  # in a function body: checked when it runs
"""


def test_the_call_form_is_checked_like_the_decorator(workdir: Path) -> None:
    """``k = cute_bind.kernel(fn)`` among the module's statements: fn's diagnostics at its parameters,
    as ``cute-bind check`` reports them, once per def."""
    folder = workdir / "call_forms"
    folder.mkdir()
    (folder / "call_forms.py").write_text(CALL_FORMS)
    config = folder / "mypy.ini"
    config.write_text(DOCUMENTED_CONFIG)
    found = [r for r in run_mypy(config, str(folder / "call_forms.py")) if (r.code or "").startswith("cute-bind")]
    lines = CALL_FORMS.splitlines()
    expected = sorted((i, line.split("# expect: ")[1]) for i, line in enumerate(lines, 1) if "# expect: " in line)
    assert sorted((r.line, r.message.split("]")[0].lstrip("[")) for r in found) == expected, found
