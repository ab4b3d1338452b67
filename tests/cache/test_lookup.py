"""The disk cache's event history (``cute_bind.cache.history``, ``mark``): numbered events, exact "since"."""

from __future__ import annotations

import ctypes

import cute_bind
from cute_bind.cache import lookup
from tests.kernels import cached

N = 64


def _record(n: int) -> list[lookup.Event]:
    return [lookup._record(f"k{i}", None, "uncached", 0.0) for i in range(n)]  # as the lookups record them


def test_events_are_numbered_in_order_and_never_reused() -> None:
    events = _record(5)
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5 and seqs[0] >= 1
    assert cute_bind.cache.mark() == seqs[-1]


def test_mark_is_zero_before_any_event() -> None:
    lookup._HISTORY.clear()
    assert cute_bind.cache.mark() == 0
    assert cute_bind.cache.history(since=0) == []


def test_since_is_exact_past_the_history_cap() -> None:
    _record(10)
    before = cute_bind.cache.mark()
    size = cute_bind.cache.HISTORY_SIZE
    _record(size - 3)  # the history is full now: a count by len(history()) would stop growing
    after = _record(3)
    assert len(cute_bind.cache.history()) == size
    since = cute_bind.cache.history(since=before)
    assert len(since) == size and since[-3:] == after
    assert cute_bind.cache.history(since=after[0].seq) == after[1:]
    more = _record(2)
    assert cute_bind.cache.history(since=after[-1].seq) == more  # the oldest dropped, the new ones listed


def test_events_recorded_from_threads_are_in_seq_order(monkeypatch: object) -> None:
    import threading
    import time

    class Yielding(lookup.Event):
        """Gives the other threads the interpreter between an event's numbering and its append."""

        def __init__(self, *args: object) -> None:
            super().__init__(*args)  # type: ignore[arg-type]
            time.sleep(0.0005)

    monkeypatch.setattr(lookup, "Event", Yielding)  # type: ignore[attr-defined]
    workers = [threading.Thread(target=_record, args=(25,)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seqs = [e.seq for e in cute_bind.cache.history()]
    assert len(seqs) == 100 and seqs == sorted(seqs) and len(set(seqs)) == 100
    assert cute_bind.cache.mark() == max(seqs)


def test_a_real_bind_records_an_event_after_the_mark(cache_dir: object) -> None:
    x, out = (ctypes.c_float * N)(*range(N)), (ctypes.c_float * N)()
    before = cute_bind.cache.mark()
    cached.saxpy.clear_cache()
    cached.saxpy.bind(ctypes.addressof(out), ctypes.addressof(x), ctypes.addressof(x), 1.5, N)
    (event,) = cute_bind.cache.history(since=before)
    assert event.kernel.endswith("saxpy") and event.outcome in ("compiled", "hit") and event.seq > before
    cached.saxpy.clear_cache()
