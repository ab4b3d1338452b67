"""Hostile values never crash, corrupt memory or raise untyped errors (issue 19: the slot-side defects).

Each test is a regression test of one defect, on both fast paths (the
``path`` fixture) and checked mode; cases that crashed the interpreter run in
a subprocess too.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any

import cutlass
import numpy as np
import pytest

import cute_bind
from cute_bind import dsl
from cute_bind.slots import dlpack as _dlpack
from tests.child import run_isolated
from tests.kernels.host import tscale
from tests.kernels.hostile import reals, three
from tests.optional import torch_or_skip


def handles(h: Any) -> list[Any]:
    """The handle on this test's fast path, and its checked-mode clone."""
    return [h, h.with_checks()]


def code_of(fn: Any, *args: Any) -> str | None:
    try:
        fn(*args)
    except cute_bind.CuteBindError as e:
        return e.code
    return None


# ------------------------------------------------------------------ pointer slots: 2, 3, 11
def test_meta_tensor_in_a_pointer_slot_does_not_crash(path: str) -> None:
    torch_or_skip()  # the isolated child imports torch
    run_isolated(
        """
        import numpy as np, torch, cute_bind
        from tests.kernels.hostile import three
        h = cute_bind.kernel(three).bind(np.zeros(3, np.int64), (1, 2, 3))
        for handle in (h, h.with_checks()):
            try:
                handle.launch(torch.empty(4, dtype=torch.int64, device="meta"), (1, 2, 3))
            except cute_bind.LaunchValueError as e:
                assert e.code == "CB216", e
            else:
                raise AssertionError("launched through a NULL pointer")
        """,
        path,
    )


def test_read_only_array_in_a_pointer_slot_is_cb217(path: str) -> None:
    frozen = bytes(24)
    arr = np.frombuffer(frozen, np.int64)
    k = cute_bind.kernel(three)
    for h in handles(k.bind(np.zeros(3, np.int64), (1, 2, 3))):
        assert code_of(h.launch, arr, (7, 8, 9)) == "CB217"
        ro = np.zeros(3, np.int64)
        ro.flags.writeable = False
        assert code_of(h.launch, ro, (7, 8, 9)) == "CB217"
    assert frozen == bytes(24)  # the immutable bytes object was not written


def test_read_only_array_in_a_tensor_slot_is_cb217(path: str) -> None:
    frozen = bytes(16)
    x = np.ones(4, np.float32)
    k = cute_bind.kernel(tscale)
    for h in handles(k.bind(np.zeros(4, np.float32), x, 2.0)):
        assert code_of(h.launch, np.frombuffer(frozen, np.float32), x, 2.0) == "CB217"
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        assert code_of(h.launch, ro, x, 2.0) == "CB217"
        assert not ro.any()
    assert frozen == bytes(16)


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: type("NoData", (), {"__array_interface__": {"data": None, "typestr": "<i8", "shape": (3,)}})(), "__array_interface__"),
        (lambda: type("BadData", (), {"__array_interface__": {"data": ("x", False), "typestr": "<i8"}})(), "__array_interface__"),
        (lambda: __import__("torch").ones(3, dtype=__import__("torch").int64).to_sparse(), "data_ptr"),
    ],
    ids=["array-interface-data-none", "array-interface-data-str", "sparse-torch-tensor"],
)
def test_unreadable_pointer_values_are_typed_errors(path: str, make: Any, fragment: str) -> None:
    if "sparse" in fragment or fragment == "data_ptr":
        torch_or_skip()
    k = cute_bind.kernel(three)
    value = make()
    for h in handles(k.bind(np.zeros(3, np.int64), (1, 2, 3))):
        with pytest.raises(cute_bind.LaunchArgumentError) as info:
            h.launch(value, (1, 2, 3))
        assert info.value.code == "CB204" and fragment in str(info.value)


