"""The public API as a type checker sees it: the kernel's parameters flow into bind() and launch()."""

import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parent.parent

SOURCE = textwrap.dedent(
    """\
    import cute_bind

    @cute_bind.kernel
    def f(n: int, x: float, flag: bool) -> None:
        pass

    @cute_bind.kernel(name="g", checked=True)
    def g(n: int) -> None:
        pass

    h = f.bind(1, 2.0, True)
    reveal_type(h)
    reveal_type(h.launch)
    reveal_type(g)
    f.bind(1)                      # E1: missing arguments
    f.bind(1, 2.0, True, 4)        # E2: too many arguments
    h.launch(1, "a", True)         # E3: wrong type for x
    h.launch(1, 2.0, True, n=3)    # E4: n given twice
    ok: int | None = h.launch(1, 2.0, flag=False)
    """
)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("typed")
    (d / "user.py").write_text(SOURCE)
    (d / "mypy.ini").write_text(
        f"[mypy]\nmypy_path = {ROOT}\nplugins = cute_bind.mypy\nstrict = True\n"
        "[mypy-cutlass.*]\nfollow_imports = skip\nignore_missing_imports = True\n"
        "[mypy-cuda.*]\nfollow_imports = skip\nignore_missing_imports = True\n"
    )
    out, err, _ = mypy_api.run(["--config-file", str(d / "mypy.ini"), "--no-incremental", "--show-error-codes", str(d / "user.py")])
    return out.splitlines()


def _at(report, line):
    return [r for r in report if f"user.py:{line}:" in r]


def test_parameters_visible_in_bind_and_launch(report):
    assert any("PreparedLaunch[[n: int, x: float, flag: bool]]" in r for r in _at(report, 12)), report
    assert any("def (n: int, x: float, flag: bool) -> int | None" in r for r in _at(report, 13)), report
    assert any("Kernel[[n: int]]" in r for r in _at(report, 14)), report


@pytest.mark.parametrize("line, fragment", [(15, "Missing positional arguments"), (16, "Too many arguments"), (17, 'incompatible type "str"'), (18, 'multiple values for keyword argument "n"')])
def test_misuse_is_an_error(report, line, fragment):
    assert any(fragment in r and "error" in r for r in _at(report, line)), (line, report)


def test_correct_use_is_clean(report):
    assert not [r for r in _at(report, 19) if "error" in r], report
