"""Every argument form a pointer or tensor slot takes stays on the fast path (issue 24, section 1).

Torch tensors, NumPy arrays, ctypes pointers and ``__cuda_array_interface__``
exporters are written by the launch's fast path (C: ``_claunch.c``'s class "P"
with a CPointerSpec and class "T"; Python: the pointer kind's ``fallback`` and
the tensor kind's generated direct converter) without going through the slow
path (which binds the arguments again) and without a DLPack export. These
tests check the PATH taken (the slow path and the DLPack reader are counted),
never the clock; the checks a value must pass still raise their catalog codes.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import numpy as np
from cutlass.cute.runtime import make_ptr
import pytest

import cute_bind
from cute_bind.launch import native
from cute_bind.launch import prepared as _prepared
from cute_bind.slots import Where
from cute_bind.slots import dlpack as _dlpack
from tests.kernels.host import scale
from tests.kernels.host import tscale_stream_default as scale_tensors
from tests.optional import torch_or_skip

# torch_or_skip, not importorskip: under DSL 4.5-4.7 the DSL's own torch.py shadows a missing torch (.ci/dsl_matrix)
torch = torch_or_skip()

GMEM = cute.AddressSpace.gmem


@cute.jit
def scale_gmem(
    out: cute_bind.Pointer[cutlass.Float32, 4, GMEM],
    inp: cute_bind.Pointer[cutlass.Float32, 4, GMEM],
    alpha: cutlass.Float32,
    n: cutlass.Int32,
    stream: cuda.CUstream,
):
    """``tests.kernels.host.scale`` through gmem pointers (a host function reads them all the same)."""
    o = cute.make_tensor(out, cute.make_layout(64))
    i = cute.make_tensor(inp, cute.make_layout(64))
    for k in range(n):
        o[k] = i[k] * alpha


class CAI:
    """A device-array stand-in: ``__cuda_array_interface__`` over a host buffer (no DLPack)."""

    def __init__(self, a: np.ndarray, read_only: bool = False, typestr: str = "<f4") -> None:
        self.a = a
        self.__cuda_array_interface__ = {
            "data": (a.ctypes.data, read_only),
            "typestr": typestr,
            "shape": a.shape,
            "strides": None,
            "version": 3,
        }


class CAIArray:
    """A CuPy-like array over host memory: ``__cuda_array_interface__`` as a class property (as CuPy
    has it), ``__dlpack_device__`` and a ``__dlpack__`` that counts its exports (the fast paths must
    not export). ``device`` is what it says it lives on: a host-only kernel bound with a NumPy
    array expects the CPU."""

    exports = 0

    def __init__(self, a: np.ndarray, *, read_only: bool = False, typestr: str | None = None, strides: Any = None,
                 mask: Any = None, device: tuple[int, int] = (1, 0)) -> None:  # fmt: skip
        self.a, self.read_only, self.device, self.mask = a, read_only, device, mask
        self.typestr = typestr or a.__array_interface__["typestr"]
        self.strides = strides

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"data": (self.a.ctypes.data, self.read_only), "typestr": self.typestr, "shape": self.a.shape,
                "strides": self.strides, "version": 3, "mask": self.mask}  # fmt: skip

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **kwargs: Any) -> Any:
        CAIArray.exports += 1
        view = self.a.view()
        view.flags.writeable = not self.read_only
        return view.__dlpack__()


@pytest.fixture
def slow(monkeypatch: Any) -> list[Any]:
    """Every call of a handle's slow path (patched before the handle is built: both fast paths capture it)."""
    calls: list[Any] = []
    original = _prepared.PreparedLaunch._slow

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_prepared.PreparedLaunch, "_slow", counting)
    return calls