@pytest.mark.parametrize(
    "make",
    [lambda: cutlass.Float32(0.5), lambda: cutlass.Float32(4096.0), lambda: cutlass.Int32(4096)],
    ids=["f32-0.5", "f32-4096", "i32-4096"],
)
def test_dsl_numbers_are_not_addresses(path: str, make: Any) -> None:
    """A DSL number has ``__index__`` (Float32(0.5) -> 0): a pointer slot refuses it at bind and launch (CB204)
    instead of writing a made-up address."""
    k = cute_bind.kernel(three)
    assert code_of(k.bind, make(), (1, 2, 3)) == "CB204"
    for h in handles(k.bind(np.zeros(3, np.int64), (1, 2, 3))):
        assert code_of(h.launch, make(), (7, 8, 9)) == "CB204"


# ------------------------------------------------------------------ tensor slots: 4, 10, 19
def test_fake_tensor_in_a_tensor_slot_is_cb216(path: str) -> None:
    torch_or_skip()  # the isolated child imports torch
    run_isolated(
        """
        import warnings, torch, cute_bind
        from torch._subclasses.fake_tensor import FakeTensorMode
        from tests.kernels.host import tscale
        warnings.simplefilter("ignore")
        x, y = torch.ones(4), torch.zeros(4)
        h = cute_bind.kernel(tscale).bind(y, x, 2.0)
        with FakeTensorMode():
            fake = torch.empty(4)
        for handle in (h, h.with_checks()):
            for _ in range(2):
                try:
                    handle.launch(y, fake, 2.0)
                except cute_bind.LaunchValueError as e:
                    assert e.code == "CB216", e
                else:
                    raise AssertionError("launched with NULL data")
        """,
        path,
    )


def test_empty_numpy_arrays_are_accepted(path: str) -> None:
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    h = cute_bind.kernel(tscale).bind(y, x, 2.0)
    e = np.empty(0, np.float32)
    assert e.strides == (0,) or e.strides == (4,)
    for handle in handles(h):
        handle.launch(e, np.empty(0, np.float32), 2.0)  # numpy reports stride 0 for an empty array
        handle.launch(y, x, 2.0)
        assert (y == 2).all()


def test_torch_subclass_is_read_as_the_real_tensor(path: str) -> None:
    """Item 19: a subclass overriding data_ptr()/stride() is read through the exchange API on every path."""
    torch = torch_or_skip()

    class Liar(torch.Tensor):
        def data_ptr(self) -> int:  # type: ignore[override]
            return super().data_ptr() + 4

    x, y = torch.ones(8), torch.zeros(8)
    h = cute_bind.kernel(tscale).bind(y, x, 2.0)
    lying = x.as_subclass(Liar)
    for handle in handles(h):
        handle.launch(y, lying, 2.0)
        assert struct.unpack("Q", handle.slot_bytes("inp")[:8])[0] == x.data_ptr()
        assert (y == 2).all()


# ------------------------------------------------------------------ hostile DLPack producers (19)
class _DLTensor(ctypes.Structure):
    _fields_ = _dlpack.DLTensor._fields_


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


from cute_bind.slots.dlpack import capsule_new as _capsule_new  # noqa: E402 - our own PyCapsule_New function object


class Hostile:
    """A DLPack producer describing whatever the test asks, over a real buffer."""

    def __init__(
        self,
        base: np.ndarray,
        shape: tuple[int, ...],
        strides: tuple[int, ...] | None,
        byte_offset: int = 0,
        data: int | None = None,
        version: tuple[int, int] | None = None,
        flags: int = 0,
    ) -> None:
        self.keep = [base]
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides) if strides is not None else None
        dl = _DLTensor(base.ctypes.data if data is None else data, 1, 0, len(shape), 2, 32, 1, self.shape, self.strides, byte_offset)
        if version is None:
            self.managed: Any = _Managed(dl)
            self.name = b"dltensor"
        else:
            self.managed = _ManagedVersioned(version[0], version[1], None, None, flags, dl)
            self.name = b"dltensor_versioned"

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        return _capsule_new(ctypes.addressof(self.managed), self.name, None)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


