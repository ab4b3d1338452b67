"""A pointer slot takes buffer-protocol objects and ``__dlpack__``-only objects (the checked path).

``memoryview``, ``bytearray``, ``array.array``, ctypes arrays and ``mmap`` give
their first byte's address, their element type from the buffer's format;
objects offering only ``__dlpack__`` (JAX, MLX...) their export's address,
element type and device. Both are read by the slot's full check
(``PointerKind.coerce``), which holds what it read through (the buffer export,
the DLPack capsule) until the launch returns: the tests launch a host-only
kernel through each and compare the output with the NumPy result, on both
launch paths, and check each refusal's catalog code.
"""

from __future__ import annotations

import array
import ctypes
import gc
import mmap
import weakref
from typing import Any, Callable

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest

import cute_bind
from cute_bind.launch import prepared as _prepared
from cute_bind.slots import PointerKind, Where
from cute_bind.slots import dlpack as _dlpack
from cute_bind.slots.base import HeldAddress
from tests.kernels.host import scale
from tests.optional import torch_or_skip

N = 64
W = Where("scale", "inp")


class DLOnly:
    """An array offering only ``__dlpack__`` (as a JAX or MLX array on the CPU does): no address otherwise."""

    def __init__(self, a: Any, device: tuple[int, int] = (1, 0)) -> None:
        self.a, self.device = a, device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.a.__dlpack__(**{k: v for k, v in kwargs.items() if k != "stream"})

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


