"""Static tools never crash on a source file (issue 39, rows 9 and 10): a very deep expression, a
lone surrogate in a string annotation, files that are not regular files, huge files. Each gives
a coded diagnostic for that file in ``cute-bind check``, the mypy plugin and the incremental
engine (the server's tests are in tests/lsp), and the other files are still checked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest

from cute_bind.static import source as S
from cute_bind.static.checker import check_file, main
from cute_bind.static.incremental import Document
from cute_bind.static.rules import analyze_source, check_source
from tests.child import child_env
from tests.static.corpus_support import ROOT, mypy_config

GOOD = "import cute_bind\n\n@cute_bind.kernel\ndef k(n):\n    pass\n"  # CB101: a file that is still checked
DEEP = "import cute_bind\nx = " + "1+" * 200_000 + "1\n"
SURROGATE = 'import cute_bind\n\n@cute_bind.kernel\ndef k(x: "\\ud800"):\n    pass\n'
#: What the runtime's CB107 says of that annotation (cute_bind.jit.signature evaluates it with eval()).
SURROGATE_GOT = "UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800' in position 0: surrogates not allowed"


def _regular(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _link_to_dev_zero(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.symlink_to("/dev/zero")
    return path


def _fifo(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


POSIX = pytest.mark.skipif(not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"), reason="POSIX files")

#: (id, how the file is made, its text, the code it gets, words of the message)
FILES = [
    pytest.param("deep", _regular, DEEP, "CB126", "nested too deeply", id="deep"),
    pytest.param("surrogate", _regular, SURROGATE, "CB107", SURROGATE_GOT, id="surrogate"),
    pytest.param("dev-zero", _link_to_dev_zero, "", "CB126", "not a regular file (a character device)", id="dev-zero", marks=POSIX),
    pytest.param("fifo", _fifo, "", "CB126", "not a regular file (a FIFO)", id="fifo", marks=POSIX),
    pytest.param("huge", _regular, GOOD + "#" * 4096 + "\n", "CB126", "over the 4096 bytes", id="huge"),
]


def _run_check(folder: Path, limit: int) -> subprocess.CompletedProcess[str]:
    """``cute-bind check folder`` in a child with 1 GiB of address space and a time limit: before the
    fix, /dev/zero was read until memory ran out and a FIFO blocked the open forever."""
    code = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from cute_bind.static import source
        source.MAX_SOURCE_BYTES = {limit}
        from cute_bind.static.checker import main
        sys.exit(main([{str(folder)!r}, "--no-config"]))
        """
    )
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(sys.platform != "linux", reason="the child limits its memory with RLIMIT_AS")
@pytest.mark.parametrize("name, make, text, code, words", FILES)
def test_check_reports_the_file_and_checks_the_others(
    tmp_path: Path, name: str, make: Callable[[Path, str, str], Path], text: str, code: str, words: str
) -> None:
    make(tmp_path, f"a_{name}.py", text)
    _regular(tmp_path, "b_good.py", GOOD)
    proc = _run_check(tmp_path, 4096 if name == "huge" else S.MAX_SOURCE_BYTES)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[1] for line in lines] == [code, "CB101"], proc.stdout
    assert lines[0].startswith(f"{tmp_path / f'a_{name}.py'}:") and words in lines[0], lines[0]
    assert lines[1].startswith(f"{tmp_path / 'b_good.py'}:4:7: CB101")
    assert proc.returncode == (2 if code == "CB126" else 1), proc.stderr


def test_huge_file_is_refused_before_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _regular(tmp_path, "big.py", GOOD + "#" * 100 + "\n")
    monkeypatch.setattr(S, "MAX_SOURCE_BYTES", 64)
    (found,) = check_file(str(path))
    assert found.code == "CB126" and f"it holds {path.stat().st_size} bytes" in found.message
    monkeypatch.setattr(S, "MAX_SOURCE_BYTES", 10_000)
    assert [d.code for d in check_file(str(path))] == ["CB101"]


def test_a_file_growing_while_read_is_cut_at_the_limit(tmp_path: Path) -> None:
    """The read itself stops past the limit (a file that grows between stat and read)."""
    path = _regular(tmp_path, "grows.py", "x = 1\n" * 100)
    with pytest.raises(S.D.KernelDefinitionError) as info:
        S.read_source(str(path), limit=10)
    assert info.value.code == "CB126"
    assert S.read_source(str(path), limit=600) == path.read_bytes()