@pytest.fixture
def coerced(monkeypatch: Any) -> list[Any]:
    """Every value a pointer slot's full check read (``PointerKind.coerce``): the Python fast path's
    fallback reads tensors, arrays and ctypes pointers without it (patched before handles are built)."""
    from cute_bind.slots.pointer import PointerKind

    calls: list[Any] = []
    original = PointerKind.coerce

    def counting(self: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        if value.__class__ is not int:
            calls.append(type(value).__name__)
        return original(self, value, *args, **kwargs)

    monkeypatch.setattr(PointerKind, "coerce", counting)
    return calls


@pytest.fixture
def exports(monkeypatch: Any) -> list[Any]:
    """Every DLPack capsule read (a ``__dlpack__`` export per launch is what the fast paths avoid)."""
    calls: list[Any] = []
    original = _dlpack.read_capsule

    def counting(capsule: Any, **kwargs: Any) -> Any:
        calls.append(capsule)
        return original(capsule, **kwargs)

    monkeypatch.setattr(_dlpack, "read_capsule", counting)
    return calls


def _f32(n: int = 64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _pointer_forms() -> list[tuple[str, Callable[[np.ndarray], Any]]]:
    fp = ctypes.POINTER(ctypes.c_float)
    return [
        ("torch tensor", lambda a: torch.from_numpy(a)),
        ("numpy array", lambda a: a),
        ("ctypes c_void_p", lambda a: ctypes.c_void_p(a.ctypes.data)),
        ("ctypes POINTER(c_float)", lambda a: a.ctypes.data_as(fp)),
        ("int address", lambda a: a.ctypes.data),
        ("int subclass", lambda a: _Address(a.ctypes.data)),
        ("make_ptr pointer", lambda a: make_ptr(cutlass.Float32, a.ctypes.data, cute.AddressSpace.generic)),
    ]


class _Address(int):
    """An int subclass (as an IntEnum member is) whose methods lie: its own value is what counts."""

    def __index__(self) -> int:
        return 0

    def __int__(self) -> int:
        return 0


@pytest.mark.parametrize("name,form", _pointer_forms(), ids=[n for n, _ in _pointer_forms()])
def test_pointer_slot_forms_take_the_fast_path(
    path: str, slow: list[Any], coerced: list[Any], name: str, form: Callable[[np.ndarray], Any]
) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    k = cute_bind.kernel(scale)
    h = k.bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    coerced.clear()
    before = _c_counts()
    for alpha in (2.0, 3.0):
        out[:] = np.nan
        h.launch(form(out), form(x), alpha, 64, 0)
        np.testing.assert_array_equal(out, x * np.float32(alpha))
    assert slow == [], f"{name}: the launch went to the slow path"
    assert coerced == [], f"{name}: the launch read its pointers through the full check"
    if path == "c" and name not in ("int address", "int subclass", "make_ptr pointer"):
        reader = {"torch tensor": "exchange", "numpy array": "ndarray"}.get(name, "ctypes")
        assert _c_counts()[reader] - before[reader] == 4  # two pointers, two launches, read in C


def test_torch_imported_after_bind_takes_the_fast_path(path: str, slow: list[Any], coerced: list[Any], monkeypatch: Any) -> None:
    """A handle bound before torch was imported reads torch tensors on the fast path all the same
    (the Python fallback learns torch's types at its first tensor; C learns the exchange API)."""
    import sys

    x, out = _f32(), np.zeros(64, np.float32)
    with monkeypatch.context() as m:
        m.delitem(sys.modules, "torch")
        h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    h.launch(torch.from_numpy(out), torch.from_numpy(x), 2.0, 64, 0)  # the first one may learn torch's types
    coerced.clear()
    before = _c_counts()
    for alpha in (2.0, 3.0):
        out[:] = np.nan
        h.launch(torch.from_numpy(out), torch.from_numpy(x), alpha, 64, 0)
        np.testing.assert_array_equal(out, x * np.float32(alpha))
    assert slow == [] and coerced == []
    if path == "c":
        assert _c_counts()["exchange"] - before["exchange"] == 4


@pytest.mark.parametrize("name,form", _pointer_forms()[:2], ids=[n for n, _ in _pointer_forms()[:2]])
def test_kernel_call_with_arrays_on_pointer_slots_takes_the_fast_path(
    path: str, slow: list[Any], name: str, form: Callable[[np.ndarray], Any]
) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    k = cute_bind.kernel(scale)
    k(form(out), form(x), 2.0, 64, 0)  # the miss: the handle is made (and launched through its slow path once)
    slow.clear()
    for alpha in (2.0, 3.0):
        k(form(out), form(x), alpha, 64, 0)
        np.testing.assert_array_equal(out, x * np.float32(alpha))
    assert slow == []


def test_cuda_array_interface_takes_the_fast_path(path: str, slow: list[Any]) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale_gmem).bind(CAI(out), CAI(x), 2.0, 64, 0)
    before = _c_counts()
    h.launch(CAI(out), CAI(x), 2.0, 64, 0)
    np.testing.assert_array_equal(out, x * 2)
    if path == "c":
        assert slow == []
        assert _c_counts()["cai"] - before["cai"] == 2
    else:  # an exporter is read by its own code: the pure-Python launch leaves it to the slow path, which
        # reads it before the plain arrays (the arguments' lifetime rule; C orders its reads itself)
        assert len(slow) == 1


@pytest.mark.parametrize("name,make", [("torch tensor", lambda a: torch.from_numpy(a)), ("numpy array", lambda a: a)])
def test_tensor_slot_forms_take_the_fast_path(
    path: str, slow: list[Any], exports: list[Any], name: str, make: Callable[[np.ndarray], Any]
) -> None:
    k = cute_bind.kernel(scale_tensors)
    x, out = _f32(64), np.zeros(64, np.float32)
    h = k.bind(make(out), make(x), 2.0, 0)
    slow.clear()
    exports.clear()
    for n in (64, 40):  # new extents, new addresses
        x2, out2 = _f32(n, seed=n), np.zeros(n, np.float32)
        h.launch(make(out2), make(x2), 2.0, 0)
        np.testing.assert_array_equal(out2, x2 * 2)
    assert slow == [] and exports == []


def test_cuda_array_interface_on_a_tensor_slot_takes_the_fast_path(path: str, slow: list[Any], exports: list[Any]) -> None:
    """CuPy arrays on tensor slots are read from their interface dict, never exported through DLPack."""
    k = cute_bind.kernel(scale_tensors)
    x, out = _f32(64), np.zeros(64, np.float32)
    h = k.bind(out, x, 2.0, 0)
    slow.clear()
    exports.clear()
    CAIArray.exports = 0
    before = _c_counts()
    import enum

    class DLDeviceType(enum.IntEnum):  # what torch's __dlpack_device__ answers: an IntEnum, not an int
        kDLCPU = 1

    for n in (64, 40, 40):  # new extents, new addresses
        x2, out2 = _f32(n, seed=n), np.zeros(n, np.float32)
        h.launch(CAIArray(out2, device=(DLDeviceType.kDLCPU, 0)), CAIArray(x2, strides=(4,)), 2.0, 0)  # byte strides or none
        np.testing.assert_array_equal(out2, x2 * 2)
    assert CAIArray.exports == 0
    if path == "c":
        assert slow == [] and exports == []
        assert _c_counts()["cai"] - before["cai"] == 6
    else:  # read by the exporter's own code: the slow path (the arguments' lifetime rule), never an export
        assert len(slow) == 3


def test_cuda_array_interface_on_a_tensor_slot_keeps_the_codes(path: str) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale_tensors).bind(out, x, 2.0, 0)
    _raises("CB211", lambda: h.launch(out, CAIArray(np.zeros(64)), 2.0, 0))  # float64
    _raises("CB213", lambda: h.launch(out, CAIArray(x[::2], strides=(8,)), 2.0, 0))  # not the compiled unit stride
    _raises("CB212", lambda: h.launch(out, CAIArray(np.zeros((8, 8), np.float32)), 2.0, 0))  # rank
    _raises("CB217", lambda: h.launch(out, CAIArray(x, read_only=True), 2.0, 0))  # read-only: the export refuses
    _raises("CB214", lambda: h.launch(out, CAIArray(x, device=(2, 0)), 2.0, 0))  # on a GPU, bound on the CPU
    # what the interface cannot say as is goes to the export, which reads the same memory
    for odd in (CAIArray(x, typestr=">f4"), CAIArray(x, strides=(3,)), CAIArray(x, mask=object())):
        out[:] = 0
        h.launch(out, odd, 2.0, 0)
        np.testing.assert_array_equal(out, x * 2)