HOSTILE = [
    ("negative-extent", dict(shape=(-8,), strides=(1,)), "CB218"),
    ("int64-min-stride", dict(shape=(8,), strides=(-(1 << 63),)), "CB218"),
    ("wrapping-byte-offset", dict(shape=(8,), strides=(1,), byte_offset=(1 << 64) - 4), "CB218"),
    ("future-major-version", dict(shape=(8,), strides=(1,), version=(2, 0)), "CB218"),
    ("read-only-flag", dict(shape=(8,), strides=(1,), version=(1, 1), flags=1), "CB217"),
    ("null-data", dict(shape=(8,), strides=(1,), data=0), "CB216"),
    ("overflowing-compact-strides", dict(shape=(1 << 40, 1 << 40, 8), strides=None), "CB212"),
]


def check_hostile_dlpack_producers() -> None:
    """Every HOSTILE producer is a typed error on this process's fast path and in checked mode."""
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    h = cute_bind.kernel(tscale).bind(y, x, 2.0)
    for name, kwargs, code in HOSTILE:
        for handle in handles(h):
            got = code_of(handle.launch, y, Hostile(x, **kwargs), 2.0)
            assert got == code, (name, got, code)
            handle.launch(y, x, 2.0)  # still fine
    assert (y == 2).all()


def test_hostile_dlpack_producers_are_typed_errors(path: str) -> None:
    run_isolated("from tests.slots.test_hostile_values import check_hostile_dlpack_producers as check\ncheck()", path)


# A type offering the DLPack exchange API whose C function describes what the test asks: the C
# fast path reads it directly (the hostile input reaches its own checks, not the slow path's).
_FROM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)


def _exchange_type(major: int = 1) -> type:
    @_FROM
    def from_pyobject(obj: Any, out: int) -> int:
        dl = _DLTensor.from_address(out)
        for name, value in type(obj).describe(obj).items():
            setattr(dl, name, value)
        return 0

    table = (ctypes.c_void_p * 8)()
    ctypes.c_uint32.from_address(ctypes.addressof(table)).value = major
    table[2 + 3] = ctypes.cast(from_pyobject, ctypes.c_void_p).value  # header (2 words), then 3 functions before it
    capsule = _capsule_new(ctypes.addressof(table), b"dlpack_exchange_api", None)

    class Exchanging:
        __dlpack_c_exchange_api__ = capsule
        _keep = (table, from_pyobject)

        def __init__(self, base: np.ndarray, **facts: Any) -> None:
            self.base = base
            self.shape_arr = (ctypes.c_int64 * 1)(*facts.pop("shape", (8,)))
            self.strides_arr = (ctypes.c_int64 * 1)(*facts.pop("strides", (1,)))
            self.facts = facts

        def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
            return self.base.__dlpack__()

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    def describe_all(obj: Any) -> dict[str, Any]:
        facts = dict(
            data=obj.base.ctypes.data,
            device_type=1,
            device_id=0,
            ndim=1,
            code=2,
            bits=32,
            lanes=1,
            shape=ctypes.cast(obj.shape_arr, ctypes.POINTER(ctypes.c_int64)),
            strides=ctypes.cast(obj.strides_arr, ctypes.POINTER(ctypes.c_int64)),
            byte_offset=0,
        )
        facts.update(obj.facts)
        return facts

    Exchanging.describe = staticmethod(describe_all)  # type: ignore[attr-defined]
    return Exchanging


EXCHANGE_CASES = [
    ("valid", dict(), 1, None),
    ("negative-extent", dict(shape=(-8,)), 1, None),
    ("int64-min-stride", dict(strides=(-(1 << 63),)), 1, None),
    ("wrapping-byte-offset", dict(byte_offset=(1 << 64) - 4), 1, None),
    ("null-data", dict(data=0), 1, "CB216"),
    ("future-exchange-api", dict(data=0), 2, None),
]