def test_surrogate_annotation_is_the_runtimes_cb107() -> None:
    (d,) = check_source(SURROGATE)
    assert (d.code, d.kernel, d.parameter) == ("CB107", "k", "x")
    assert SURROGATE_GOT in d.message
    # a structure's field annotation with one: CB125, not a crash
    structure = 'from typing import NamedTuple\nimport cute_bind\n\nclass P(NamedTuple):\n    a: "\\udc80"\n\n@cute_bind.kernel\ndef k(p: P):\n    pass\n'
    assert [x.code for x in check_source(structure)] == ["CB125"]


def test_runtime_says_the_same_of_the_surrogate(tmp_path: Path) -> None:
    pytest.importorskip("cutlass")
    path = _regular(tmp_path, "runtime_surrogate.py", SURROGATE)
    code = f"import runpy\ntry:\n    runpy.run_path({str(path)!r})\nexcept Exception as e:\n    print(e.code, str(e).splitlines()[0])\n"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=180)
    (static,) = check_source(SURROGATE)
    assert proc.stdout.strip() == f"CB107 {static.message}", proc.stderr


def test_incremental_engine_gives_the_same(tmp_path: Path) -> None:
    """The server's engine: the surrogate's CB107 as the check says; a deep expression leaves the
    Document usable (the server turns the RecursionError into CB126, tests/lsp/test_server.py)."""
    assert Document(None).update(SURROGATE) == analyze_source(SURROGATE).diagnostics()
    doc = Document(None)
    try:
        doc.update(DEEP)
    except RecursionError:
        pass
    assert [d.code for d in doc.update(GOOD)] == ["CB101"]


# --------------------------------------------------------------------------- mypy plugin
mypy_api = pytest.importorskip("mypy.api")


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy_cache")


def _mypy(folder: Path, cache: Path, *files: str) -> tuple[str, int]:
    config = folder / "mypy.ini"
    config.write_text(mypy_config())
    out, err, status = mypy_api.run(["--config-file", str(config), "--cache-dir", str(cache), "--show-traceback", *files])
    return out + err, status


def test_mypy_plugin_reports_the_surrogate_and_a_huge_file(tmp_path: Path, mypy_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    surrogate = _regular(tmp_path, "plugin_surrogate.py", SURROGATE)
    huge = _regular(tmp_path, "plugin_huge.py", GOOD + "#" * 2000 + "\n")
    good = _regular(tmp_path, "plugin_good.py", GOOD)
    monkeypatch.setattr(S, "MAX_SOURCE_BYTES", 1024)
    out, _ = _mypy(tmp_path, mypy_cache, str(surrogate), str(huge), str(good))
    assert "INTERNAL ERROR" not in out and "Traceback" not in out, out
    assert f"{surrogate}:4:7: error: [CB107]" in out and SURROGATE_GOT in out
    assert f"{huge}:3:2: error: [CB126] '{huge}' was not checked: it holds" in out and "[cute-bind-cb126]" in out
    assert f"{good}:4:7: error: [CB101]" in out


def test_mypy_plugin_reports_an_analysis_that_runs_out_of_stack(tmp_path: Path, mypy_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the rules recurse too deeply on a file mypy itself parsed, the plugin reports CB126."""
    from cute_bind.static.rules import ModuleAnalysis

    def too_deep(self: ModuleAnalysis, *args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(ModuleAnalysis, "check_def", too_deep)
    path = _regular(tmp_path, "plugin_deep.py", GOOD)
    out, _ = _mypy(tmp_path, mypy_cache, str(path))
    assert "INTERNAL ERROR" not in out, out
    assert "[CB126]" in out and "nested too deeply to analyse (RecursionError)" in out


def test_main_in_process_checks_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _regular(tmp_path, "a_deep.py", DEEP)
    _regular(tmp_path, "b_good.py", GOOD)
    assert main([str(tmp_path), "--no-config"]) == 2
    out = capsys.readouterr().out
    assert [line.split()[1] for line in out.splitlines()] == ["CB126", "CB101"]