class Hostile(CAIArray):
    """An interface that lies or breaks in one way (``iface``: the dict, or an exception to raise)."""

    def __init__(self, a: np.ndarray, iface: Any, device: Any = (1, 0)) -> None:
        super().__init__(a)
        self.iface, self.dev = iface, device

    @property
    def __cuda_array_interface__(self) -> Any:
        if isinstance(self.iface, BaseException):
            raise self.iface
        return self.iface(self.a) if callable(self.iface) else self.iface

    def __dlpack_device__(self) -> Any:
        if isinstance(self.dev, BaseException):
            raise self.dev
        return self.dev


def _iface(a: np.ndarray, **over: Any) -> dict[str, Any]:
    d = {"data": (a.ctypes.data, False), "typestr": "<f4", "shape": a.shape, "strides": None, "version": 3}
    d.update(over)
    return d


HOSTILE = [
    ("not_a_dict", lambda a: [1, 2]),
    ("raises", ValueError("no interface")),
    ("data_none", lambda a: _iface(a, data=None)),
    ("data_short", lambda a: _iface(a, data=(a.ctypes.data,))),
    ("read_only_none", lambda a: _iface(a, data=(a.ctypes.data, None))),
    ("address_negative", lambda a: _iface(a, data=(-8, False))),
    ("address_huge", lambda a: _iface(a, data=(2**64 + 64, False))),
    ("address_bool", lambda a: _iface(a, data=(True, False))),
    ("shape_list", lambda a: _iface(a, shape=list(a.shape))),
    ("shape_negative", lambda a: _iface(a, shape=(-64,))),
    ("shape_huge", lambda a: _iface(a, shape=(2**63,))),
    ("shape_65_dims", lambda a: _iface(a, shape=(1,) * 65)),
    ("shape_bool", lambda a: _iface(a, shape=(True,))),
    ("strides_short", lambda a: _iface(a, strides=())),
    ("strides_float", lambda a: _iface(a, strides=(4.0,))),
    ("strides_min", lambda a: _iface(a, strides=(-(2**63),))),
    ("typestr_int", lambda a: _iface(a, typestr=4)),
    ("typestr_odd", lambda a: _iface(a, typestr="<f3")),
    ("typestr_complex", lambda a: _iface(a, typestr="<c8")),
    ("typestr_empty", lambda a: _iface(a, typestr="")),
]


@pytest.mark.parametrize("name,iface", HOSTILE, ids=[h[0] for h in HOSTILE])
@pytest.mark.parametrize("device", [(1, 0), ValueError("no device"), (1,), ("1", 0), None])
def test_a_hostile_array_interface_never_crashes(path: str, name: str, iface: Any, device: Any) -> None:
    """Whatever the interface says, a launch either runs on the array's real memory (the export,
    which reads the same array, decides) or raises a catalog error; nothing is read from a lie."""
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale_tensors).bind(out, x, 2.0, 0)
    try:
        h.launch(out, Hostile(x, iface, device), 2.0, 0)
    except cute_bind.CuteBindError:
        return
    np.testing.assert_array_equal(out, x * 2)


class _EqHook:
    """A key of an interface dict that collides with "typestr": its __eq__ runs during the reader's
    next lookup and drops "data" (review of the C reader: a borrowed "data" was freed under it)."""

    def __init__(self, d: dict[Any, Any]) -> None:
        self.d = d

    def __hash__(self) -> int:
        return hash("typestr")

    def __eq__(self, other: Any) -> bool:
        self.d.pop("data", None)
        _churn = [(object(), object()) for _ in range(2000)]  # reuse the freed tuple's memory
        del _churn
        return False


class _OwnTuple(tuple):  # type: ignore[type-arg]
    """The interface's "data" in a tuple only the dict holds."""


class _Mutating(CAIArray):
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        d: dict[Any, Any] = {"data": _OwnTuple((self.a.ctypes.data, False))}
        d[_EqHook(d)] = 1
        d.update(typestr="<f4", shape=self.a.shape, strides=None)
        return d


def test_an_interface_dict_changed_while_it_is_read_never_crashes(path: str) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale_tensors).bind(out, x, 2.0, 0)
    for _ in range(3):
        out[:] = 0
        h.launch(out, _Mutating(x), 2.0, 0)
        np.testing.assert_array_equal(out, x * 2)


# ------------------------------------------------------------------ the checks still run (catalog codes)
def _raises(code: str, call: Callable[[], Any]) -> None:
    with pytest.raises(cute_bind.CuteBindError) as info:
        call()
    assert info.value.code == code


def test_pointer_slot_checks_keep_their_codes(path: str) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    ro = x.copy()
    ro.flags.writeable = False
    _raises("CB210", lambda: h.launch(np.zeros(64), x, 2.0, 64, 0))  # float64 array, float32 slot
    _raises("CB210", lambda: h.launch(torch.zeros(64, dtype=torch.float64), x, 2.0, 64, 0))
    _raises("CB217", lambda: h.launch(out, ro, 2.0, 64, 0))  # read-only array
    odd = np.zeros(64 * 4 + 4, np.uint8)[1:257].view(np.float32)  # an array at an odd address
    _raises("CB207", lambda: h.launch(out, odd, 2.0, 64, 0))  # misaligned
    _raises("CB207", lambda: h.launch(out, torch.from_numpy(odd), 2.0, 64, 0))
    _raises("CB207", lambda: h.launch(out, ctypes.c_void_p(x.ctypes.data + 1), 2.0, 64, 0))
    _raises("CB216", lambda: h.launch(out, torch.empty(64, device="meta"), 2.0, 64, 0))  # no memory