class DLCopy:
    """A ``__dlpack__`` whose capsule owns a fresh copy: the memory lives only as long as the capsule.
    ``alive`` is cleared when the copy is freed."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.alive: list[bool] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        copy = self.a.copy()
        flag = [True]
        weakref.finalize(copy, flag.clear)
        self.alive = flag
        return copy.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class Hostile:
    def __dlpack__(self, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _f32(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def _c_floats(a: np.ndarray) -> Any:
    arr = (ctypes.c_float * N)()
    ctypes.memmove(arr, a.ctypes.data, a.nbytes)
    return arr


def _mmap_of(a: np.ndarray) -> Any:
    m = mmap.mmap(-1, a.nbytes)
    m.write(a.tobytes())
    return memoryview(m).cast("f")  # an mmap exports bytes ("B"): cast to the element type


# (name, make(ndarray) -> the value given, read(value) -> its float32 contents)
FORMS: list[tuple[str, Callable[[np.ndarray], Any], Callable[[Any], np.ndarray]]] = [
    ("memoryview of an array", lambda a: memoryview(a), lambda v: np.asarray(v)),
    (
        "memoryview of a bytearray, cast to float",
        lambda a: memoryview(bytearray(a.tobytes())).cast("f"),
        lambda v: np.frombuffer(v, np.float32),
    ),
    ("array.array('f')", lambda a: array.array("f", a.tolist()), lambda v: np.frombuffer(v, np.float32)),
    ("ctypes c_float array", _c_floats, lambda v: np.frombuffer(v, np.float32)),
    ("mmap (as floats)", _mmap_of, lambda v: np.frombuffer(v, np.float32)),
    ("only __dlpack__", lambda a: DLOnly(a), lambda v: v.a),
]


@pytest.mark.parametrize("name,make,read", FORMS, ids=[f[0] for f in FORMS])
def test_buffer_and_dlpack_forms_launch_as_numpy_arrays_do(path: str, name: str, make: Any, read: Any) -> None:
    x = _f32()
    out, inp = make(np.zeros(N, np.float32)), make(x)
    scale_k = cute_bind.kernel(scale)
    scale_k(out, inp, 2.0, N, 0)  # kernel(...): binds from the value
    assert np.array_equal(read(out), x * np.float32(2.0))
    h = scale_k.bind(out, inp, 2.0, N, 0)
    y = _f32(1)
    inp2 = make(y)
    h.launch(out, inp2, 3.0, N, 0)
    assert np.array_equal(read(out), y * np.float32(3.0))
    h.launch(out, inp2, np.float32(0.5), N, 0)  # mixed with other forms, int addresses too
    assert np.array_equal(read(out), y * np.float32(0.5))
    h.close()


def test_a_capsule_owning_its_memory_is_held_until_the_launch_returns(path: str) -> None:
    x = _f32()
    src = DLCopy(x)
    held = PointerKind().coerce(src, W)
    assert isinstance(held, HeldAddress) and int(held) == held
    assert src.alive == [True]  # the copy lives while the address does
    del held
    gc.collect()
    assert src.alive == []
    # through a launch: the copy is read while alive (a freed copy could hold anything)
    out = np.zeros(N, np.float32)
    h = cute_bind.kernel(scale).bind(out, x, 1.0, N, 0)
    for _ in range(50):
        h.launch(out, DLCopy(x), 2.0, N, 0)
        assert np.array_equal(out, x * np.float32(2.0))
    h.close()


def test_the_owner_is_alive_when_the_entry_point_is_called(path: str, monkeypatch: Any) -> None:
    """Observed at the call itself: the generated Python launch's gate, the C launcher's slow route
    (a freed copy may still hold the old bytes, so the output alone cannot tell)."""
    x = _f32()
    out = np.zeros(N, np.float32)
    h = cute_bind.kernel(scale).bind(out, x, 1.0, N, 0)
    src = DLCopy(x)
    seen: list[list[bool]] = []
    if h._launcher is None:
        entry = h._gate[0]

        def gate(argv: Any) -> Any:
            seen.append(list(src.alive))
            return entry(argv)

        h._gate[0] = gate
        h.launch = h._make_launch()
    else:
        original = _prepared.PreparedLaunch._write_and_call

        def write_and_call(self: Any, packed: Any) -> Any:
            seen.append(list(src.alive))
            return original(self, packed)

        monkeypatch.setattr(_prepared.PreparedLaunch, "_write_and_call", write_and_call)
    h.launch(out, src, 2.0, N, 0)
    assert seen == [[True]]
    assert np.array_equal(out, x * np.float32(2.0))
    h.close()


def test_a_buffer_export_is_held_until_the_launch_returns() -> None:
    buf = bytearray(np.zeros(N, np.float32).tobytes())
    held = PointerKind().coerce(memoryview(buf).cast("f"), W)
    assert isinstance(held, HeldAddress)
    with pytest.raises(BufferError):  # exported: the bytearray cannot move its memory meanwhile
        buf.extend(b"0000")
    del held
    gc.collect()
    buf.extend(b"0000")


def _non_contiguous() -> Any:
    return memoryview(bytearray(2 * N * 4)).cast("f")[::2]


class _Pair(ctypes.Structure):
    _fields_ = [("a", ctypes.c_float), ("b", ctypes.c_float)]


# (name, make() -> a value for the F32 ``inp`` slot, the code)
REFUSED: list[tuple[str, Callable[[], Any], str]] = [
    ("bytearray (bytes, not floats)", lambda: bytearray(N * 4), "CB210"),
    ("array.array('d')", lambda: array.array("d", [0.0] * N), "CB210"),
    ("read-only memoryview", lambda: memoryview(bytes(N * 4)).cast("f"), "CB217"),
    ("bytes", lambda: bytes(N * 4), "CB204"),
    ("non-contiguous memoryview", _non_contiguous, "CB204"),
    ("big-endian ctypes array", lambda: (ctypes.c_float.__ctype_be__ * N)(), "CB210"),
    ("ctypes structure array", lambda: (_Pair * N)(), "CB210"),
    ("a ctypes number (a value, not memory)", lambda: ctypes.c_uint64(4096), "CB204"),
    ("__dlpack__ that raises", Hostile, "CB204"),
    ("__dlpack__ of float64", lambda: DLOnly(np.zeros(N)), "CB210"),
    ("__dlpack__ of a read-only array", lambda: DLOnly(np.frombuffer(bytes(N * 4), np.float32)), "CB204"),
    ("big-endian NumPy array", lambda: np.zeros(N, ">f4"), "CB210"),
]


class _IntArray(DLOnly):
    """A 0-d integer array holding an address (``__index__``) that also exports itself: the address it holds."""

    def __index__(self) -> int:
        return int(self.a)


def test_an_integer_object_is_the_address_it_holds_not_its_storage() -> None:
    assert PointerKind().coerce(_IntArray(np.int64(4096)), W) == 4096


@pytest.mark.parametrize("name,make,code", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_a_pointer_slot_refuses_keeps_its_code(path: str, name: str, make: Any, code: str) -> None:
    x, out = _f32(), np.zeros(N, np.float32)
    h = cute_bind.kernel(scale).bind(out, x, 2.0, N, 0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(out, make(), 2.0, N, 0)
    assert info.value.code == code, str(info.value)
    assert "'inp'" in str(info.value)
    h.close()


class _Interface:
    """An ``__array_interface__`` exporter of ``a``'s memory that states ``typestr`` for it."""

    def __init__(self, a: np.ndarray, typestr: Any) -> None:
        self.a, self.typestr = a, typestr

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {**self.a.__array_interface__, "typestr": self.typestr}


