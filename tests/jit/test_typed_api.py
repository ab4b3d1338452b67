"""The public API as a type checker sees it: the kernel's parameters flow into bind() and launch()."""

import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[2]

# Lines are found by their trailing ``# tag`` comment, so the source can grow.
SOURCE = textwrap.dedent(
    """\
    import cutlass
    import cutlass.cute as cute
    import cute_bind

    @cute_bind.kernel
    def f(n: int, x: float, flag: bool) -> None:
        pass

    @cute_bind.kernel(name="g", checked=True)
    def g(n: int) -> None:
        pass

    @cute_bind.kernel
    def t(
        out: cute_bind.Tensor[cutlass.Float32, 2, 16],
        ptr: cute_bind.Pointer[cutlass.Float32, 16],
        sizes: tuple[int, ...],
        pair: tuple[cute_bind.Tensor[cutlass.Float16, 1], float],
    ) -> None:
        pass

    h = f.bind(1, 2.0, True)
    reveal_type(h)  # reveal-h
    reveal_type(h.launch)  # reveal-launch
    reveal_type(g)  # reveal-g
    reveal_type(t.bind)  # reveal-t
    f.bind(1)                      # E1: missing arguments
    f.bind(1, 2.0, True, 4)        # E2: too many arguments
    h.launch(1, "a", True)         # E3: wrong type for x
    h.launch(1, 2.0, True, n=3)    # E4: n given twice
    t.bind(object(), 0, (1, 2), (object(), "b"))  # E5: a tensor slot is Any, the tuple's float is not
    ok: int | None = h.launch(1, 2.0, flag=False)  # ok-launch
    th = t.bind(object(), 0, (1, 2, 3), (object(), 1.0))  # ok-tensor
    """
)


def _line(tag):
    """1-based line of ``SOURCE`` whose comment starts with ``tag``."""
    (found,) = [i for i, text in enumerate(SOURCE.splitlines(), 1) if f"# {tag}" in text]
    return found


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


def _at(report, tag):
    return [r for r in report if f"user.py:{_line(tag)}:" in r]


@pytest.mark.parametrize(
    "tag, fragment",
    [
        ("reveal-h", "PreparedLaunch[[n: int, x: float, flag: bool]]"),
        ("reveal-launch", "def (n: int, x: float, flag: bool) -> int | None"),
        ("reveal-g", "Kernel[[n: int]]"),
        # cute_bind.Tensor[...] and cute_bind.Pointer[...] are Any, also inside a sequence
        ("reveal-t", "def (out: Any, ptr: Any, sizes: tuple[int, ...], pair: tuple[Any, float])"),
    ],
)
def test_parameters_visible_in_bind_and_launch(report, tag, fragment):
    assert any(fragment in r for r in _at(report, tag)), report


@pytest.mark.parametrize(
    "tag, fragment",
    [
        ("E1", "Missing positional arguments"),
        ("E2", "Too many arguments"),
        ("E3", 'incompatible type "str"'),
        ("E4", 'multiple values for keyword argument "n"'),
        ("E5", '"tuple[object, str]"; expected "tuple[Any, float]"'),
    ],
)
def test_misuse_is_an_error(report, tag, fragment):
    assert any(fragment in r and "error" in r for r in _at(report, tag)), (tag, report)


@pytest.mark.parametrize("tag", ["ok-launch", "ok-tensor"])
def test_correct_use_is_clean(report, tag):
    assert not [r for r in _at(report, tag) if "error" in r], report


def test_only_the_intended_errors(report):
    """Everything mypy --strict reports is one of the E-tagged misuses (no error from the annotations)."""
    error_lines = {int(r.split(":")[1]) for r in report if ": error:" in r}
    assert error_lines == {_line(f"E{i}") for i in range(1, 6)}, report