def test_cuda_array_interface_checks_keep_their_codes(path: str) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale_gmem).bind(CAI(out), CAI(x), 2.0, 64, 0)
    _raises("CB217", lambda: h.launch(CAI(out), CAI(x, read_only=True), 2.0, 64, 0))
    _raises("CB210", lambda: h.launch(CAI(out), CAI(x, typestr="<f8"), 2.0, 64, 0))
    _raises("CB210", lambda: h.launch(out, x, 2.0, 64, 0))  # host memory for a gmem slot


def test_tensor_slot_checks_keep_their_codes(path: str) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale_tensors).bind(out, x, 2.0, 0)
    ro = x.copy()
    ro.flags.writeable = False
    _raises("CB217", lambda: h.launch(out, ro, 2.0, 0))
    _raises("CB211", lambda: h.launch(out, np.zeros(64), 2.0, 0))
    _raises("CB211", lambda: h.launch(out, torch.zeros(64, dtype=torch.float64), 2.0, 0))
    _raises("CB213", lambda: h.launch(out, x[::2], 2.0, 0))  # the compiled unit stride
    _raises("CB213", lambda: h.launch(out, torch.from_numpy(x)[::2], 2.0, 0))
    _raises("CB212", lambda: h.launch(out, np.zeros((8, 8), np.float32), 2.0, 0))  # rank
    _raises("CB212", lambda: h.launch(out, torch.zeros((8, 8)), 2.0, 0))


def test_the_direct_tensor_converter_agrees_with_coerce() -> None:
    """Property: for many strided views of both array kinds, the generated converter returns exactly
    what ``coerce`` returns, or raises what it raises."""
    k = cute_bind.kernel(scale_tensors)
    base = np.zeros(256, np.float32)
    h = k.bind(base[:64], base[:64], 2.0, 0)
    slot = h.slots["out"]
    where = Where("scale_tensors", "out")
    convert = slot.converter(where)
    rng = np.random.default_rng(1)
    values: list[Any] = []
    for _ in range(60):
        start, stop, step = int(rng.integers(0, 8)), int(rng.integers(8, 256)), int(rng.choice([1, 1, 2, -1]))
        dt = rng.choice([np.float32, np.float64, np.int32])
        a = np.zeros(256, dt)[start:stop:step] if step > 0 else np.zeros(256, dt)[stop:start:-1]
        values += [a, torch.from_numpy(a.copy()) if step > 0 else torch.from_numpy(a.copy()), a.reshape(-1, 1) if a.size else a]
    for v in values:
        try:
            want: Any = slot.coerce(v, where)
        except cute_bind.CuteBindError as exc:
            want = exc.code
        try:
            got: Any = convert(v)
        except cute_bind.CuteBindError as exc:
            got = exc.code
        assert got == want, (type(v).__name__, getattr(v, "shape", None), getattr(v, "strides", None))


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except cute_bind.CuteBindError as exc:
        return exc.code


def test_the_direct_converter_reads_array_interfaces_as_coerce_does() -> None:
    """Property: once a converter has learnt an exporter type, its direct reading of each interface
    (byte strides or none, other element types, extents, devices, hostile dicts) gives exactly what
    ``coerce`` gives or raises what it raises, and a plain one never reaches ``coerce``."""
    k = cute_bind.kernel(scale_tensors)
    base = np.zeros(256, np.float32)
    h = k.bind(base[:64], base[:64], 2.0, 0)
    slot = h.slots["out"]
    where = Where("scale_tensors", "out")
    rng = np.random.default_rng(2)
    values: list[Any] = []
    for _ in range(40):
        start, stop, step = int(rng.integers(0, 8)), int(rng.integers(8, 256)), int(rng.choice([1, 1, 2]))
        dt = rng.choice([np.float32, np.float64, np.int32])
        a = np.zeros(256, dt)[start:stop:step]
        given = a.strides if rng.integers(0, 2) else None
        values += [CAIArray(a, strides=given if step == 1 else a.strides), CAIArray(a.reshape(-1, 1) if a.size else a)]
    values += [CAIArray(base[:64], device=(2, 0)), CAIArray(base[:64], read_only=True), CAIArray(base[:64], typestr=">f4")]
    for cls, items in ((CAIArray, values), (Hostile, [Hostile(base[:64], iface, dev) for _, iface in HOSTILE
                                                     for dev in [(1, 0), (1,), ("1", 0), None, ValueError("no")]])):  # fmt: skip
        convert = slot.converter(where)
        warm = cls(base[:64]) if cls is CAIArray else Hostile(base[:64], _iface)
        assert convert(warm) == slot.coerce(warm, where)  # learns the type
        calls: list[Any] = []
        original = slot.coerce

        def counting(value: Any, w: Any, checked: bool = False, _calls: list[Any] = calls, _orig: Any = original) -> Any:
            _calls.append(value)
            return _orig(value, w, checked)

        slot.coerce = counting  # the converter captured coerce when made: only this one sees the count
        direct = slot.converter(where)
        slot.coerce = original
        direct(warm)
        calls.clear()
        assert direct(warm) == original(warm, where) and calls == []  # learnt: no coerce
        for v in items:
            want = _outcome(lambda: original(v, where))
            for conv in (convert, direct):
                assert _outcome(lambda: conv(v)) == want, (cls.__name__, getattr(v, "__cuda_array_interface__", None))


def test_array_layouts_are_verified() -> None:
    layout = _dlpack.array_layout()
    assert layout is not None and layout.type is np.ndarray
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:]
    assert _dlpack.array_address(layout, a) == a.__array_interface__["data"][0]
    assert _dlpack.ctypes_layout() is not None
    assert _dlpack.reader_for(np.ndarray) is not None
    assert _dlpack.reader_for(np.ndarray)(a) == _dlpack.read_capsule(a.__dlpack__())._replace(owner=None)  # type: ignore[misc]


