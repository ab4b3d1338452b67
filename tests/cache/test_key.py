"""The key's spelling of values: stable, type-aware, injective on plain data; and a failed compile releases its lock."""

from __future__ import annotations

import ctypes
import enum
import fcntl
import os
from dataclasses import dataclass

import pytest
from hypothesis import given, strategies as st

import cute_bind
from cute_bind.cache import canonical, key as key_module
from cute_bind.cache.settings import parse_size

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    | st.frozensets(st.integers(), max_size=4),
    max_leaves=12,
)


def _same(a, b):
    """Equal with the same types all the way down (what a compile could tell apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return repr(a) == repr(b)  # 0.0 and -0.0 differ
    return a == b


@given(plain, plain)
def test_canonical_is_injective_on_plain_data(a, b):
    assert (canonical(a) == canonical(b)) == _same(a, b)


@given(plain)
def test_canonical_is_stable(a):
    import copy

    assert canonical(a) == canonical(copy.deepcopy(a))


class Color(enum.Enum):
    RED = 1


@dataclass(frozen=True)
class Tile:
    m: int
    n: int


class Opaque:
    pass


@pytest.mark.parametrize(
    "a, b, equal",
    [
        (1, 1.0, False),
        (1, True, False),
        ((1, 2), [1, 2], False),
        (Color.RED, 1, False),
        (Tile(64, 128), Tile(64, 128), True),
        (Tile(64, 128), Tile(128, 64), False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        (int, float, False),
    ],
)
def test_canonical_table(a, b, equal):
    assert (canonical(a) == canonical(b)) == equal


def test_an_object_without_state_in_its_repr_is_refused():
    with pytest.raises(key_module.Uncacheable, match="Opaque"):
        canonical(Opaque())


@given(st.integers(0, 10**6), st.sampled_from([("", 1), ("K", 1024), ("M", 1 << 20), ("G", 1 << 30), ("kb", 1024), ("MiB", 1 << 20)]))
def test_parse_size(n, unit):
    suffix, factor = unit
    assert parse_size(f"{n}{suffix}") == n * factor


def test_a_failed_compile_releases_the_key_lock(cache_dir, modules):
    mod = modules.load(
        "cb_broken",
        """\
        import cutlass
        import cutlass.cute as cute
        import cute_bind


        @cute_bind.kernel
        @cute.jit
        def k(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
            t = cute.make_tensor(out, cute.make_layout(1))
            t[0] = value + undefined_name  # noqa: F821 - fails while tracing
        """,
    )
    buf = (ctypes.c_int32 * 1)()
    with pytest.raises(Exception):
        mod.k.bind(ctypes.addressof(buf), 1)
    locks = list((cache_dir / "v1" / "locks").iterdir())
    assert len(locks) == 1
    fd = os.open(locks[0], os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the failed compile still held it
    finally:
        os.close(fd)
    assert cute_bind.cache.info() == []
