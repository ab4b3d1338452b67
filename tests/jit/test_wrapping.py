"""cute_bind.kernel over wrappers: a kernel wrapped again, and a user's own functools.wraps decorator."""

from __future__ import annotations

import ctypes

import pytest

import cute_bind
from tests.kernels import wrapped as W


def _run(k, n=5):
    buf = (ctypes.c_int32 * 8)()
    k(ctypes.addressof(buf), n)
    return list(buf)


EXPECTED = [k * k + 5 if k < 5 else 0 for k in range(8)]


@pytest.mark.parametrize(
    "options, name, checked",
    [
        ({}, "squares", False),
        ({"name": "renamed"}, "renamed", False),
        ({"checked": True}, "squares", True),
    ],
    ids=["bare", "new name", "new option"],
)
def test_a_kernel_wrapped_again_is_a_kernel_over_the_same_function(options, name, checked):
    base = cute_bind.kernel(W.squares)
    again = cute_bind.kernel(base, **options) if options else cute_bind.kernel(base)
    assert isinstance(again, cute_bind.Kernel) and again is not base
    assert again.fn is W.squares and again.name == name and again.checked is checked
    assert _run(again) == EXPECTED == _run(base)


def test_rewrapping_keeps_the_options_it_had():
    base = cute_bind.kernel(W.squares, name="first", checked=True, cache=False)
    again = cute_bind.kernel(base, name="second")
    assert (again.name, again.checked, again.cache) == ("second", True, False)


def test_a_users_wrapper_over_a_jitted_function_compiles():
    assert _run(cute_bind.kernel(W.squares_jitted)) == EXPECTED


def test_a_users_wrapper_with_nothing_jitted_under_it_is_cb118_at_decoration():
    with pytest.raises(cute_bind.KernelDefinitionError) as info:
        cute_bind.kernel(W.squares_plain)
    err = info.value
    assert err.code == "CB118" and isinstance(err, TypeError)
    assert "logged.<locals>.wrapper" in str(err) and "squares_plain" in str(err)
