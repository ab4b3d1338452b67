"""The torch workload's table: every row, and the comparisons the issue asks for, from the medians."""

from __future__ import annotations

from cute_bind.bench import torch_ops as T
from cute_bind.bench.timing import Report, Row


def _report(medians: dict[str, float]) -> Report:
    rows = [Row(path=p, median_us=us, min_us=us * 0.9) for p, us in medians.items()]
    return Report(machine="m", mode="x", dsl_version="4.8.1", repeats=3, iters=10, rows=rows, checks={"a == b (bitwise)": True})


def test_table_lists_rows_and_comparisons():
    medians = {
        T.LAUNCH: 4.0,
        T.KERNEL: 4.5,
        T.EAGER: 5.0,
        T.HAND_TVM: 20.0,
        T.COMPILED_OP: 33.0,
        T.COMPILED_MUL: 30.0,
        T.GRAPHED_OP: 11.0,
        T.GRAPHED_MUL: 10.0,
    }
    text = T.format_torch_table(_report(medians))
    for path, us in medians.items():
        assert f"| {path} | {us:.2f} |" in text
    assert "eager op - kernel(...) = +0.50 us" in text
    assert "eager op - handle.launch = +1.00 us" in text
    assert "the TVM-FFI function hand-written op / eager op = 4.0x" in text
    assert "torch.compile(fullgraph): op / torch.mul = 1.10x" in text
    assert "torch.compile(reduce-overhead): op / torch.mul = 1.10x" in text
    assert "a == b (bitwise): True" in text


def test_missing_paths_leave_their_comparisons_out():
    text = T.format_torch_table(_report({T.LAUNCH: 1.0, T.EAGER: 2.0}))
    assert "eager op - handle.launch = +1.00 us" in text
    assert "kernel(...)" not in text and "torch.mul" not in text
