"""The command line's own options: --version, and bench --help saying what the output means."""

from __future__ import annotations

import importlib.metadata

import pytest

import cute_bind
from cute_bind.__main__ import main


def test_version_names_cute_bind_and_the_dsl(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out == f"cute_bind {cute_bind.__version__} (nvidia-cutlass-dsl {importlib.metadata.version('nvidia-cutlass-dsl')})"


def test_bench_help_says_what_the_output_means(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = capsys.readouterr().out
    for column in ("host us/launch (median)", "over cheapest call", "direct reused / path", "CUDA-event us/launch", "Verdict", "checks"):
        assert column in out, column
    assert "exit status is 1" in out
