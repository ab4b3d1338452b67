"""Slot kinds: recognition, value checks, and byte identity with the DSL's marshalling.

Byte identity is checked end to end: after ``launch(values)`` the handle's
storage (the bytes the entry point reads) must equal the bytes the DSL's own
marshalling produces for the same values, one row per slot kind and value.
"""

import ctypes
import math

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.cute.runtime import make_ptr

import cute_bind
from cute_bind import dsl
from cute_bind.slots import (
    OptionalKind,
    PointerKind,
    ScalarKind,
    SequenceKind,
    StreamKind,
    StructureKind,
    TensorKind,
    Where,
    classify,
    kinds,
)
from tests.kernels.host import all_scalars, scale

W = Where("k", "p")

# ------------------------------------------------------------------ recognition
RECOGNIZE = [
    (cute.Pointer, PointerKind),
    (cute_bind.Pointer[cutlass.Float32], PointerKind),
    (cute_bind.Pointer[cutlass.Int8, 16, cute.AddressSpace.gmem], PointerKind),
    (cuda.CUstream, StreamKind),
    (bool, ScalarKind),
    (int, ScalarKind),
    (float, ScalarKind),
    (cute.Tensor, TensorKind),
    (cute_bind.Tensor[cutlass.Float32, 2], TensorKind),
    (cute_bind.Tensor[cutlass.Float16, 1, 16, "static"], TensorKind),
    (tuple, SequenceKind),
    (list, SequenceKind),
    (tuple[cute.Pointer, cute.Pointer], SequenceKind),
    (tuple[cutlass.Int32, ...], SequenceKind),
    (list[cute.Tensor], SequenceKind),
] + [
    (getattr(cutlass, name), ScalarKind)
    for name in (
        "Boolean",
        "Int8",
        "Int16",
        "Int32",
        "Int64",
        "Uint8",
        "Uint16",
        "Uint32",
        "Uint64",
        "Float32",
        "Float64",
        "TFloat32",
        "Float16",
        "BFloat16",
    )
]


@pytest.mark.parametrize("annotation, kind", RECOGNIZE, ids=lambda x: getattr(x, "__name__", str(x)))
def test_recognized(annotation, kind):
    assert isinstance(classify(annotation), kind)


def test_kinds_registry_lists_every_kind():
    assert set(kinds()) == {PointerKind, ScalarKind, StreamKind, TensorKind, SequenceKind, OptionalKind, StructureKind}


def test_python_annotations_map_like_the_dsl():
    assert classify(int).dtype_name == "Int32"
    assert classify(float).dtype_name == "Float32"
    assert classify(bool).dtype_name == "Boolean"


# ------------------------------------------------------------------ value checks (slow path)
S = {name: ScalarKind(name) for name in ("Boolean", "Int8", "Int32", "Uint8", "Uint64", "Int64", "Float32", "Float64")}

COERCE_OK = [
    (S["Int32"], 5, 5),
    (S["Int32"], True, 1),  # bool is an int; packs as 1, as in the direct call
    (S["Int32"], np.int16(-7), -7),
    (S["Int32"], cutlass.Int32(9), 9),
    (S["Int8"], -128, -128),
    (S["Uint8"], 255, 255),
    (S["Uint64"], 2**64 - 1, 2**64 - 1),
    (S["Int64"], -(2**63), -(2**63)),
    (S["Float32"], 3, 3.0),
    (S["Float32"], np.float32(0.5), 0.5),
    (S["Float64"], cutlass.Float64(0.25), 0.25),
    (S["Boolean"], True, True),
    (S["Boolean"], 0, False),
    (S["Boolean"], np.bool_(True), True),
    (PointerKind(), 4096, 4096),
    (PointerKind(), np.uint64(64), 64),
    (PointerKind(), ctypes.c_void_p(128), 128),
    (StreamKind(), 0, 0),
    (StreamKind(), cuda.CUstream(0), 0),
    (StreamKind(), 2**64 - 1, 2**64 - 1),
]


@pytest.mark.parametrize("slot, value, expected", COERCE_OK, ids=lambda x: repr(x)[:30])
def test_coerce_accepts(slot, value, expected):
    assert slot.coerce(value, W) == expected


class _TorchLikeStream:
    cuda_stream = 1234


class _ProtoStream:
    def __cuda_stream__(self):
        return (0, 4321)


def test_stream_objects():
    assert StreamKind().coerce(_TorchLikeStream(), W) == 1234
    assert StreamKind().coerce(_ProtoStream(), W) == 4321