def _torch_tensor(dtype_name: str) -> Callable[[], Any]:
    def make() -> Any:
        torch = torch_or_skip()  # not importorskip: the DSL's own base_dsl/torch.py can shadow a missing torch
        dtype = getattr(torch, dtype_name, None)
        if dtype is None:
            pytest.skip(f"this torch has no {dtype_name}")
        return torch.zeros(N, dtype=dtype)

    return make


# (name, make() -> a value whose elements CuTe has no type for, what the message says): every path
# read such memory as "does not say its type" and launched (an object array's references overwritten)
FOREIGN: list[tuple[str, Callable[[], Any], str]] = [
    ("NumPy object array", lambda: np.empty(N, dtype=object), "Python object references"),
    ("NumPy complex64", lambda: np.zeros(N // 2, np.complex64), "'<c8'"),
    ("NumPy datetime64", lambda: np.zeros(N, "M8[s]"), "'<M8[s]'"),
    ("NumPy structured", lambda: np.zeros(N, [("a", "<f4")]), "'|V4'"),
    ("NumPy unicode", lambda: np.zeros(N, "U1"), "'<U1'"),
    ("typestr ''", lambda: _Interface(np.zeros(N, np.float32), ""), "names no element type"),
    ("typestr '<'", lambda: _Interface(np.zeros(N, np.float32), "<"), "names no element type"),
    ("typestr None", lambda: _Interface(np.zeros(N, np.float32), None), "names no element type"),
    ("torch complex64", _torch_tensor("complex64"), "torch.complex64"),
]


@pytest.mark.parametrize("name,make,says", FOREIGN, ids=[f[0] for f in FOREIGN])
def test_memory_of_an_element_type_cute_has_none_of_is_refused(path: str, name: str, make: Any, says: str) -> None:
    x, out = _f32(), np.zeros(N, np.float32)
    value = make()
    k = cute_bind.kernel(scale)
    h = k.bind(out, x, 2.0, N, 0)
    for call in (h.launch, k):
        with pytest.raises(cute_bind.CuteBindError) as info:
            call(out, value, 2.0, N, 0)
        assert info.value.code == "CB210", str(info.value)
        assert says in str(info.value) and "'inp'" in str(info.value)
    h.close()


@cute.jit
def _bf16_touch(out: cute_bind.Pointer[cutlass.BFloat16], n: cutlass.Int32):  # noqa: ANN201 - a DSL host function
    o = cute.make_tensor(out, cute.make_layout(4))
    for k in range(n):
        o[k] = cutlass.BFloat16(1.0)


def test_a_slot_of_a_type_numpy_lacks_takes_what_says_nothing_and_refuses_the_rest(path: str) -> None:
    """ml_dtypes' bfloat16 arrays ('<V2', no field names) say no type cute_bind knows: taken, as before. A
    record, an object or complex array, or a float32 array is refused alike on both paths (the pure-Python
    fast reader took any writable array for a slot whose type NumPy lacks)."""
    buf = np.zeros(4, np.uint16)
    k = cute_bind.kernel(_bf16_touch)
    h = k.bind(buf.ctypes.data, 4)
    like_ml_dtypes = _Interface(buf, "<V2")
    h.launch(like_ml_dtypes, 4)
    assert (buf == 0x3F80).all()  # bfloat16 1.0
    for value in (np.empty(4, dtype=object), np.zeros(2, np.complex64), np.zeros(4, np.float32), np.zeros(4, [("a", "<u2")])):
        with pytest.raises(cute_bind.CuteBindError) as info:
            h.launch(value, 0)
        assert info.value.code == "CB210", str(info.value)
    h.close()


def test_torch_dtypes_the_table_lacks_still_bind_their_cute_type() -> None:
    torch = torch_or_skip()
    e8m0, cute_e8m0 = getattr(torch, "float8_e8m0fnu", None), getattr(cutlass, "Float8E8M0FNU", None)
    if e8m0 is None or cute_e8m0 is None:
        pytest.skip("this torch or DSL has no float8_e8m0fnu")
    t = torch.zeros(8, dtype=e8m0)
    pv = PointerKind(dtype=cute_e8m0)._read(t, W)  # not refused: the value does not say a type cute_bind names
    assert pv.dtype_name is None and pv.address == t.data_ptr()


def test_a_slot_without_element_type_takes_foreign_elements_but_not_object_references() -> None:
    untyped = PointerKind()
    a = np.zeros(N // 2, np.complex64)
    assert untyped.coerce(a, W) == a.ctypes.data  # an untyped pointer: the kernel decides what it reads
    with pytest.raises(cute_bind.CuteBindError) as info:
        untyped.coerce(np.empty(N, dtype=object), W)
    assert info.value.code == "CB210" and "Python object references" in str(info.value)


def test_dlpack_memory_a_kernel_cannot_address_is_refused(monkeypatch: Any) -> None:
    view = _dlpack.DLView(4096, (8, 0), (2, 32, 1), (N,), (1,))  # Metal memory

    monkeypatch.setattr(_dlpack, "read", lambda value: view)
    with pytest.raises(cute_bind.CuteBindError) as info:
        PointerKind().coerce(DLOnly(np.zeros(N, np.float32)), W)
    assert info.value.code == "CB204"
    assert "metal:0" in str(info.value)


@pytest.mark.parametrize(
    "device,host,gmem", [((1, 0), True, False), ((2, 0), False, True), ((3, 0), False, False), ((13, 0), False, False)]
)
def test_dlpack_devices_read_as_their_memory_is(monkeypatch: Any, device: tuple[int, int], host: bool, gmem: bool) -> None:
    view = _dlpack.DLView(4096, device, (2, 32, 1), (N,), (1,))
    monkeypatch.setattr(_dlpack, "read", lambda value: view)
    pv = PointerKind()._read(DLOnly(None), W)
    assert (pv.address, pv.dtype_name, pv.host) == (4096, "Float32", host)
    assert (pv.space == cute.AddressSpace.gmem) is gmem
    assert pv.device == (device if gmem else None)


def test_cpu_dlpack_memory_on_a_gmem_slot_is_refused() -> None:
    from tests.launch.test_forms import scale_gmem

    a = np.zeros(N, np.float32)
    with pytest.raises(cute_bind.CuteBindError) as info:
        cute_bind.kernel(scale_gmem).bind(DLOnly(a), DLOnly(a), 2.0, N, 0)
    assert info.value.code == "CB210"
    assert "host memory" in str(info.value)


def test_empty_buffers_and_exports_give_no_address(monkeypatch: Any) -> None:
    assert PointerKind().coerce(memoryview(bytearray()).cast("f"), W) == 0
    empty = _dlpack.DLView(0, (1, 0), (2, 32, 1), (0,), (1,))
    monkeypatch.setattr(_dlpack, "read", lambda value: empty)
    assert PointerKind().coerce(DLOnly(None), W) == 0  # NULL data with no elements: nothing to point at, harmless
    monkeypatch.setattr(_dlpack, "read", lambda value: empty._replace(shape=(N,)))
    with pytest.raises(cute_bind.CuteBindError) as info:  # NULL data with elements: no memory behind it
        PointerKind().coerce(DLOnly(None), W)
    assert info.value.code == "CB216"