def _c_counts() -> dict[str, int]:
    try:
        from cute_bind.launch import _claunch
    except ImportError:
        return {"exchange": 0, "ndarray": 0, "ctypes": 0, "cai": 0}
    return dict(_claunch.counts())


def test_a_stream_left_out_of_launch_says_why() -> None:
    """Issue 24 section 4: a ``stream = None`` may be left out of kernel(...) but not of handle.launch(...);
    CB201 says so (and how to pass it) instead of the bare "no value was given"."""
    from tests.kernels.host import add_constexpr_stream

    out = np.zeros(4, np.int32)
    h = cute_bind.kernel(add_constexpr_stream).bind(out.ctypes.data, 1, 3, 0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(out.ctypes.data, 1)
    assert info.value.code == "CB201"
    assert "takes its stream explicitly" in str(info.value) and "kernel(...)" in str(info.value)


def test_the_array_layout_is_found_without_recursion(monkeypatch: Any) -> None:
    """Finding NumPy's layout exports sample arrays through ``__dlpack__`` itself, never through the
    reader it is finding (which would recurse until a RecursionError hid the layout)."""
    import weakref

    monkeypatch.setattr(_dlpack, "_LAYOUTS", {})
    monkeypatch.setattr(_dlpack, "_READERS", weakref.WeakKeyDictionary())
    calls = []
    original = _dlpack.array_layout

    def counting() -> Any:
        calls.append(1)
        return original()

    monkeypatch.setattr(_dlpack, "array_layout", counting)
    assert _dlpack.reader_for(np.ndarray) is not None
    assert len(calls) == 1


class _TorchLikeStream:
    """What ``torch.cuda.Stream`` offers a launch: an int ``cuda_stream``."""

    def __init__(self, handle: int) -> None:
        self.cuda_stream = handle


class _CoreStream:
    """A cuda.core-style stream: the ``__cuda_stream__`` protocol, ``(version, handle)``."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


#: (name, the stream object for a handle, is it one of the classes read without the full check)
STREAM_FORMS: list[tuple[str, Callable[[int], Any], bool]] = [
    ("int", lambda h: h, True),
    ("cuda.CUstream", lambda h: cuda.CUstream(h), True),
    ("object with cuda_stream", _TorchLikeStream, False),
    ("__cuda_stream__ object", _CoreStream, False),
]


@pytest.mark.parametrize("name,form,direct", STREAM_FORMS, ids=[n for n, _, _ in STREAM_FORMS])
def test_stream_slot_forms_take_the_fast_path(path: str, slow: list[Any], name: str, form: Callable[[int], Any], direct: bool) -> None:
    """A stream object (tutorial 7 passes torch's) is written by the fast path, not the slow path,
    which cost 16-20 us per launch on the CPU machine and about 30 on the H200: the bytes are the
    handle's, the same as an int's."""
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    for handle in (0, 0x7F00_1234_5678, (1 << 64) - 1):
        out[:] = np.nan
        h.launch(out.ctypes.data, x.ctypes.data, 2.0, 64, form(handle))
        assert h.slot_bytes("stream") == handle.to_bytes(8, "little"), name
        np.testing.assert_array_equal(out, x * np.float32(2.0))
    assert slow == [], f"{name}: the launch went to the slow path"


def test_stream_objects_the_kind_refuses_still_raise_their_codes(path: str) -> None:
    """The fast path's reader leaves what it cannot take to the slow path, which raises the catalog's code."""
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    cases = [(_TorchLikeStream(-1), "CB205"), (_TorchLikeStream(1 << 64), "CB205"), (_TorchLikeStream(True), "CB204"),
             (_TorchLikeStream(2.0), "CB204"), (_CoreStream(-5), "CB205"), ("0", "CB204"), (1.0, "CB204")]  # fmt: skip
    for value, code in cases:
        with pytest.raises(cute_bind.CuteBindError) as info:
            h.launch(out.ctypes.data, x.ctypes.data, 2.0, 64, value)
        assert info.value.code == code and info.value.parameter == "stream", (value, str(info.value))
    h.launch(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)  # and the handle still launches


class _FakeTorchStream:
    """Stands in for ``torch.cuda.Stream`` (patched in as it): a ``cuda_stream`` property, no ``getPtr``."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    @property
    def cuda_stream(self) -> int:
        return self.handle


def test_torch_streams_after_a_bind_before_torch_are_read_without_the_full_check(path: str, slow: list[Any], monkeypatch: Any) -> None:
    """A handle bound before torch was imported reads torch's stream objects as one bound after does:
    after the first, through ``cuda_stream`` (C: torch's classes configured once; Python: learned), not
    through the stream kind's full conversion (about 0.6 us more per launch on the CPU machine)."""
    import sys

    from cute_bind.launch import _claunch
    from cute_bind.slots.stream import StreamKind

    monkeypatch.setattr(torch.cuda, "Stream", _FakeTorchStream)
    monkeypatch.setattr(native, "C_LAYOUTS", [*native.C_LAYOUTS[:2], None])  # as if torch was never seen
    converted: list[Any] = []
    original = StreamKind.coerce

    def counting(self: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        converted.append(value)
        return original(self, value, *args, **kwargs)

    monkeypatch.setattr(StreamKind, "coerce", counting)
    x, out = _f32(), np.zeros(64, np.float32)
    with monkeypatch.context() as m:
        m.delitem(sys.modules, "torch")
        h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    try:
        h.launch(out.ctypes.data, x.ctypes.data, 2.0, 64, _FakeTorchStream(7))  # the first one may learn
        converted.clear()
        for handle in (0x7F00_1234_5678, 5):
            out[:] = np.nan
            h.launch(out.ctypes.data, x.ctypes.data, 2.0, 64, _FakeTorchStream(handle))
            assert h.slot_bytes("stream") == handle.to_bytes(8, "little")
            np.testing.assert_array_equal(out, x * np.float32(2.0))
        assert converted == [] and slow == []
    finally:
        if path == "c":  # torch's real classes again for the rest of the process
            monkeypatch.undo()
            _claunch.configure(None, None, native.torch_reader())


def test_kernel_call_with_a_stream_object_takes_the_handles_fast_path(path: str, slow: list[Any]) -> None:
    x, out = _f32(), np.zeros(64, np.float32)
    k = cute_bind.kernel(scale)
    k(out, x, 2.0, 64, cuda.CUstream(0))  # compiles and binds
    slow.clear()
    for alpha in (3.0, 4.0):
        k(out, x, alpha, 64, cuda.CUstream(0))
        np.testing.assert_array_equal(out, x * np.float32(alpha))
    assert slow == []


# ------------------------------------------------------------------ scalars: NumPy scalars and DSL numerics
from tests.kernels.host import all_scalars, halves  # noqa: E402

PLAIN = (True, -8, -16, -32, -64, 8, 16, 32, 64, 1.5, -2.25, 0.75, False, 7, 3.5)
NUMPY = (np.True_, np.int8(-8), np.int16(-16), np.int32(-32), np.int64(-64), np.uint8(8), np.uint16(16), np.uint32(32),
         np.uint64(64), np.float32(1.5), np.float64(-2.25), np.float32(0.75), False, np.int64(7), np.float64(3.5))  # fmt: skip
DSL = (True, cutlass.Int8(-8), cutlass.Int16(-16), cutlass.Int32(-32), cutlass.Int64(-64), cutlass.Uint8(8), cutlass.Uint16(16),
       cutlass.Uint32(32), cutlass.Uint64(64), cutlass.Float32(1.5), cutlass.Float64(-2.25), 0.75, False, 7, 3.5)  # fmt: skip
MIXED = (True, np.int64(-8), np.int64(-16), np.int64(-32), np.int32(-64), np.int64(8), np.int8(16), np.int64(32), np.uint8(64),
         np.int64(3), np.float32(-2.25), np.int16(1), False, np.uint32(7), np.int32(3))  # fmt: skip


@pytest.mark.parametrize("name,values", [("numpy", NUMPY), ("dsl numerics", DSL), ("numpy, other widths", MIXED)])
def test_scalar_forms_take_the_fast_path_and_write_the_same_bytes(path: str, slow: list[Any], name: str, values: tuple[Any, ...]) -> None:
    """NumPy scalars (``np.prod(shape)`` is one) and ``cutlass.Int32(...)`` values are written by the
    fast path as the plain number they stand for; they took the slow path (5-6 us per launch on the
    CPU machine, 12-14 for kernel(...))."""
    out = np.zeros(16, np.float64)
    h = cute_bind.kernel(all_scalars).bind(out.ctypes.data, *PLAIN)
    expected_values = PLAIN if values is not MIXED else (True, -8, -16, -32, -64, 8, 16, 32, 64, 3, -2.25, 1, False, 7, 3)
    h.launch(out.ctypes.data, *expected_values)
    want = h.storage_bytes()
    slow.clear()
    out[:] = np.nan
    h.launch(out.ctypes.data, *values)
    assert h.storage_bytes() == want, name
    assert slow == [], f"{name}: the launch went to the slow path"
    assert out[3] == float(expected_values[3]) and out[9] == np.float32(expected_values[9])


def test_half_slots_take_numpy_scalars_on_the_fast_path(path: str, slow: list[Any]) -> None:
    out = np.zeros(64, np.float32)
    h = cute_bind.kernel(halves).bind(out.ctypes.data, 0.5, 0.25, 2.0)
    h.launch(out.ctypes.data, 1.0 / 3, 1.0 / 7, 2.0)
    want = h.storage_bytes()
    slow.clear()
    h.launch(out.ctypes.data, np.float64(1.0 / 3), np.float64(1.0 / 7), np.float32(2.0))
    assert h.storage_bytes() == want and slow == []


@pytest.mark.parametrize(
    "index,value,code",
    [
        (4, np.float32(2.0), "CB204"),  # a float for Int32: never truncated
        (6, np.int64(300), "CB205"),  # Uint8 out of range
        (5, np.uint64(1 << 63), "CB205"),  # Int64 out of range
        (9, np.uint64(1 << 63), None),  # a float slot takes any integer (rounded as float() rounds it)
        (1, np.float64(1.0), "CB204"),  # Boolean takes bools and 0/1 only
        (4, cutlass.Float32(2.0), "CB204"),
        (10, "1.5", "CB204"),
    ],
)
def test_scalar_values_the_kind_refuses_still_raise_their_codes(path: str, index: int, value: Any, code: str | None) -> None:
    out = np.zeros(16, np.float64)
    h = cute_bind.kernel(all_scalars).bind(out.ctypes.data, *PLAIN)
    args = [out.ctypes.data, *PLAIN]
    args[index] = value
    if code is None:
        h.launch(*args)
        return
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(*args)
    assert info.value.code == code, str(info.value)


# ------------------------------------------------------------------ keywords: placed by name on the fast path
from tests.kernels.host import two_defaults  # noqa: E402

# (call shape, positionals, keywords, out[0]) for two_defaults(out, value, a=1, b=2): value*100 + a*10 + b
KEYWORD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], int]] = [
    ("positional (reference)", (3, 4, 5), {}, 345),
    ("every argument by keyword", (), {"value": 3, "a": 4, "b": 5}, 345),
    ("every argument by keyword, reversed", (), {"b": 5, "a": 4, "value": 3}, 345),
    ("the last by keyword", (3, 4), {"b": 5}, 345),
    ("a middle default left out, a later one given", (3,), {"b": 7}, 317),
    ("both defaults left out, value by keyword", (), {"value": 6}, 612),
    ("an empty keyword dict", (3, 4, 5), {}, 345),
]


