"""The bench tables say what each row is and end with a verdict a newcomer understands."""

from __future__ import annotations

import pytest

from cute_bind.bench import pointers, tensors
from cute_bind.bench.timing import Report, Row


def _report(rows: dict[str, float], checks: dict[str, object] | None = None, notes: list[str] | None = None) -> Report:
    return Report(
        machine="m",
        mode="CPU",
        dsl_version="4.8.1",
        repeats=3,
        iters=10,
        rows=[Row(path=f"label of {k}", median_us=v, min_us=v, key=k) for k, v in rows.items()],
        checks=dict(checks or {"launch == direct (bitwise)": True}),
        notes=list(notes or []),
    )


POINTER_ROWS = {"direct": 20.0, "rebuilt": 40.0, "launch": 0.16, "bare": 0.33, "bare_int": 0.22, "floor": 0.17}
TENSOR_ROWS = {"direct": 17.0, "rebuilt": 100.0, "launch_new": 0.2, "launch_same": 0.18, "pointer_ints": 0.16}


@pytest.mark.parametrize(
    "fmt, rows, meanings",
    [(pointers.format_table, POINTER_ROWS, pointers.MEANINGS), (tensors.format_tensor_table, TENSOR_ROWS, tensors.MEANINGS)],
)
def test_every_row_has_a_legend_line_and_the_table_ends_with_a_verdict(fmt, rows, meanings) -> None:  # type: ignore[no-untyped-def]
    text = fmt(_report(rows))
    for key in rows:
        assert f"- label of {key}: {meanings[key]}" in text
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("Verdict: ") and "every path wrote the same bytes" in last
    for jargon in ("cuda_result", "_kernel_ptrs", "capi", "packed array", "CB"):
        assert jargon not in last


def test_every_path_the_bench_can_time_has_a_meaning() -> None:
    import inspect

    for module, meanings in ((pointers, pointers.MEANINGS), (tensors, tensors.MEANINGS)):
        source = inspect.getsource(module)
        for key in meanings:
            assert f'"{key}"' in source
        assert all(m and m[0].islower() for m in meanings.values())


def test_the_comparison_column_is_over_the_cheapest_call_and_a_value_below_it_is_explained() -> None:
    """Issue 44 item 1: 'vs bare' showed launch at -0.17 us, unexplained; the column is now measured from the
    cheapest call the run measured (the lowest bare row), and only timing noise can put a row below it."""
    text = pointers.format_table(_report(POINTER_ROWS))
    assert "launch - cheapest call = -0.010 us" in text and "| label of launch | 0.16 | 0.16 | -0.01 |" in text
    assert "Below zero (label of launch)" in text and "timing noise" in text
    clean = pointers.format_table(_report(dict(POINTER_ROWS, launch=0.18)))
    assert "Below zero" not in clean and "| label of launch | 0.18 | 0.18 | +0.01 |" in clean


@pytest.mark.parametrize(
    "launch, floor, says",
    [(0.16, 0.17, "no measurable cost of its own"), (0.50, 0.17, "0.33 us of its own")],
)
def test_pointer_verdict(launch: float, floor: float, says: str) -> None:
    rows = dict(POINTER_ROWS, launch=launch, floor=floor)
    assert says in pointers.verdict(_report(rows))


def test_verdict_reports_a_failed_check_first() -> None:
    report = _report(POINTER_ROWS, checks={"launch == direct (bitwise)": False})
    assert pointers.verdict(report).startswith("Verdict: NOT OK") and "launch == direct" in pointers.verdict(report)
    assert tensors.tensor_verdict(_report(TENSOR_ROWS, checks={"x": False})).startswith("Verdict: NOT OK")


def test_without_torch_the_note_says_numpy_arrays_take_the_same_fast_path() -> None:
    """Issue 24: NumPy arrays are read without a DLPack export, so the README install's table shows
    the real result; the note says what the rows read, and a slower launch still gets the fair comparison."""
    text = tensors.format_tensor_table(_report(dict(TENSOR_ROWS), notes=[tensors.NO_TORCH]))
    assert tensors.NO_TORCH in text and "no DLPack" in tensors.NO_TORCH and "pip install torch" not in tensors.NO_TORCH
    slow = tensors.format_tensor_table(_report(dict(TENSOR_ROWS, launch_new=21.0), notes=[tensors.NO_TORCH]))
    assert "slower than the direct call that reuses tensors" in slow.splitlines()[-1]
    assert "fair comparison" in slow.splitlines()[-1]