COERCE_BAD = [
    (S["Int32"], 2.5, "CB204"),
    (S["Int32"], 3.0, "CB204"),  # floats never silently become ints
    (S["Int32"], "1", "CB204"),
    (S["Int32"], 2**31, "CB205"),
    (S["Int8"], 128, "CB205"),
    (S["Uint8"], -1, "CB205"),
    (S["Uint64"], 2**64, "CB205"),
    (S["Float32"], "x", "CB204"),
    (S["Float32"], None, "CB204"),
    (S["Float64"], 10**400, "CB205"),
    (S["Boolean"], 2, "CB205"),
    (S["Boolean"], 0.5, "CB204"),
    (S["Boolean"], "yes", "CB204"),
    (PointerKind(), True, "CB204"),  # bool before int: True is never an address
    (PointerKind(), -8, "CB206"),
    (PointerKind(), 2**64, "CB206"),
    (PointerKind(), 1.5, "CB204"),
    (PointerKind(), "0x10", "CB204"),
    (PointerKind(), None, "CB204"),
    (PointerKind(), np.float32(1.0), "CB204"),
    (PointerKind(), np.bool_(True), "CB204"),
    (StreamKind(), False, "CB204"),
    (StreamKind(), -1, "CB205"),
    (StreamKind(), 1.0, "CB204"),
    (StreamKind(), object(), "CB204"),
]


@pytest.mark.parametrize("slot, value, code", COERCE_BAD, ids=lambda x: repr(x)[:30])
def test_coerce_rejects(slot, value, code):
    with pytest.raises(cute_bind.CuteBindError) as info:
        slot.coerce(value, W)
    assert info.value.code == code
    assert info.value.kernel == "k" and info.value.parameter == "p"


def test_pointer_alignment_checked_for_objects_and_in_checked_mode():
    slot = PointerKind(dtype=cutlass.Float32, space=cute.AddressSpace.generic, align=16)
    assert slot.coerce(4100, W) == 4100  # raw ints: not checked by default
    with pytest.raises(cute_bind.LaunchValueError) as info:
        slot.coerce(4100, W, checked=True)
    assert info.value.code == "CB207"
    arr = np.zeros(8, np.float32)
    base = arr.ctypes.data
    if base % 16 == 0:
        with pytest.raises(cute_bind.LaunchValueError):
            slot.coerce(make_ptr(cutlass.Float32, base + 4, assumed_align=4), W)


def test_host_memory_refused_for_gmem_slots():
    gmem = PointerKind(dtype=cutlass.Float32, space=cute.AddressSpace.gmem, align=4)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        gmem.coerce(np.zeros(4, np.float32), W)
    assert info.value.code == "CB210" and "host memory" in str(info.value)
    generic = PointerKind(dtype=cutlass.Float32, space=cute.AddressSpace.generic, align=4)
    assert generic.coerce(np.zeros(4, np.float32), W) > 0
    spec_gmem = classify(cute_bind.Pointer[cutlass.Float32, 4, cute.AddressSpace.gmem])
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        spec_gmem.bind(np.zeros(4, np.float32), W)
    assert info.value.code == "CB210"


def test_pointer_dtype_mismatch_for_typed_values():
    slot = PointerKind(dtype=cutlass.Int32, space=cute.AddressSpace.generic, align=4)
    with pytest.raises(cute_bind.LaunchArgumentError) as info:
        slot.coerce(np.zeros(4, np.float32), W)
    assert info.value.code == "CB210"
    assert slot.coerce(np.zeros(4, np.int32), W) > 0


# ------------------------------------------------------------------ byte identity, end to end
def _dsl_bytes(handle, values):
    """Bytes the DSL's own marshalling produces for ``values`` (one chunk per slot)."""
    compiled = handle.compiled
    dsl_values = []
    for (name, slot), v in zip(handle.slots.items(), values):
        w = Where(handle.kernel_name, name)
        dsl_values.append((slot.prepare(v, w) if isinstance(slot, PointerKind) else slot.bind(v, w)).dsl_value)
    addresses, keep = dsl.marshal(compiled, tuple(dsl_values), {})
    chunks = [ctypes.string_at(a, slot.size) for a, slot in zip(addresses, handle.slots.values())]
    del keep
    return chunks


def _handle_chunks(handle):
    return [handle.slot_bytes(name) for name in handle.parameters]


F32_VALUES = [0.0, -0.0, 1.1, -2.5, 3.4028234663852886e38, 1e300, -1e300, math.inf, -math.inf, math.nan, 1e-45, 5e-324, 16777217, -(2**70)]
F64_VALUES = [0.0, -0.0, 1.1, 1e300, math.inf, math.nan, 5e-324, 2**60 + 1]

