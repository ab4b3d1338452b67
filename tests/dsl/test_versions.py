"""What differs between the supported DSL versions, and the CI matrix that tests each of them.

The matrix (``.ci/dsl_matrix``) runs the contract tests and the core CPU suite
in one virtual environment per supported minor version; the main CI run covers
the newest. ``import_torch`` keeps the package (and ``tests/optional.py`` the
tests) away from the DSL's own ``base_dsl/torch.py``, which DSL 4.6 and 4.7
put on ``sys.path``.
"""

import ast
import pathlib
import re
import subprocess
import sys

import pytest

import cute_bind
from cute_bind import dsl

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _matrix_versions() -> list[str]:
    text = (ROOT / ".ci" / "dsl_matrix").read_text()
    m = re.search(r'^VERSIONS=\$\{CUTE_BIND_DSL_MATRIX:-"([^"]+)"\}', text, re.M)
    assert m, ".ci/dsl_matrix no longer sets VERSIONS"
    return m.group(1).split()


def _minor(version: str) -> tuple[int, int]:
    major, minor = dsl.version._version_tuple(version)[:2]
    return major, minor


def test_ci_matrix_covers_every_supported_minor_but_the_newest():
    versions = _matrix_versions()
    assert all(dsl.version_supported(v) for v in versions), versions
    assert dsl.version._version_tuple(versions[0]) == dsl.version._SUPPORTED_MIN, "the oldest supported version is the one tested"
    newest = _minor(".".join(map(str, dsl.version._SUPPORTED_MAX_EXCLUSIVE)))
    expected = {(newest[0], m) for m in range(dsl.version._SUPPORTED_MIN[1], newest[1] - 1)}
    assert {_minor(v) for v in versions} == expected, "one version per supported minor except the newest (the main run's)"


def test_ci_runs_the_matrix():
    assert re.search(r"^bash \.ci/dsl_matrix\b", (ROOT / ".ci" / "run").read_text(), re.M)


def test_readme_names_the_tested_versions():
    readme = (ROOT / "README.md").read_text()
    assert dsl.SUPPORTED_VERSIONS in readme
    for v in _matrix_versions():
        assert v in readme, f"README does not say {v} is tested"


def test_features_match_the_installed_dsl():
    f = dsl.features()
    import cutlass.base_dsl.jit_executor as je

    assert f.spec_reentry == hasattr(je, "_pyir_validate_spec_reentry")
    assert f.unload_callback == hasattr(je, "register_library_unload_callback")
    dsl_folder = pathlib.Path(je.__file__).resolve().parent
    assert f.base_dsl_on_path == any(p and pathlib.Path(p).resolve() == dsl_folder for p in sys.path)


def test_version_checks_live_in_dsl_module_only():
    """One place decides what differs between versions: nothing else in the package compares DSL versions."""
    pkg = pathlib.Path(cute_bind.__file__).parent
    offenders = []
    for path in sorted(pkg.rglob("*.py")):
        if path.relative_to(pkg).parts[0] == "dsl" or path.name == "__main__.py":  # the command line only reports the version
            continue
        text = path.read_text()
        for needle in ("_version_tuple(", "version_supported(", "_SUPPORTED_M", "cutlass.__version__"):
            if needle in text:
                offenders.append(f"{path.relative_to(pkg)}: {needle}")
    assert not offenders, offenders


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (annotations' imports: never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def test_package_never_imports_torch_directly():
    """Every torch import that runs goes through dsl.import_torch (never the DSL's base_dsl/torch.py);
    ``if TYPE_CHECKING:`` imports name torch's types for annotations and never run."""
    pkg = pathlib.Path(cute_bind.__file__).parent
    offenders = []
    for path in sorted(pkg.rglob("*.py")):
        tree = ast.parse(path.read_text())
        annotations_only = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in annotations_only:
                continue
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "torch" or n.startswith("torch.") for n in names):
                offenders.append(f"{path.relative_to(pkg)}:{node.lineno}")
    assert not offenders, offenders


# ------------------------------------------------------------------ the sys.path trap
@pytest.fixture
def fake_dsl(tmp_path, monkeypatch):
    """A stand-in for the DSL's base_dsl/ folder on sys.path, holding a module that fails the way the DSL's torch.py does."""
    folder = tmp_path / "cutlass" / "base_dsl"
    folder.mkdir(parents=True)
    (folder / "cb_trap.py").write_text("import sys\nsys.cb_trap_ran = True\nfrom .typing import Numeric\n")
    monkeypatch.setattr(dsl.imports, "_dsl_folders", lambda: frozenset({str(folder.resolve())}))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delattr(sys, "cb_trap_ran", raising=False)
    yield folder
    sys.modules.pop("cb_trap", None)


def test_missing_module_is_module_not_found_and_the_dsl_file_never_runs(fake_dsl):
    with pytest.raises(ImportError) as plain:
        __import__("cb_trap")  # what `import torch` does there: a bare ImportError from the DSL's file
    assert not isinstance(plain.value, ModuleNotFoundError)
    del sys.cb_trap_ran
    with pytest.raises(ModuleNotFoundError):
        dsl.imports._import_outside_dsl("cb_trap")
    assert not hasattr(sys, "cb_trap_ran")


def test_real_module_after_the_dsl_folder_is_found(fake_dsl, tmp_path, monkeypatch):
    real = tmp_path / "site"
    (real / "cb_trap").mkdir(parents=True)
    (real / "cb_trap" / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(real))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(real)] + [str(real)])  # after the DSL's folder
    module = dsl.imports._import_outside_dsl("cb_trap")
    assert module.REAL and sys.modules["cb_trap"] is module and not hasattr(sys, "cb_trap_ran")


def test_import_torch_on_this_install():
    """Real torch where it is installed, ModuleNotFoundError where not, even with the DSL's folder on sys.path."""
    code = (
        "import cutlass, sys\n"
        "from cute_bind import dsl\n"
        "try:\n    t = dsl.import_torch()\n    print('torch', t.__file__)\n"
        "except ModuleNotFoundError:\n    print('missing')\n"
        "print('dsl torch.py ran:', any(getattr(m, '__file__', '') and dsl.imports._in_dsl_folder(m.__file__) and n.endswith('torch') for n, m in list(sys.modules.items())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()[-2:]
    if first.startswith("torch"):
        assert not dsl.imports._in_dsl_folder(first.split(" ", 1)[1])
    else:
        assert first == "missing"
    assert second == "dsl torch.py ran: False"
