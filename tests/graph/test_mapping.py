"""The pure parts of the mapping: items of a storage layout, probe values, classification of two captures."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cute_bind.dsl import cuda_device_count
from cute_bind.diagnostics.errors import CuteBindError
from cute_bind.graph import CudaDriver, graph
from cute_bind.graph.driver import KernelParams, Node
from cute_bind.graph.mapping import Capture, Item, classify, combine, noise_mask, probe_values

CODES = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8}


@given(st.sampled_from(sorted(CODES)), st.integers(0, 2**64 - 1))
def test_integer_probes_differ_stay_in_range_and_flip_the_top_bit(code, raw):
    width = CODES[code]
    current = (raw % (1 << (8 * width))).to_bytes(width, "little")
    item = Item(0, "n", "value", 0, width, code, "integer")
    probes = probe_values(item, current)
    assert len(probes) == 3 and all(len(p) == width and p != current for p in probes)
    top = [p for p in probes if (p[-1] ^ current[-1]) == 0x80 and p[:-1] == current[:-1]]
    assert top, "one probe differs in the top bit only"


@given(st.integers(0, 2**47 - 1))
def test_address_probes_keep_alignment(address):
    item = Item(0, "p", "value", 0, 8, "Q", "address")
    for p in probe_values(item, address.to_bytes(8, "little")):
        v = int.from_bytes(p, "little")
        assert v != address and v % 4096 == address % 4096


@given(st.floats(allow_nan=True, width=32))
def test_float_probes_are_other_values(x):
    cur = struct.pack("@f", x)
    for p in probe_values(Item(0, "a", "value", 0, 4, "f", "float"), cur):
        assert p != cur


def _cap(*params, grid=(1, 1, 1), func=1):
    return Capture((Node(object(), "kernel", KernelParams(func, grid, (32, 1, 1), 0, tuple(params))),))


OLD, NEW = (5).to_bytes(4, "little"), (9).to_bytes(4, "little")
CLASSIFY = [
    # (base params, probe capture, expected effect)
    ((OLD + b"\0" * 4,), _cap(NEW + b"\0" * 4), "in place"),
    ((OLD + b"\0" * 4,), _cap(OLD + b"\0" * 4), "unused"),
    ((OLD + b"\0" * 4,), _cap((18).to_bytes(4, "little") + b"\0" * 4), "transformed"),
    ((OLD * 32,), _cap(NEW + b"\1" * 124), "tensor map"),
    ((OLD + b"\0" * 4,), _cap(NEW + b"\0" * 4, grid=(2, 1, 1)), "grid"),
    ((OLD + b"\0" * 4,), _cap(NEW + b"\0" * 4, func=2), "launches"),
    ((OLD + b"\0" * 4,), Capture((), failed="[CB401] launch failed"), "launches"),
]


@pytest.mark.parametrize("base, probe, how", CLASSIFY)
def test_classify(base, probe, how):
    assert classify(_cap(*base), probe, OLD, NEW, {}).how == how


def test_noise_is_ignored():
    a, b = _cap(OLD + b"\x11\x22\0\0"), _cap(OLD + b"\x33\x44\0\0")  # two bytes of padding differ
    noise = noise_mask(a, b)
    assert noise == {(0, 0): {4, 5}}
    assert classify(a, _cap(NEW + b"\x55\x66\0\0"), OLD, NEW, noise).how == "in place"


def test_combine_needs_agreeing_locations():
    one = classify(_cap(OLD + OLD), _cap(NEW + OLD), OLD, NEW, {})
    other = classify(_cap(OLD + OLD), _cap(OLD + NEW), OLD, NEW, {})
    assert one.in_place and other.in_place and one.locations != other.locations
    assert combine([one, one]).how == "in place"
    assert combine([one, other]).how == "transformed"


@pytest.mark.skipif(cuda_device_count() > 0, reason="a driver is present")
def test_without_a_driver_recording_raises_cb804():
    with pytest.raises(CuteBindError) as info:
        with graph(0, driver=CudaDriver()):
            pass
    assert info.value.code == "CB804" and info.value.details["call"] == "cuStreamBeginCapture"