def check_hostile_exchange_api_producers() -> None:
    """Through the C fast path's own DLPack reading: an impossible description is refused (the slow
    path then reads through ``__dlpack__``, a valid export here, or raises the catalog error);
    never a crash or a descriptor built from it. An exchange API of another major version is never called."""
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    h = cute_bind.kernel(tscale).bind(y, x, 2.0)
    for name, facts, major, code in EXCHANGE_CASES:
        kind = _exchange_type(major)
        for handle in handles(h):
            y[:] = 0
            if code is not None:
                got = code_of(handle.launch, kind(y), kind(x, **facts), 2.0)
                assert got == code, (name, got, code)
                continue
            handle.launch(kind(y), kind(x, **facts), 2.0)  # both through the exchange API: no slot sends it to the slow path
            assert struct.unpack("Q", handle.slot_bytes("inp")[:8])[0] == x.ctypes.data, name
            assert (y == 2).all(), name


def test_hostile_exchange_api_producers_never_reach_the_kernel(path: str) -> None:
    run_isolated("from tests.slots.test_hostile_values import check_hostile_exchange_api_producers as check\ncheck()", path)


def test_exchange_api_of_another_major_version_is_not_used() -> None:
    assert _dlpack.exchange_function(_exchange_type(2)) is None
    assert _dlpack.exchange_function(_exchange_type(1)) is not None


# ------------------------------------------------------------------ scalar slots: 15
class IntWithFloat(int):
    def __float__(self) -> float:
        return 2.5


class FloatWithFloat(float):
    def __float__(self) -> float:
        return 2.5


@pytest.mark.parametrize("value", [IntWithFloat(1), FloatWithFloat(1.0)], ids=["int-subclass", "float-subclass"])
def test_real_slots_read_subclasses_through_float(path: str, value: Any) -> None:
    """Every path reads a real through float(value), as the DSL's direct call does."""
    out = np.zeros(4)
    k = cute_bind.kernel(reals)
    for h in handles(k.bind(out, 0.0, 0.0, 0.0, 0.0)):
        out[:] = 0
        h.launch(out.ctypes.data, value, value, value, value)  # an address: the fast paths take every slot
        assert out.tolist() == [2.5, 2.5, 2.5, 2.5]


# ------------------------------------------------------------------ sequence slots: 9, 19
class IterTuple(tuple):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        yield self[0]
        yield 5
        yield 5


class IterList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        yield self[0]
        yield 5
        yield 5


@pytest.mark.parametrize("make", [IterTuple, IterList], ids=["tuple-subclass", "list-subclass"])
def test_sequence_subclasses_are_read_by_iterating_on_every_path(path: str, make: Any) -> None:
    out = np.zeros(3, np.int64)
    k = cute_bind.kernel(three)
    for h in handles(k.bind(out, (1, 2, 3))):
        out[:] = 0
        h.launch(out.ctypes.data, make([77, 7, 3]))
        assert out.tolist() == [77, 5, 5]


# ------------------------------------------------------------------ dsl.marshal keeps its arguments alive (19)
def test_marshal_keepalive_holds_the_arguments() -> None:
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    tx, ty = from_dlpack(x), from_dlpack(y)
    compiled = cute.compile(tscale, ty, tx, 2.0)
    args = (ty, tx, 2.0)
    _, keepalive = dsl.marshal(compiled, args, {})
    assert any(k is args for k in keepalive)


# ------------------------------------------------------------------ found probing every path with odd values
# Each of these was accepted (a wrong launch) or escaped as an untyped exception before.
N64 = 64


def _scale_kernel() -> Any:
    from tests.kernels.host import scale

    return cute_bind.kernel(scale)


