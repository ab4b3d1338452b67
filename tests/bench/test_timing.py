"""The bench's shared timing: rows from interleaved rounds, one per path, in order."""

from __future__ import annotations

from cute_bind.bench.timing import TimedPath, fixed_loop, time_rows


def test_time_rows_gives_one_row_per_path_with_every_round():
    calls: dict[str, int] = {"a": 0, "b": 0}

    def count(name: str) -> None:
        calls[name] += 1

    paths = [TimedPath("a", "path a", fixed_loop(count, ("a",)), "first"), TimedPath("b", "path b", fixed_loop(count, ("b",)))]
    rows = time_rows(paths, repeats=3, iters=50)
    assert [(r.key, r.path) for r in rows] == [("a", "path a"), ("b", "path b")] and rows[0].note == "first"
    for r in rows:
        assert len(r.samples) == 3 and r.min_us <= r.median_us and r.event_us is None
    # warm-up (100 calls, the minimum) plus 3 rounds of 50 for each path
    assert calls == {"a": 250, "b": 250}


def test_a_keyword_loop_calls_with_the_keywords_written_out() -> None:
    """fixed_loop with keywords calls fn(*args, name=value, ...) each iteration (not **kwargs), and
    refuses names that are not identifiers (they are written into generated code)."""
    import pytest

    from cute_bind.bench.timing import fixed_loop

    seen: list[tuple[tuple[int, ...], dict[str, int]]] = []

    def fn(*args: int, **kwargs: int) -> None:
        seen.append((args, kwargs))

    us = fixed_loop(fn, (1,), {"alpha": 2, "n": 3})(4)
    assert us > 0 and seen == [((1,), {"alpha": 2, "n": 3})] * 4
    with pytest.raises(ValueError, match="identifiers"):
        fixed_loop(fn, (), {"a b": 1})