@pytest.mark.parametrize("name,args,kwargs,want", KEYWORD_CALLS, ids=[c[0] for c in KEYWORD_CALLS])
def test_keyword_arguments_take_the_fast_path(
    path: str, slow: list[Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any], want: int
) -> None:
    """Keywords are placed by parameter name in C and in the generated launch: they took the slow
    path (4.6 us per handle.launch on the CPU machine against 0.18 positionally)."""
    out = np.zeros(1, np.int32)
    h = cute_bind.kernel(two_defaults).bind(out.ctypes.data, 0)
    addr = out.ctypes.data
    given_out = {"out": addr} if "value" in kwargs else {}
    call_args = () if given_out else (addr, *args)
    h.launch(*call_args, **given_out, **kwargs)
    assert out[0] == want, name
    assert slow == [], f"{name}: the launch went to the slow path"
    # the same bytes as the positional call of the same values
    keyword_bytes = h.storage_bytes()
    values = {"value": None, "a": 1, "b": 2, **dict(zip(("value", "a", "b"), args)), **kwargs}
    h.launch(addr, values["value"], values["a"], values["b"])
    assert h.storage_bytes() == keyword_bytes


# (call shape, positionals after out, keywords, the code the slow path raises, its parameter)
KEYWORD_ERRORS: list[tuple[str, tuple[Any, ...], dict[str, Any], str, str]] = [
    ("an unknown keyword", (3,), {"c": 1}, "CB202", "c"),
    ("a misspelt keyword", (3,), {"vlaue": 1}, "CB202", "vlaue"),
    ("a keyword repeating a positional", (3,), {"value": 4}, "CB203", "value"),
    ("a required parameter left out", (), {"a": 4}, "CB201", "value"),
    ("an extra positional with a keyword", (3, 4, 5, 6), {"b": 1}, "CB202", "#5"),
    ("a wrong kind by keyword", (3,), {"b": "5"}, "CB204", "b"),
    ("out of range by keyword", (), {"value": 1 << 40}, "CB205", "value"),
]