def test_numpy_array_subclasses_are_arrays_not_scalars(path: str, tmp_path: Any) -> None:
    """np.memmap and np.matrix are ndarrays: read as the array they are (they were taken for NumPy
    scalars: a TypeError from kernel(...), CB204 from launch, and a 0-d integer memmap's contents used
    as the address)."""
    x = np.arange(N64, dtype=np.float32)
    mm = np.memmap(tmp_path / "out.bin", dtype=np.float32, mode="w+", shape=(N64,))
    k = _scale_kernel()
    k(mm, x, 2.0, N64, 0)
    assert np.array_equal(np.asarray(mm), x * 2)
    h = k.bind(mm, x, 1.0, N64, 0)
    with pytest.warns(PendingDeprecationWarning):  # NumPy discourages np.matrix; users still pass it
        out = np.matrix(np.zeros((1, N64), np.float32))
    h.launch(out, x, 3.0, N64, 0)
    assert np.array_equal(np.asarray(out).ravel(), x * 3)
    target = np.zeros(N64, np.float32)
    m0 = np.memmap(tmp_path / "addr.bin", dtype=np.int64, mode="w+", shape=())
    m0[()] = target.ctypes.data  # an address stored in the file: not a pointer to follow
    assert code_of(h.launch, m0, x, 1.0, 4, 0) == "CB210"
    assert not target.any()


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.zeros(N64 // 2, np.complex64),
        lambda: np.zeros(N64, "M8[s]"),
        lambda: np.zeros(N64, [("a", "<f4")]),
        lambda: torch_or_skip().zeros(N64 // 2, dtype=torch_or_skip().complex64),
    ],
    ids=["complex64", "datetime64", "structured", "torch-complex64"],
)
def test_memory_of_a_foreign_element_type_is_refused_at_bind(path: str, make: Any) -> None:
    """bind() of a Pointer[Float32] slot (the annotation's type, before any handle) refuses it as launch does."""
    x = np.zeros(N64, np.float32)
    assert code_of(_scale_kernel().bind, make(), x, 1.0, N64, 0) == "CB210"
    assert code_of(_scale_kernel(), make(), x, 1.0, N64, 0) == "CB210"


def test_tensors_with_the_negative_bit_are_refused_on_the_checked_paths(path: str) -> None:
    """torch negates such a tensor's elements lazily: its memory holds them un-negated."""
    torch = torch_or_skip()
    x = torch.arange(float(N64))
    neg = torch._neg_view(x)
    user_reachable = torch.complex(x, x).conj().imag  # the negative bit without a private call
    for value in (neg, user_reachable):
        assert value.is_neg()
        for call in (_scale_kernel().bind, _scale_kernel()):
            with pytest.raises(cute_bind.LaunchArgumentError) as info:
                call(torch.zeros(N64), value, 1.0, N64, 0)
            assert info.value.code == "CB204" and "resolve_neg()" in str(info.value)
        with pytest.raises(cute_bind.LaunchArgumentError) as info:
            cute_bind.kernel(tscale)(torch.zeros(N64), value, 1.0)
        assert info.value.code == "CB204" and "resolve_neg()" in str(info.value)
    out = torch.zeros(N64)
    cute_bind.kernel(tscale)(out, neg.resolve_neg(), 1.0)  # the fix the message gives
    assert torch.equal(out, neg)


@pytest.mark.parametrize("name", ["CUevent", "CUdeviceptr", "CUcontext", "CUmodule"])
def test_cuda_handles_other_than_streams_are_not_streams(path: str, name: str) -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    x, out = np.zeros(N64, np.float32), np.zeros(N64, np.float32)
    k = _scale_kernel()
    value = getattr(driver, name)(1234)
    for h in handles(k.bind(out, x, 1.0, N64, 0)):
        with pytest.raises(cute_bind.LaunchArgumentError) as info:
            h.launch(out, x, 1.0, N64, value)
        assert info.value.code == "CB204" and f"{name} is not a stream" in str(info.value)
    assert code_of(k, out, x, 1.0, N64, value) == "CB204"
    k.bind(out, x, 1.0, N64, driver.CUstream(0)).launch(out, x, 1.0, N64, driver.CUstream(0))  # a stream still is


@pytest.mark.parametrize("value", [np.complex64(3 + 4j), np.complex128(3 + 4j), 3 + 4j], ids=["c64", "c128", "complex"])
def test_complex_numbers_are_refused_by_real_slots(path: str, value: Any) -> None:
    """float(np.complex64(3+4j)) is 3.0 with a warning: the imaginary part was dropped silently."""
    from tests.kernels.host import halves

    out = np.zeros(3, np.float32)
    k = cute_bind.kernel(halves)
    for h in handles(k.bind(out, 1.0, 1.0, 1.0)):
        assert code_of(h.launch, out, 1.0, 1.0, value) == "CB204"
    assert code_of(k, out, 1.0, 1.0, value) == "CB204"
    assert not out.any()