SCALAR_ROWS = {
    "b": [True, False, 0, 1],
    "i8": [-128, 127, 0, -1],
    "i16": [-32768, 32767, 12345],
    "i32": [-(2**31), 2**31 - 1, 0],
    "i64": [-(2**63), 2**63 - 1, -1],
    "u8": [0, 255, 128],
    "u16": [0, 65535],
    "u32": [0, 2**32 - 1],
    "u64": [0, 2**64 - 1, 2**63],
    "f32": F32_VALUES,
    "f64": F64_VALUES,
    "tf32": F32_VALUES,
    "pb": [True, False],
    "pi": [-(2**31), 2**31 - 1, 7],
    "pf": F32_VALUES,
}
BASE = dict(b=True, i8=1, i16=2, i32=3, i64=4, u8=5, u16=6, u32=7, u64=8, f32=1.5, f64=2.5, tf32=3.5, pb=False, pi=9, pf=0.25)
NAMES = list(BASE)


@pytest.fixture(scope="module")
def scalars_handle():
    out = np.zeros(16)
    k = cute_bind.kernel(all_scalars)
    h = k.bind(out, *BASE.values())
    return k, h, out


ROWS = [(name, v) for name, values in SCALAR_ROWS.items() for v in values]


@pytest.mark.parametrize("name, value", ROWS, ids=[f"{n}={v!r}" for n, v in ROWS])
def test_scalar_bytes_identical_to_dsl(scalars_handle, name, value):
    k, h, out = scalars_handle
    values = dict(BASE)
    values[name] = value
    h.launch(out, *values.values())
    ours = _handle_chunks(h)
    theirs = _dsl_bytes(h, [out, *values.values()])
    assert ours == theirs, f"{name}={value!r}: launch wrote {ours[NAMES.index(name) + 1]!r}, DSL marshals {theirs[NAMES.index(name) + 1]!r}"


@pytest.mark.parametrize("name", ["b", "i8", "i64", "u64", "f32", "f64", "tf32", "pb", "pi", "pf"])
def test_scalar_outputs_identical_to_direct_call(scalars_handle, name):
    k, h, out = scalars_handle
    rng = np.random.default_rng(hash(name) % 2**32)
    for _ in range(5):
        values = dict(BASE)
        v = SCALAR_ROWS[name][int(rng.integers(len(SCALAR_ROWS[name])))]
        values[name] = v
        direct_out = np.full(16, np.nan)
        k.call_dsl(direct_out, *values.values())
        out.fill(np.nan)
        h.launch(out, *values.values())
        assert out.tobytes() == direct_out.tobytes()


POINTER_STREAM_ROWS = [
    ("out", lambda buf: buf.ctypes.data),
    ("out", lambda buf: buf),
    ("out", lambda buf: make_ptr(cutlass.Float32, buf.ctypes.data)),
    ("out", lambda buf: ctypes.c_void_p(buf.ctypes.data)),
    ("stream", lambda buf: 0),
    ("stream", lambda buf: 0xDEAD),
    ("stream", lambda buf: cuda.CUstream(0xBEEF)),
    ("stream", lambda buf: _TorchLikeStream()),
]


@pytest.mark.parametrize("param, make", POINTER_STREAM_ROWS)
def test_pointer_and_stream_bytes_identical_to_dsl(param, make):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(y, x, 1.0, 0, 0)
    values = {"out": y.ctypes.data, "inp": x.ctypes.data, "alpha": 2.0, "n": 0, "stream": 0}
    values[param] = make(y)
    h.launch(*values.values())
    dsl_values = dict(values)
    if param == "stream" and isinstance(values["stream"], _TorchLikeStream):
        dsl_values["stream"] = 1234
    assert _handle_chunks(h) == _dsl_bytes(h, list(dsl_values.values()))


def test_storage_layout_is_native_struct():
    x = np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(x, x, 1.0, 0, 0)
    assert [len(h.slot_bytes(n)) for n in h.parameters] == [8, 8, 4, 4, 8]


@pytest.mark.parametrize(
    "fmt, ranges",
    [
        ("Q", [(0, 8)]),
        ("Qiq0Q", [(0, 8), (8, 12), (16, 24)]),  # padding after the 32-bit extent, none at the end
        ("Qii0Q", [(0, 8), (8, 12), (12, 16)]),
        ("Qi0Q", [(0, 8), (8, 12)]),  # padding at the end only
        ("?", [(0, 1)]),
        ("4s", [(0, 4)]),
        ("xxi", [(4, 8)]),
        ("Q2i", [(0, 8), (8, 12), (12, 16)]),
    ],
)
def test_item_ranges_skip_padding(fmt, ranges):
    from cute_bind.slots import item_ranges

    assert item_ranges(fmt) == ranges