@pytest.mark.parametrize("name,args,kwargs,code,parameter", KEYWORD_ERRORS, ids=[c[0] for c in KEYWORD_ERRORS])
def test_keyword_calls_the_fast_path_cannot_place_raise_their_codes(
    path: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], code: str, parameter: str
) -> None:
    """What the fast path cannot place or write goes to the slow path as given, which raises the catalog's code."""
    out = np.zeros(1, np.int32)
    h = cute_bind.kernel(two_defaults).bind(out.ctypes.data, 0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(out.ctypes.data, *args, **kwargs)
    assert info.value.code == code and info.value.parameter == parameter, (name, str(info.value))
    if name == "a misspelt keyword":
        assert "did you mean 'value'" in str(info.value)
    h.launch(out.ctypes.data, 3, b=9)  # and the handle still launches
    assert out[0] == 319


def test_keywords_on_every_slot_kind_write_the_positional_bytes(path: str, slow: list[Any]) -> None:
    """Pointer, scalar and stream slots given by keyword: the same storage as the positional call."""
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    h.launch(out, x, np.float32(3.0), 64, cuda.CUstream(0))
    want = h.storage_bytes()
    slow.clear()
    h.launch(stream=cuda.CUstream(0), n=np.int64(64), alpha=np.float32(3.0), inp=x, out=out)
    assert h.storage_bytes() == want and slow == []
    np.testing.assert_array_equal(out, x * np.float32(3.0))


def test_a_keyword_stream_object_read_by_python_code_takes_the_fast_path(path: str, slow: list[Any]) -> None:
    """A keyword value whose reader runs Python code (an object with ``cuda_stream`` that is not torch's):
    placed by name, then read by the kind's conversion, on the fast path."""
    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    for _ in range(3):
        h.launch(out.ctypes.data, x.ctypes.data, 2.0, 64, stream=_TorchLikeStream(0))
    assert slow == [] and h.slot_bytes("stream") == bytes(8)


# what prepared-launch.md says a scalar slot takes: (index in all_scalars' arguments, value, taken)
SCALAR_RULES = [
    (4, True, True),  # an integer slot: a bool is 1 or 0, as in the direct call
    (4, 2.0, False),  # never a float
    (10, 3, True),  # a float slot: int
    (10, True, True),  # and bool
    (1, 1, True),  # a Boolean slot: the integers 0 and 1
    (1, 2, False),
    (1, 0.0, False),
    (6, 256, False),  # out of Uint8's range: refused, not truncated
]


@pytest.mark.parametrize("index,value,taken", SCALAR_RULES, ids=[f"{i}={v!r}" for i, v, _ in SCALAR_RULES])
def test_scalar_slots_take_what_the_docs_say(path: str, index: int, value: Any, taken: bool) -> None:
    out = np.zeros(16, np.float64)
    h = cute_bind.kernel(all_scalars).bind(out.ctypes.data, *PLAIN)
    args = [out.ctypes.data, *PLAIN]
    args[index] = value
    if taken:
        h.launch(*args)
        want = [out.ctypes.data, *PLAIN]
        want[index] = int(value) if isinstance(value, bool) and index != 1 else value
        written = h.storage_bytes()
        h.launch(*want)
        assert h.storage_bytes() == written
    else:
        with pytest.raises(cute_bind.CuteBindError) as info:
            h.launch(*args)
        assert info.value.code in ("CB204", "CB205"), str(info.value)


# ------------------------------------------------------------------ keywords: any mix, against Python's own binding
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


_NAMES = ("out", "value", "a", "b", "c", "vlaue")
_BOUND: dict[str, Any] = {}  # one handle per fast path, kept across the examples


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    npos=st.integers(0, 5),
    named=st.lists(st.sampled_from(_NAMES), max_size=5, unique=True),
    values=st.lists(st.integers(-9, 9), min_size=6, max_size=6),
)
def test_any_mix_of_positionals_and_keywords_binds_as_python_does(path: str, npos: int, named: list[str], values: list[int]) -> None:
    """Whatever mix of positionals and keywords a launch gets (unknown, repeated, missing, extra included),
    it writes what Python's own binding of the same call gives, or raises CB201/CB202/CB203 where that
    binding raises TypeError, on both fast paths."""
    from tests.binding import binds_as_python_does

    out = np.zeros(1, np.int32)
    h = _BOUND.setdefault(path, cute_bind.kernel(two_defaults).bind(out.ctypes.data, 0))
    binds_as_python_does(h.launch, npos, named, values)