class _RaisingInterface:
    @property
    def __array_interface__(self) -> Any:
        raise KeyError("hostile")


class _RaisingRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr")


class _RaisingShape:
    dtype = "float32"

    @property
    def shape(self) -> Any:
        raise RuntimeError("shape")


class _RaisingGetattr:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)


@pytest.mark.parametrize("make", [_RaisingInterface, _RaisingRepr, _RaisingShape, _RaisingGetattr])
def test_hostile_pointer_values_are_typed_errors_on_every_entry(path: str, make: Any) -> None:
    """kernel(...) and bind() let what a hostile attribute raised escape (launch wrapped it), and a
    refusal's own description raised for a value whose repr or shape raises."""
    x = np.zeros(N64, np.float32)
    k = _scale_kernel()
    assert code_of(k, make(), x, 1.0, N64, 0) == "CB204"
    assert code_of(k.bind, make(), x, 1.0, N64, 0) == "CB204"
    for h in handles(k.bind(np.zeros(N64, np.float32), x, 1.0, N64, 0)):
        assert code_of(h.launch, make(), x, 1.0, N64, 0) == "CB204"


def test_describe_value_never_raises() -> None:
    from cute_bind.slots.base import describe_value

    assert describe_value(_RaisingRepr()) == "_RaisingRepr object (its repr() raised)"
    assert describe_value(_RaisingShape()).startswith("_RaisingShape ")
    assert describe_value(_RaisingGetattr()).startswith("_RaisingGetattr ")
    assert describe_value(np.zeros((2, 3), np.float32)) == "ndarray of shape (2, 3) and dtype float32"


@pytest.mark.parametrize("kwargs", [{1: 0}, {b"stream": 0}], ids=["int-key", "bytes-key"])
def test_keyword_names_must_be_strings(path: str, kwargs: dict[Any, Any]) -> None:
    x = np.zeros(N64, np.float32)
    k = _scale_kernel()
    with pytest.raises(TypeError, match="keywords must be strings"):
        k(x, x, 1.0, N64, **kwargs)
    with pytest.raises(TypeError, match="keywords must be strings"):  # CPython's own check (held before too): the same words
        k.bind(x, x, 1.0, N64, 0).launch(x, x, 1.0, N64, **kwargs)


class _LenRaises(tuple):  # type: ignore[type-arg]
    def __len__(self) -> int:
        raise RuntimeError("len")

    def __iter__(self) -> Any:
        raise RuntimeError("iter")


@pytest.mark.parametrize("make", [lambda: range(2), lambda: _LenRaises((0, 0))], ids=["range", "tuple-raising-len"])
def test_sequence_slots_take_tuples_and_lists(path: str, make: Any) -> None:
    """range(2) was read as the addresses 0 and 1 (a segfault at n > 0), a subclass whose __len__ raises escaped."""
    from tests.kernels.host import seq_sum

    x, out = np.zeros(N64, np.float32), np.zeros(N64, np.float32)
    k = cute_bind.kernel(seq_sum)
    for h in handles(k.bind(out, (x, x), (1.0, 2.0), 4)):
        assert code_of(h.launch, out, make(), (1.0, 2.0), 4) == "CB204"
    assert code_of(k, out, make(), (1.0, 2.0), 4) == "CB204"


def test_a_0d_numpy_array_binds_a_dynamic_tensor_slot(path: str) -> None:
    """The DSL's dynamic marking raised IndexError for NumPy's 0-d export (a torch 0-d tensor bound)."""
    out, x = np.zeros((), np.float32), np.full((), 3.0, np.float32)
    k = cute_bind.kernel(tscale)
    k(out, x, 2.0)
    assert out == 6.0
    k.bind(out, x, 1.0).launch(out, np.full((), 5.0, np.float32), 2.0)
    assert out == 10.0