def test_keyword_names_built_at_run_time_are_placed_too(path: str, slow: list[Any]) -> None:
    """Names a call builds itself (not interned, unlike the identifiers in source) are compared by value."""
    out = np.zeros(1, np.int32)
    h = cute_bind.kernel(two_defaults).bind(out.ctypes.data, 0)
    names = ["".join(reversed(n[::-1])) for n in ("value", "b")]  # equal strings, new objects
    assert names[0] is not "value"  # noqa: F632 - the point: not the interned literal
    h.launch(out.ctypes.data, **{names[0]: 3, names[1]: 7})
    assert out[0] == 317 and slow == []
    k = cute_bind.kernel(two_defaults)
    k(out.ctypes.data, **{names[0]: 4, names[1]: 8})
    assert out[0] == 418


def test_a_keyword_call_missing_a_required_parameter_reads_no_value_before_cb201(path: str) -> None:
    """As Python's own binding, a call that leaves a required parameter out is refused before any value
    is read (a value's reader may run code: here a stream object counting its reads)."""
    reads: list[int] = []

    class Counting:
        @property
        def cuda_stream(self) -> int:
            reads.append(1)
            return 0

    x, out = _f32(), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(out.ctypes.data, x.ctypes.data, 2.0, 64, 0)
    with pytest.raises(cute_bind.CuteBindError) as info:
        h.launch(out.ctypes.data, alpha=2.0, n=64, stream=Counting())
    assert (info.value.code, info.value.parameter, reads) == ("CB201", "inp", [])


# ------------------------------------------------------------------ issue 39 row 13 and a test gap
def _strided_forms() -> list[tuple[str, Callable[[np.ndarray], Any]]]:
    """A pointer value that is a strided view of ``a`` (every other element), in each form."""
    forms: list[tuple[str, Callable[[np.ndarray], Any]]] = [
        ("numpy step 2", lambda a: a[::2]),
        ("numpy reversed", lambda a: a[::-1]),
        ("numpy stride 0", lambda a: np.lib.stride_tricks.as_strided(a, shape=(32,), strides=(0,))),
        ("numpy transposed", lambda a: a.reshape(8, 8).T),
        ("cai step 2", lambda a: CAIArray(a[::2], strides=(8,))),
        ("cai stride 0", lambda a: CAIArray(a[:32], strides=(0,))),
    ]
    if torch is not None:
        forms += [
            ("torch step 2", lambda a: torch.from_numpy(a)[::2]),
            ("torch expand", lambda a: torch.from_numpy(a)[:1].expand(64)),
            ("torch transposed", lambda a: torch.from_numpy(a).view(8, 8).t()),
        ]
    return forms


@pytest.mark.parametrize("name,make", _strided_forms(), ids=[f[0] for f in _strided_forms()])
def test_a_strided_view_on_a_pointer_slot_is_cb233(path: str, name: str, make: Callable[[np.ndarray], Any]) -> None:
    """The kernel would read the memory under the view, not its elements: refused on every door
    (before: taken, also under checked mode, and the output held [0,1,2,3] for a view of [0,2,4,6])."""
    x, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    kernel = scale_gmem if name.startswith("cai") else scale
    wrap = (lambda a: CAIArray(a)) if name.startswith("cai") else (lambda a: a)
    k = cute_bind.kernel(kernel)
    h = k.bind(wrap(out), wrap(x), 2.0, 32, 0)
    view = make(x)
    for go in (h.launch, h.with_checks().launch, k):
        _raises("CB233", lambda go=go: go(wrap(out), view, 2.0, 32, 0))
    _raises("CB233", lambda: k.bind(wrap(out), view, 2.0, 32, 0))
    assert not out.any()  # nothing launched


def test_a_contiguous_value_with_unit_or_extent_one_strides_is_taken(path: str) -> None:
    x, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    h = cute_bind.kernel(scale).bind(out, x, 2.0, 64, 0)
    column = np.zeros((64, 1), np.float32)[:, :1]  # extent-1 mode: any stride
    for value in (x.reshape(8, 8), x.reshape(64, 1), np.ascontiguousarray(x[::2]), x[::-1][::-1], column):
        out[:] = 0
        h.launch(out, value, 2.0, 64 if value.size == 64 else 32, 0)
        assert out[: value.size].tolist() == (value.reshape(-1) * 2).tolist()


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_a_misaligned_cuda_array_interface_pointer_is_refused(path: str, offset: int) -> None:
    """An interface address one to three bytes into a Float32 buffer: CB207 on both paths, nothing
    launched (a test gap: removing the C path's alignment check passed every test)."""
    x, out = _f32(), np.zeros(64, np.float32)
    raw = np.zeros(64 * 4 + 8, np.uint8)
    h = cute_bind.kernel(scale_gmem).bind(CAI(out), CAI(x), 2.0, 64, 0)

    class Misaligned(CAI):
        def __init__(self) -> None:
            super().__init__(out)
            self.__cuda_array_interface__ = {**self.__cuda_array_interface__, "data": (raw.ctypes.data + offset, False)}

    for go in (h.launch, h.with_checks().launch):
        _raises("CB207", lambda go=go: go(Misaligned(), CAI(x), 2.0, 64, 0))
    assert not raw.any() and not out.any()
